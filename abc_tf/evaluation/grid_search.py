"""A grid search over a preset's settings (``grid.py``).

Every combination of the varied fields' values is a point. Each point is trained by ``train.py`` into
``output_dir/<point name>`` and evaluated by ``evaluate.py`` into ``<run>/grid_eval``, each run a
job of an :mod:`abc_tf.runs.parallel_runs` pool (side by side here, or on Ray, which places,
runs and retries them). One measure read from each evaluation picks the best setting. ``--seeds``
runs each point; more than one makes ``seed_<k>`` folders, each trained as a run of its own.

The measure is ``FILE:KEY/KEY/...``, a value in a JSON file the evaluation writes, e.g.
``pose_metrics.json:domains/synthetic/rows/trained encoder (lookup)/median_error_deg/mean``.
A point's value is the mean over its seeds. The pick has the lowest value for ``goal`` "min",
the highest for "max". With ``--confirm_within``, a point within that distance of the best is
trained at ``--confirm_seeds`` more seeds before the pick is called, so that one lucky seed does
not pick; this repeats while the best moves to a point not yet confirmed.

What the grid is tuned on is the caller's choice. Pass flags that hold a validation set out of
training (``holdout_flags``, e.g. ``--data.validation_instances`` for pose) and evaluation flags that
query it (``--pose_query_split=validation``). Then test queries never pick a setting.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import re
import shlex
from collections.abc import Callable, Sequence
from typing import Any

from abc_tf import command_line, json_files
from abc_tf.evaluation.estimators import plots
from abc_tf.runs import experiments, parallel_runs

GRID_FILE, TABLE_FILE, FIGURE_FILE = "grid.json", "grid.md", "grid.png"
EVAL_DIR = "grid_eval"  # a run's evaluation for the grid, apart from the run's own metrics.json
GOALS = ("min", "max")
_FIELD = re.compile(r"^(trainer|data|batch|method|encoder)\.[A-Za-z_][A-Za-z0-9_]*$")


@dataclasses.dataclass(frozen=True)
class Axis:
    """One varied field (``part.field``, a train.py flag without its dashes) and its values, as
    written on the command line."""

    field: str
    values: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> "Axis":
        """``part.field=V1,V2,...`` -> Axis (ValueError naming the text when it is not that)."""
        name, _, values = text.partition("=")
        name = name.strip().removeprefix("--")
        listed = tuple(value.strip() for value in values.split(",") if value.strip())
        renamed = command_line.renamed_flag_error(["grid", f"--{name}"])
        if renamed is not None:
            raise ValueError(f"--vary={text!r}: {renamed.replace('--', '')}")
        if not _FIELD.match(name) or not listed:
            raise ValueError(
                f"--vary={text!r}: write part.field=VALUE,VALUE,... (e.g. trainer.learning_rate=1e-4,1e-3); "
                "part is trainer, data, batch, method or encoder."
            )
        if len(set(listed)) != len(listed):
            raise ValueError(f"--vary={text!r} repeats a value.")
        return cls(name, listed)


@dataclasses.dataclass(frozen=True)
class Measure:
    """A value in a JSON file of the evaluation: ``file`` relative to the evaluation folder,
    ``keys`` the path into it."""

    file: str
    keys: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> "Measure":
        file, _, path = text.partition(":")
        keys = tuple(key for key in path.split("/") if key)
        if not file.endswith(".json") or not keys:
            raise ValueError(
                f"--measure={text!r}: write FILE.json:KEY/KEY/... (e.g. "
                "pose_metrics.json:domains/synthetic/rows/trained encoder (lookup)/median_error_deg/mean)."
            )
        return cls(file, keys)

    def read(self, eval_dir: str) -> float:
        """The value in ``eval_dir``'s file (ValueError naming the missing key and the keys there)."""
        path = os.path.join(eval_dir, self.file)
        with open(path) as handle:
            node: Any = json.load(handle)
        for depth, key in enumerate(self.keys):
            if not isinstance(node, dict) or key not in node:
                found = ", ".join(map(str, node)) if isinstance(node, dict) else type(node).__name__
                raise ValueError(
                    f"--measure: {path} has no {'/'.join(self.keys[: depth + 1])!r} (found there: {found})."
                )
            node = node[key]
        if not isinstance(node, (int, float)) or isinstance(node, bool):
            raise ValueError(f"--measure: {path}'s {'/'.join(self.keys)!r} is not a number: {node!r}.")
        return float(node)

    def __str__(self) -> str:
        return f"{self.file}:{'/'.join(self.keys)}"


@dataclasses.dataclass(frozen=True)
class GridSpec:
    """Everything ``grid.py`` is told. ``train_flags``, ``evaluate_flags``: further flags of
    every train.py and evaluate.py call (the fixed settings, and what to evaluate on);
    ``holdout_flags``: train.py flags of the search's runs only (the validation hold-out), left
    out of the pick's command, which trains ``pick_seeds`` seeds."""

    experiment: str
    axes: tuple[Axis, ...]
    measure: Measure
    output_dir: str
    goal: str = "min"
    seeds: int = 1
    train_flags: tuple[str, ...] = ()
    holdout_flags: tuple[str, ...] = ()
    evaluate_flags: tuple[str, ...] = ()
    pick_seeds: int = 3
    # A point whose value lies within confirm_within of the best (in the measure's units) is
    # trained at confirm_seeds more seeds before the pick; 0 confirms nothing.
    confirm_within: float = 0.0
    confirm_seeds: int = 1

    def validate(self) -> None:
        if not self.axes:
            raise ValueError("--vary: name at least one field to vary (part.field=VALUE,VALUE,...).")
        fields = [axis.field for axis in self.axes]
        if len(set(fields)) != len(fields):
            raise ValueError(f"--vary names a field twice: {fields}.")
        for name, given in (("train_flags", self.train_flags), ("holdout_flags", self.holdout_flags)):
            renamed = command_line.renamed_flag_error(["train", *given])
            if renamed is not None:
                raise ValueError(f"--{name}: {renamed}")
            fixed = [flag for flag in given if any(flag.startswith(f"--{field}=") for field in fields)]
            if fixed:
                raise ValueError(f"--{name} sets a varied field: {' '.join(fixed)}.")
        if self.goal not in GOALS:
            raise ValueError(f"--goal must be one of {', '.join(GOALS)}, got {self.goal!r}.")
        for name, count in (
            ("seeds", self.seeds),
            ("pick_seeds", self.pick_seeds),
            ("confirm_seeds", self.confirm_seeds),
        ):
            if count <= 0:
                raise ValueError(f"--{name} must be a positive integer, got {count}.")
        if not math.isfinite(self.confirm_within) or self.confirm_within < 0:
            raise ValueError(
                "--confirm_within must be 0 (confirm nothing) or a positive distance, "
                f"got {self.confirm_within}."
            )
        if not self.output_dir.strip():
            raise ValueError("--output_dir is empty; name the grid's folder.")


@dataclasses.dataclass(frozen=True)
class Point:
    """One combination: {field: value} in the axes' order."""

    settings: tuple[tuple[str, str], ...]

    @property
    def name(self) -> str:
        """Its folder: ``field=value`` joined by ``__`` (the part dropped; characters a path cannot hold
        replaced)."""
        return "__".join(
            re.sub(r"[^A-Za-z0-9_.+=-]", "_", f"{field.split('.', 1)[1]}={value}")
            for field, value in self.settings
        )

    @property
    def flags(self) -> list[str]:
        return [f"--{field}={value}" for field, value in self.settings]


def points(axes: Sequence[Axis]) -> list[Point]:
    """Every combination of the axes' values, the first axis varying slowest."""
    return [
        Point(tuple(zip((axis.field for axis in axes), combination)))
        for combination in itertools.product(*(axis.values for axis in axes))
    ]


def run_dirs(spec: GridSpec, point: Point) -> list[str]:
    """The training runs of ``point``: its folder, or its ``seed_<k>`` folders."""
    folder = os.path.join(spec.output_dir, point.name)
    return [folder] if spec.seeds == 1 else [os.path.join(folder, f"seed_{k}") for k in range(spec.seeds)]


def confirm_dirs(spec: GridSpec, point: Point) -> list[str]:
    """The runs that confirm ``point``: ``seed_<k>`` folders after its own seeds."""
    folder = os.path.join(spec.output_dir, point.name)
    return [os.path.join(folder, f"seed_{k}") for k in range(spec.seeds, spec.seeds + spec.confirm_seeds)]


def measured_runs(spec: GridSpec, point: Point) -> list[str]:
    """The runs a point's value is the mean of: its own, and the confirming runs evaluated so far."""
    return run_dirs(spec, point) + [
        run_dir for run_dir in confirm_dirs(spec, point) if evaluated(spec, run_dir)
    ]


def base_seed(spec: GridSpec, point: Point) -> int:
    """The seed of a point's first run: a varied ``trainer.seed``, else ``--trainer.seed`` in the fixed
    flags, else the preset's."""
    for flag in [*reversed(point.flags), *reversed(spec.train_flags)]:
        if flag.startswith("--trainer.seed="):
            return int(flag.split("=", 1)[1])
    return experiments.get_preset(spec.experiment).trainer.seed


def finished(run_dir: str) -> bool:
    """Whether ``run_dir`` holds a finished training run (its final networks are written last)."""
    return os.path.isfile(os.path.join(run_dir, "encoder.keras")) and os.path.isfile(
        os.path.join(run_dir, "config.json")
    )


def evaluated(spec: GridSpec, run_dir: str) -> bool:
    """Whether ``run_dir``'s evaluation for the grid wrote the measure's file."""
    return os.path.isfile(os.path.join(run_dir, EVAL_DIR, spec.measure.file))


def train_arguments(spec: GridSpec, point: Point) -> list[str]:
    """The ``abc_tf train`` command line of ``point``'s runs, which ``--check_only`` checks."""
    return [
        "train",
        f"--experiment={spec.experiment}",
        *spec.train_flags,
        *spec.holdout_flags,
        *point.flags,
        f"--seeds={spec.seeds}",
        f"--output_dir={os.path.join(spec.output_dir, point.name)}",
    ]


def run_arguments(spec: GridSpec, point: Point, run_dir: str, seed: int) -> list[str]:
    """The ``abc_tf train`` command line of one run of ``point`` (its own or a confirming one), at
    ``seed``: what ``train_arguments`` trains into ``run_dir``, as a run of its own."""
    return [
        "train",
        f"--experiment={spec.experiment}",
        *spec.train_flags,
        *spec.holdout_flags,
        *point.flags,
        f"--trainer.seed={seed}",
        "--seeds=1",
        f"--output_dir={run_dir}",
    ]


def run_job(spec: GridSpec, point: Point, run_dir: str, seed: int) -> parallel_runs.Job | None:
    """The job that trains ``run_dir`` unless it is finished and evaluates it unless its measure's
    file is there; None when both are done."""
    steps = []
    if not (finished(run_dir) or evaluated(spec, run_dir)):
        steps.append(
            ("training", tuple(run_arguments(spec, point, run_dir, seed)), f"{run_dir}/grid_train.log")
        )
    if not evaluated(spec, run_dir):
        evaluate = ("evaluate", f"--run_dir={run_dir}", *spec.evaluate_flags)
        steps.append(
            ("evaluating", (*evaluate, f"--output_dir={run_dir}/{EVAL_DIR}"), f"{run_dir}/grid_evaluate.log")
        )
    name = os.path.relpath(run_dir, spec.output_dir)
    return parallel_runs.Job(name, tuple(steps)) if steps else None


def confirm(spec: GridSpec, grid: Sequence[Point], pool, say: Callable[[str], None]) -> None:
    """Trains and evaluates the confirming runs of every point within ``confirm_within`` of the best,
    again while the best moves to a point not confirmed yet. A point's confirming runs are skipped
    where they are evaluated already, so a resumed grid does not train them again."""
    if spec.confirm_within <= 0:
        return
    while True:
        rows = summarise(spec, grid)["points"]
        best = rows_best(spec, rows)["mean"]
        jobs = [
            run_job(spec, point, run_dir, base_seed(spec, point) + k)
            for point, row in zip(grid, rows)
            if abs(row["mean"] - best) <= spec.confirm_within
            for k, run_dir in enumerate(confirm_dirs(spec, point), spec.seeds)
        ]
        if not any(jobs):
            return
        pool.run([job for job in jobs if job], say, "grid: confirming")


def run_grid(spec: GridSpec, pool=None, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Trains and evaluates every run of ``spec`` not done yet through ``pool`` (a
    :mod:`abc_tf.runs.parallel_runs` pool; default: one at a time here), then writes the grid's files.

    Before anything trains, ``train.py --check_only`` checks every point still to train: its settings,
    run directory and model. So a value refused at the last point stops the grid at once.
    A run that is finished (``encoder.keras`` written) is not trained again. One whose measure
    file exists is neither trained nor evaluated again. So the same command resumes after a kill: the
    cut-off runs resume from their last checkpoints, and finished runs are skipped. A grid widened by
    more values, with its earlier points' evaluation files in place, trains only the new points.

    Files in ``output_dir``: ``grid.json`` holds every point, its flags, its runs' values and the pick.
    ``grid.md`` is the table. ``grid.png`` shows the measure per point, seeds as dots, the pick marked.
    The pick's command (``pick/train_command``) is the one to measure it with: the fixed settings and the
    pick's, without the hold-out, at ``pick_seeds`` seeds, into ``output_dir/pick``.
    Returns grid.json's content.
    """
    spec.validate()
    pool = pool or parallel_runs.LocalPool()
    grid = points(spec.axes)
    os.makedirs(spec.output_dir, exist_ok=True)
    jobs = [
        run_job(spec, point, run_dir, base_seed(spec, point) + k)
        for point in grid
        for k, run_dir in enumerate(run_dirs(spec, point))
    ]
    to_check = {job.name.split(os.sep)[0] for job in jobs if job and job.steps[0][0] == "training"}
    # Every point's settings are checked before any point trains: a value train.py refuses in
    # the last point would otherwise stop the grid only after the others had trained.
    checks = [
        parallel_runs.Job(
            point.name,
            (
                (
                    "checking",
                    (*train_arguments(spec, point), "--check_only=true"),
                    f"{spec.output_dir}/{point.name}/grid_check.log",
                ),
            ),
        )
        for point in grid
        if point.name in to_check
    ]
    try:
        pool.run(checks, say, "grid")
    except RuntimeError as refused:  # a bad setting, as grid.py's own flag errors
        raise ValueError(str(refused)) from None
    pool.run([job for job in jobs if job], say, "grid")
    confirm(spec, grid, pool, say)
    result = summarise(spec, grid)
    write(spec, result)
    return result


def summarise(spec: GridSpec, grid: Sequence[Point]) -> dict[str, Any]:
    """grid.json's content: each point's flags, values (per run) and mean, and the pick."""
    rows = []
    for point in grid:
        runs = measured_runs(spec, point)
        values = [spec.measure.read(os.path.join(run_dir, EVAL_DIR)) for run_dir in runs]
        mean = sum(values) / len(values)
        std = math.sqrt(sum((value - mean) ** 2 for value in values) / len(values))
        rows.append(
            {
                "name": point.name,
                "settings": dict(point.settings),
                "flags": point.flags,
                "runs": runs,
                "values": values,
                "mean": mean,
                "std": std,
            }
        )
    best = rows_best(spec, rows)
    train = [
        *command_line.command("train").split(),
        f"--experiment={spec.experiment}",
        *spec.train_flags,
        *best["flags"],
        f"--seeds={spec.pick_seeds}",
        f"--output_dir={os.path.join(spec.output_dir, 'pick')}",
    ]
    return {
        "experiment": spec.experiment,
        "measure": str(spec.measure),
        "goal": spec.goal,
        "seeds": spec.seeds,
        "confirm_within": spec.confirm_within,
        "confirm_seeds": spec.confirm_seeds,
        "axes": {axis.field: list(axis.values) for axis in spec.axes},
        "train_flags": list(spec.train_flags),
        "holdout_flags": list(spec.holdout_flags),
        "evaluate_flags": list(spec.evaluate_flags),
        "points": rows,
        "pick": {
            "name": best["name"],
            "flags": best["flags"],
            "mean": best["mean"],
            "train_command": shlex.join(train),
        },
    }


def rows_best(spec: GridSpec, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The row with the lowest mean for goal "min", the highest for "max"."""
    return (min if spec.goal == "min" else max)(rows, key=lambda row: row["mean"])


def markdown(result: dict[str, Any]) -> str:
    """The table: one row per point, the varied fields, the measure's mean ± std and each run's
    value, the pick in bold; then the command that measures the pick."""
    fields = list(result["axes"])
    header = [*fields, f"{result['measure']} ({result['goal']})", "runs"]
    confirmed = (
        f"; points within {result['confirm_within']:g} of the best: {result['confirm_seeds']} more seed(s)"
        if result.get("confirm_within")
        else ""
    )
    lines = [
        f"Grid over `{result['experiment']}` ({result['seeds']} seed(s) a point{confirmed}); pick: "
        f"`{' '.join(result['pick']['flags'])}`.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for row in result["points"]:
        cell = f"{row['mean']:.4g} ± {row['std']:.2g}" if len(row["values"]) > 1 else f"{row['mean']:.4g}"
        if row["name"] == result["pick"]["name"]:
            cell = f"**{cell}**"
        runs = ", ".join(f"{value:.4g}" for value in row["values"])
        lines.append("| " + " | ".join([*(row["settings"][field] for field in fields), cell, runs]) + " |")
    lines += ["", f"Measure the pick (no hold-out): `{result['pick']['train_command']}`"]
    return "\n".join(lines) + "\n"


def plot(result: dict[str, Any], path: str) -> None:
    """The measure per point (bars: the mean; dots: the runs), the pick in another colour."""
    rows = result["points"]
    figure = plots.new_figure(max(4.0, 0.6 * len(rows) + 1.5), 4.0)
    axes = figure.add_subplot(1, 1, 1)
    colours = ["tab:orange" if row["name"] == result["pick"]["name"] else "tab:blue" for row in rows]
    axes.bar(range(len(rows)), [row["mean"] for row in rows], color=colours, alpha=0.7)
    for x, row in enumerate(rows):
        axes.plot([x] * len(row["values"]), row["values"], "k.", markersize=4)
    axes.set_xticks(range(len(rows)))
    axes.set_xticklabels(
        [
            "\n".join(f"{field.split('.', 1)[1]}={value}" for field, value in row["settings"].items())
            for row in rows
        ],
        fontsize=6,
        rotation=90,
    )
    axes.set_ylabel(
        result["measure"].rsplit("/", 2)[-2] if "/" in result["measure"] else result["measure"], fontsize=8
    )
    axes.set_title(f"{result['experiment']}: pick (orange) by {result['goal']}", fontsize=9)
    figure.tight_layout()
    plots.save_figure(figure, path)


def write(spec: GridSpec, result: dict[str, Any]) -> None:
    json_files.write_json(os.path.join(spec.output_dir, GRID_FILE), result)
    with open(os.path.join(spec.output_dir, TABLE_FILE), "w") as handle:
        handle.write(markdown(result))
    plot(result, os.path.join(spec.output_dir, FIGURE_FILE))

"""Widens one of the Table S1 validation grids kept under docs/figures/table_s1/grids/ and writes
it back: the committed grid's settings, with the axes named by ``--vary`` replaced.

The committed points' evaluation files (``points/<point>.json``) are put back where the grid
reads them, so only the new points train (``abc_tf.evaluation.grid_search.run_grid`` skips a
point whose evaluation exists). Then grid.json, grid.md, grid.png and every point's evaluation
are copied into the grid's folder under docs/figures, with ``table.json``, what the documents'
grid tables show; ``python -m scripts.doc_tables`` rewrites those tables. Without ``--vary`` the
committed grid is written again from its points, training nothing.

With ``--confirm_within=D`` the points within D of the best are trained at another seed before the
pick (``grid_search.confirm``); their runs' evaluations are kept as ``points/<point>__seed_<k>.json``.

  python -m scripts.table_s1_grids --grid=abc --vary=trainer.learning_rate=1e-4,3e-4,1e-3
  python -m scripts.table_s1_grids --grid=cc_vae --confirm_within=0.3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil

from abc_tf import json_files
from abc_tf.evaluation import grid_search

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRIDS = os.path.join(ROOT, "docs", "figures", "table_s1", "grids")
# The lookup measures the documents' grid tables show (means over the validation dictionaries).
TABLE_METRICS = ("median_error_deg", "acc_at_30", "flip_median_error_deg")


def spec_of(
    grid: str, vary: list[str], output_dir: str, confirm_within: float | None = None
) -> grid_search.GridSpec:
    """The committed grid ``grid``'s settings, the axes ``vary`` names replaced (or added), and
    its confirmation distance ``confirm_within`` where given."""
    with open(os.path.join(GRIDS, grid, grid_search.GRID_FILE)) as handle:
        kept = json.load(handle)
    axes = {field: ",".join(values) for field, values in kept["axes"].items()}
    for text in vary:
        axis = grid_search.Axis.parse(text)
        axes[axis.field] = ",".join(axis.values)
    return grid_search.GridSpec(
        experiment=kept["experiment"],
        axes=tuple(grid_search.Axis.parse(f"{field}={values}") for field, values in axes.items()),
        measure=grid_search.Measure.parse(kept["measure"]),
        output_dir=output_dir,
        goal=kept["goal"],
        seeds=kept["seeds"],
        train_flags=tuple(kept["train_flags"]),
        holdout_flags=tuple(kept["holdout_flags"]),
        evaluate_flags=tuple(kept["evaluate_flags"]),
        confirm_within=kept.get("confirm_within", 0.0) if confirm_within is None else confirm_within,
        confirm_seeds=kept.get("confirm_seeds", 1),
    )


# A kept evaluation: points/<point>.json (the point's run) or points/<point>__seed_<k>.json (a
# run confirming it, in <point>/seed_<k>).
KEPT = re.compile(r"^(?P<point>.+?)(?:__(?P<run>seed_\d+))?\.json$")


def kept_name(spec: grid_search.GridSpec, point: grid_search.Point, run_dir: str) -> str:
    """The file name under points/ that keeps ``run_dir``'s evaluation."""
    run = os.path.relpath(run_dir, os.path.join(spec.output_dir, point.name))
    return f"{point.name}.json" if run == "." else f"{point.name}__{run}.json"


def restore_points(grid: str, spec: grid_search.GridSpec) -> list[str]:
    """Copies the committed evaluations into ``spec.output_dir``; the points they belong to."""
    folder = os.path.join(GRIDS, grid, "points")
    if spec.seeds != 1:
        raise ValueError("only grids of one seed a point keep their evaluations as points/<point>.json")
    restored = []
    for name in sorted(os.listdir(folder)):
        match = KEPT.match(name)
        run_dir = os.path.join(spec.output_dir, match["point"], match["run"] or "")
        eval_dir = os.path.join(run_dir, grid_search.EVAL_DIR)
        target = os.path.join(eval_dir, spec.measure.file)
        if not os.path.exists(target):
            os.makedirs(eval_dir, exist_ok=True)
            shutil.copyfile(os.path.join(folder, name), target)
        if match["point"] not in restored:
            restored.append(match["point"])
    return restored


def publish(grid: str, spec: grid_search.GridSpec, result: dict) -> None:
    """Copies the grid's files and each point's evaluation into docs/figures, and writes
    ``table.json``: per point, in the grid's order, what the documents' grid tables show."""
    folder = os.path.join(GRIDS, grid)
    for name in (grid_search.GRID_FILE, grid_search.TABLE_FILE, grid_search.FIGURE_FILE):
        shutil.copyfile(os.path.join(spec.output_dir, name), os.path.join(folder, name))
    rows = []
    measured = {row["name"]: row for row in result["points"]}
    for point in grid_search.points(spec.axes):
        for run_dir in grid_search.measured_runs(spec, point):
            source = os.path.join(run_dir, grid_search.EVAL_DIR, spec.measure.file)
            shutil.copyfile(source, os.path.join(folder, "points", kept_name(spec, point, run_dir)))
        (run_dir,) = grid_search.run_dirs(spec, point)
        with open(os.path.join(run_dir, grid_search.EVAL_DIR, spec.measure.file)) as handle:
            lookup = json.load(handle)["domains"]["synthetic"]["rows"]["trained encoder (lookup)"]
        values = measured[point.name]["values"]
        rows.append(
            {
                "name": point.name,
                "settings": dict(point.settings),
                "pick": point.name == result["pick"]["name"],
                # How a table marks the pick: its value in bold, "(pick)" after it.
                "mark": "**" if point.name == result["pick"]["name"] else "",
                "pick_note": " (pick)" if point.name == result["pick"]["name"] else "",
                **{metric: lookup[metric]["mean"] for metric in TABLE_METRICS},
                "median_error_deg_std": lookup["median_error_deg"]["std"],
                # The grid's measure over the point's runs (more than one where it was confirmed).
                "measure_mean": measured[point.name]["mean"],
                "measure_runs": ", ".join(f"{value:.2f}" for value in values),
                "runs": len(values),
            }
        )
    json_files.write_json(
        os.path.join(folder, "table.json"), {"command": command_line(grid, spec), "points": rows}
    )


def command_line(grid: str, spec: grid_search.GridSpec) -> str:
    """The command that writes this grid's files."""
    vary = " ".join(f"--vary={axis.field}={','.join(axis.values)}" for axis in spec.axes)
    confirm = f" --confirm_within={spec.confirm_within:g}" if spec.confirm_within else ""
    return f"python -m scripts.table_s1_grids --grid={grid} {vary}{confirm}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", required=True, choices=sorted(os.listdir(GRIDS)), help="The grid to widen.")
    parser.add_argument(
        "--vary", action="append", default=[], help="part.field=VALUE,... replacing that axis (repeatable)."
    )
    parser.add_argument("--output_dir", default="", help="Where the points train (default: runs/grid/GRID).")
    parser.add_argument(
        "--confirm_within",
        type=float,
        default=None,
        help="Train the points within this distance of the best at another seed before the pick "
        "(default: as the committed grid).",
    )
    args = parser.parse_args()
    output_dir = args.output_dir or os.path.join("runs", "grid", args.grid)
    spec = spec_of(args.grid, args.vary, output_dir, args.confirm_within)
    restored = restore_points(args.grid, spec)
    print(f"[table_s1_grids] {len(restored)} committed points restored into {spec.output_dir}", flush=True)
    result = grid_search.run_grid(spec)
    publish(args.grid, spec, result)
    print(grid_search.markdown(result))


if __name__ == "__main__":
    main()

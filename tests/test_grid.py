"""grid.py and abc_tf.evaluation.grid: the points of the varied fields, the measure read from
each evaluation, the pick, the files written, a killed grid resumed without training a finished
point again, bad flags refused, and a real two-point grid through train.py and evaluate.py."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from abc_tf.cli import grid as grid_cli
from abc_tf.evaluation import grid_search as grid
from abc_tf.runs import parallel_runs

MEASURE = "pose_metrics.json:domains/synthetic/rows/trained encoder (lookup)/median_error_deg/mean"


def spec(tmp_path, **overrides) -> grid.GridSpec:
    settings = dict(
        experiment="pose_ml_vae_quick",
        axes=(
            grid.Axis.parse("trainer.learning_rate=1e-4,1e-3"),
            grid.Axis.parse("method.style_dim=8,16,32"),
        ),
        measure=grid.Measure.parse(MEASURE),
        output_dir=str(tmp_path / "grid"),
        train_flags=("--data.image_size=32",),
        holdout_flags=("--data.validation_instances=10",),
        evaluate_flags=("--pose_query_split=validation",),
    )
    settings.update(overrides)
    return grid.GridSpec(**settings)


def errors_by_point(learning_rate: str, style_dim: str, seed: int) -> float:
    """The made-up validation error of a point's run: lowest at 1e-3 and 16."""
    return (
        {"1e-4": 10.0, "1e-3": 5.0}[learning_rate] + {"8": 2.0, "16": 0.0, "32": 1.0}[style_dim] + 0.1 * seed
    )


class FakeScripts:
    """Stands in for train.py and evaluate.py: writes what they would leave (the finished run's
    files, the evaluation's JSON), records each call, and fails where told."""

    def __init__(self, fail_on: str | None = None, refuse: str | None = None, errors=errors_by_point):
        self.errors = errors  # (learning_rate, style_dim, seed) -> the run's validation error
        self.calls: list[list[str]] = []
        self.checks: list[list[str]] = []  # train.py --check_only, kept apart from the runs
        self.fail_on = fail_on
        self.refuse = refuse  # the settings train.py's check refuses

    def __call__(self, arguments, log_file: str, threads=None, started=None) -> None:
        arguments = list(arguments)
        if "--check_only=true" in arguments:
            self.checks.append(arguments)
            if self.refuse and any(self.refuse in argument for argument in arguments):
                raise RuntimeError(
                    f"abc_tf train exited with 2: --{self.refuse} cannot work (its output: {log_file})"
                )
            return
        self.calls.append(arguments)
        values = dict(argument[2:].split("=", 1) for argument in arguments[1:])
        if self.fail_on and any(self.fail_on in argument for argument in arguments):
            raise RuntimeError(f"{arguments[0]} exited with 1; its output: {log_file}")
        if arguments[0] == "train":
            seeds = int(values["seeds"])
            folders = (
                [values["output_dir"]]
                if seeds == 1
                else [os.path.join(values["output_dir"], f"seed_{k}") for k in range(seeds)]
            )
            for k, folder in enumerate(folders):
                os.makedirs(folder, exist_ok=True)
                for name in ("encoder.keras", "config.json"):
                    open(os.path.join(folder, name), "w").close()
                json.dump(
                    {
                        "learning_rate": values["trainer.learning_rate"],
                        "style_dim": values["method.style_dim"],
                        "seed": int(values.get("trainer.seed", 0)) + k,
                    },
                    open(os.path.join(folder, "point.json"), "w"),
                )
        else:
            run_dir, eval_dir = values["run_dir"], values["output_dir"]
            point = json.load(open(os.path.join(run_dir, "point.json")))
            os.makedirs(eval_dir, exist_ok=True)
            error = self.errors(point["learning_rate"], point["style_dim"], point["seed"])
            json.dump(
                {
                    "domains": {
                        "synthetic": {
                            "rows": {"trained encoder (lookup)": {"median_error_deg": {"mean": error}}}
                        }
                    }
                },
                open(os.path.join(eval_dir, "pose_metrics.json"), "w"),
            )


def pool_of(scripts: FakeScripts, at_once: int = 1) -> parallel_runs.LocalPool:
    return parallel_runs.LocalPool(at_once, runner=scripts)


def test_every_combination_is_a_point_in_order_with_a_folder_of_its_own():
    axes = (grid.Axis.parse("trainer.learning_rate=1e-4,1e-3"), grid.Axis.parse("--method.style_dim=8,16,32"))
    found = grid.points(axes)
    assert [point.flags for point in found[:4]] == [
        ["--trainer.learning_rate=1e-4", "--method.style_dim=8"],
        ["--trainer.learning_rate=1e-4", "--method.style_dim=16"],
        ["--trainer.learning_rate=1e-4", "--method.style_dim=32"],
        ["--trainer.learning_rate=1e-3", "--method.style_dim=8"],
    ]
    assert len(found) == 6 and len({point.name for point in found}) == 6
    assert found[0].name == "learning_rate=1e-4__style_dim=8"
    assert grid.Point((("data.path", "a b/c"),)).name == "path=a_b_c"


@pytest.mark.parametrize(
    "text, message",
    [
        ("learning_rate=1e-3", "write part.field=VALUE,VALUE"),
        ("trainer.learning_rate=", "write part.field=VALUE,VALUE"),
        ("trainer.steps=1,1", "repeats a value"),
        ("model.embedding_dim=4,8", "model.embedding_dim was renamed encoder.embedding_dim."),
    ],
)
def test_a_bad_axis_is_refused_naming_it(text, message):
    with pytest.raises(ValueError, match=message):
        grid.Axis.parse(text)


def test_the_grid_trains_and_evaluates_each_point_then_picks_the_best_by_the_measure(tmp_path):
    scripts = FakeScripts()
    chosen = spec(tmp_path, seeds=2)
    result = grid.run_grid(chosen, pool=pool_of(scripts), say=lambda line: None)
    trains = [call for call in scripts.calls if call[0] == "train"]
    assert len(trains) == 12 and len(scripts.calls) == 12 + 12  # a training and an evaluation per run
    assert trains[1] == [
        "train",
        "--experiment=pose_ml_vae_quick",
        "--data.image_size=32",
        "--data.validation_instances=10",
        "--trainer.learning_rate=1e-4",
        "--method.style_dim=8",
        "--trainer.seed=1",
        "--seeds=1",
        f"--output_dir={tmp_path / 'grid' / 'learning_rate=1e-4__style_dim=8' / 'seed_1'}",
    ]
    assert scripts.checks[0][-3:] == [
        "--seeds=2",
        f"--output_dir={tmp_path / 'grid' / 'learning_rate=1e-4__style_dim=8'}",
        "--check_only=true",
    ]
    evaluations = [call for call in scripts.calls if call[0] == "evaluate"]
    assert "--pose_query_split=validation" in evaluations[0]
    assert evaluations[0][-1].endswith(os.path.join("seed_0", grid.EVAL_DIR))
    # The mean over the seeds (0 and 0.1 above the point's error) picks lr 1e-3, d 16.
    assert result["pick"]["flags"] == ["--trainer.learning_rate=1e-3", "--method.style_dim=16"]
    assert result["pick"]["mean"] == pytest.approx(5.05)
    # The command that measures the pick keeps the fixed settings and drops the hold-out.
    assert result["pick"]["train_command"] == (
        "python train.py --experiment=pose_ml_vae_quick --data.image_size=32 "
        "--trainer.learning_rate=1e-3 --method.style_dim=16 --seeds=3 "
        f"--output_dir={tmp_path / 'grid' / 'pick'}"
    )
    row = next(row for row in result["points"] if row["name"] == "learning_rate=1e-4__style_dim=32")
    assert row["values"] == pytest.approx([11.0, 11.1]) and row["std"] == pytest.approx(0.05)
    folder = tmp_path / "grid"
    assert json.load(open(folder / grid.GRID_FILE))["pick"] == result["pick"]
    table = (folder / grid.TABLE_FILE).read_text()
    assert (
        "| 1e-3 | 16 | **5.05 ± 0.05** | 5, 5.1 |" in table
        and "| 1e-4 | 8 | 12.05 ± 0.05 | 12, 12.1 |" in table
    )
    assert table.rstrip().endswith(f"`{result['pick']['train_command']}`")
    assert (folder / grid.FIGURE_FILE).stat().st_size > 0
    # "max" picks the other end.
    assert grid.summarise(dataclasses.replace(chosen, goal="max"), grid.points(chosen.axes))["pick"][
        "mean"
    ] == pytest.approx(12.05)


def test_a_killed_grid_resumes_without_training_a_finished_point_again(tmp_path):
    failing = FakeScripts(fail_on="style_dim=32")  # the third point's training dies
    with pytest.raises(RuntimeError, match="train exited with 1"):
        grid.run_grid(spec(tmp_path), pool=pool_of(failing), say=lambda line: None)
    assert len(failing.calls) == 5  # two points trained and evaluated, the third started
    # One run evaluated but not its measure written (killed while evaluating): evaluated again.
    os.remove(tmp_path / "grid" / "learning_rate=1e-4__style_dim=16" / grid.EVAL_DIR / "pose_metrics.json")
    again = FakeScripts()
    result = grid.run_grid(spec(tmp_path), pool=pool_of(again), say=lambda line: None)
    names = [call[-1] for call in again.calls]
    assert not any("style_dim=8" in name and "learning_rate=1e-4" in name for name in names)
    assert [call[0] for call in again.calls[:2]] == [
        "evaluate",
        "train",
    ]  # point 2's evaluation, point 3's run
    assert len(again.calls) == 1 + 2 * 4 and len(result["points"]) == 6


def test_every_point_is_checked_before_any_trains(tmp_path):
    refusing = FakeScripts(refuse="style_dim=32")  # train.py refuses the third point's settings
    with pytest.raises(ValueError, match="abc_tf train exited with 2: --style_dim=32 cannot work"):
        grid.run_grid(spec(tmp_path), pool=pool_of(refusing), say=lambda line: None)
    assert refusing.calls == [] and len(refusing.checks) == 3
    scripts = FakeScripts()
    grid.run_grid(spec(tmp_path), pool=pool_of(scripts), say=lambda line: None)
    assert [check[-2] for check in scripts.checks] == [
        call[-1] for call in scripts.calls if call[0] == "train"
    ]
    again = FakeScripts()
    grid.run_grid(spec(tmp_path), pool=pool_of(again), say=lambda line: None)
    assert again.checks == [] and again.calls == []  # a finished grid checks and runs nothing


@pytest.mark.slow
def test_a_failed_command_is_reported_with_its_error_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "point" / "grid_check.log"
    with pytest.raises(RuntimeError) as raised:
        parallel_runs.run_command(["train", "--method.temperature=-1", "--check_only=true"], str(log))
    assert str(raised.value) == (
        f"abc_tf train exited with 2: --method.temperature must be positive, got -1.0. (its output: {log})"
    )


def test_a_measure_the_evaluation_did_not_write_is_named(tmp_path):
    scripts = FakeScripts()
    bad = spec(tmp_path, measure=grid.Measure.parse("pose_metrics.json:domains/real/rows/x"))
    with pytest.raises(ValueError, match=r"has no 'domains/real' \(found there: synthetic\)"):
        grid.run_grid(bad, pool=pool_of(scripts), say=lambda line: None)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--vary=trainer.learning_rate=1e-3,1e-4", f"--measure={MEASURE}"], "--experiment: name the preset"),
        (
            ["--experiment=pose_ml_vae_quick", "--vary=trainer.learning_rate=1e-3"],
            "--measure: name the value",
        ),
        (["--experiment=pose_ml_vae_quick", f"--measure={MEASURE}"], "--vary: name at least one field"),
        (
            [
                "--experiment=pose_ml_vae_quick",
                "--vary=trainer.learning_rate=1e-3",
                "--measure=metrics.txt:a",
            ],
            "write FILE.json:KEY",
        ),
        (
            [
                "--experiment=pose_ml_vae_quick",
                "--vary=trainer.learning_rate=1e-3",
                f"--measure={MEASURE}",
                "--train_flags=--trainer.learning_rate=1",
            ],
            "--train_flags sets a varied field: --trainer.learning_rate=1",
        ),
        (
            ["--experiment=no_such_preset", "--vary=trainer.learning_rate=1e-3", f"--measure={MEASURE}"],
            "no_such_preset",
        ),
        (
            [
                "--experiment=pose_ml_vae_quick",
                "--vary=trainer.learning_rate=1e-3",
                f"--measure={MEASURE}",
                "--holdout_flags=--trainer.learning_rate=1",
            ],
            "--holdout_flags sets a varied field: --trainer.learning_rate=1",
        ),
        (
            [
                "--experiment=pose_ml_vae_quick",
                "--vary=trainer.learning_rate=1e-3",
                f"--measure={MEASURE}",
                "--train_flags=--model.embedding_dim=8",
            ],
            "grid.py: error: --train_flags: --model.embedding_dim was renamed --encoder.embedding_dim; "
            "write --encoder.embedding_dim=8.",
        ),
        (
            ["--experiment=pose_ml_vae_quick", "--model=s4", f"--measure={MEASURE}"],
            "grid.py: error: --model was renamed --encoder, a flag of train.py, not of grid.py.",
        ),
        (
            [
                "--experiment=pose_ml_vae_quick",
                "--vary=trainer.learning_rate=1e-3",
                f"--measure={MEASURE}",
                "--seeds=0",
            ],
            "--seeds must be a positive integer",
        ),
        (
            [
                "--experiment=pose_ml_vae_quick",
                "--vary=trainer.learning_rate=1e-3",
                f"--measure={MEASURE}",
                "--pick_seeds=0",
            ],
            "--pick_seeds must be a positive integer",
        ),
    ],
)
def test_bad_flags_are_refused_before_anything_is_trained(arguments, message, tmp_path, capsys):
    assert grid_cli.command(["grid.py", *arguments, f"--output_dir={tmp_path / 'grid'}"]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "grid").exists()


@pytest.mark.slow
def test_a_two_point_grid_through_train_py_and_evaluate_py(tmp_path, capsys):
    folder = tmp_path / "grid"
    arguments = [
        "grid.py",
        "--experiment=shapes3d_demo",
        "--vary=trainer.learning_rate=1e-3,1e-4",
        "--train_flags=--trainer.steps=4 --trainer.log_every=2 --trainer.eval_every=0 "
        "--trainer.eval_images=32 "
        "--batch.set_size=8",
        "--evaluate_flags=--mine_steps=0 --probe_epochs=1 --num_images=64 --disentanglement=none",
        "--measure=metrics.json:probe/object_hue/accuracy",
        "--goal=max",
        f"--output_dir={folder}",
    ]
    assert grid_cli.command(arguments) == 0, capsys.readouterr().err[-3000:]
    result = json.load(open(folder / grid.GRID_FILE))
    assert [row["name"] for row in result["points"]] == ["learning_rate=1e-3", "learning_rate=1e-4"]
    for row in result["points"]:
        assert 0.0 <= row["mean"] <= 1.0
        assert json.load(open(folder / row["name"] / "config.json"))["trainer"]["steps"] == 4
    assert "Pick: python train.py --experiment=shapes3d_demo" in capsys.readouterr().out
    # The same command again trains and evaluates nothing: the points are done.
    mtime = os.path.getmtime(folder / "learning_rate=1e-3" / "encoder.keras")
    assert grid_cli.command(arguments) == 0
    assert os.path.getmtime(folder / "learning_rate=1e-3" / "encoder.keras") == mtime


def test_a_widened_grid_trains_only_its_new_points(tmp_path):
    narrow = spec(tmp_path, axes=(grid.Axis.parse("trainer.learning_rate=1e-3"), spec(tmp_path).axes[1]))
    grid.run_grid(narrow, pool=pool_of(FakeScripts()), say=lambda line: None)
    # Only the evaluations are kept (as a repository keeps them): their points are not trained again.
    for point in grid.points(narrow.axes):
        for name in ("encoder.keras", "config.json"):
            os.remove(os.path.join(narrow.output_dir, point.name, name))
    again = FakeScripts()
    result = grid.run_grid(spec(tmp_path), pool=pool_of(again), say=lambda line: None)
    trained = [call[-1] for call in again.calls if call[0] == "train"]
    assert len(trained) == 3 and all("learning_rate=1e-4" in folder for folder in trained)
    assert len(again.checks) == 3 and len(result["points"]) == 6
    assert result["pick"]["name"] == "learning_rate=1e-3__style_dim=16"


def test_points_close_to_the_best_are_trained_at_another_seed_before_the_pick(tmp_path):
    scripts = FakeScripts()
    close = spec(tmp_path, train_flags=("--trainer.seed=3",), confirm_within=1.5)
    result = grid.run_grid(close, pool=pool_of(scripts), say=lambda line: None)
    # lr 1e-3 with d 16 (5.3) and d 32 (6.3) lie within 1.5 of each other; d 8 (7.3) does not.
    confirming = [call for call in scripts.calls if call[0] == "train" and call[-1].endswith("seed_1")]
    assert [call[-1] for call in confirming] == [
        f"--output_dir={tmp_path / 'grid' / name / 'seed_1'}"
        for name in ("learning_rate=1e-3__style_dim=16", "learning_rate=1e-3__style_dim=32")
    ]
    assert all("--trainer.seed=4" in call for call in confirming)  # the fixed seed, plus one
    rows = {row["name"]: row for row in result["points"]}
    assert rows["learning_rate=1e-3__style_dim=16"]["values"] == pytest.approx([5.3, 5.4])
    assert rows["learning_rate=1e-3__style_dim=8"]["values"] == pytest.approx([7.3])
    assert result["pick"]["name"] == "learning_rate=1e-3__style_dim=16"
    assert result["pick"]["mean"] == pytest.approx(5.35)
    table = (tmp_path / "grid" / grid.TABLE_FILE).read_text()
    assert (
        "points within 1.5 of the best: 1 more seed(s)" in table
        and "| 1e-3 | 16 | **5.35 ± 0.05** |" in table
    )
    # Run again, nothing trains: the confirming runs are evaluated.
    again = FakeScripts()
    assert grid.run_grid(close, pool=pool_of(again), say=lambda line: None)["pick"] == result["pick"]
    assert again.calls == []


def test_confirming_goes_on_while_the_best_moves_to_a_point_not_confirmed(tmp_path):
    def unlucky(learning_rate: str, style_dim: str, seed: int) -> float:
        """d 16 is best at its first seed only; d 32 holds at both."""
        if learning_rate == "1e-4":
            return 20.0
        return {("16", 0): 5.0, ("16", 1): 8.0, ("32", 0): 6.0, ("32", 1): 6.2}.get((style_dim, seed), 9.0)

    scripts = FakeScripts(errors=unlucky)
    result = grid.run_grid(
        spec(tmp_path, train_flags=("--trainer.seed=0",), confirm_within=0.5),
        pool=pool_of(scripts),
        say=lambda line: None,
    )
    confirmed = [call[-1] for call in scripts.calls if call[0] == "train" and call[-1].endswith("seed_1")]
    assert [os.path.basename(os.path.dirname(folder)) for folder in confirmed] == [
        "learning_rate=1e-3__style_dim=16",  # 5.0 alone; its second seed makes it 6.5
        "learning_rate=1e-3__style_dim=32",  # then the best, so confirmed too: 6.1
    ]
    assert result["pick"]["name"] == "learning_rate=1e-3__style_dim=32"
    assert result["pick"]["mean"] == pytest.approx(6.1)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"confirm_within": -1.0}, "--confirm_within must be 0"),
        ({"confirm_within": float("nan")}, "--confirm_within must be 0"),
        ({"confirm_seeds": 0}, "--confirm_seeds must be a positive integer"),
    ],
)
def test_a_bad_confirmation_is_refused(overrides, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        spec(tmp_path, **overrides).validate()

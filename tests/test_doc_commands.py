"""scripts/doc_commands.py: finding the docs' train.py, evaluate.py, curves.py and compare.py
commands and rewriting them to run fast in a scratch folder. No training runs here."""

from __future__ import annotations

import os
import subprocess
import sys

from scripts import doc_commands

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DOC = """# Doc

Prose with `python train.py --experiment=inline` is not a code block.

```
FAST="--method.temperature=0.5"
python train.py --experiment=mnist --data.path=data/mnist \\
    --trainer.steps=500 --output_dir=runs/a   # two lines and a comment
python train.py --experiment=pose_quick $FAST --trainer.log_every=7 --seeds=2
python train.py --experiment=mnist --data.path=/path/to/mnist --output_dir=runs/b
python compare.py --runs=runs/a+runs/pose_quick,runs/a@appearance --untrained \\
    --output_dir=runs/cmp --mine_steps=5000
python evaluate.py --run_dir=runs/b
python curves.py --run_dir=runs/pose_quick/seed_1 --checkpoints=100,200
```

    python -m pip install .
    python train.py --experiment=<preset> --trainer.steps=<more> [--seeds=N]
"""


def planned(tmp_path):
    (tmp_path / "data" / "mnist").mkdir(parents=True)
    (tmp_path / "doc.md").write_text(DOC)
    commands = doc_commands.extract(str(tmp_path / "doc.md"), "doc.md")
    return commands, doc_commands.plan(commands, "/scratch", root=str(tmp_path))


def test_extraction_joins_lines_drops_comments_and_keeps_line_numbers(tmp_path):
    commands, _ = planned(tmp_path)
    assert [c.where for c in commands] == [f"doc.md:{n}" for n in (7, 9, 10, 11, 13, 14, 18)]
    assert commands[0].text == (
        "python train.py --experiment=mnist --data.path=data/mnist --trainer.steps=500 --output_dir=runs/a"
    )
    assert commands[1].text.startswith("python train.py --experiment=pose_quick $FAST")


def test_train_commands_run_two_steps_in_the_scratch_folder(tmp_path):
    _, (first, second, third, *_) = planned(tmp_path)
    assert first.args == [
        "train.py",
        "--experiment=mnist",
        "--data.path=data/mnist",
        "--output_dir=/scratch/runs/a",
        *(f"--{k}={v}" for k, v in doc_commands.TRAIN_FAST.items()),
    ]
    assert not first.skip
    # No --output_dir: train.py's runs/<experiment>; $FAST expanded; --seeds kept.
    assert second.args[1:4] == ["--experiment=pose_quick", "--method.temperature=0.5", "--seeds=2"]
    assert "--output_dir=/scratch/runs/pose_quick" in second.args
    assert "--trainer.log_every=7" not in second.args and "--trainer.log_every=1" in second.args
    assert third.skip == "needs --data.path=/path/to/mnist"
    # pose_quick titrates every 100 steps, which a two-step run would refuse: scaled as if given.
    assert "--data.titration_interval=1" in second.args and "--data.titration_interval=1" not in first.args


def test_a_step_count_only_the_preset_sets_is_scaled_when_the_run_would_refuse_it():
    assert doc_commands.preset_step_counts(["--experiment=pose_quick"]) == ["data.titration_interval"]
    assert doc_commands.preset_step_counts(["--experiment=pose_quick", "--data.titration_interval=0"]) == []
    assert doc_commands.preset_step_counts(["--experiment=pose_lord_quick"]) == [
        "data.titration_interval",
        "method.stage1_steps",
    ]
    assert doc_commands.preset_step_counts(["--experiment=mnist"]) == []
    assert doc_commands.preset_step_counts(["--experiment=no_such_preset"]) == []


def test_evaluate_commands_read_what_earlier_commands_wrote(tmp_path):
    *_, compare, needs_skipped, curve, placeholder = planned(tmp_path)[1]
    assert compare.args[0] == "compare.py"
    assert "--runs=/scratch/runs/a+/scratch/runs/pose_quick,/scratch/runs/a@appearance" in compare.args
    assert "--output_dir=/scratch/runs/cmp" in compare.args and "--untrained" in compare.args
    assert "--mine_steps=10" in compare.args and "--mine_steps=5000" not in compare.args
    # A comparison takes no flag of one run's evaluation: the pose and sweep settings are left out.
    assert not any(arg.startswith(("--pose_", "--num_sigmas")) for arg in compare.args)
    assert not compare.skip
    assert (
        needs_skipped.skip == "needs runs/b (no earlier command writes it)"
    )  # its train command was skipped
    assert curve.args[0] == "curves.py" and "--pose_repeats=1" in curve.args
    assert not curve.skip and "--checkpoints=all" in curve.args  # a seed of a --seeds run
    assert placeholder.skip == "needs <preset>"  # --trainer.steps=<more> is replaced; [--seeds=N] is optional
    assert "--seeds=N" not in " ".join(placeholder.args)


def test_list_finds_the_readme_train_commands():
    done = subprocess.run(
        [sys.executable, "-m", "scripts.doc_commands", "--list"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert any(
        line.startswith("README.md:") and "python train.py" in line for line in done.stdout.splitlines()
    )

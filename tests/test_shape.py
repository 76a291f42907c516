"""The proof of the shape: a data family with its own task and labelled
sample (tests/toy_family.py) and a method with two networks and two optimizers
(tests/toy_method.py), neither known to the package, registered at test time as a user
registers theirs, go through train.py (trained, killed, resumed) and evaluate.py (evaluated,
compared with ABC) with no edit anywhere in the package."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
from absl import logging

import toy_family
import train
from abc_tf import data, methods
from abc_tf.evaluation import tasks
from abc_tf.runs import checkpoints
from evaluate_helpers import evaluate_each
from process_helpers import start_code, wait_for_marker

REGISTER = (
    "from abc_tf import data, methods; from abc_tf.evaluation import tasks; import toy_family; "
    "data.DATA_FAMILIES['toy'] = ('toy_family', 'toy_family:ToyConfig'); methods.METHODS['two_network'] = ('toy_method:TWO_NETWORK', 'toy_method:TwoNetworkConfig'); "
    "tasks.TASKS[toy_family.TASK_NAME] = toy_family.TASK; "
)
# train.py in a child, the toy parts registered; after its second checkpoint (step 20) it writes
# the marker file ARGV[1] and waits to be killed (the isolation callback replaced by the hold).
TRAIN_HELD_AFTER_SECOND_CHECKPOINT = REGISTER + (
    "import sys, keras; from absl import app; from abc_tf import callbacks; from process_helpers import hold; "
    "marker = sys.argv.pop(1); callbacks.evaluation_callbacks = lambda config, run_dir: "
    "[keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: epoch == 1 and hold(marker))]; "
    "import train; sys.argv[0] = 'train.py'; app.run(train.main, flags_parser=train.parse_flags)"
)
FLAGS = ["--experiment=shapes3d", "--data=toy", "--model=s4", "--model.embedding_dim=8", "--batch.set_size=12",
         "--batch.pairs_per_step=2", "--method.temperature=0.1", "--trainer.learning_rate=1e-3", "--trainer.steps=40", "--trainer.log_every=10",
         "--trainer.eval_images=64"]


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(data.DATA_FAMILIES, "toy", ("toy_family", "toy_family:ToyConfig"))
    monkeypatch.setitem(methods.METHODS, "two_network", ("toy_method:TWO_NETWORK", "toy_method:TwoNetworkConfig"))
    monkeypatch.setitem(tasks.TASKS, toy_family.TASK_NAME, toy_family.TASK)


def run_train(monkeypatch, capsys, *flags: str) -> str:
    """train.py's command line in this process; its stdout (SystemExit fails the test)."""
    argv = ["train.py", *flags]
    monkeypatch.setattr(sys, "argv", argv)
    verbosity = logging.get_verbosity()
    try:
        train.main(train.parse_flags(argv))
    finally:
        train.FLAGS.unparse_flags()
        logging.set_verbosity(verbosity)
    return capsys.readouterr().out


def test_a_new_family_and_method_train_resume_evaluate_and_compare_with_abc(registered, monkeypatch, capsys, tmp_path):
    gan_like, abc = tmp_path / "two_network", tmp_path / "abc"
    two_network = [*FLAGS, "--method=two_network", f"--output_dir={gan_like}"]
    marker = tmp_path / "second_checkpoint"
    process = start_code(TRAIN_HELD_AFTER_SECOND_CHECKPOINT, str(marker), *two_network, cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    wait_for_marker(process, marker)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    assert [step for step, _ in checkpoints.list_checkpoints(str(gan_like))] == [10, 20]

    # The same command resumes from step 20; the family's labelled sample feeds the isolation
    # callback and the run's summary through the task the family declares.
    resumed = run_train(monkeypatch, capsys, *two_network)
    assert f"Resuming {gan_like} from its checkpoint at step 20 of 40." in resumed
    summary = json.loads((gan_like / "isolation_summary.json").read_text())
    assert [(row["factor"], row["trained_as"]) for row in summary["factors"]] == [
        ("position", "active"), ("background", "inactive")]
    assert (gan_like / "decoder.keras").exists() and (gan_like / "encoder.keras").exists()
    run_train(monkeypatch, capsys, *FLAGS, "--method=abc", f"--output_dir={abc}")

    evaluated, compared = evaluate_each([
        (tmp_path, [f"--run_dir={gan_like}", "--num_images=64"]),
        (tmp_path, [f"--compare={gan_like},{abc}", "--compare_untrained", f"--output_dir={tmp_path / 'compared'}",
                    "--num_images=64", "--mine_steps=0", "--probe_epochs=1"]),
    ])
    assert evaluated["code"] == 0, evaluated["stderr"][-3000:]
    metrics = json.loads((gan_like / "metrics.json").read_text())
    assert 0.0 <= metrics["position_1nn"] <= 1.0 and (gan_like / "pca.png").exists()
    assert compared["code"] == 0, compared["stderr"][-3000:]
    result = json.loads((tmp_path / "compared" / "comparison.json").read_text())
    assert result["factors"] == ["position", "background"]
    assert [(row["label"], row["inactive"]) for row in result["rows"]] == [
        ("two_network", ["background"]), ("abc", ["background"]), ("untrained", [])]
    # Labels, not a factor grid: the disentanglement scores say why they were not computed.
    assert "has no known factors" in result["rows"][0]["disentanglement_skipped"]["mig"]
    assert "position" in (tmp_path / "compared" / "comparison.md").read_text()

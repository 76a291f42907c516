"""The proof of the shape, as a plug-in: a throw-away distribution written into a temporary
folder, with an ``entry_points.txt`` that names a data family (tests/toy_family.py: its own task
and labelled sample) and a method with two networks and two optimizers (tests/toy_method.py),
is put on the path, and its family and method are found by ``abc_tf.data`` and
``abc_tf.methods`` as any installed distribution's would be. They go through train.py (trained,
SIGKILLed, resumed), evaluate.py (evaluated) and compare.py (compared with ABC) with no file of this
repository changed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from absl import logging

from abc_tf.cli import compare, train
from abc_tf import data, methods, registry
from abc_tf.runs import checkpoints
from evaluate_helpers import evaluate_each
from process_helpers import ENV, start_code, wait_for_marker

# The distribution: a package per plug-in (its declaration module inside it), here re-exporting
# the tests' toy declarations, and the metadata pip writes.
DISTRIBUTION = {
    "abc_plugin_toys/__init__.py": "",
    "abc_plugin_toys/toy/__init__.py": "",
    "abc_plugin_toys/toy/family.py": "from toy_family import FAMILY  # noqa: F401\n",
    "abc_plugin_toys/two_network/__init__.py": "",
    "abc_plugin_toys/two_network/model.py": "from toy_method import TWO_NETWORK as METHOD  # noqa: F401\n",
    "abc_plugin_toys-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: abc-plugin-toys\nVersion: 0.1\n",
    "abc_plugin_toys-0.1.dist-info/entry_points.txt": (
        "[abc_tf.data]\ntoy = abc_plugin_toys.toy\n\n"
        "[abc_tf.methods]\ntwo_network = abc_plugin_toys.two_network\n"
    ),
}
# train.py in a child; after its second checkpoint (step 20) it writes the marker file ARGV[1]
# and waits to be killed (the isolation callback replaced by the hold).
TRAIN_HELD_AFTER_SECOND_CHECKPOINT = (
    "import sys, keras; from absl import app; from abc_tf.evaluation import callbacks; "
    "from process_helpers import hold; "
    "marker = sys.argv.pop(1); callbacks.evaluation_callbacks = lambda config, run_dir: "
    "[keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: epoch == 1 and hold(marker))]; "
    "from abc_tf.cli import train; sys.argv[0] = 'train.py'; "
    "app.run(train.main, flags_parser=train.parse_flags)"
)
FLAGS = [
    "--experiment=shapes3d",
    "--data=toy",
    "--encoder=s4",
    "--encoder.embedding_dim=8",
    "--batch.set_size=12",
    "--batch.pairs_per_step=2",
    "--method.temperature=0.1",
    "--trainer.learning_rate=1e-3",
    "--trainer.steps=40",
    "--trainer.log_every=10",
    "--trainer.eval_images=64",
]


def write_distribution(site) -> str:
    for name, text in DISTRIBUTION.items():
        path = site / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(site)


@pytest.fixture
def installed(monkeypatch, tmp_path) -> str:
    """The distribution on this process's path, and the registries found again as a new process
    finds them (``abc_tf.data`` and ``abc_tf.methods`` discover at import)."""
    site = write_distribution(tmp_path / "site")
    monkeypatch.syspath_prepend(site)
    monkeypatch.setattr(
        data,
        "DATA_FAMILIES",
        registry.discover(
            data.__name__, data.__path__, data.ENTRY_POINT_GROUP, "family:FAMILY", "data family"
        ),
    )
    monkeypatch.setattr(
        methods,
        "METHODS",
        registry.discover(
            methods.__name__, methods.__path__, methods.ENTRY_POINT_GROUP, "model:METHOD", "method"
        ),
    )
    return site


def test_the_distribution_s_family_and_method_are_found_by_their_entry_points(installed):
    assert data.DATA_FAMILIES["toy"] == ("abc_plugin_toys.toy.family:FAMILY", "abc_plugin_toys.toy")
    assert methods.get_method("two_network").name == "two_network" and data.get_family("toy").name == "toy"
    assert {"abc", "pmp", "shapes3d", "mnist"} <= set(methods.METHODS) | set(data.DATA_FAMILIES)


def test_an_entry_point_that_takes_a_built_in_name_or_names_an_attribute_is_skipped_with_a_warning(
    tmp_path, monkeypatch
):
    site = tmp_path / "site"
    (site / "clash-0.1.dist-info").mkdir(parents=True)
    (site / "clash-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: clash\nVersion: 0.1\n"
    )
    points = site / "clash-0.1.dist-info" / "entry_points.txt"
    monkeypatch.syspath_prepend(str(site))
    discover = lambda: registry.discover(  # noqa: E731
        methods.__name__, methods.__path__, methods.ENTRY_POINT_GROUP, "model:METHOD", "method"
    )
    points.write_text("[abc_tf.methods]\nabc = their_package.abc\n")
    with pytest.warns(
        UserWarning,
        match=r"entry point 'abc' = 'their_package.abc' of the distribution clash is also the "
        r"name of the method in abc_tf.methods.abc; rename it",
    ):
        assert discover()["abc"].package == "abc_tf.methods.abc"  # the built-in keeps its name
    points.write_text("[abc_tf.methods]\ntheirs = their_package:METHOD\n")
    with pytest.warns(UserWarning, match="a method entry point names a package"):
        assert "theirs" not in discover()


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


@pytest.mark.slow
def test_a_plug_in_family_and_method_train_resume_evaluate_and_compare_with_abc(
    installed, monkeypatch, capsys, tmp_path
):
    gan_like, abc = tmp_path / "two_network", tmp_path / "abc"
    two_network = [*FLAGS, "--method=two_network", f"--output_dir={gan_like}"]
    marker = tmp_path / "second_checkpoint"
    # A fresh process finds the plug-ins through the distribution's entry points alone.
    env = {**ENV, "PYTHONPATH": os.pathsep.join([installed, ENV["PYTHONPATH"]])}
    process = start_code(
        TRAIN_HELD_AFTER_SECOND_CHECKPOINT,
        str(marker),
        *two_network,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
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
        ("position", "active"),
        ("background", "inactive"),
    ]
    assert (gan_like / "decoder.keras").exists() and (gan_like / "encoder.keras").exists()
    run_train(monkeypatch, capsys, *FLAGS, "--method=abc", f"--output_dir={abc}")

    [evaluated] = evaluate_each([(tmp_path, [f"--run_dir={gan_like}", "--num_images=64"])])
    capsys.readouterr()
    compared = {
        "code": compare.command(
            [
                "compare.py",
                f"--runs={gan_like},{abc}",
                "--untrained",
                f"--output_dir={tmp_path / 'compared'}",
                "--num_images=64",
                "--mine_steps=0",
                "--probe_epochs=1",
            ]
        ),
        "stderr": capsys.readouterr().err,
    }
    assert evaluated["code"] == 0, evaluated["stderr"][-3000:]
    metrics = json.loads((gan_like / "metrics.json").read_text())
    assert 0.0 <= metrics["position_1nn"] <= 1.0 and (gan_like / "pca.png").exists()
    assert compared["code"] == 0, compared["stderr"][-3000:]
    result = json.loads((tmp_path / "compared" / "comparison.json").read_text())
    assert result["factors"] == ["position", "background"]
    assert [(row["label"], row["inactive"]) for row in result["rows"]] == [
        ("two_network", ["background"]),
        ("abc", ["background"]),
        ("untrained", []),
    ]
    # Labels, not a factor grid: the disentanglement scores say why they were not computed.
    assert "has no known factors" in result["rows"][0]["disentanglement_skipped"]["mig"]
    assert "position" in (tmp_path / "compared" / "comparison.md").read_text()

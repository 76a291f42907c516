"""evaluate.py: a bad flag or a damaged run directory stops with one clear line (exit 2, no
traceback) before any run is evaluated. docs/errors.md lists the same cases for users.

evaluate.py keeps its flags apart from absl's global ones (train.py's), so its command line
runs in the test process (``evaluate.run``, tests/evaluate_helpers.py); one test runs it as a
real process. Whole evaluations: tests/test_methods.py and the tasks' own tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from typing import NamedTuple

import pytest

from abc_tf.runs.experiments import get_preset
from abc_tf.runs import run_lock
from evaluate_helpers import evaluate_each
from process_helpers import assert_one_clear_error, modules_loaded_by, run_script


class Case(NamedTuple):
    flags: list[str]  # {run}: the case's run directory; {missing}: a path that does not exist
    message: str  # {config} and {encoder}: the run directory's files
    config: str = (
        "{}"  # config.json of the run directory (by default never read: the flags are refused first)
    )
    empty_encoder: bool = False  # encoder.keras as a kill during its export leaves it
    locked: bool = False  # a train.py (this test process) holds the run directory while the child evaluates


CASES = {
    "no run": Case([], "Pass --run_dir (a train.py run directory) or --saved_model."),
    "missing run_dir": Case(["--run_dir={missing}"], "is not a directory"),
    "missing saved_model": Case(
        ["--saved_model={missing}"], "is not a SavedModel folder (no saved_model.pb)"
    ),
    "seeds": Case(["--run_dir={run}", "--seeds=-1"], "--seeds must be >= 0, got -1"),
    "num_images": Case(["--run_dir={run}", "--num_images=5"], "num_images must be at least 10, got 5"),
    "negative mine_steps": Case(
        ["--run_dir={run}", "--mine_steps=-5"], "--mine_steps must be >= 0 (0: skip), got -5"
    ),
    "negative probe_epochs": Case(
        ["--run_dir={run}", "--probe_epochs=-1"], "--probe_epochs must be >= 0 (0: skip), got -1"
    ),
    "mine_batch_size": Case(
        ["--run_dir={run}", "--mine_batch_size=0"], "MINE batch_size must be a positive integer, got 0"
    ),
    "num_sigmas": Case(
        ["--run_dir={run}", "--probe_epochs=5", "--num_sigmas=1"],
        "num_sigmas must be 0 (no sweep) or at least 2",
    ),
    "pose_repeats": Case(
        ["--run_dir={run}", "--pose_repeats=0"], "Pose evaluation repeats must be positive, got 0"
    ),
    "pose_query_domains": Case(
        ["--run_dir={run}", "--pose_query_domains=real,imaginary"],
        "query_domains must name 'real' and/or 'synthetic'",
    ),
    "pose_pool_size": Case(
        ["--run_dir={run}", "--pose_dictionary_size=100", "--pose_pool_size=50"],
        "pool_size (50) must be at least dictionary_size (100)",
    ),
    # Cut off by a full disk, beside an encoder file (without one the run is simply unfinished).
    "damaged config.json": Case(
        ["--run_dir={run}"],
        "{config} is not a readable run config",
        config='{"name": "shapes3d", "steps": 6',
        empty_encoder=True,
    ),
    "empty encoder.keras": Case(
        ["--run_dir={run}", "--mine_steps=0", "--probe_epochs=1", "--num_images=16"],
        "{encoder} is empty (the run was stopped while exporting it)",
        config=get_preset("shapes3d_demo").to_json(),
        empty_encoder=True,
    ),
    # The other commands' flags: absl's unknown-flag line (abc_tf curves, abc_tf compare).
    "checkpoints": Case(["--run_dir={run}", "--checkpoints=all"], "Unknown command line flag 'checkpoints'"),
    "compare": Case(["--compare={run},{run}"], "Unknown command line flag 'compare'"),
    "run in training": Case(
        ["--run_dir={run}", "--mine_steps=0", "--probe_epochs=1", "--num_images=16"],
        "run directory {run} is in use by train.py (pid {pid} on host {host}, since ",
        config=get_preset("shapes3d_demo").to_json(),
        empty_encoder=True,
        locked=True,
    ),
    "empty output_dir": Case(
        ["--run_dir={run}", "--output_dir="],
        "--output_dir is empty (an unset shell variable?); name a folder",
    ),
    "empty run_dir": Case(["--run_dir="], "--run_dir is empty (an unset shell variable?); name a folder"),
    # /sys takes no new file, even from root (a read-only folder would not stop root).
    "unwritable output_dir": Case(
        ["--run_dir={run}", "--output_dir=/sys/abc_tf_evaluation"],
        "--output_dir=/sys/abc_tf_evaluation cannot be written: creating a file in /sys failed (",
        config=get_preset("shapes3d_demo").to_json(),
        empty_encoder=True,
    ),
    "wrong type": Case(
        ["--run_dir={run}", "--mine_steps=2e4"],
        "--mine_steps=2e4 is not an integer; write it in digits: --mine_steps=20000.",
    ),
    "not a boolean": Case(
        ["--run_dir={run}", "--untrained=maybe"],
        "--untrained=maybe is not true or false; pass --untrained, --nountrained",
    ),
    "unknown flag": Case(
        ["--run_dir={run}", "--mine_step=5"],
        "Unknown command line flag 'mine_step'. Did you mean: mine_steps ? (--help lists the flags).",
    ),
    "missing network": Case(
        ["--run_dir={run}", "--network=appearance"],
        "--network=appearance: {run} has no appearance.keras",
        config=get_preset("shapes3d_demo").to_json(),
        empty_encoder=True,
    ),
}


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory) -> dict[str, tuple[dict, str, object]]:
    """Every case run once: name -> ({"code", "stderr"}, message, run directory)."""
    root = tmp_path_factory.mktemp("evaluate")
    runs, messages, arguments = {}, {}, []
    for index, (name, case) in enumerate(CASES.items()):
        folder = root / f"case_{index}"
        run_dir = folder / "run"
        run_dir.mkdir(parents=True)
        (run_dir / "config.json").write_text(case.config)
        if case.empty_encoder:
            (run_dir / "encoder.keras").write_bytes(b"")
        values = {
            "run": run_dir,
            "missing": folder / "missing",
            "config": run_dir / "config.json",
            "encoder": run_dir / "encoder.keras",
            "pid": os.getpid(),
            "host": socket.gethostname(),
        }
        runs[name], messages[name] = run_dir, case.message.format(**values)
        arguments.append((str(folder), [flag.format(**values) for flag in case.flags]))
    with contextlib.ExitStack() as locks:
        for name, case in CASES.items():
            if case.locked:
                locks.enter_context(run_lock.RunLock(str(runs[name]), command="train.py"))
        outputs = evaluate_each(arguments)
    return {name: (output, messages[name], runs[name]) for name, output in zip(CASES, outputs)}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_flags_and_run_directories_fail_with_one_line(evaluated, name):
    output, message, run_dir = evaluated[name]
    assert_one_clear_error(output["code"], output["stderr"], message)
    assert not (run_dir / "metrics.json").exists()


@pytest.mark.slow
def test_the_command_line_exits_2_with_one_line_and_no_traceback(tmp_path):
    result = run_script("evaluate.py", "--num_images=5", f"--run_dir={tmp_path}", cwd=tmp_path)
    assert_one_clear_error(
        result.returncode, result.stderr, "evaluate.py: error: num_images must be at least 10, got 5"
    )
    assert not (tmp_path / "metrics.json").exists()


@pytest.mark.parametrize(
    "flags,expected_code,answer",
    [
        (["--help"], 0, "--run_dir: Run directory written by train.py"),
        (["--num_images=many"], 2, "evaluate.py: error: --num_images=many is not an integer."),
    ],
    ids=["--help", "--num_images=many"],
)
def test_help_and_flag_errors_answer_without_loading_tensorflow(flags, expected_code, answer):
    code, output, modules = modules_loaded_by("evaluate.py", *flags)
    assert code == expected_code and answer in output, output[-3000:]
    assert not {"tensorflow", "keras"} & modules


@pytest.mark.slow
def test_an_mnist_run_is_evaluated_with_the_network_asked_for(tmp_path, small_mnist):
    """evaluate.py on a tiny MNIST run: the style measures, the digit-cluster measures every
    method gets, and --network choosing another saved representation (a VITAE's appearance)."""
    import numpy as np

    from abc_tf.runs import training

    np.savez(tmp_path / "mnist.npz", **small_mnist)
    config = get_preset("mnist").replace(path=str(tmp_path / "mnist.npz"), embedding_dim=4)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(config.to_json())
    training.untrained_encoder(config).save(str(run_dir / "encoder.keras"))
    training.untrained_encoder(config.replace(embedding_dim=3, seed=1)).save(
        str(run_dir / "appearance.keras")
    )
    [result] = evaluate_each(
        [
            (
                tmp_path,
                [
                    f"--run_dir={run_dir}",
                    "--network=appearance",
                    f"--output_dir={tmp_path / 'out'}",
                    "--probe_epochs=1",
                    "--mine_steps=0",
                    "--disentanglement=none",
                ],
            )
        ]
    )
    assert result["code"] == 0, result["stderr"][-3000:]
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert set(metrics["digit_clusters"]) == {"nearest_neighbour_accuracy", "kmeans_nmi", "num_images"}
    assert metrics["digit_clusters"]["num_images"] == len(small_mnist["y_test"])
    assert set(metrics["untrained"]["digit_clusters"]) == set(metrics["digit_clusters"])
    assert (
        len(metrics["trained"]["pca_explained_variance_ratio"]) == 3
    )  # the appearance network's 3 dimensions

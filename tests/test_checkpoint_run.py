"""abc_tf.runs.checkpoint_run: a run read at one of its checkpoints, for learning curves."""

from __future__ import annotations

import numpy as np
import pytest

from abc_tf.runs import checkpoint_run, training
from abc_tf.runs.run_dir import load_run
from toy_family import CONFIG as TOY


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    from abc_tf import data

    data.DATA_FAMILIES["toy"] = "toy_family:FAMILY"
    try:
        run_dir = str(tmp_path_factory.mktemp("curve") / "run")
        training.train(TOY.replace(keep_checkpoints=4), run_dir, verbose=0)  # checkpoints at 10, 20, 30, 40
        yield run_dir
    finally:
        del data.DATA_FAMILIES["toy"]


def test_steps_are_chosen_among_those_kept(toy_run):
    assert checkpoint_run.select_steps(toy_run, "all") == [10, 20, 30, 40]
    assert checkpoint_run.select_steps(toy_run, "last") == [40]
    assert checkpoint_run.select_steps(toy_run, "30,10") == [10, 30]
    with pytest.raises(
        ValueError,
        match=r"no checkpoint of step 15 \(kept: 10, 20, 30, 40; "
        r"train with a larger --trainer.keep_checkpoints",
    ):
        checkpoint_run.select_steps(toy_run, "10,15")
    with pytest.raises(ValueError, match="give all, last, or steps separated by commas"):
        checkpoint_run.select_steps(toy_run, "every")


def test_a_run_without_checkpoints_is_refused(tmp_path):
    with pytest.raises(ValueError, match="keeps no checkpoint"):
        checkpoint_run.select_steps(str(tmp_path), "all")


def test_the_last_checkpoint_holds_the_finished_run_s_networks_and_an_earlier_one_others(toy_run, toy_family):
    last = checkpoint_run.load_checkpoint_run(toy_run, 40)
    finished = load_run(toy_run)
    assert last.step == 40 and last.network("encoder") is last.encoder
    # The same saved float32 values: restored, not recomputed.
    for restored, saved in zip(last.encoder.get_weights(), finished.encoder.get_weights()):
        np.testing.assert_array_equal(restored, saved)
    first = checkpoint_run.load_checkpoint_run(toy_run, 10)
    assert any(
        not np.array_equal(a, b) for a, b in zip(first.encoder.get_weights(), last.encoder.get_weights())
    )
    assert first.network("no_such_network") is None


def test_restoring_a_step_the_run_does_not_keep_names_the_steps_kept(toy_run, toy_family):
    from abc_tf.runs import checkpoints

    model = training.build_model(TOY)
    with pytest.raises(ValueError, match=r"has no checkpoint of step 15 \(steps kept: 10, 20, 30, 40\)"):
        checkpoints.restore(model, toy_run, step=15)
    assert checkpoints.restore(model, toy_run, step=20) == 20

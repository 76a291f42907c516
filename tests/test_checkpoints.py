"""abc_tf.checkpoints: atomic writes, pruning, fallback past a damaged checkpoint."""

import os

import keras
import numpy as np
import pytest

from abc_tf import checkpoints


def trained_model(steps: int, seed: int = 0) -> keras.Model:
    """A small compiled model after ``steps`` Adam updates (so the optimizer has state)."""
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    if steps:
        rng = np.random.default_rng(seed)
        model.fit(rng.normal(size=(8 * steps, 4)), rng.normal(size=(8 * steps, 1)), batch_size=8, epochs=1, verbose=0)
    return model


def optimizer_state(model: keras.Model) -> list[np.ndarray]:
    return [keras.ops.convert_to_numpy(v) for v in model.optimizer.variables]


def assert_same_state(model: keras.Model, other: keras.Model) -> None:
    for mine, theirs in zip(model.get_weights() + optimizer_state(model), other.get_weights() + optimizer_state(other)):
        np.testing.assert_array_equal(mine, theirs)


def test_restore_brings_back_weights_and_optimizer_state(tmp_path):
    model = trained_model(5)
    checkpoints.save(model, str(tmp_path), step=5, keep=2)
    fresh = trained_model(0, seed=1)
    assert checkpoints.restore(fresh, str(tmp_path)) == 5
    assert int(fresh.optimizer.iterations.numpy()) == 5
    assert_same_state(fresh, model)


def test_only_the_newest_checkpoints_are_kept(tmp_path):
    model = trained_model(1)
    for step in (1, 2, 3, 4):
        model.optimizer.iterations.assign(step)
        checkpoints.save(model, str(tmp_path), step=step, keep=2)
    assert [step for step, _ in checkpoints.list_checkpoints(str(tmp_path))] == [3, 4]
    assert sorted(os.listdir(checkpoints.checkpoint_dir(str(tmp_path)))) == ["step_00000003", "step_00000004"]


def test_a_new_run_has_nothing_to_restore(tmp_path):
    model = trained_model(0)
    assert checkpoints.restore(model, str(tmp_path / "new")) == 0
    assert int(model.optimizer.iterations.numpy()) == 0


def test_a_save_cut_short_leaves_the_previous_checkpoint_in_charge(tmp_path, monkeypatch):
    model = trained_model(3)
    checkpoints.save(model, str(tmp_path), step=3, keep=2)
    model.fit(np.ones((8, 4)), np.ones((8, 1)), verbose=0)  # step 4, other weights

    def killed(*args):
        raise KeyboardInterrupt("killed between writing and renaming")

    monkeypatch.setattr(checkpoints.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        checkpoints.save(model, str(tmp_path), step=4, keep=2)
    monkeypatch.undo()
    directory = checkpoints.checkpoint_dir(str(tmp_path))
    assert ".partial_step_00000004" in os.listdir(directory)
    assert [step for step, _ in checkpoints.list_checkpoints(str(tmp_path))] == [3]

    fresh = trained_model(0, seed=1)
    assert checkpoints.restore(fresh, str(tmp_path)) == 3
    checkpoints.save(fresh, str(tmp_path), step=3, keep=2)
    assert os.listdir(directory) == ["step_00000003"]  # the next save clears the partial write away


def test_an_unreadable_checkpoint_falls_back_to_the_one_before(tmp_path):
    model = trained_model(2)
    checkpoints.save(model, str(tmp_path), step=2, keep=2)
    expected = [w.copy() for w in model.get_weights()]
    model.fit(np.ones((8, 4)), np.ones((8, 1)), verbose=0)
    newest = checkpoints.save(model, str(tmp_path), step=3, keep=2)
    weights = os.path.join(newest, checkpoints.WEIGHTS_FILE)
    with open(weights, "r+b") as handle:  # a damaged disk: the file is cut in half
        handle.truncate(os.path.getsize(weights) // 2)

    fresh = trained_model(0, seed=1)
    with pytest.warns(UserWarning, match="step_00000003 could not be read"):
        assert checkpoints.restore(fresh, str(tmp_path)) == 2
    for mine, theirs in zip(fresh.get_weights(), expected):
        np.testing.assert_array_equal(mine, theirs)


def test_no_readable_checkpoint_is_a_clear_error(tmp_path):
    model = trained_model(1)
    folder = checkpoints.save(model, str(tmp_path), step=1, keep=2)
    with open(os.path.join(folder, checkpoints.WEIGHTS_FILE), "wb") as handle:
        handle.write(b"not a weights file")
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="remove the folder to train from the start"):
        checkpoints.restore(trained_model(0), str(tmp_path))

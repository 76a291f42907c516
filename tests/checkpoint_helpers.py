"""Small compiled models saved as checkpoints, and what a run directory's checkpoints are, for the
tests of abc_tf.runs.checkpoints, checkpoint_files and checkpoint_contents."""

from __future__ import annotations

import os

import keras
import numpy as np

from abc_tf.runs import checkpoint_files, checkpoints


def trained_model(steps: int, seed: int = 0) -> keras.Model:
    """A small compiled model after ``steps`` Adam updates (so the optimizer has state)."""
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    if steps:
        rng = np.random.default_rng(seed)
        model.fit(
            rng.normal(size=(8 * steps, 4)),
            rng.normal(size=(8 * steps, 1)),
            batch_size=8,
            epochs=1,
            verbose=0,
        )
    return model


def optimizer_state(model: keras.Model) -> list[np.ndarray]:
    return [keras.ops.convert_to_numpy(v) for v in model.optimizer.variables]


def assert_same_state(model: keras.Model, other: keras.Model) -> None:
    for mine, theirs in zip(
        model.get_weights() + optimizer_state(model), other.get_weights() + optimizer_state(other)
    ):
        np.testing.assert_array_equal(mine, theirs)


def files(run_dir) -> list[str]:
    return sorted(os.listdir(checkpoint_files.checkpoint_dir(str(run_dir))))


def steps(run_dir) -> list[int]:
    return [step for step, _ in checkpoint_files.list_checkpoints(str(run_dir))]


def saved_steps(run_dir, *numbers: int) -> keras.Model:
    """A model saved at each of ``numbers`` (keep 3) into ``run_dir``; returned at the last step."""
    model = trained_model(1)
    for step in numbers:
        model.optimizer.iterations.assign(step)
        checkpoints.save(model, str(run_dir), step=step, keep=3)
    return model

"""Training checkpoints that a kill at any moment cannot leave half-written.

Layout, inside a run directory::

  checkpoints/step_00000400/weights.weights.h5   model and optimizer state (Keras weights file)
  checkpoints/step_00000400/state.json           {"step": 400}
  checkpoints/step_00000500/...

A checkpoint is written into ``checkpoints/.partial_step_<n>/``, flushed to disk, and only then
renamed to ``step_<n>``; a rename within one file system is atomic, so every ``step_*`` folder
is complete. Only the newest ``keep`` are kept. Keras's BackupAndRestore overwrites one
weights file in place and writes the epoch counter as a second file afterwards: a kill between
the two resumes new weights at an old step and trains past the end.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import warnings

import keras
import numpy as np
import tensorflow as tf

from abc_tf.model import is_multi_worker

CHECKPOINT_DIR = "checkpoints"
WEIGHTS_FILE = "weights.weights.h5"
STATE_FILE = "state.json"
_NAME = re.compile(r"^step_(\d+)$")
_PARTIAL_PREFIX = ".partial_"


def checkpoint_dir(run_dir: str) -> str:
    return os.path.join(run_dir, CHECKPOINT_DIR)


def list_checkpoints(run_dir: str) -> list[tuple[int, str]]:
    """(step, folder) of every complete checkpoint of the run, oldest first."""
    directory = checkpoint_dir(run_dir)
    if not os.path.isdir(directory):
        return []
    found = [(int(match.group(1)), os.path.join(directory, name))
             for name in os.listdir(directory) if (match := _NAME.match(name))]
    return sorted(found)


def _fsync(path: str) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class CheckpointError(RuntimeError):
    """A checkpoint could not be written (full disk, no permission); older checkpoints are intact."""


def _state_bytes(model: keras.Model) -> int:
    variables = list(model.weights) + list(getattr(model.optimizer, "variables", []))
    return sum(int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize for v in variables)


def save(model: keras.Model, run_dir: str, step: int, keep: int) -> str:
    """Writes the model's and optimizer's state at ``step`` atomically; prunes to the newest ``keep``.

    Raises :class:`CheckpointError` when the file system cannot take it, leaving the older
    checkpoints as they were. Free space is checked first: HDF5 writing into a full disk can
    crash the process instead of raising.
    """
    directory = checkpoint_dir(run_dir)
    final = os.path.join(directory, f"step_{step:08d}")
    partial = os.path.join(directory, f"{_PARTIAL_PREFIX}step_{step:08d}")
    try:
        os.makedirs(directory, exist_ok=True)
        for name in os.listdir(directory):  # this one's, or left by a kill in the middle of a save
            if name.startswith(_PARTIAL_PREFIX):
                shutil.rmtree(os.path.join(directory, name), ignore_errors=True)
        needed = _state_bytes(model) + (1 << 20)  # plus HDF5 headers and state.json
        free = shutil.disk_usage(directory).free
        if free < needed:
            raise CheckpointError(
                f"No room for the checkpoint of step {step} in {directory}: {free / 2**20:.1f} MiB free, "
                f"about {needed / 2**20:.1f} MiB needed. The older checkpoints are intact; free some space "
                "and run the same command again to resume."
            )
        os.makedirs(partial)
        model.save_weights(os.path.join(partial, WEIGHTS_FILE))
        with open(os.path.join(partial, STATE_FILE), "w") as handle:
            json.dump({"step": step}, handle)
        for name in (WEIGHTS_FILE, STATE_FILE):
            _fsync(os.path.join(partial, name))
    except OSError as error:
        shutil.rmtree(partial, ignore_errors=True)
        raise CheckpointError(
            f"Writing the checkpoint of step {step} into {directory} failed ({error.strerror or error}). "
            "The older checkpoints are intact; fix the cause and run the same command again to resume."
        ) from None
    if os.path.exists(final):  # the same step saved again (e.g. a rerun of a finished run)
        shutil.rmtree(final)
    os.replace(partial, final)
    _fsync(directory)
    for _, old in list_checkpoints(run_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def restore(model: keras.Model, run_dir: str) -> int:
    """Loads the newest readable checkpoint into ``model`` (weights and optimizer); returns its step.

    0 (model untouched) when the run has none. Writes nothing (``.partial_*`` folders are
    ignored here and cleared by the next save). A checkpoint that cannot be read (a damaged disk,
    a file edited by hand) is reported and the one before it is tried.
    """
    directory = checkpoint_dir(run_dir)
    checkpoints = list_checkpoints(run_dir)
    if not checkpoints:
        return 0
    if not model.optimizer.built:
        # The optimizer's slots must exist before its state can be loaded into them.
        model.optimizer.build(model.trainable_variables)
    for step, folder in reversed(checkpoints):
        try:
            model.load_weights(os.path.join(folder, WEIGHTS_FILE))
        except (OSError, ValueError, KeyError) as error:
            warnings.warn(f"Checkpoint {folder} could not be read ({error}); trying the one before it.")
            continue
        restored = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
        if restored != step:
            raise ValueError(f"Checkpoint {folder} holds optimizer step {restored}, not {step}; remove the folder.")
        return step
    raise ValueError(
        f"No checkpoint in {directory} could be read (see the warnings above); "
        "remove the folder to train from the start."
    )


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this process writes the run's files: always, except on the non-chief workers of
    a multi-worker run, which compute the same values and would race the chief's writes."""
    if not is_multi_worker(strategy):
        return True
    resolver = strategy.cluster_resolver
    return resolver.task_type == "chief" or (resolver.task_type == "worker" and resolver.task_id == 0
                                              and "chief" not in resolver.cluster_spec().as_dict())


class SaveCheckpoint(keras.callbacks.Callback):
    """Saves a checkpoint at the epoch ends that fall on a multiple of ``every`` steps or on
    ``last_step`` (training's epochs can be shorter than the log interval)."""

    def __init__(self, run_dir: str, keep: int, every: int = 1, last_step: int | None = None, write: bool = True):
        super().__init__()
        self.run_dir, self.keep, self.every, self.last_step, self.write = run_dir, int(keep), int(every), last_step, write

    def on_epoch_end(self, epoch, logs=None):
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        if self.write and (step % self.every == 0 or step == self.last_step):
            save(self.model, self.run_dir, step, self.keep)

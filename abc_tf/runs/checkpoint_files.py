"""Where a run's checkpoints are, and which of them are complete: read from disk, nothing written.

A checkpoint is complete when its index file and every data shard are there. The manager's state
file lists the run's checkpoints; without a usable one, the complete checkpoints on disk are the
run's. Layout, inside a run directory::

  checkpoints/checkpoint                       the manager's state: the complete checkpoints, oldest first
  checkpoints/ckpt-400.index                   one checkpoint (optimizer step 400): the model's
  checkpoints/ckpt-400.data-00000-of-00001     weights and the state of every optimizer
  checkpoints/ckpt-500.index ...
"""

from __future__ import annotations

import os
import re
import warnings

import tensorflow as tf

CHECKPOINT_DIR = "checkpoints"
STATE_FILE = "checkpoint"  # tf.train.CheckpointManager's state file
PREFIX = "ckpt"  # tf.train.CheckpointManager's default checkpoint_name
_CHECKPOINT = re.compile(rf"^{PREFIX}-(\d+)$")
# A checkpoint's file: (its prefix, the suffix); "_temp" is the folder a save writes into first.
CHECKPOINT_FILE = re.compile(rf"^({PREFIX}-\d+)(\.index|\.data-\d+-of-\d+|_temp)$")
_SHARD = re.compile(rf"^{PREFIX}-\d+\.data-(\d+)-of-(\d+)$")


def checkpoint_dir(run_dir: str) -> str:
    return os.path.join(run_dir, CHECKPOINT_DIR)


def read_state(directory: str):
    """The manager's CheckpointState proto; None without a state file, False when it cannot be read.

    It is replaced atomically, so only a hand edit or a damaged disk makes it unreadable.
    """
    if not os.path.isfile(os.path.join(directory, STATE_FILE)):
        return None
    try:
        return tf.train.get_checkpoint_state(directory) or False
    except ValueError:  # a state naming no checkpoint
        return False


def _on_disk(directory: str) -> list[tuple[int, str]]:
    """(step, prefix) of every checkpoint whose files are all on disk, oldest first.

    The state file is not read.

    All files means the index and every data shard its names count.
    """
    if not os.path.isdir(directory):
        return []
    names = os.listdir(directory)
    found = []
    for name in names:
        prefix = name.removesuffix(".index")
        match = _CHECKPOINT.match(prefix) if name.endswith(".index") else None
        if not match:
            continue
        shards = [
            shard for other in names if other.startswith(prefix + ".data-") and (shard := _SHARD.match(other))
        ]
        totals = {int(shard.group(2)) for shard in shards}
        if len(totals) == 1 and {int(shard.group(1)) for shard in shards} == set(range(totals.pop())):
            found.append((int(match.group(1)), os.path.join(directory, prefix)))
    return sorted(found)


def complete_checkpoints(directory: str) -> tuple[list[tuple[int, str]], str]:
    """The run's complete checkpoints, oldest first, and why the state file was not followed ("" when it was).

    The state file is followed when it names a checkpoint on disk. When it is missing, unreadable or
    names none that exist, the complete checkpoints on disk are the run's.
    A run is never started again over checkpoints it did not read.
    """
    state = read_state(directory)
    if state:
        listed = []
        for prefix in state.all_model_checkpoint_paths:
            match = _CHECKPOINT.match(os.path.basename(prefix))
            if match:
                listed.append((int(match.group(1)), os.path.join(directory, os.path.basename(prefix))))
        complete = sorted((step, prefix) for step, prefix in listed if os.path.isfile(prefix + ".index"))
        if complete:
            return complete, ""
    on_disk = _on_disk(directory)
    if not on_disk:
        return [], ""
    state_path = os.path.join(directory, STATE_FILE)
    if state is None:
        why = f"{state_path} (the list of checkpoints) is missing"
    elif state is False:
        why = f"{state_path} (the list of checkpoints) cannot be read"
    else:
        why = f"{state_path} names no checkpoint whose files are there"
    return on_disk, why


def list_checkpoints(run_dir: str) -> list[tuple[int, str]]:
    """(step, prefix) of every complete checkpoint of the run, oldest first.

    Reads the manager's state file, without a model or TensorFlow graph. A listed checkpoint whose index
    file is missing is left out; a kill during pruning or a deletion can cause that. A warning names it
    when it was newer than the newest one kept. Without a usable state file, returns the complete
    checkpoints on disk, with a warning naming what was missing (:func:`complete_checkpoints`).
    """
    directory = checkpoint_dir(run_dir)
    found, why = complete_checkpoints(directory)
    if why:
        warnings.warn(
            f"{why}; using the checkpoints found beside it: "
            f"{', '.join(os.path.basename(prefix) for _, prefix in found)}."
        )
        return found
    state = read_state(directory)
    if found and state:
        newest = found[-1][0]
        for prefix in state.all_model_checkpoint_paths:
            match = _CHECKPOINT.match(os.path.basename(prefix))
            if match and int(match.group(1)) > newest:
                path = os.path.join(directory, os.path.basename(prefix))
                warnings.warn(
                    f"Checkpoint {path} is skipped: its index file {path}.index is missing; "
                    f"the newest complete one is step {newest}."
                )
    return found


def listed_names(directory: str) -> set[str] | None:
    """The names of the checkpoints the state file lists, complete or not; None when it is unreadable."""
    state = read_state(directory)
    if state is False:
        return None
    return {os.path.basename(path) for path in state.all_model_checkpoint_paths} if state else set()

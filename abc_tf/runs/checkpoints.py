"""Training checkpoints on ``tf.train.CheckpointManager`` that a kill at any moment cannot leave half-written.

:func:`save` writes one and says how a kill is survived; :func:`restore` reads the newest readable one.
Keras's BackupAndRestore is not safe this way: it overwrites one weights file in place, then writes
the epoch counter. A kill between the two resumes new weights at an old step. Multi-worker runs follow
TensorFlow's pattern: every worker saves, only the chief into ``run_dir`` (:func:`is_chief`).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import warnings

import keras
import tensorflow as tf
from google.protobuf import text_format

# The manager's state file format; TensorFlow exports no public class for it.
from tensorflow.python.training import checkpoint_state_pb2

from abc_tf.runs.checkpoint_contents import build_optimizers, checkpoint_of, optimizer_step, state_bytes
from abc_tf.runs.checkpoint_files import (
    CHECKPOINT_FILE,
    PREFIX,
    STATE_FILE,
    checkpoint_dir,
    complete_checkpoints,
    list_checkpoints,
    listed_names,
    read_state,
)

__all__ = [
    "CheckpointError",
    "SaveCheckpoint",
    "checkpoint_dir",
    "is_chief",
    "list_checkpoints",
    "restore",
    "save",
]

_STATE_TEMP = STATE_FILE + ".tmp"  # how TensorFlow's atomic write names the file it renames


class CheckpointError(RuntimeError):
    """A checkpoint could not be written, e.g. a full disk or no permission. Older checkpoints are intact."""


def _fsync(path: str) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _flush(prefix: str) -> None:
    """A write callback between a checkpoint's file writes and the state-file update: the files reach
    the disk before the state names them."""
    directory, name = os.path.split(prefix)
    for file_name in os.listdir(directory):
        if file_name.startswith(name + ".") and CHECKPOINT_FILE.match(file_name):
            _fsync(os.path.join(directory, file_name))
    _fsync(directory)


def _clear_leftovers(directory: str) -> None:
    """Deletes what a killed or failed write left: temporary folders and state files.

    Also deletes the files of checkpoints the state file does not name. All are kept if it is unreadable.
    """
    listed = listed_names(directory)
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        match = CHECKPOINT_FILE.match(name)
        if name.startswith(_STATE_TEMP) or (match and match.group(2) == "_temp"):
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
        elif match and listed is not None and match.group(1) not in listed:
            os.remove(path)


def _write_state(directory: str, prefixes: list[str], timestamps: list[float]) -> None:
    """Replaces the state file atomically to list ``prefixes`` oldest first; removes it for none."""
    state_path = os.path.join(directory, STATE_FILE)
    if not prefixes:
        os.remove(state_path)
    else:
        state = checkpoint_state_pb2.CheckpointState(
            model_checkpoint_path=os.path.basename(prefixes[-1]),
            all_model_checkpoint_paths=[
                os.path.basename(prefix) for prefix in prefixes
            ],  # as the manager writes them
            all_model_checkpoint_timestamps=timestamps if len(timestamps) == len(prefixes) else [],
        )
        temporary = os.path.join(directory, _STATE_TEMP + ".abc_tf")
        with open(temporary, "w") as handle:
            handle.write(text_format.MessageToString(state))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, state_path)
    _fsync(directory)


def _forget(directory: str, name: str) -> None:
    """Takes checkpoint ``name`` out of the state file atomically before the same step is written again.

    Otherwise the manager would overwrite its files in place while the state still names them.
    """
    state = read_state(directory)
    paths = list(state.all_model_checkpoint_paths)
    timestamps = list(state.all_model_checkpoint_timestamps)
    kept = [i for i, path in enumerate(paths) if os.path.basename(path) != name]
    _write_state(
        directory,
        [paths[i] for i in kept],
        [timestamps[i] for i in kept] if len(timestamps) == len(paths) else [],
    )


def _adopt(directory: str) -> None:
    """Before a save, rewrites the state file from the complete checkpoints on disk if it names none of them.

    That covers a missing or unreadable file (checkpoint_files.complete_checkpoints). Otherwise the
    manager and :func:`_clear_leftovers` would take those checkpoints for leftovers and delete them.
    """
    found, why = complete_checkpoints(directory)
    if why:
        prefixes = [prefix for _, prefix in found]
        _write_state(directory, prefixes, [os.path.getmtime(prefix + ".index") for prefix in prefixes])


def _reason(error: Exception) -> str:
    """The operating system's words for a failed write: an OSError's message, or the end of TensorFlow's."""
    if isinstance(error, OSError):
        return error.strerror or str(error)
    message = str(getattr(error, "message", error)).strip()
    match = re.search(r";\s*([^;]+?)\s*\[Op:\w+\]$", message)
    return match.group(1) if match else message


def _kept(directory: str) -> str:
    """What a failed save leaves the run, for its message."""
    kept = complete_checkpoints(directory)[0]
    if not kept:
        return "No checkpoint of this run was written before it, so none is kept"
    return f"The older checkpoints are intact (newest: step {kept[-1][0]})"


def save(model: keras.Model, run_dir: str, step: int, keep: int, write: bool = True) -> str:
    """Writes the model's and its optimizers' state at ``step`` atomically; prunes to the newest ``keep``.

    ``step`` must be ``model.optimizer.iterations``, the number :func:`restore` checks. Free space is
    checked first. Raises :class:`CheckpointError` when the file system cannot take it; older
    checkpoints stay as they were.

    Kill safety: the files are written into ``ckpt-<n>_temp/``, renamed and flushed to disk before the
    state file is replaced atomically; a save first deletes what a killed write left.

    ``write=False`` is for the non-chief workers of a multi-worker run: a save may run collective
    operations, so they save too, into a temporary folder deleted right after. Returns the checkpoint's
    prefix; "" when ``write`` is False.
    """
    step, keep = int(step), int(keep)
    if optimizer_step(model) != step:
        raise ValueError(
            f"save(step={step}) of a model whose optimizer is at step {optimizer_step(model)}: "
            "checkpoints are numbered by model.optimizer.iterations "
            "(compile the model with the optimizer applied once per step)."
        )
    directory = checkpoint_dir(run_dir) if write else tempfile.mkdtemp(prefix="abc_tf_worker_checkpoint_")
    name = f"{PREFIX}-{step}"
    try:
        os.makedirs(directory, exist_ok=True)
        _adopt(directory)
        _clear_leftovers(directory)
        if name in (listed_names(directory) or ()):
            _forget(directory, name)  # the same step saved again (e.g. after falling back past a damaged one)
        needed = state_bytes(model) + (1 << 20)  # plus the index and the state file
        free = shutil.disk_usage(directory).free
        if free < needed:
            raise CheckpointError(
                f"No room for the checkpoint of step {step} in {directory}: {free / 2**20:.1f} MiB free, "
                f"about {needed / 2**20:.1f} MiB needed. {_kept(directory)}; free some space "
                "and run the same command again to resume."
            )
        manager = tf.train.CheckpointManager(checkpoint_of(model), directory, max_to_keep=keep)
        # The manager calls its own callback, which writes the state file, after this one.
        flush = tf.train.CheckpointOptions(experimental_write_callbacks=[lambda prefix: _flush(prefix)])
        manager.save(checkpoint_number=step, options=flush)
        _fsync(directory)
    except (OSError, tf.errors.OpError) as error:
        reason = _reason(error)
        try:
            _clear_leftovers(directory)
        except OSError:
            pass
        raise CheckpointError(
            f"Writing the checkpoint of step {step} into {directory} failed ({reason}). "
            f"{_kept(directory)}; fix the cause and run the same command again to resume."
        ) from None
    finally:
        if not write:
            shutil.rmtree(directory, ignore_errors=True)
    return os.path.join(directory, name) if write else ""


def _first_line(error: Exception) -> str:
    line = (str(error).strip().splitlines() or [type(error).__name__])[0].removesuffix(": attributes {")
    return line if len(line) <= 300 else line[:300] + "..."


def _misfit(prefix: str, error: Exception) -> ValueError:
    """A checkpoint that does not fit the model: every checkpoint of the run would fail the same way."""
    return ValueError(
        f"Checkpoint {prefix} does not fit the model ({_first_line(error)}). A model with several optimizers "
        "must keep each as an attribute and define optimizer_variables(optimizer), and build them that way "
        "before training (abc_tf.runs.checkpoints); otherwise the run directory belongs to another model."
    )


def restore(model: keras.Model, run_dir: str, step: int | None = None) -> int:
    """Loads the newest readable checkpoint into ``model``, weights and every optimizer; returns its step.

    ``step`` loads that step's checkpoint instead. A ValueError names the steps kept when the run lacks
    it or it cannot be read. Returns 0 with the model untouched when the run has none.
    Writes nothing. An unreadable checkpoint is reported and the previous one tried; one that does not
    fit the model raises ValueError, as every checkpoint of the run would fail the same way.
    """
    directory = checkpoint_dir(run_dir)
    saved = list_checkpoints(run_dir)
    asked = step  # the loop below reuses the name for each checkpoint's step
    if asked is not None:
        saved = [(kept, prefix) for kept, prefix in saved if kept == asked]
        if not saved:
            kept = ", ".join(str(kept) for kept, _ in list_checkpoints(run_dir)) or "none"
            raise ValueError(f"{directory} has no checkpoint of step {asked} (steps kept: {kept}).")
    if not saved:
        return 0
    build_optimizers(model)  # the optimizers' slots must exist before their state can be loaded into them
    for step, prefix in reversed(saved):
        checkpoint = checkpoint_of(model)
        # Made now, so that the checkpoint's counter has a variable to go to.
        checkpoint.save_counter  # noqa: B018
        try:
            status = checkpoint.read(prefix)
        except ValueError as error:  # a value of another shape than its variable's
            raise _misfit(prefix, error) from None
        # A damaged file fails in many ways (DataLossError, IndexError, ...).
        except Exception as error:  # noqa: BLE001
            warnings.warn(
                f"Checkpoint {prefix} could not be read ({_first_line(error)}); trying the one before it."
            )
            continue
        try:
            status.assert_consumed()  # every value went to a variable, every variable got a value
        except AssertionError as error:
            raise _misfit(prefix, error) from None
        restored = optimizer_step(model)
        if restored != step:
            raise ValueError(
                f"Checkpoint {prefix} holds optimizer step {restored}, not {step}; "
                f"delete its files ({prefix}.*) to resume from the one before it."
            )
        return step
    if asked is not None:
        raise ValueError(
            f"The checkpoint of step {asked} in {directory} could not be read (see the warning above)."
        )
    raise ValueError(
        f"No checkpoint in {directory} could be read (see the warnings above); "
        "remove the folder to train from the start."
    )


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this process writes the run's files: all but a multi-worker run's non-chief workers,
    which compute the same values and would race the chief's writes."""
    resolver = strategy.cluster_resolver
    if resolver is None or not resolver.task_type:  # one process (abc_tf.methods.base.is_multi_worker)
        return True
    return resolver.task_type == "chief" or (
        resolver.task_type == "worker"
        and resolver.task_id == 0
        and "chief" not in resolver.cluster_spec().as_dict()
    )


class SaveCheckpoint(keras.callbacks.Callback):
    """Saves a checkpoint at epoch ends that fall on a multiple of ``every`` steps or on ``last_step``.

    ``write``: whether this process's checkpoints go into ``run_dir`` (:func:`save`).
    """

    def __init__(
        self, run_dir: str, keep: int, every: int = 1, last_step: int | None = None, write: bool = True
    ):
        super().__init__()
        self.run_dir, self.keep, self.every, self.last_step, self.write = (
            run_dir,
            int(keep),
            int(every),
            last_step,
            write,
        )

    def on_epoch_end(self, epoch, logs=None):
        step = optimizer_step(self.model)
        if step % self.every == 0 or step == self.last_step:
            save(self.model, self.run_dir, step, self.keep, write=self.write)

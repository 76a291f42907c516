"""Training checkpoints on ``tf.train.CheckpointManager`` that a kill at any moment cannot leave half-written.

Layout, inside a run directory::

  checkpoints/checkpoint                       the manager's state: the complete checkpoints, oldest first
  checkpoints/ckpt-400.index                   one checkpoint (optimizer step 400): the model's
  checkpoints/ckpt-400.data-00000-of-00001     weights and the state of every optimizer
  checkpoints/ckpt-500.index ...

What a checkpoint holds (``tf.train.Checkpoint``, built by :func:`checkpoint_of`): ``weights``,
the model's ``model.weights`` in their order, and ``optimizers/<name>``, the variables of every
Keras optimizer that is an attribute of the model (iterations, learning rate, slots), named by
the attribute (``optimizer`` for compile's). ``tf.train.Checkpoint(model=model)`` alone is not
enough with Keras 3: it follows only attributes that are TensorFlow trackables, so networks or
optimizers held in a list or a dict attribute would be left out without a word.

A model with several optimizers (a GAN's ``self.g_optimizer`` and ``self.d_optimizer``) follows
three rules:

- every optimizer is an attribute of the model, and ``compile`` is given the one applied once
  per training step (e.g. ``compile(optimizer=self.g_optimizer)``): checkpoints are numbered by
  ``model.optimizer.iterations``;
- the model defines ``optimizer_variables(optimizer)``, the variables that optimizer updates,
  as ``abc_tf.methods.base.MethodModel`` does;
- its optimizers are built on those before training (:func:`build_optimizers`; MethodModel's
  ``fit`` does it), not by Keras's ``fit``, which builds compile's on every trainable variable.

:func:`restore` builds them the same way before loading, so that every slot exists and is
restored: it refuses (ValueError) a checkpoint that leaves a variable without a value or a value
without a variable. A model with one optimizer needs none of this: it is built on
``model.trainable_variables``, as Keras does.

Kill safety: the manager writes a checkpoint's files first (``ckpt-<n>_temp/`` then renamed to
``ckpt-<n>.*``), they are flushed to disk, and only then is the state file replaced, atomically
(written aside and renamed). :func:`list_checkpoints` and :func:`restore` read the state file
and skip a listed checkpoint whose index file is gone (a kill while the oldest ones were being
pruned; a warning names it when it was the newest), so a kill at any moment leaves the
previous checkpoints in charge. A state file that is missing, unreadable or names no checkpoint
whose files are there (deleted by hand, a partial copy of the folder) gives way to the complete
``ckpt-<n>`` files on disk, with a warning naming what was missing, and the next save writes it
anew from them: a run is never started again over checkpoints it did not read. The next
:func:`save` deletes what a killed write left behind (``ckpt-<n>_temp/``, unlisted
``ckpt-<n>.*`` files, ``checkpoint.tmp*``); saving a step the state file names already takes it
out of the state file first, as the manager rewrites its files in place. Keras's BackupAndRestore,
by contrast, overwrites one weights file in place and writes the epoch counter as a second file
afterwards: a kill between the two resumes new weights at an old step and trains past the end.

Multi-worker runs (MultiWorkerMirroredStrategy) follow TensorFlow's pattern: every worker saves,
since a save may run collective operations, but only the chief (:func:`is_chief`) into
``run_dir/checkpoints``; the others save into a temporary folder of their own and delete it
(``SaveCheckpoint(..., write=is_chief(strategy))``). Every worker restores from ``run_dir``.
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

CHECKPOINT_DIR = "checkpoints"
STATE_FILE = "checkpoint"  # tf.train.CheckpointManager's state file
PREFIX = "ckpt"  # tf.train.CheckpointManager's default checkpoint_name
_CHECKPOINT = re.compile(rf"^{PREFIX}-(\d+)$")
_CHECKPOINT_FILE = re.compile(rf"^({PREFIX}-\d+)(\.index|\.data-\d+-of-\d+|_temp)$")
_SHARD = re.compile(rf"^{PREFIX}-\d+\.data-(\d+)-of-(\d+)$")
_STATE_TEMP = STATE_FILE + ".tmp"  # how TensorFlow's atomic write names the file it renames


def checkpoint_dir(run_dir: str) -> str:
    return os.path.join(run_dir, CHECKPOINT_DIR)


def _state(directory: str):
    """The manager's CheckpointState proto; None when there is no state file, False when it
    cannot be read (it is replaced atomically, so only a hand edit or a damaged disk does that)."""
    if not os.path.isfile(os.path.join(directory, STATE_FILE)):
        return None
    try:
        return tf.train.get_checkpoint_state(directory) or False
    except ValueError:  # a state naming no checkpoint
        return False


def _on_disk(directory: str) -> list[tuple[int, str]]:
    """(step, prefix) of every checkpoint whose files are all on disk (its index and every data
    shard its names count), oldest first, whatever the state file says."""
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


def _checkpoints(directory: str) -> tuple[list[tuple[int, str]], str]:
    """The run's complete checkpoints, oldest first, and why the state file was not followed
    ("" when it was). The state file is followed when it names a checkpoint on disk; when it is
    missing, unreadable or names none that exist, the complete checkpoints on disk are the run's:
    a run is never started again over checkpoints it did not read."""
    state = _state(directory)
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

    Reads the manager's state file (no model, no TensorFlow graph); a listed checkpoint whose
    index file is missing (pruned when a kill came, or deleted) is left out, with a warning when
    it was newer than the newest one kept. Without a usable state file, the complete checkpoints
    found on disk, with a warning naming what was missing (:func:`_checkpoints`).
    """
    directory = checkpoint_dir(run_dir)
    found, why = _checkpoints(directory)
    if why:
        warnings.warn(
            f"{why}; using the checkpoints found beside it: "
            f"{', '.join(os.path.basename(prefix) for _, prefix in found)}."
        )
        return found
    state = _state(directory)
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


class CheckpointError(RuntimeError):
    """A checkpoint could not be written (full disk, no permission); older checkpoints are intact."""


def optimizers_of(model: keras.Model) -> dict[str, keras.optimizers.Optimizer]:
    """Every optimizer that is an attribute of ``model`` ("optimizer": compile's), by attribute
    name in sorted order; an optimizer held under two names gets the first."""
    found: dict[str, keras.optimizers.Optimizer] = {}
    attributes = vars(model)
    for name in sorted(attributes):
        value = attributes[name]
        if isinstance(value, keras.optimizers.Optimizer) and all(
            value is not seen for seen in found.values()
        ):
            found[name] = value
    listed = getattr(model, "optimizers", None)
    if callable(listed):  # abc_tf.methods.base.MethodModel says which optimizers it has
        hidden = [
            optimizer for optimizer in listed() if all(optimizer is not seen for seen in found.values())
        ]
        if hidden:
            raise ValueError(
                f"{type(model).__name__}.optimizers() names {len(hidden)} optimizer(s) "
                "that are not attributes of the model; "
                "a checkpoint saves the optimizers found as attributes: assign each to one."
            )
    return found


def checkpoint_of(model: keras.Model) -> tf.train.Checkpoint:
    """The model's weights and every optimizer's variables, named in a fixed way (module docstring)."""
    return tf.train.Checkpoint(
        weights=list(model.weights),
        optimizers={name: list(optimizer.variables) for name, optimizer in optimizers_of(model).items()},
    )


def _state_bytes(model: keras.Model) -> int:
    variables = {
        id(v): v
        for v in list(model.weights) + [v for o in optimizers_of(model).values() for v in o.variables]
    }
    return sum(
        int(tf.TensorShape(v.shape).num_elements()) * tf.as_dtype(v.dtype).size for v in variables.values()
    )


def _step(model: keras.Model) -> int:
    if model.optimizer is None:
        raise ValueError(
            "Checkpoints are numbered by model.optimizer.iterations: compile the model with its optimizer."
        )
    return int(keras.ops.convert_to_numpy(model.optimizer.iterations))


def _fsync(path: str) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _flush(prefix: str) -> None:
    """Runs between the write of a checkpoint's files and the manager's update of its state file
    (a write callback): the files reach the disk before the state names them."""
    directory, name = os.path.split(prefix)
    for file_name in os.listdir(directory):
        if file_name.startswith(name + ".") and _CHECKPOINT_FILE.match(file_name):
            _fsync(os.path.join(directory, file_name))
    _fsync(directory)


def _listed(directory: str) -> set[str] | None:
    """The names of the checkpoints the state file lists, complete or not; None when it is unreadable."""
    state = _state(directory)
    if state is False:
        return None
    return {os.path.basename(path) for path in state.all_model_checkpoint_paths} if state else set()


def _clear_leftovers(directory: str) -> None:
    """Deletes what a killed or failed write left: temporary folders and state files, and the
    files of checkpoints that the state file does not name (all of them kept if it is unreadable)."""
    listed = _listed(directory)
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        match = _CHECKPOINT_FILE.match(name)
        if name.startswith(_STATE_TEMP) or (match and match.group(2) == "_temp"):
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
        elif match and listed is not None and match.group(1) not in listed:
            os.remove(path)


def _write_state(directory: str, prefixes: list[str], timestamps: list[float]) -> None:
    """Replaces the state file atomically so that it lists ``prefixes`` (oldest first; none:
    the file is removed), as the manager writes it."""
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
    """Takes checkpoint ``name`` out of the state file (atomically) before the same step is written
    again: the manager would overwrite its files in place while the state still names them."""
    state = _state(directory)
    paths = list(state.all_model_checkpoint_paths)
    timestamps = list(state.all_model_checkpoint_timestamps)
    kept = [i for i, path in enumerate(paths) if os.path.basename(path) != name]
    _write_state(
        directory,
        [paths[i] for i in kept],
        [timestamps[i] for i in kept] if len(timestamps) == len(paths) else [],
    )


def _adopt(directory: str) -> None:
    """Writes the state file anew from the complete checkpoints on disk when it is missing,
    unreadable or names none of them (:func:`_checkpoints`), before a save: the manager and
    :func:`_clear_leftovers` would otherwise take them for leftovers and delete them."""
    found, why = _checkpoints(directory)
    if why:
        prefixes = [prefix for _, prefix in found]
        _write_state(directory, prefixes, [os.path.getmtime(prefix + ".index") for prefix in prefixes])


def _reason(error: Exception) -> str:
    """The operating system's words for a failed write: an OSError's, or the end of TensorFlow's
    message ("...ckpt-30_temp/part-...; No space left on device [Op:SaveV2]")."""
    if isinstance(error, OSError):
        return error.strerror or str(error)
    message = str(getattr(error, "message", error)).strip()
    match = re.search(r";\s*([^;]+?)\s*\[Op:\w+\]$", message)
    return match.group(1) if match else message


def _kept(directory: str) -> str:
    """What a failed save leaves the run, for its message."""
    kept = _checkpoints(directory)[0]
    if not kept:
        return "No checkpoint of this run was written before it, so none is kept"
    return f"The older checkpoints are intact (newest: step {kept[-1][0]})"


def save(model: keras.Model, run_dir: str, step: int, keep: int, write: bool = True) -> str:
    """Writes the model's and its optimizers' state at ``step`` atomically; prunes to the newest ``keep``.

    ``step`` must be ``model.optimizer.iterations`` (the number :func:`restore` checks). Raises
    :class:`CheckpointError` when the file system cannot take it, leaving the older checkpoints
    as they were. Free space is checked first.

    ``write=False`` is for the non-chief workers of a multi-worker run (:func:`is_chief`): a save
    may run collective operations, so every worker takes part, as TensorFlow's multi-worker
    guide does: into a temporary folder of their own, deleted right after, never ``run_dir``.
    Returns the checkpoint's prefix ("" when ``write`` is False).
    """
    step, keep = int(step), int(keep)
    if _step(model) != step:
        raise ValueError(
            f"save(step={step}) of a model whose optimizer is at step {_step(model)}: "
            "checkpoints are numbered by model.optimizer.iterations "
            "(compile the model with the optimizer applied once per step)."
        )
    directory = checkpoint_dir(run_dir) if write else tempfile.mkdtemp(prefix="abc_tf_worker_checkpoint_")
    name = f"{PREFIX}-{step}"
    try:
        os.makedirs(directory, exist_ok=True)
        _adopt(directory)
        _clear_leftovers(directory)
        if name in (_listed(directory) or ()):
            _forget(directory, name)  # the same step saved again (e.g. after falling back past a damaged one)
        needed = _state_bytes(model) + (1 << 20)  # plus the index and the state file
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


def build_optimizers(model: keras.Model) -> None:
    """Builds every optimizer of ``model`` that is not built yet (module docstring: with several,
    on ``model.optimizer_variables(optimizer)``), so that their slots exist before a restore."""
    optimizers = optimizers_of(model)
    owned = getattr(model, "optimizer_variables", None)
    for name, optimizer in optimizers.items():
        if optimizer.built:
            continue
        if callable(owned):
            optimizer.build(owned(optimizer))
        elif len(optimizers) == 1:
            optimizer.build(model.trainable_variables)
        else:
            raise ValueError(
                f"{type(model).__name__} has {len(optimizers)} optimizers ({', '.join(optimizers)}) and no "
                "optimizer_variables(optimizer) method saying which variables each updates; "
                "define it so that a restore can build them before loading their state."
            )


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
    """Loads the newest readable checkpoint into ``model`` (weights and every optimizer); returns its step.

    ``step``: load the checkpoint of that step instead (a ValueError naming the steps kept when
    the run has none of it, or when it cannot be read).

    0 (model untouched) when the run has none. Writes nothing (what a killed save left is
    ignored here and cleared by the next save). A checkpoint that cannot be read (a damaged
    disk, a file edited by hand) is reported and the one before it is tried. A checkpoint that
    does not fit the model (a value with no variable to go to, a variable left without a value)
    is a ValueError: every checkpoint of the run would fail the same way.
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
        restored = _step(model)
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
    """Whether this process writes the run's files: always, except on the non-chief workers of
    a multi-worker run, which compute the same values and would race the chief's writes."""
    resolver = strategy.cluster_resolver
    if resolver is None or not resolver.task_type:  # one process (abc_tf.methods.base.is_multi_worker)
        return True
    return resolver.task_type == "chief" or (
        resolver.task_type == "worker"
        and resolver.task_id == 0
        and "chief" not in resolver.cluster_spec().as_dict()
    )


class SaveCheckpoint(keras.callbacks.Callback):
    """Saves a checkpoint at the epoch ends that fall on a multiple of ``every`` steps or on
    ``last_step`` (training's epochs can be shorter than the log interval).

    ``write``: whether this process's checkpoints go into ``run_dir`` (:func:`is_chief`). The
    other workers of a multi-worker run still save, each into a temporary folder deleted right
    after (:func:`save`), since saving may run collective operations all workers must join.
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
        step = _step(self.model)
        if step % self.every == 0 or step == self.last_step:
            save(self.model, self.run_dir, step, self.keep, write=self.write)

"""Training checkpoints on ``tf.train.CheckpointManager`` that a kill at any moment cannot leave half-written.

Layout, inside a run directory::

  checkpoints/checkpoint                       the manager's state: the complete checkpoints, oldest first
  checkpoints/ckpt-400.index                   one checkpoint (optimizer step 400): the model's
  checkpoints/ckpt-400.data-00000-of-00001     weights and the state of every optimizer
  checkpoints/ckpt-500.index ...

:func:`checkpoint_of` says what a checkpoint holds, :func:`build_optimizers` how several optimizers work.
:func:`save` says how a kill is survived. Keras's BackupAndRestore is not safe this way: it overwrites
one weights file in place, then writes the epoch counter. A kill between the two resumes new weights
at an old step. Multi-worker runs follow TensorFlow's pattern: every worker saves, only the chief
into ``run_dir`` (:func:`is_chief`). Every worker restores from ``run_dir``.
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


def _checkpoints(directory: str) -> tuple[list[tuple[int, str]], str]:
    """The run's complete checkpoints, oldest first, and why the state file was not followed ("" when it was).

    The state file is followed when it names a checkpoint on disk. When it is missing, unreadable or
    names none that exist, the complete checkpoints on disk are the run's.
    A run is never started again over checkpoints it did not read.
    """
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

    Reads the manager's state file, without a model or TensorFlow graph. A listed checkpoint whose index
    file is missing is left out; a kill during pruning or a deletion can cause that. A warning names it
    when it was newer than the newest one kept. Without a usable state file, returns the complete
    checkpoints on disk, with a warning naming what was missing (:func:`_checkpoints`).
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
    """A checkpoint could not be written, e.g. a full disk or no permission. Older checkpoints are intact."""


def optimizers_of(model: keras.Model) -> dict[str, keras.optimizers.Optimizer]:
    """Every optimizer that is an attribute of ``model``, by attribute name in sorted order.

    Compile's optimizer is "optimizer". An optimizer held under two names gets the first.
    """
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
    """The ``tf.train.Checkpoint`` of the model's weights and every optimizer's variables, fixed names.

    ``weights`` holds ``model.weights`` in their order. ``optimizers/<name>`` holds the variables of every
    Keras optimizer that is an attribute of the model: iterations, learning rate and slots.
    ``tf.train.Checkpoint(model=model)`` alone is not enough with Keras 3. It follows only TensorFlow
    trackables, so networks or optimizers in a list or dict attribute would be silently left out.
    """
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
    """A write callback between a checkpoint's file writes and the manager's state-file update.

    The files reach the disk before the state names them.
    """
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
    """Deletes what a killed or failed write left: temporary folders and state files.

    Also deletes the files of checkpoints the state file does not name. All are kept if it is unreadable.
    """
    listed = _listed(directory)
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        match = _CHECKPOINT_FILE.match(name)
        if name.startswith(_STATE_TEMP) or (match and match.group(2) == "_temp"):
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
        elif match and listed is not None and match.group(1) not in listed:
            os.remove(path)


def _write_state(directory: str, prefixes: list[str], timestamps: list[float]) -> None:
    """Replaces the state file atomically, as the manager writes it, to list ``prefixes`` oldest first.

    With no prefixes the file is removed.
    """
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
    """Before a save, rewrites the state file from the complete checkpoints on disk if it names none of them.

    That covers a missing or unreadable file (:func:`_checkpoints`). Otherwise the manager and
    :func:`_clear_leftovers` would take those checkpoints for leftovers and delete them.
    """
    found, why = _checkpoints(directory)
    if why:
        prefixes = [prefix for _, prefix in found]
        _write_state(directory, prefixes, [os.path.getmtime(prefix + ".index") for prefix in prefixes])


def _reason(error: Exception) -> str:
    """The operating system's words for a failed write.

    That is an OSError's message, or the end of TensorFlow's, e.g.
    "...ckpt-30_temp/part-...; No space left on device [Op:SaveV2]".
    """
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

    ``step`` must be ``model.optimizer.iterations``, the number :func:`restore` checks. Free space is
    checked first. Raises :class:`CheckpointError` when the file system cannot take it; older
    checkpoints stay as they were.

    Kill safety: the manager writes the files into ``ckpt-<n>_temp/`` and renames them to ``ckpt-<n>.*``.
    They are flushed to disk. Only then is the state file replaced, atomically.
    Readers skip a listed checkpoint whose index file is gone, so previous checkpoints stay in charge.
    A save first deletes what a killed write left: ``ckpt-<n>_temp/``, unlisted ``ckpt-<n>.*`` and
    ``checkpoint.tmp*``. Saving a step the state file already names first takes it out of the state file,
    because the manager rewrites its files in place.

    ``write=False`` is for the non-chief workers of a multi-worker run (:func:`is_chief`). A save may
    run collective operations, so every worker takes part, as in TensorFlow's multi-worker guide.
    They save into a temporary folder of their own, deleted right after, never ``run_dir``.
    Returns the checkpoint's prefix; "" when ``write`` is False.
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
    """Builds every optimizer of ``model`` not built yet, so that their slots exist before a restore.

    A model with one optimizer builds it on ``model.trainable_variables``, as Keras does.
    A model with several, such as a GAN's ``g_optimizer`` and ``d_optimizer``, follows three rules:

    - Every optimizer is a model attribute. ``compile`` gets the one applied once per training step,
      e.g. ``compile(optimizer=self.g_optimizer)``, since checkpoints are numbered by its iterations.
    - The model defines ``optimizer_variables(optimizer)``, the variables that optimizer updates,
      as ``abc_tf.methods.base.MethodModel`` does.
    - Optimizers are built on those variables here before training; MethodModel's ``fit`` does it.
      Keras's ``fit`` would build compile's on every trainable variable.
    """
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
    """Loads the newest readable checkpoint into ``model``, weights and every optimizer; returns its step.

    ``step`` loads that step's checkpoint instead. A ValueError names the steps kept when the run lacks
    it or it cannot be read. Returns 0 with the model untouched when the run has none.
    Writes nothing; what a killed save left is cleared by the next save.
    Optimizers are built first (:func:`build_optimizers`), so every slot exists and is restored.
    An unreadable checkpoint, from a damaged disk or a hand edit, is reported and the previous one is tried.
    A checkpoint that does not fit the model raises ValueError: a value with no variable, or a variable
    with no value. Every checkpoint of the run would fail the same way.
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
    """Whether this process writes the run's files.

    Always, except on the non-chief workers of a multi-worker run. They compute the same values and
    would race the chief's writes.
    """
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

    Training's epochs can be shorter than the log interval. ``write``: whether this process's checkpoints
    go into ``run_dir`` (:func:`is_chief`). Other workers still save, into a temporary folder deleted right
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

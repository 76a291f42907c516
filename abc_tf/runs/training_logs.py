"""What a run reports while it trains: TensorBoard scalars per log interval.

It also stops on a non-finite loss before a bad checkpoint is written.
"""

from __future__ import annotations

import time

import keras
import numpy as np
import tensorflow as tf

from abc_tf.methods.monitor import TrainingMonitor
from abc_tf.runs import checkpoints


class RunStopped(RuntimeError):
    """Training stopped on a problem that is not a bad flag, e.g. a NaN loss or a full disk.

    The message says what the run directory holds and how to go on.
    """


class NonFiniteLossError(RunStopped):
    """Training produced a NaN or infinite loss; the checkpoints before it are kept.

    ``step`` is the step of the bad loss. ``checkpoint_step`` is the step of the newest checkpoint kept;
    None when none was written yet.
    """

    def __init__(self, message: str, step: int, checkpoint_step: int | None):
        super().__init__(message)
        self.step, self.checkpoint_step = step, checkpoint_step


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Aborts fit at the first non-finite loss, before an epoch end could checkpoint bad weights."""

    def __init__(self, run_dir: str):
        super().__init__()
        self.run_dir = run_dir

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not np.isfinite(float(loss)):
            step = int(self.model.optimizer.iterations.numpy())
            raise non_finite_stop(
                f"The loss became {float(loss)} at step {step}",
                step,
                self.run_dir,
                "its newest good checkpoint",
            )


def non_finite_stop(
    what: str, step: int, run_dir: str, newest: str = "its newest checkpoint"
) -> NonFiniteLossError:
    """The error that stops a run whose training diverged at ``step``.

    It says ``what`` happened, and which checkpoint of ``run_dir`` is kept; ``newest`` names it.
    """
    saved = checkpoints.list_checkpoints(run_dir)
    if saved:
        kept = f"{newest}, {saved[-1][1]} (step {saved[-1][0]}), is kept"
    else:
        kept = "no checkpoint had been written yet, so nothing of this run is kept"
    return NonFiniteLossError(f"{what}; {kept}.", step, saved[-1][0] if saved else None)


class IntervalLogger(TrainingMonitor):
    """Logs every ``log_every`` steps and at the last step.

    The training logs, averaged over the interval, go to TensorBoard against the optimizer step. They are
    kept in ``history`` and printed when ``verbose``. Keras resets its metrics every epoch, and an epoch
    may be shorter than the interval. So metrics are averaged here, weighted by each epoch's steps.
    Other log entries, such as the learning rate or the pose titration's real
    fraction, are values at the step.
    """

    def __init__(self, log_dir: str, log_every: int, total_steps: int, verbose: int = 0):
        super().__init__(log_dir, total_steps)
        self.log_every, self.verbose = log_every, verbose
        self.history: dict[str, list[float]] = {}

    def on_train_begin(self, logs=None):
        self._last_step, self._sums, self._count = self.step(), {}, 0
        self._started = time.monotonic()

    def on_epoch_end(self, epoch, logs=None):
        step = self.step()
        steps, self._last_step = step - self._last_step, step
        metric_names = {metric.name for metric in self.model.metrics}
        values = {key: float(keras.ops.convert_to_numpy(value)) for key, value in (logs or {}).items()}
        for key, value in values.items():
            if key in metric_names:
                self._sums[key] = self._sums.get(key, 0.0) + value * steps
        self._count += steps
        if not self.due(step, self.log_every):
            return
        record = {key: total / max(self._count, 1) for key, total in self._sums.items()}
        record.update({key: value for key, value in values.items() if key not in metric_names})
        record["learning_rate"] = float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate))
        with self.writer.as_default(step=step):
            for key, value in record.items():
                tf.summary.scalar(key, value)
        self.writer.flush()
        for key, value in record.items():
            self.history.setdefault(key, []).append(value)
        if self.verbose:
            seconds = (time.monotonic() - self._started) / max(self._count, 1)
            shown = ", ".join(f"{key} {value:.4g}" for key, value in sorted(record.items()))
            print(f"step {step}/{self.total_steps}: {shown} ({seconds:.3f} s/step)", flush=True)
        self._sums, self._count, self._started = {}, 0, time.monotonic()

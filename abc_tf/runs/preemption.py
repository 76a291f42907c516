"""Stops a run at the end of a step on SIGTERM or Ctrl-C, with a checkpoint of the step reached.

SIGTERM comes e.g. from a scheduler's preemption or ``docker stop``. :class:`StopOnSignal` is the signal
handler, installed only while ``model.fit`` runs, and the Keras callback that acts on it. A signal only
records the request. At the step's end the callback sets ``model.stop_training``; with ``steps_per_execution``
over 1, a step end is an execution end. Keras ends the epoch. The callback then saves a checkpoint, unless
``SaveCheckpoint`` just did, and raises :class:`RunPreempted`. A second Ctrl-C raises ``KeyboardInterrupt`` at
once; a second SIGTERM changes nothing.

Multi-worker runs must stop after the same step, since steps and saves join collectives of all workers.
SIGTERMs reach workers at different moments, or only one. So at every step end the workers sum their requests
in one scalar all-reduce, and all stop when it is positive. The chief writes the checkpoint. TensorFlow's
``PreemptionCheckpointHandler`` does not fit Keras ``fit`` and these checkpoints: it numbers its own
checkpoints, replaces the SIGTERM handler for good, and does nothing on GCE CPU machines.
"""

from __future__ import annotations

import signal
import threading

import keras
import tensorflow as tf

from abc_tf.runs import checkpoints

# The signals that stop a run at a step end, with the exit code train.py gives each (128 + number).
SIGNALS = {signal.SIGTERM: 143, signal.SIGINT: 130}


class RunPreempted(Exception):
    """A run stopped on SIGTERM or Ctrl-C at the end of a step, with a checkpoint of that step.

    ``step``: the optimizer step reached, whose checkpoint the run directory keeps.
    ``signal_number``: the signal that asked for the stop.
    """

    def __init__(self, run_dir: str, step: int, signal_number: int):
        self.run_dir, self.step, self.signal_number = run_dir, int(step), int(signal_number)
        # Ctrl-C's words are those of an interrupt outside a step (train.py), with the step reached.
        stopped = (
            "Interrupted"
            if signal_number == signal.SIGINT
            else f"Stopped by {signal.Signals(signal_number).name}"
        )
        super().__init__(
            f"{stopped}; {run_dir} keeps its checkpoint at step {step}, the step it reached. "
            "Run the same command again to resume from it."
        )


class StopOnSignal(keras.callbacks.Callback):
    """The signal handler and the callback; see the module docstring.

    Use it as a context manager around ``fit``: it installs the handlers on entry and restores the
    previous ones on exit. Also pass it as the last of fit's callbacks, so every other callback sees the step.
    ``run_dir``, ``keep``, ``every``, ``last_step``, ``write``: as for :class:`checkpoints.SaveCheckpoint`,
    whose checkpoints this one completes.
      ``strategy``: a multi-worker strategy makes the workers agree on the step.
    """

    def __init__(
        self,
        run_dir: str,
        keep: int,
        every: int,
        last_step: int,
        write: bool = True,
        strategy: tf.distribute.Strategy | None = None,
    ):
        super().__init__()
        self.run_dir, self.keep, self.every, self.last_step, self.write = (
            run_dir,
            int(keep),
            int(every),
            last_step,
            write,
        )
        self.signal: int | None = None  # the first stop request's signal number
        self._previous: dict[int, object] = {}
        self._strategy = strategy
        self._agree = None

    # ------------------------------------------------------------------ the handler

    def __call__(self, signal_number, frame) -> None:
        del frame
        if self.signal == signal.SIGINT and signal_number == signal.SIGINT:
            raise KeyboardInterrupt  # the second Ctrl-C: stop now
        if self.signal is None:
            self.signal = signal_number

    def __enter__(self) -> "StopOnSignal":
        # Python handlers run in the main thread only; elsewhere the process keeps its own.
        if threading.current_thread() is threading.main_thread():
            for number in SIGNALS:
                previous = signal.getsignal(number)
                if previous is signal.SIG_IGN:
                    continue  # ignored on purpose, e.g. Ctrl-C in a background job
                self._previous[number] = previous
                signal.signal(number, self)
        return self

    def __exit__(self, *exc_info) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, previous if previous is not None else signal.SIG_DFL)
        self._previous = {}

    # ------------------------------------------------------------------ the callback

    def _requested(self) -> bool:
        """Whether to stop after this step; under multi-worker, whether any worker asked."""
        asked = self.signal is not None
        if self._strategy is None:
            return asked
        if self._agree is None:
            strategy = self._strategy

            @tf.function
            def agree(flag):
                asked = strategy.run(lambda: tf.identity(flag))
                return strategy.reduce(tf.distribute.ReduceOp.SUM, asked, axis=None)

            self._agree = agree
        # The sum alone decides: a signal that lands during the all-reduce counts at the next step
        # on every worker alike.
        if float(self._agree(tf.constant(1.0 if asked else 0.0)).numpy()) == 0:
            return False
        if self.signal is None:
            self.signal = signal.SIGTERM  # another worker's request
        return True

    def on_train_batch_end(self, batch, logs=None):
        if self._requested():
            self.model.stop_training = True

    def on_epoch_end(self, epoch, logs=None):
        # Reached after a stopped batch (Keras still ends the epoch) or, for a request that
        # came during the epoch-end callbacks, at a full epoch's end: this step either way.
        if self.signal is None or not self.model.stop_training:
            return
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        if not (step % self.every == 0 or step == self.last_step):  # else SaveCheckpoint saved it
            checkpoints.save(self.model, self.run_dir, step, self.keep, write=self.write)
        raise RunPreempted(self.run_dir, step, self.signal)

    def on_train_end(self, logs=None):
        # A request during the last epoch's end: every step is trained and checkpointed, but
        # the exports are not written yet (the same command writes them).
        if self.signal is not None:
            raise RunPreempted(
                self.run_dir, int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)), self.signal
            )

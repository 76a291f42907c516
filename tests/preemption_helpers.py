"""A stop request that lands at a known step, for the tests that signal a child training run
(tests/test_train.py, tests/test_training.py)."""

from __future__ import annotations

import signal

import keras

from process_helpers import hold


class HoldAtStep(keras.callbacks.Callback):
    """At the end of optimizer step ``step``: creates the file ``marker`` and waits
    (process_helpers.hold) until the stop handler (abc_tf.runs.preemption.StopOnSignal,
    SIGTERM's handler while fit runs) has recorded a signal. The test waits for the file
    (process_helpers.wait_for_marker) and signals the process; the run cannot pass the step
    before, so the stop lands on it without a race. A run's own callbacks come before the stop
    callback, so the stop is decided after this one returns."""

    def __init__(self, step: int, marker: str):
        super().__init__()
        self.step, self.marker = int(step), marker

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) == self.step:
            stopper = signal.getsignal(signal.SIGTERM)
            hold(self.marker, until=lambda: stopper.signal is not None)

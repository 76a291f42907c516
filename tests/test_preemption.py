"""abc_tf.runs.preemption: a stop request (SIGTERM, Ctrl-C) ends fit at the end of the current
step with a checkpoint of it. Signals are raised in this process with ``signal.raise_signal``,
which returns once the Python handler has run, so each lands at a known step. train.py's exit
codes and the resume: tests/test_train.py; two workers agreeing on the step: tests/test_training.py."""

import signal

import keras
import numpy as np
import pytest
import tensorflow as tf

from abc_tf.runs import checkpoints, preemption


pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def signals_as_in_a_terminal():
    """Python's own SIGINT and SIGTERM handlers for each test, whatever the process started
    with: a shell starts a background job (CI, nohup) with SIGINT ignored, and a run leaves an
    ignored signal ignored (tested below)."""
    previous = {
        number: signal.signal(number, handler)
        for number, handler in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL))
    }
    yield
    for number, handler in previous.items():
        signal.signal(number, handler)


class SignalAt(keras.callbacks.Callback):
    """Raises ``signals`` in this process at the end of optimizer step ``step`` (or at the end of
    that epoch with ``at_epoch_end``)."""

    def __init__(self, step: int, *signals: int, at_epoch_end: bool = False):
        super().__init__()
        self.step, self.signals, self.at_epoch_end = step, signals, at_epoch_end

    def _maybe_raise(self) -> None:
        if int(self.model.optimizer.iterations.numpy()) == self.step:
            for number in self.signals:
                signal.raise_signal(number)

    def on_train_batch_end(self, batch, logs=None):
        if not self.at_epoch_end:
            self._maybe_raise()

    def on_epoch_end(self, epoch, logs=None):
        if self.at_epoch_end:
            self._maybe_raise()


def fit(run_dir, signal_at: SignalAt, steps: int = 20, every: int = 5) -> keras.Model:
    """A small model trained for ``steps`` steps in epochs of ``every``, checkpointed every
    ``every`` steps as training.train does, with the stop callback last."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    rng = np.random.default_rng(0)
    dataset = (
        tf.data.Dataset.from_tensor_slices((rng.normal(size=(64, 4)), rng.normal(size=(64, 1))))
        .batch(8)
        .repeat()
    )
    stopper = preemption.StopOnSignal(str(run_dir), keep=5, every=every, last_step=steps)
    with stopper:
        model.fit(
            dataset,
            epochs=steps // every,
            steps_per_epoch=every,
            verbose=0,
            callbacks=[
                signal_at,
                checkpoints.SaveCheckpoint(str(run_dir), 5, every, steps),
                stopper,
            ],
        )
    return model


def saved_steps(run_dir) -> list[int]:
    return [step for step, _ in checkpoints.list_checkpoints(str(run_dir))]


def test_sigterm_stops_at_the_end_of_the_step_and_checkpoints_it(tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(preemption.RunPreempted) as stopped:
        fit(tmp_path, SignalAt(7, signal.SIGTERM))
    assert (stopped.value.step, stopped.value.signal_number) == (7, signal.SIGTERM)
    assert str(stopped.value) == (
        f"Stopped by SIGTERM; {tmp_path} keeps its checkpoint at step 7, the step it reached. "
        "Run the same command again to resume from it."
    )
    assert saved_steps(tmp_path) == [5, 7]
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is put back


def test_a_stop_on_a_log_step_keeps_the_checkpoint_already_written(tmp_path, monkeypatch):
    saves = []
    real_save = checkpoints.save
    monkeypatch.setattr(
        checkpoints,
        "save",
        lambda model, run_dir, step, *args, **kwargs: (
            saves.append(step),
            real_save(model, run_dir, step, *args, **kwargs),
        )[1],
    )
    with pytest.raises(preemption.RunPreempted, match="keeps its checkpoint at step 10"):
        fit(tmp_path, SignalAt(10, signal.SIGTERM))
    assert saves == [5, 10]


def test_ctrl_c_stops_at_the_step_end_and_a_second_one_at_once(tmp_path):
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(
        preemption.RunPreempted, match=r"^Interrupted; .* keeps its checkpoint at step 3, the step it reached"
    ):
        fit(tmp_path / "once", SignalAt(3, signal.SIGINT))
    assert saved_steps(tmp_path / "once") == [3]
    with pytest.raises(KeyboardInterrupt):
        fit(tmp_path / "twice", SignalAt(3, signal.SIGINT, signal.SIGINT))
    assert saved_steps(tmp_path / "twice") == []
    assert signal.getsignal(signal.SIGINT) is before


def test_a_second_sigterm_changes_nothing(tmp_path):
    with pytest.raises(preemption.RunPreempted, match="at step 6"):
        fit(tmp_path, SignalAt(6, signal.SIGTERM, signal.SIGTERM))


def test_a_request_during_the_last_epoch_end_ends_the_run_after_its_last_checkpoint(tmp_path):
    with pytest.raises(preemption.RunPreempted, match="at step 20"):
        fit(tmp_path, SignalAt(20, signal.SIGTERM, at_epoch_end=True))
    assert saved_steps(tmp_path) == [5, 10, 15, 20]


def test_an_ignored_signal_stays_ignored(tmp_path):
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with preemption.StopOnSignal(str(tmp_path), keep=1, every=1, last_step=1):
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
            assert isinstance(signal.getsignal(signal.SIGINT), preemption.StopOnSignal)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, previous)

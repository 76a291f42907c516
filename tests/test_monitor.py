"""abc_tf.methods.monitor: the base of the training monitors (writer, step, intervals, fixed
batch), driven by a real fit of ABC on the toy family."""

from __future__ import annotations

import glob

import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from abc_tf import methods
from abc_tf.methods.monitor import TrainingMonitor
from toy_family import CONFIG, IMAGE_SHAPE, make_dataset


class RecordingMonitor(TrainingMonitor):
    """Writes the step as a scalar every ``every`` steps, and the fixed batch's first image mean."""

    def __init__(self, log_dir: str, every: int):
        super().__init__(log_dir, CONFIG.trainer.steps)
        self.every, self.written, self.means, self.finished = every, [], [], 0

    def write(self, step, logs):
        if self.due(step, self.every):
            tf.summary.scalar("seen_step", float(step))
            self.written.append(step)
            self.means.append(float(self.fixed_batch(CONFIG, "sets", 1)["set_a"].mean()))
            logs["monitored"] = float(step)

    def finish(self):
        self.finished += 1


def test_due_takes_each_interval_and_the_last_step(tmp_path):
    monitor = TrainingMonitor(str(tmp_path), total_steps=25)
    assert [step for step in range(1, 31) if monitor.due(step, 10)] == [10, 20, 25, 26, 27, 28, 29, 30]
    assert [step for step in range(1, 26) if monitor.due(step, 0)] == [25]  # 0: the last step only
    unknown_end = TrainingMonitor(str(tmp_path))
    assert [step for step in range(1, 31) if unknown_end.due(step, 10)] == [10, 20, 30]


@pytest.mark.slow
def test_a_fit_writes_at_the_intervals_with_one_fixed_batch_and_closes_the_writer(tmp_path, toy_family):
    model = methods.get_method("abc").build(CONFIG, IMAGE_SHAPE)
    monitor = RecordingMonitor(str(tmp_path / "logs"), every=20)
    # The trainer's shape: one epoch per logging interval of log_every (10) steps.
    history = model.fit(
        make_dataset(CONFIG, seed=0), epochs=4, steps_per_epoch=10, callbacks=[monitor], verbose=0
    )
    assert monitor.written == [20, 40] and monitor.finished == 1 and monitor._writer is None
    assert monitor.means[0] == monitor.means[1]  # drawn once
    assert "monitored" in history.history
    events = EventAccumulator(
        glob.glob(str(tmp_path / "logs" / "events.*"))[0], size_guidance={"tensors": 0}
    ).Reload()
    steps = [event.step for event in events.Tensors("seen_step")]
    values = [float(np.asarray(tf.make_ndarray(event.tensor_proto))) for event in events.Tensors("seen_step")]
    assert steps == [20, 40] and values == [20.0, 40.0]

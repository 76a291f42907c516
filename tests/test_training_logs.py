"""What a run reports while it trains (abc_tf.runs.training_logs): the stop on a non-finite
loss that names the checkpoint kept, and the logged learning rate, directly and through short
toy runs (tests/toy_family.py)."""

from __future__ import annotations

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from abc_tf.runs import checkpoints, config_history, training, training_logs
from toy_family import CONFIG as TOY

pytestmark = [pytest.mark.usefixtures("toy_family"), pytest.mark.slow]


def test_the_stop_names_the_step_and_what_the_run_directory_keeps(tmp_path, monkeypatch):
    class Model:  # what the callback reads of the model: the optimizer's step
        optimizer = type("Optimizer", (), {"iterations": tf.Variable(7, dtype=tf.int64)})()

    stop = training_logs.StopOnNonFiniteLoss(str(tmp_path))
    stop.set_model(Model())
    stop.on_train_batch_end(0, {"loss": 1.5})
    stop.on_train_batch_end(0, {})  # no loss logged: nothing to check
    with pytest.raises(training_logs.NonFiniteLossError) as error:
        stop.on_train_batch_end(0, {"loss": float("inf")})
    assert (
        str(error.value) == "The loss became inf at step 7; no checkpoint had been written yet, "
        "so nothing of this run is kept."
    )
    assert (error.value.step, error.value.checkpoint_step) == (7, None)
    assert isinstance(error.value, training_logs.RunStopped)
    kept = os.path.join(str(tmp_path), "checkpoints", "ckpt-5")
    monkeypatch.setattr(checkpoints, "list_checkpoints", lambda run_dir: [(5, kept)])
    with pytest.raises(training_logs.NonFiniteLossError) as error:
        stop.on_train_batch_end(0, {"loss": np.float32("nan")})
    assert f"its newest good checkpoint, {kept} (step 5), is kept" in str(error.value)
    assert error.value.checkpoint_step == 5


def test_learning_rate_schedule_is_logged(trained_toy_run):
    result = trained_toy_run  # toy_family.TRAINED: TOY halving the learning rate every 20 steps
    # Logged at the end of steps 10, 20, 30, 40; halved at 20 and 40 (float32's 1e-3 times powers
    # of 2: 6e-8 from these).
    np.testing.assert_allclose(result.history["learning_rate"], [1e-3, 5e-4, 5e-4, 2.5e-4], rtol=1e-6)


def test_non_finite_loss_stops_with_a_clear_message_and_keeps_the_good_checkpoint(tmp_path, trained_toy_run):
    good = keras.models.load_model(os.path.join(trained_toy_run.run_dir, "encoder.keras")).get_weights()
    # Huge learning rate at a tiny temperature diverges.
    diverging = TOY.replace(learning_rate=1e9, temperature=1e-3, seed=4)
    with pytest.raises(
        training_logs.NonFiniteLossError, match="The loss became nan at step .*no checkpoint had been written"
    ):
        training.train(diverging, str(tmp_path / "bad"), verbose=0)
    assert checkpoints.list_checkpoints(str(tmp_path / "bad")) == []
    assert all(np.all(np.isfinite(w)) for w in good)
    # Nothing was trained, so the advised rerun with a lower learning rate is accepted.
    result = training.train(diverging.replace(learning_rate=1e-3, steps=10), str(tmp_path / "bad"), verbose=0)
    assert result.final_step == 10


class PoisonWeightsAt(keras.callbacks.Callback):
    """Sets the embedding layer's weights to NaN after optimizer step ``step`` (a diverged update)."""

    def __init__(self, step: int):
        super().__init__()
        self.step = step

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) == self.step:
            kernel = self.model.encoder.get_layer("embedding").kernel
            kernel.assign(tf.fill(kernel.shape, float("nan")))


def test_a_loss_turning_nan_mid_run_keeps_the_checkpoints_before_it(tmp_path):
    run_dir = str(tmp_path / "run")
    config = TOY.replace(keep_checkpoints=3)
    with pytest.raises(training_logs.NonFiniteLossError, match="The loss became nan at step 26"):
        training.train(config, run_dir, callbacks=[PoisonWeightsAt(25)], verbose=0)
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == [10, 20]
    model = training.build_model(config)
    assert checkpoints.restore(model, run_dir) == 20
    assert all(np.all(np.isfinite(w)) for w in model.get_weights())

    # The same settings are refused, naming the flag that lets the run continue from step 20.
    with pytest.raises(ValueError, match="add --allow_config_change=trainer.learning_rate"):
        training.train(config.replace(learning_rate=1e-4), run_dir, verbose=0)
    result = training.train(
        config.replace(learning_rate=1e-4), run_dir, verbose=0, allow_changes=["trainer.learning_rate"]
    )
    assert result.final_step == 40 and result.history["learning_rate"] == pytest.approx([1e-4, 1e-4])
    history = json.load(open(os.path.join(run_dir, config_history.CONFIG_HISTORY_FILE)))
    assert history[-1]["step"] == 20 and history[-1]["changed"] == {
        "trainer.learning_rate": {"old": 1e-3, "new": 1e-4}
    }

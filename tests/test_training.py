"""abc_tf.runs.training: what a run writes, the SavedModel by reload, resume after SIGKILL, NaN handling."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from abc_tf import data

from abc_tf.runs import checkpoints
from abc_tf.runs import config_history, training, training_logs
from abc_tf.config import ExperimentConfig

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS_DIR)

TOY = ExperimentConfig(
    name="toy", data="toy", model="s4", embedding_dim=8, set_size=12, pairs_per_step=2,
    learning_rate=1e-3, temperature=0.1, steps=40, log_every=10, seed=3,
)


@pytest.fixture(autouse=True)
def toy_family(monkeypatch):
    monkeypatch.setitem(data.DATA_FAMILIES, "toy", "toy_family")


def test_a_run_writes_config_logs_checkpoint_encoder_and_saved_model(tmp_path):
    run_dir = str(tmp_path / "run")
    result = training.train(TOY, run_dir, verbose=0)
    assert len(result.history["loss"]) == 4
    assert result.final_step == 40
    assert result.history["loss"][-1] < result.history["loss"][0]
    assert ExperimentConfig.from_json(open(os.path.join(run_dir, "config.json")).read()) == TOY
    assert os.listdir(os.path.join(run_dir, "logs", "train"))
    # Checkpoints at steps 10, 20, 30, 40; the newest two kept.
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == [30, 40]

    images = next(iter(data.get_family("toy").make_dataset(TOY, seed=0)))["set_a"][0]
    want = result.encoder(images).numpy()
    reloaded = keras.models.load_model(os.path.join(run_dir, "encoder.keras"))
    np.testing.assert_allclose(reloaded(images).numpy(), want, rtol=1e-5, atol=1e-6)
    saved = tf.saved_model.load(os.path.join(run_dir, "saved_model"))
    np.testing.assert_allclose(saved.embed(images)["embeddings"].numpy(), want, rtol=1e-5, atol=1e-5)
    as_uint8 = tf.cast(tf.round(images * 255.0), tf.uint8)
    np.testing.assert_allclose(
        saved.embed_uint8(as_uint8)["embeddings"].numpy(), result.encoder(as_uint8 / 255).numpy(), rtol=1e-4, atol=1e-4
    )


def test_rerunning_with_another_config_is_refused(tmp_path):
    run_dir = str(tmp_path / "run")
    training.train(TOY.replace(steps=10), run_dir, verbose=0)
    with pytest.raises(ValueError, match="different config \\(temperature: 0.1 -> 0.5"):
        training.train(TOY.replace(steps=10, temperature=0.5), run_dir, verbose=0)


def test_learning_rate_schedule_is_logged(tmp_path):
    result = training.train(TOY.replace(lr_halving_steps=20), str(tmp_path / "run"), verbose=0)
    # Logged at the end of steps 10, 20, 30, 40; halved at 20 and 40.
    np.testing.assert_allclose(result.history["learning_rate"], [1e-3, 5e-4, 5e-4, 2.5e-4], rtol=1e-6)


def test_non_finite_loss_stops_with_a_clear_message_and_keeps_the_good_checkpoint(tmp_path):
    run_dir = str(tmp_path / "run")
    training.train(TOY.replace(steps=10), run_dir, verbose=0)
    good = keras.models.load_model(os.path.join(run_dir, "encoder.keras")).get_weights()
    # Huge learning rate at a tiny temperature diverges.
    diverging = TOY.replace(learning_rate=1e9, temperature=1e-3, seed=4)
    with pytest.raises(training_logs.NonFiniteLossError, match="The loss became nan at step .*no checkpoint had been written"):
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
    with pytest.raises(ValueError, match="add --allow_config_change=learning_rate"):
        training.train(config.replace(learning_rate=1e-4), run_dir, verbose=0)
    result = training.train(config.replace(learning_rate=1e-4), run_dir, verbose=0, allow_changes=["learning_rate"])
    assert result.final_step == 40 and result.history["learning_rate"] == pytest.approx([1e-4, 1e-4])
    history = json.load(open(os.path.join(run_dir, config_history.CONFIG_HISTORY_FILE)))
    assert history[-1]["step"] == 20 and history[-1]["changed"] == {"learning_rate": {"old": 1e-3, "new": 1e-4}}


def test_allow_config_change_refuses_fields_that_shape_the_network(tmp_path):
    with pytest.raises(ValueError, match="--allow_config_change: embedding_dim cannot change within a run"):
        training.train(TOY, str(tmp_path / "run"), verbose=0, allow_changes=["embedding_dim"])


def scalar_steps(log_dir: str, tag: str) -> list[int]:
    steps = []
    for name in sorted(os.listdir(log_dir)):
        for event in tf.compat.v1.train.summary_iterator(os.path.join(log_dir, name)):
            steps += [int(event.step) for value in event.summary.value if value.tag == tag]
    return steps


@pytest.mark.parametrize(
    "steps,log_every,per_execution,logged",
    [
        (20, 10, 7, [10, 20]),  # 7 does not divide 10: Keras would train 28 steps
        (41, 20, 1, [20, 40, 41]),  # gcd 1: one-step epochs, but logs only every 20
        (40, 10, 5, [10, 20, 30, 40]),
    ],
)
def test_a_run_trains_exactly_its_steps_and_logs_on_the_interval(tmp_path, steps, log_every, per_execution, logged):
    run_dir = str(tmp_path / "run")
    config = TOY.replace(steps=steps, log_every=log_every, steps_per_execution=per_execution, keep_checkpoints=5)
    result = training.train(config, run_dir, verbose=0)
    assert result.final_step == steps
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == logged
    assert len(result.history["loss"]) == len(logged)
    # TensorBoard's x axis is the optimizer step, for the losses and the learning rate alike.
    assert scalar_steps(os.path.join(run_dir, "logs", "train"), "loss") == logged
    assert scalar_steps(os.path.join(run_dir, "logs", "train"), "learning_rate") == logged
    assert training.train(config, run_dir, verbose=0).final_step == steps  # a rerun trains nothing more


def test_raising_steps_extends_a_finished_run(tmp_path):
    run_dir = str(tmp_path / "run")
    config = TOY.replace(steps=20, lr_halving_steps=20)
    training.train(config, run_dir, verbose=0)
    result = training.train(config.replace(steps=30), run_dir, verbose=0)
    assert result.final_step == 30
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == [20, 30]
    assert result.history["learning_rate"] == pytest.approx([5e-4])  # the schedule continues: halved at step 20
    history = json.load(open(os.path.join(run_dir, config_history.CONFIG_HISTORY_FILE)))
    assert history[-1]["changed"] == {"steps": {"old": 20, "new": 30}}
    with pytest.raises(ValueError, match="--steps=10 is below the step of .* newest checkpoint \\(30\\)"):
        training.train(config.replace(steps=10), run_dir, verbose=0)


def test_a_full_disk_stops_with_a_clear_message_and_keeps_the_older_checkpoints(tmp_path, monkeypatch):
    run_dir = str(tmp_path / "run")
    training.train(TOY.replace(steps=20), run_dir, verbose=0)
    real_usage = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda path: real_usage(path)._replace(free=1000))
    with pytest.raises(checkpoints.CheckpointError, match="No room for the checkpoint of step 30 .* older checkpoints are intact"):
        training.train(TOY.replace(steps=40), run_dir, verbose=0)
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == [10, 20]
    monkeypatch.setattr(shutil, "disk_usage", real_usage)

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    model = training.build_model(TOY)
    model.optimizer.iterations.assign(30)  # checkpoints are numbered by the optimizer step
    monkeypatch.setattr(checkpoints, "_flush", no_space)  # the disk fills up as the written files are flushed
    with pytest.raises(checkpoints.CheckpointError, match="failed \\(No space left on device\\)"):
        checkpoints.save(model, run_dir, 30, keep=2)
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == [10, 20]
    assert not [name for name in os.listdir(checkpoints.checkpoint_dir(run_dir)) if name.startswith("ckpt-30")]


RESUMABLE_RUN = textwrap.dedent(
    """
    import sys
    from abc_tf import data
    from abc_tf.runs import checkpoints
    from abc_tf.runs import training
    from abc_tf.config import ExperimentConfig
    data.DATA_FAMILIES["toy"] = "toy_family"
    config = ExperimentConfig.from_json(open(sys.argv[1]).read())
    training.train(config, sys.argv[2], verbose=0)
    """
)


def test_a_killed_run_resumes_from_its_checkpoint(tmp_path):
    config = TOY.replace(steps=400, log_every=20, lr_halving_steps=100)
    config_path = tmp_path / "config.json"
    config_path.write_text(config.to_json())
    run_dir = tmp_path / "run"
    command = [sys.executable, "-c", RESUMABLE_RUN, str(config_path), str(run_dir)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([TESTS_DIR, ROOT]), "TF_CPP_MIN_LOG_LEVEL": "3"}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if len(checkpoints.list_checkpoints(str(run_dir))) >= 2:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the run ended before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait()
    saved = checkpoints.list_checkpoints(str(run_dir))
    assert len(saved) <= TOY.keep_checkpoints
    killed_at = saved[-1][0]
    assert 0 < killed_at < 400 and killed_at % 20 == 0

    result = training.train(config, str(run_dir), verbose=0)
    assert len(result.history["loss"]) * 20 == 400 - killed_at
    # The optimizer state (its step counter drives the schedule) continues from the checkpoint.
    assert result.final_step == 400
    assert result.history["learning_rate"][-1] == pytest.approx(1e-3 * 0.5**4)
    first_lr = result.history["learning_rate"][0]
    assert first_lr == pytest.approx(1e-3 * 0.5 ** ((killed_at + 20) // 100))

"""The factor-isolation callback writes TensorBoard summaries and projector files."""

from __future__ import annotations

import dataclasses
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import text_format
from tensorboard.plugins import projector

import toy_family as toy_family_module
from abc_tf.runs import experiments
from abc_tf.evaluation import callbacks
from abc_tf.methods.base import MethodModel
from abc_tf.evaluation.estimators import mine, probes
from abc_tf.runs.training_logs import NonFiniteLossError

NAMES = ["colour", "size"]


def _sample(n: int = 64, seed: int = 0):
    rng = np.random.default_rng(seed)
    factors = np.stack([rng.integers(0, 3, n), rng.integers(0, 2, n)], axis=1)
    images = np.zeros((n, 8, 8, 3), np.uint8)
    images[..., 0] = (factors[:, 0] * 100)[:, None, None]  # colour shows in the red channel
    return images, factors


class Regressor(MethodModel):
    """The smallest method model: one network regressing its targets by mean squared error."""

    def __init__(self, encoder: keras.Model):
        super().__init__()
        self.encoder = encoder
        self.track(("loss",))

    def call(self, images):
        return self.encoder(images)

    def compute_terms(self, batch, step, training):
        images, targets = batch
        return {"loss": tf.reduce_mean(tf.square(self.encoder(images, training=training) - targets))}

    def networks(self) -> dict[str, keras.Model]:
        return {"encoder": self.encoder}


@pytest.mark.slow
def test_callback_logs_scalars_images_and_projector(tmp_path):
    images, factors = _sample()
    keras.utils.set_random_seed(0)
    encoder = Regressor(
        keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Flatten(), keras.layers.Dense(2)])
    )
    encoder.compile(optimizer="sgd")
    log_dir = str(tmp_path / "isolation")
    callback = callbacks.FactorIsolationCallback(
        images,
        factors,
        NAMES,
        length_scale=0.1,
        log_dir=log_dir,
        every_steps=4,
        probe_settings=probes.ProbeSettings(epochs=1, batch_size=32),
        mine_settings=mine.MineSettings(steps=10, eval_samples=256, batch_size=32),
        projector_points=16,
        sprite_size=8,
    )
    x = images.astype(np.float32) / 255.0
    encoder.fit(x, np.zeros((len(x), 2)), batch_size=16, epochs=1, verbose=0, callbacks=[callback])
    # 4 steps, every 4: before training (0) and at the end (4), measured once there.
    assert [record["step"] for record in callback.history] == [0, 4]
    assert set(callback.history[-1]) >= {"probe_accuracy", "mine", "histogram", "spread"}
    assert set(callback.history[-1]["mine"]) == set(NAMES)

    events = [name for name in os.listdir(log_dir) if name.startswith("events.out.tfevents")]
    assert events
    tags = set()
    for event in tf.compat.v1.train.summary_iterator(os.path.join(log_dir, events[0])):
        tags.update(value.tag for value in event.summary.value)
    assert {"isolation/probe_accuracy/colour", "isolation/mine/size", "isolation/embeddings_pca"} <= tags

    with open(os.path.join(log_dir, callbacks.PROJECTOR_METADATA)) as handle:
        lines = handle.read().splitlines()
    assert lines[0] == "colour\tsize" and len(lines) == 17
    assert np.loadtxt(os.path.join(log_dir, callbacks.PROJECTOR_TENSORS)).shape == (16, 2)
    sprite = tf.io.decode_png(tf.io.read_file(os.path.join(log_dir, callbacks.PROJECTOR_SPRITE)))
    assert tuple(sprite.shape) == (32, 32, 3)  # 16 thumbnails of 8 px in a 4 x 4 grid
    # The config parses as TensorBoard's ProjectorConfig and names the files written beside it.
    config = text_format.Parse(
        open(os.path.join(log_dir, callbacks.PROJECTOR_CONFIG)).read(), projector.ProjectorConfig()
    )
    (embedding,) = config.embeddings
    assert (embedding.tensor_path, embedding.metadata_path) == (
        callbacks.PROJECTOR_TENSORS,
        callbacks.PROJECTOR_METADATA,
    )
    assert embedding.sprite.image_path == callbacks.PROJECTOR_SPRITE
    assert list(embedding.sprite.single_image_dim) == [8, 8]
    for name in (embedding.tensor_path, embedding.metadata_path, embedding.sprite.image_path):
        assert os.path.isfile(os.path.join(log_dir, name))


def test_a_family_without_a_labelled_sample_gets_no_callback_and_refuses_eval_every(
    tmp_path, toy_family, monkeypatch
):
    # The toy family without its task: no labelled sample to measure on.
    monkeypatch.setattr(
        "toy_family.FAMILY", dataclasses.replace(toy_family_module.FAMILY, evaluation_task="")
    )
    config = experiments.config_for(data="toy", eval_every=0, eval_images=32)
    assert callbacks.evaluation_callbacks(config, str(tmp_path)) == []
    with pytest.raises(
        ValueError, match="--trainer.eval_every=5: the toy data has no labelled sample to measure on"
    ):
        callbacks.evaluation_callbacks(config.replace(eval_every=5), str(tmp_path))


def test_evaluation_callbacks_follow_the_config(tmp_path):
    # eval_every=0: one measurement at the end only, for the run's summary table.
    (final_only,) = callbacks.evaluation_callbacks(
        experiments.config_for(eval_every=0, eval_images=32), str(tmp_path)
    )
    assert final_only.every_steps == 0
    with pytest.raises(ValueError, match="eval_every"):
        callbacks.evaluation_callbacks(experiments.config_for(eval_every=-1), str(tmp_path))
    with pytest.raises(ValueError, match=r"^--trainer.eval_images=10000000: Asked for .*; lower it.$"):
        callbacks.evaluation_callbacks(experiments.config_for(eval_images=10**7), str(tmp_path))
    built = callbacks.evaluation_callbacks(
        experiments.config_for(eval_every=50, eval_images=32), str(tmp_path)
    )
    assert len(built) == 1 and built[0].every_steps == 50 and built[0].images.shape == (32, 64, 64, 3)


def test_bad_callback_arguments_raise(tmp_path):
    images, factors = _sample(8)
    with pytest.raises(ValueError, match="every_steps"):
        callbacks.FactorIsolationCallback(images, factors, NAMES, 1.0, str(tmp_path), every_steps=-1)
    with pytest.raises(ValueError, match="mismatch"):
        callbacks.FactorIsolationCallback(images, factors[:4], NAMES, 1.0, str(tmp_path), every_steps=1)


def test_a_method_without_a_length_scale_is_measured_at_a_tenth_of_the_spread(tmp_path):
    images, factors = _sample()
    encoder = Regressor(
        keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Flatten(), keras.layers.Dense(2)])
    )
    encoder.compile(optimizer="sgd")
    callback = callbacks.FactorIsolationCallback(
        images,
        factors,
        NAMES,
        length_scale=None,
        log_dir=str(tmp_path / "isolation"),
        every_steps=0,
        probe_settings=None,
        mine_settings=None,
        projector_points=0,
    )
    x = images.astype(np.float32) / 255.0
    encoder.fit(x, np.zeros((len(x), 2)), batch_size=16, epochs=1, verbose=0, callbacks=[callback])
    record = callback.history[-1]
    assert record["sigma"] == pytest.approx(0.1 * record["spread"])


def test_embeddings_that_overflow_while_the_loss_is_finite_stop_the_run_as_a_nan_loss_does(tmp_path):
    """A learning rate far too high can leave the loss finite and the weights overflowed: the
    measurement stops the run with the NaN stop's error (what is kept, train.py's advice), not
    with an estimator's complaint about its input."""
    images, factors = _sample()
    encoder = Regressor(
        keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Flatten(), keras.layers.Dense(2)])
    )
    encoder.compile(optimizer="sgd")
    run_dir = tmp_path / "run"
    callback = callbacks.FactorIsolationCallback(
        images,
        factors,
        NAMES,
        length_scale=1.0,
        log_dir=str(run_dir / "logs" / callbacks.LOG_SUBDIR),
        every_steps=0,
        probe_settings=None,
        mine_settings=None,
        projector_points=0,
    )
    callback.set_model(encoder)
    dense = encoder.encoder.layers[-1]
    dense.kernel.assign(np.full(dense.kernel.shape, np.inf, np.float32))
    with pytest.raises(NonFiniteLossError, match="embeddings .* became NaN or infinite at step 3") as stop:
        callback.measure(3)
    assert "no checkpoint had been written yet" in str(stop.value) and stop.value.checkpoint_step is None

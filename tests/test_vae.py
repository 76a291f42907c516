"""The VAE and VITAE methods (abc_tf/methods/vae: model.py, losses.py, monitor.py): the ELBO terms
against NumPy, the KL warm-up, C-VITAE's inference order, the declarations and networks, train
steps, a short run on the small coded MNIST through the trainer (networks kept, loaded and
embedding, TensorBoard images), a NaN loss stopping the run at its last good checkpoint, and bad
settings refused before training."""

from __future__ import annotations

import math
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator

from abc_tf import methods
from abc_tf.runs import checks
from abc_tf.runs import experiments
from abc_tf.config import BATCH_CONFIGS
from abc_tf.runs.experiments import get_preset
from abc_tf.methods.vae import losses as vitae_losses
from abc_tf.methods.vae import monitor as vitae_monitor
from abc_tf.methods.vae import model as vitae
from abc_tf.runs import checkpoints, training, training_logs
from abc_tf.runs.run_dir import embed, load_run
from tolerance_helpers import rounding_rtol

VARIANTS = ("vae", "u_vitae", "c_vitae")


@pytest.fixture
def mnist_npz(tmp_path, small_mnist) -> str:
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    return path


def tiny(variant: str, path: str, **overrides):
    """The quick preset of ``variant`` on the small coded MNIST, a few steps of 16 images, in a
    plain graph: the preset's XLA compile takes seconds per model on a CPU, and every method's
    step is compiled with XLA once in tests/test_methods.py."""
    settings = dict(path=path, batch_size=16, steps=4, log_every=2, jit_compile=False)
    settings.update(overrides)
    return get_preset(f"mnist_{variant}_quick").replace(**settings)


def random_images(seed: int, batch: int = 6) -> np.ndarray:
    return np.random.default_rng(seed).uniform(size=(batch, 28, 28, 1)).astype(np.float32)


# ---------------------------------------------------------------- the terms, against NumPy loops


def test_bernoulli_log_likelihood_kl_and_log_density_match_numpy():
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(3, 2, 2, 1)).astype(np.float32)
    p = rng.uniform(0.05, 0.95, size=(3, 2, 2, 1)).astype(np.float32)
    expected = [
        sum(
            x[b].flat[i] * math.log(p[b].flat[i]) + (1 - x[b].flat[i]) * math.log(1 - p[b].flat[i])
            for i in range(4)
        )
        for b in range(3)
    ]
    # float32 against float64 on the same float32 inputs: 1 - p is exact for p >= 1/2 (and rounds
    # once below), then 4 terms of one sign: rounding_rtol(7) = 1.7e-6.
    np.testing.assert_allclose(vitae_losses.bernoulli_log_likelihood(x, p), expected, rtol=1e-5)
    # Probabilities of exactly 0 or 1 are clipped: finite values.
    assert np.all(
        np.isfinite(vitae_losses.bernoulli_log_likelihood(np.ones((1, 2, 2, 1)), np.zeros((1, 2, 2, 1))))
    )

    mean = rng.normal(size=(3, 2)).astype(np.float32)
    variance = rng.uniform(0.1, 2.0, size=(3, 2)).astype(np.float32)
    kl = [
        sum(0.5 * (variance[b, i] + mean[b, i] ** 2 - 1 - math.log(variance[b, i])) for i in range(2))
        for b in range(3)
    ]
    z = rng.normal(size=(3, 2)).astype(np.float32)
    density = [
        sum(
            -0.5 * math.log(2 * math.pi * variance[b, i]) - (z[b, i] - mean[b, i]) ** 2 / (2 * variance[b, i])
            for i in range(2)
        )
        for b in range(3)
    ]
    density_size = 0.5 * np.sum(np.abs(np.log(2 * np.pi * variance)) + (z - mean) ** 2 / variance, axis=1)
    np.testing.assert_allclose(
        vitae_losses.gaussian_log_density(z, mean, variance),
        density,
        rtol=0,
        atol=rounding_rtol(6) * density_size.max(),
    )
    # KL(q || N(0, I)) = E_q[log q - log p]: a Monte Carlo check of the two together.
    draws = mean[0] + np.sqrt(variance[0]) * rng.normal(size=(200_000, 2)).astype(np.float32)
    tiled_mean, tiled_var = np.tile(mean[:1], (len(draws), 1)), np.tile(variance[:1], (len(draws), 1))
    monte_carlo = np.mean(
        vitae_losses.gaussian_log_density(draws, tiled_mean, tiled_var)
        - vitae_losses.gaussian_log_density(draws, np.zeros_like(draws), np.ones_like(draws))
    )
    assert monte_carlo == pytest.approx(kl[0], abs=0.02)


def test_kl_weight_rises_over_the_warm_up():
    assert [float(vitae_losses.kl_weight(step, 100)) for step in (0, 25, 100, 400)] == [0.0, 0.25, 1.0, 1.0]
    assert float(vitae_losses.kl_weight(0, 0)) == 1.0


# ---------------------------------------------------------------- inference order


# ---------------------------------------------------------------- the declarations and the model


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_the_method_declarations_and_networks(variant, mnist_npz):
    method, config_class = methods.get_method(variant), experiments.method_config_class(variant)
    assert (
        config_class.batch_format == "images"
        and method.supervision.startswith("none:")
        and config_class(name=method.name).length_scale() is None
    )
    assert {"latent_dim", "kl_warmup", "affine_augmentation"} <= set(config_class.field_names())
    assert (
        "batch_size" in BATCH_CONFIGS[config_class.batch_format].field_names()
        and not config_class.has_encoder_part
    )
    config = tiny(variant, mnist_npz)
    model = training.build_model(config)
    networks = model.networks()
    shared = {"encoder", "appearance_posterior", "appearance_decoder"}
    vitae_only = {"appearance", "perspective", "perspective_posterior", "affine_decoder", "decoder"}
    assert set(networks) == (shared if variant == "vae" else shared | vitae_only)
    x = random_images(5, 3)
    z = np.asarray(networks["encoder"](x))
    assert z.shape == (3, 4)
    if variant != "vae":
        # The same layers on the same images: equal.
        np.testing.assert_allclose(
            z, np.concatenate([networks["appearance"](x), networks["perspective"](x)], axis=1), atol=1e-6
        )
        assert networks["decoder"]([z[:, :2], z[:, 2:]]).shape == (3, 28, 28, 1)
    # The same seed builds the same initial weights.
    for one, two in zip(model.get_weights(), training.build_model(config).get_weights()):
        np.testing.assert_array_equal(one, two)


@pytest.mark.slow
def test_train_steps_lower_the_negative_elbo(mnist_npz):
    config = tiny("c_vitae", mnist_npz, kl_warmup=0.0, affine_augmentation=False)
    model = training.build_model(config)
    batch = {"images": tf.constant((random_images(7, 32) > 0.7).astype(np.uint8) * 255)}
    step = tf.function(model.train_step)
    first = float(step(batch)["loss"])
    for _ in range(30):
        logs = step(batch)
    assert float(logs["loss"]) < first and float(logs["kl_weight"]) == 1.0
    assert float(logs["loss"]) == pytest.approx(
        float(logs["reconstruction"] + logs["kl_appearance"] + logs["kl_perspective"]), rel=0.05
    )


# ---------------------------------------------------------------- through the trainer


@pytest.mark.slow
def test_a_short_c_vitae_run_trains_logs_and_its_networks_load_and_embed(tmp_path, mnist_npz, small_mnist):
    run_dir = str(tmp_path / "run")
    config = tiny("c_vitae", mnist_npz)
    result = training.train(config, run_dir, verbose=0)
    assert result.final_step == 4
    assert {"loss", "reconstruction", "kl_appearance", "kl_perspective", "kl_weight"} <= set(result.history)
    assert result.history["kl_weight"] == pytest.approx([1 / 2, 1.0])  # warm-up over half of 4 steps
    run = load_run(run_dir)
    codes = embed(run.encoder, small_mnist["x_test"][:10, ..., None])
    assert codes.shape == (10, 4) and np.all(np.isfinite(codes))
    # The encoder's z_A is the appearance network's output, the same layers in the same batches: equal.
    np.testing.assert_allclose(
        codes[:, :2], embed(run.network("appearance"), small_mnist["x_test"][:10, ..., None]), atol=1e-5
    )
    assert run.network("decoder") is not None and run.network("affine_decoder") is not None
    events = event_accumulator.EventAccumulator(
        os.path.join(run_dir, "logs", vitae.LOG_SUBDIR), size_guidance={"tensors": 0}
    )
    events.Reload()
    assert [event.step for event in events.Tensors("traversals")] == [2, 4]
    grid = tf.io.decode_png(tf.make_ndarray(events.Tensors("traversals")[-1].tensor_proto)[2])
    assert grid.shape == (4 * 28, vitae_monitor.TRAVERSAL_STEPS * 28, 1)  # one row per latent dimension
    grid = tf.io.decode_png(tf.make_ndarray(events.Tensors("reconstructions")[-1].tensor_proto)[2])
    # Rows: images, aligned, reconstructions, templates.
    assert grid.shape == (4 * 28, vitae_monitor.GRID_IMAGES * 28, 1)
    # A killed run resumes from its checkpoint.
    resumed = training.train(config.replace(steps=6), run_dir, verbose=0)
    assert resumed.final_step == 6


class PoisonAt(keras.callbacks.Callback):
    """Sets the appearance decoder's output weights to NaN after optimizer step ``step``."""

    def __init__(self, step: int):
        super().__init__()
        self.step = step

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) == self.step:
            kernel = self.model.appearance_decoder.get_layer("pixels").kernel
            kernel.assign(tf.fill(kernel.shape, float("nan")))


@pytest.mark.slow
def test_a_nan_loss_stops_the_run_at_its_last_good_checkpoint(tmp_path, mnist_npz):
    run_dir = str(tmp_path / "run")
    config = tiny("u_vitae", mnist_npz, steps=8, keep_checkpoints=3, steps_per_execution=1)
    with pytest.raises(training_logs.NonFiniteLossError, match="The loss became nan at step 6"):
        training.train(config, run_dir, callbacks=[PoisonAt(5)], verbose=0)
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == [2, 4]
    model = training.build_model(config)
    assert checkpoints.restore(model, run_dir) == 4
    assert all(np.all(np.isfinite(w)) for w in model.get_weights())


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"kl_warmup": 1.5}, r"--method.kl_warmup must lie in \[0, 1\]"),
        ({"latent_dim": 3}, r"--method.latent_dim must be even for --method=c_vitae"),
        (
            {"data": "shapes3d", "source": "procedural", "path": ""},
            r"--method=c_vitae trains on 'images' batches; data family 'shapes3d' streams sets, pairs",
        ),
        ({"kl_warmup": float("nan")}, r"--method.kl_warmup must lie in \[0, 1\]"),
    ],
)
def test_bad_settings_fail_before_training(tmp_path, mnist_npz, overrides, message):
    run_dir = tmp_path / "run"
    with pytest.raises(ValueError, match=message):
        training.train(experiments.choose(tiny("c_vitae", mnist_npz), **overrides), str(run_dir), verbose=0)
    assert not (run_dir / "config.json").exists() and not checkpoints.list_checkpoints(str(run_dir))


def test_vitae_fields_are_refused_for_other_methods():
    # ABC's config has no VAE field; the set size is its batch part's.
    abc = experiments.method_config_class("abc")
    assert [
        name for name in ("kl_warmup", "affine_augmentation", "latent_dim") if name in abc.field_names()
    ] == []
    assert get_preset("mnist").replace(set_size=8).batch.set_size == 8
    with pytest.raises(
        ValueError,
        match=r"--method.kl_warmup: method 'abc' \(AbcConfig\) has no field 'kl_warmup'; "
        r"its fields: similarity, temperature",
    ):
        experiments.override(get_preset("mnist"), {"method.kl_warmup": 0.2})
    with pytest.raises(
        ValueError, match=r"This config has no field 'kl_warmup' \(data family 'mnist', method 'abc'\)"
    ):
        get_preset("mnist").replace(kl_warmup=0.2)


def test_the_presets():
    for variant in VARIANTS:
        paper, quick = get_preset(f"mnist_{variant}"), get_preset(f"mnist_{variant}_quick")
        assert (
            paper.method.name,
            paper.batch.batch_size,
            paper.trainer.learning_rate,
            paper.method.latent_dim,
            paper.data.holdout_digit,
        ) == (variant, 512, 1e-4, 4, "9")
        assert paper.encoder is None
        assert paper.trainer.steps * paper.batch.batch_size / 54_051 == pytest.approx(
            2000, rel=0.001
        )  # 2000 epochs
        assert quick.method.name == variant and quick.trainer.steps < 10_000
        checks.check_config(quick.replace(source="procedural"))

"""ML-VAE (abc_tf/methods/ml_vae/model.py, its config and presets, models/ml_vae_networks.py): the
loss of a step and its gradients against a NumPy restatement of the ELBO (product of Gaussians,
KLs, Gaussian or Bernoulli pixels) under the same reparameterisation noise, the group posterior,
the networks, a short run through the trainer (trained, resumed, its networks loaded and
embedding), the presets against the authors' code and bad settings refused; the 64 x 64
networks (models/vae64_networks.py), the shape refusal, the pose presets and a short pose run."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf

import models
from abc_tf import methods, optimizers
from abc_tf.runs import checks
from abc_tf.runs import experiments
from abc_tf.runs.experiments import get_preset
from abc_tf.data.pose import procedural as pose_procedural
from abc_tf.methods.ml_vae import model as ml_vae
from abc_tf.methods import ml_vae as ml_vae_config
from abc_tf.runs import checkpoints, training
from abc_tf.runs.run_dir import embed, load_run
from models import vae64_networks
from models import ml_vae_networks
from pose_data_helpers import SMALL
from tolerance_helpers import rounding_rtol

P, N, SHAPE = 2, 3, (4, 4, 1)  # two groups of three 4 x 4 images
DIMS = dict(style_dim=2, content_dim=3, hidden_units=5)
# The roundings on the loss's longest chain: the fan-ins of the encoder (16 pixels, then 5
# hidden units), the group's sum over 3 members, the decoder's (5 codes, 5 units), the sum over
# 16 pixels and the mean over 6 images, and about 10 elementwise operations.
ROUNDINGS = 16 + 5 + 3 + 5 + 5 + 16 + 6 + 10


def tiny_model(
    likelihood: str = "gaussian",
    content_sample: str = "group",
    kl_weight: float = 1.0,
    sample_std: float = 1.0,
) -> ml_vae.MlVaeModel:
    config = experiments.config_for(
        data="mnist",
        method="ml_vae",
        likelihood=likelihood,
        content_sample=content_sample,
        kl_weight=kl_weight,
        sample_std=sample_std,
        seed=3,
        **DIMS,
    )
    return ml_vae.build(config, SHAPE)


def tiny_batch(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {key: rng.integers(0, 256, size=(P, N, *SHAPE), dtype=np.uint8) for key in ("set_a", "set_b")}


# ---------------------------------------------------------------- NumPy restatement


def weights_of(model: ml_vae.MlVaeModel) -> dict[str, np.ndarray]:
    """Every kernel and bias, float64, by "<network>/<layer>/<kernel|bias>"."""
    found = {}
    for network in (model.posterior, model.decoder):
        for layer in network.layers:
            if hasattr(layer, "kernel"):
                found[f"{network.name}/{layer.name}/kernel"] = np.asarray(layer.kernel, np.float64)
                found[f"{network.name}/{layer.name}/bias"] = np.asarray(layer.bias, np.float64)
    return found


def numpy_elbo(
    weights: dict, images: np.ndarray, noise: dict, likelihood: str, kl_weight: float, sample_std: float = 1.0
) -> dict:
    """The terms of the loss in float64, restated from the paper's model: images [P, N, H, W, C]
    in [0, 1], the content's noise scaled by ``sample_std``. Also "scale_*", the sum of the
    magnitudes each term adds up (for tolerances)."""

    def dense(x, network, layer):
        return x @ weights[f"{network}/{layer}/kernel"] + weights[f"{network}/{layer}/bias"]

    groups, size = images.shape[:2]
    x = images.reshape(groups * size, -1)
    hidden = np.tanh(dense(x, "posterior", "hidden"))
    code = {
        name: dense(hidden, "posterior", name).reshape(groups, size, -1)
        for name in ml_vae_networks.ENCODER_OUTPUTS
    }
    # The product of the group's Gaussians: precisions add, the mean is precision-weighted.
    variances = np.exp(code["content_log_variance"])
    group_variance = 1.0 / np.sum(1.0 / variances, axis=1)
    group_mean = group_variance * np.sum(code["content_mean"] / variances, axis=1)
    style_variance = np.exp(code["style_log_variance"])
    style = code["style_mean"] + np.sqrt(style_variance) * noise["style"]
    content = np.broadcast_to(
        group_mean[:, None] + np.sqrt(group_variance)[:, None] * sample_std * noise["content"],
        (groups, size, group_mean.shape[-1]),
    )
    decoder_hidden = np.tanh(
        dense(np.concatenate([style, content], -1).reshape(groups * size, -1), "decoder", "hidden")
    )
    if likelihood == "gaussian":
        mean = dense(decoder_hidden, "decoder", "pixel_mean")
        log_variance = np.tanh(dense(decoder_hidden, "decoder", "pixel_log_variance"))
        parts = [np.full_like(x, math.log(2 * math.pi)), log_variance, (x - mean) ** 2 / np.exp(log_variance)]
        log_p = np.sum(-0.5 * sum(parts), axis=1)
        nll_scale = np.sum(0.5 * sum(np.abs(part) for part in parts), axis=1)
    else:
        logits = dense(decoder_hidden, "decoder", "pixel_logits")
        # log sigmoid(l) = -log(1 + e^-l), log(1 - sigmoid(l)) = -log(1 + e^l)
        per_pixel = -x * np.logaddexp(0, -logits) - (1 - x) * np.logaddexp(0, logits)
        log_p = np.sum(per_pixel, axis=1)
        nll_scale = np.sum(np.abs(x * logits) + np.logaddexp(0, np.abs(logits)), axis=1)

    def kl(mean, variance):
        return 0.5 * np.sum(variance + mean**2 - 1 - np.log(variance), axis=-1)

    def kl_scale(mean, variance):
        return 0.5 * np.sum(variance + mean**2 + 1 + np.abs(np.log(variance)), axis=-1)

    terms = {
        "reconstruction": np.mean(-log_p),
        "kl_style": np.mean(kl(code["style_mean"], style_variance)),
        "kl_content": np.mean(kl(group_mean, group_variance)),
    }
    terms["loss"] = terms["reconstruction"] + kl_weight * (terms["kl_style"] + terms["kl_content"] / size)
    terms["scale_reconstruction"] = np.mean(nll_scale)
    terms["scale_kl_style"] = np.mean(kl_scale(code["style_mean"], style_variance))
    terms["scale_kl_content"] = np.mean(kl_scale(group_mean, group_variance))
    terms["condition"] = max(
        1.0, np.abs(code["style_log_variance"]).max(), np.abs(code["content_log_variance"]).max()
    )
    return terms


# ---------------------------------------------------------------- the loss against NumPy


@pytest.mark.parametrize(
    "likelihood, content_sample, kl_weight, sample_std",
    [("gaussian", "group", 1.0, 1.0), ("bernoulli", "image", 0.5, 1.0), ("gaussian", "group", 1.0, 0.1)],
)
def test_a_steps_loss_and_gradients_match_the_numpy_elbo(likelihood, content_sample, kl_weight, sample_std):
    model = tiny_model(likelihood, content_sample, kl_weight, sample_std)
    batch = tiny_batch()
    images = batch["set_a"].astype(np.float64) / 255.0
    weights = weights_of(model)
    # The step's noise, drawn as compute_terms draws it from (seed, step): one content draw per
    # group or per image.
    noise = {key: np.asarray(value, np.float64) for key, value in model.noise_at(0, P, N).items()}
    assert noise["style"].shape == (P, N, 2) and noise["content"].shape == (
        P,
        1 if content_sample == "group" else N,
        3,
    )
    expected = numpy_elbo(weights, images, noise, likelihood, kl_weight, sample_std)
    # Each term within the float32 roundings of its chain, relative to the magnitudes it adds
    # up (KL's var - 1 - log var cancels), times the log-variances' condition (exp(x) multiplies
    # a relative error by |x|).
    tolerance = {
        name: rounding_rtol(ROUNDINGS, expected["condition"]) * expected[f"scale_{name}"]
        for name in ("reconstruction", "kl_style", "kl_content")
    }
    tolerance["loss"] = tolerance["reconstruction"] + kl_weight * (
        tolerance["kl_style"] + tolerance["kl_content"] / N
    )

    with tf.GradientTape() as tape:
        terms = model.compute_terms(
            {key: tf.constant(value) for key, value in batch.items()}, tf.constant(0), True
        )
    for name in ("loss", "reconstruction", "kl_style", "kl_content"):
        assert float(terms[name]) == pytest.approx(expected[name], abs=tolerance[name]), name
    # The logged loss of one training step is the same loss, at step 0's noise.
    logs = model.train_step({key: tf.constant(value) for key, value in batch.items()})
    assert float(logs["loss"]) == pytest.approx(expected["loss"], abs=tolerance["loss"])

    # Gradients against central differences of the NumPy loss (float64: truncation h^2 ~ 1e-10
    # and rounding 1e-16 / h of the loss, both far below float32's roundings).
    pixels = "pixel_mean" if likelihood == "gaussian" else "pixel_logits"
    checked = [
        "posterior/content_mean/kernel",
        "posterior/content_log_variance/bias",
        "posterior/style_log_variance/bias",
        "posterior/hidden/bias",
        f"decoder/{pixels}/bias",
    ]
    layers = {
        f"{network.name}/{layer.name}/{part}": getattr(layer, part)
        for network in (model.posterior, model.decoder)
        for layer in network.layers
        if hasattr(layer, "kernel")
        for part in ("kernel", "bias")
    }
    gradients = tape.gradient(terms["loss"], [layers[name] for name in checked])
    step = 1e-5
    for name, gradient in zip(checked, gradients):
        numeric = np.zeros_like(weights[name])
        for index in np.ndindex(numeric.shape):
            shifted = {sign: dict(weights) for sign in (1, -1)}
            for sign in (1, -1):
                shifted[sign][name] = weights[name].copy()
                shifted[sign][name][index] += sign * step
            numeric[index] = (
                numpy_elbo(shifted[1], images, noise, likelihood, kl_weight, sample_std)["loss"]
                - numpy_elbo(shifted[-1], images, noise, likelihood, kl_weight, sample_std)["loss"]
            ) / (2 * step)
        # float32 back-propagation: the same chain's roundings, relative to the largest component.
        np.testing.assert_allclose(
            np.asarray(gradient),
            numeric,
            rtol=0,
            atol=rounding_rtol(2 * ROUNDINGS, expected["condition"]) * np.abs(numeric).max() + 1e-6,
            err_msg=name,
        )


def test_the_group_posterior_is_the_product_of_the_members_gaussians():
    rng = np.random.default_rng(1)
    mean = rng.normal(size=(4, 5, 3)).astype(np.float32)
    log_variance = rng.uniform(-2, 2, size=(4, 5, 3)).astype(np.float32)
    group_mean, group_log_variance = (
        np.asarray(value) for value in ml_vae.group_posterior(mean, log_variance)
    )
    precision = np.sum(np.exp(-log_variance.astype(np.float64)), axis=1)
    expected_mean = np.sum(mean * np.exp(-log_variance.astype(np.float64)), axis=1) / precision
    # float32 logsumexp and softmax over 5 members of exponents up to 2: condition 2 (exp(x)).
    np.testing.assert_allclose(group_log_variance, -np.log(precision), rtol=0, atol=rounding_rtol(10, 2) * 4)
    np.testing.assert_allclose(
        group_mean, expected_mean, rtol=0, atol=rounding_rtol(10, 2) * np.abs(mean).max()
    )
    # One member: its own Gaussian. N equal members: the same mean, the variance divided by N.
    one_mean, one_log_variance = ml_vae.group_posterior(mean[:, :1], log_variance[:, :1])
    np.testing.assert_allclose(one_mean, mean[:, 0], atol=1e-6)
    np.testing.assert_allclose(one_log_variance, log_variance[:, 0], atol=1e-6)
    same_mean, same_log_variance = ml_vae.group_posterior(
        np.repeat(mean[:, :1], 5, 1), np.repeat(log_variance[:, :1], 5, 1)
    )
    np.testing.assert_allclose(same_mean, mean[:, 0], atol=1e-5)
    np.testing.assert_allclose(same_log_variance, log_variance[:, 0] - math.log(5), atol=1e-5)


def test_one_content_draw_per_group_or_per_image():
    batch = {key: tf.constant(value) for key, value in tiny_batch(2).items()}
    for content_sample in ("group", "image"):
        model = tiny_model(content_sample=content_sample)
        sets = tf.cast(batch["set_a"], tf.float32) / 255.0
        out = ml_vae.elbo_terms(model.posterior, model.decoder, "gaussian", sets, model.noise_at(5, P, N))
        content = np.asarray(out["content"])
        shared = np.allclose(content, content[:, :1])
        assert shared == (content_sample == "group")
        # Style draws differ per image; the noise follows the step.
        assert not np.allclose(np.asarray(out["style"])[:, 0], np.asarray(out["style"])[:, 1])
        assert not np.allclose(model.noise_at(5, P, N)["style"], model.noise_at(6, P, N)["style"])


# ---------------------------------------------------------------- networks and declaration


def test_the_networks_are_the_authors_mlps():
    posterior = ml_vae_networks.ml_vae_encoder()
    assert [tuple(output.shape) for output in posterior.outputs] == [(None, 10)] * 4
    hidden = posterior.get_layer("hidden")
    assert hidden.units == 500 and hidden.activation.__name__ == "tanh"
    # The authors' init: N(0, 1 / fan_in) for kernels, N(0, 1 / length) for biases.
    assert np.std(np.asarray(hidden.kernel)) == pytest.approx(1 / math.sqrt(784), rel=0.02)
    assert np.std(np.asarray(posterior.get_layer("style_mean").kernel)) == pytest.approx(
        1 / math.sqrt(500), rel=0.1
    )
    decoder = ml_vae_networks.ml_vae_decoder()
    assert [tuple(output.shape) for output in decoder.outputs] == [(None, 28, 28, 1)] * 2
    assert (
        decoder.get_layer("hidden").units == 500
        and decoder.get_layer("pixel_log_variance").activation.__name__ == "tanh"
    )
    bernoulli = ml_vae_networks.ml_vae_decoder(likelihood="bernoulli")
    assert tuple(bernoulli.output.shape) == (None, 28, 28, 1)
    with pytest.raises(ValueError, match="Unknown likelihood 'poisson'"):
        ml_vae_networks.ml_vae_decoder(likelihood="poisson")


def test_the_declaration():
    method, config_class = methods.get_method("ml_vae"), experiments.method_config_class("ml_vae")
    assert config_class is ml_vae_config.MlVaeConfig
    assert (
        config_class.batch_format == "sets"
        and not config_class.has_encoder_part
        and config_class(name=method.name).length_scale() is None
    )
    assert method.supervision_for(get_preset("mnist_ml_vae")).startswith(
        "group membership: which images share the content (the digit)"
    )
    assert "(the object instance)" in method.supervision_for(get_preset("pose_ml_vae"))
    assert not method.accepts_two_view_sets
    assert method.label_for(get_preset("mnist_ml_vae")) == "ml_vae"
    assert (
        method.label_for(get_preset("mnist_ml_vae").replace(likelihood="bernoulli", content_sample="image"))
        == "ml_vae (Bernoulli likelihood, one content draw per image)"
    )


# ---------------------------------------------------------------- through the trainer


@pytest.mark.slow
def test_a_short_run_trains_resumes_and_its_networks_embed(tmp_path, small_mnist):
    run_dir = str(tmp_path / "run")
    config = get_preset("mnist_ml_vae_quick").replace(
        source="procedural",
        set_size=8,
        pairs_per_step=2,
        steps=4,
        log_every=2,
        jit_compile=False,
        eval_images=64,
    )
    result = training.train(config, run_dir, verbose=0)
    assert result.final_step == 4 and set(ml_vae.LOG_NAMES) <= set(result.history)
    assert all(np.isfinite(value) for values in result.history.values() for value in values)
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == [2, 4]
    run = load_run(run_dir)
    images = small_mnist["x_test"][:10, ..., None]
    codes = embed(run.encoder, images)
    assert codes.shape == (10, 10) and np.all(np.isfinite(codes))
    # The encoder is the posterior's style mean, the content network its content mean: the same
    # layers on the same images.
    posterior = run.network("posterior")(images.astype(np.float32) / 255.0)
    np.testing.assert_allclose(codes, posterior[0], atol=1e-5)
    np.testing.assert_allclose(embed(run.network("content"), images), posterior[2], atol=1e-5)
    assert run.network("decoder") is not None
    # A stopped run resumes from its checkpoint.
    assert training.train(config.replace(steps=6), run_dir, verbose=0).final_step == 6


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"likelihood": "poisson"}, r"--method.likelihood='poisson'; choose one of gaussian, bernoulli"),
        ({"content_sample": "pair"}, r"--method.content_sample='pair'; choose one of group, image"),
        ({"kl_weight": -1.0}, r"--method.kl_weight must be a finite number >= 0"),
        ({"sample_std": 0.0}, r"--method.sample_std must be a finite number > 0, got 0.0"),
        ({"style_dim": 0}, r"--method.style_dim must be positive"),
        ({"augmentation_baseline": True, "holdout_digit": "none"}, r"--method=ml_vae does not train on them"),
    ],
)
def test_bad_settings_fail_before_training(tmp_path, overrides, message):
    with pytest.raises(ValueError, match=message):
        checks.check_config(get_preset("mnist_ml_vae_quick").replace(source="procedural", **overrides))


# ---------------------------------------------------------------- presets against the sources


def test_the_presets_are_the_authors_settings():
    paper, quick = get_preset("mnist_ml_vae"), get_preset("mnist_ml_vae_quick")
    method = paper.method
    # multi-level-vae main.py L9-L18, L21-L22, L32; networks.py L16, L43-52; training.py L39-45.
    assert (method.name, method.style_dim, method.content_dim, method.hidden_units) == ("ml_vae", 10, 10, 500)
    assert (method.likelihood, method.kl_weight) == ("gaussian", 1.0)
    assert paper.trainer.learning_rate == 1e-3 and optimizers.PYTORCH_ADAM_EPSILON == 1e-8
    # Groups of ABC's MNIST stack size (ABC supplement L164, L217), 256 images per step as the
    # authors' batches, digit 9 held out (L114, L164), 400 epochs of the 54,051 remaining images.
    assert (paper.batch.set_size, paper.batch.set_size * paper.batch.pairs_per_step) == (64, 256)
    assert paper.data.holdout_digit == "9" and paper.encoder is None
    assert paper.trainer.steps * 256 / 54_051 == pytest.approx(400, rel=1e-4)
    assert quick.method == paper.method and quick.batch == paper.batch and quick.trainer.steps <= 10_000
    assert quick.trainer.jit_compile
    checks.check_config(quick.replace(source="procedural"))


# ---------------------------------------------------------------- 64 x 64 networks and pose presets


def test_the_64_by_64_networks():
    """models/vae64_networks.py (sizes ours: CC-VAE's supplement could not be read): four 4 x 4
    stride-2 convolutions of b, 2b, 4b, 8b channels to 4 x 4, four heads; the decoder's two
    codes into a 4 x 4 map of 8b, transposed convolutions of 4b, 2b, b and the pixel heads."""
    posterior = vae64_networks.ml_vae_encoder_64(style_dim=3, content_dim=5, base_channels=8)
    assert [tuple(output.shape) for output in posterior.outputs] == [
        (None, 3),
        (None, 3),
        (None, 5),
        (None, 5),
    ]
    assert [posterior.get_layer(f"conv_{i}").output.shape[1:] for i in (1, 2, 3, 4)] == [
        (32, 32, 8),
        (16, 16, 16),
        (8, 8, 32),
        (4, 4, 64),
    ]
    conv = posterior.get_layer("conv_1")
    assert (
        conv.kernel_size == (4, 4) and conv.strides == (2, 2) and posterior.get_layer("norm_4").groups == 64
    )
    decoder = vae64_networks.ml_vae_decoder_64(style_dim=3, content_dim=5, base_channels=8)
    assert [tuple(output.shape) for output in decoder.outputs] == [(None, 64, 64, 3)] * 2
    assert decoder.get_layer("style_input").units == decoder.get_layer("content_input").units == 4 * 8 * 4 * 4
    assert [decoder.get_layer(f"deconv_{i}").output.shape[1:] for i in (1, 2, 3)] == [
        (8, 8, 32),
        (16, 16, 16),
        (32, 32, 8),
    ]
    assert decoder.get_layer("pixel_log_variance").activation.__name__ == "tanh"
    codes = [np.random.default_rng(0).normal(size=(2, dim)).astype(np.float32) for dim in (3, 5)]
    assert np.all(np.abs(np.asarray(decoder(codes)[1])) <= 1)  # tanh-squashed log-variance
    bernoulli = vae64_networks.ml_vae_decoder_64(likelihood="bernoulli", output_shape=(64, 64, 1))
    assert tuple(bernoulli.output.shape) == (None, 64, 64, 1)
    # The default width, b = 32 (the pose presets'), and the registry's names.
    assert models.build("ml_vae_encoder_64").get_layer("conv_4").output.shape[1:] == (4, 4, 256)
    with pytest.raises(ValueError, match=r"take 64 x 64 images, not \(32, 32, 3\)"):
        vae64_networks.ml_vae_encoder_64(input_shape=(32, 32, 3))


def test_networks_that_do_not_fit_the_images_are_refused_before_training():
    conv64_on_mnist = get_preset("mnist_ml_vae_quick").replace(source="procedural", networks="conv64")
    message = r"--method.networks=conv64 takes 64 x 64 images; data 'mnist' gives \(28, 28, 1\)"
    with pytest.raises(ValueError, match=message):
        checks.check_config(conv64_on_mnist)
    with pytest.raises(ValueError, match=r"take 64 x 64 images, not \(28, 28, 1\)"):
        ml_vae.build(conv64_on_mnist, (28, 28, 1))  # the networks' own check
    with pytest.raises(
        ValueError, match=r"--method.networks=conv64 takes 64 x 64 images; data 'pose' gives \(32, 32, 3\)"
    ):
        checks.check_config(get_preset("pose_ml_vae_quick").replace(image_size=32))
    with pytest.raises(ValueError, match=r"--method.networks='resnet'; choose one of mnist, conv64"):
        checks.check_config(get_preset("pose_ml_vae_quick").replace(networks="resnet"))
    # The authors' MLPs take any size: MNIST's networks on pose images are allowed.
    checks.check_config(get_preset("pose_ml_vae_quick").replace(networks="mnist"))


def test_the_pose_presets():
    paper, quick = get_preset("pose_ml_vae"), get_preset("pose_ml_vae_quick")
    data = paper.data
    # Clean procedural renders on black at 64 x 64 (ABC supplement L217; Table S1's synthetic queries).
    assert (data.family, data.source, data.image_size, data.real_fraction) == ("pose", "auto", 64, 0.0)
    assert (data.crop_amplitude, data.augmentation_amplitude, data.paint_backgrounds) == (0.0, 0.0, False)
    # Groups of ABC's pose stack (32; L217), 8 per step: the authors' 256 images.
    assert (paper.batch.set_size, paper.batch.pairs_per_step, paper.batch.double_augmentation) == (
        32,
        8,
        False,
    )
    method = paper.method
    assert (method.networks, method.likelihood, method.base_channels) == ("conv64", "bernoulli", 32)
    assert (method.style_dim, method.content_dim, method.kl_weight, method.content_sample) == (
        10,
        10,
        1.0,
        "group",
    )
    assert paper.trainer.learning_rate == 1e-3 and paper.encoder is None
    # The authors' 400 epochs over the 4,000 procedural training renders in steps of 256.
    sizes = pose_procedural.ProceduralSizes()
    assert sizes.train_instances * sizes.views_per_instance == ml_vae_config.POSE_TRAINING_RENDERS == 4000
    assert paper.trainer.steps * 256 / 4000 == pytest.approx(400)
    assert quick.method == method and quick.data == data and quick.batch.set_size == 32
    assert quick.trainer.steps < paper.trainer.steps and quick.trainer.learning_rate == 1e-3
    for preset in (paper, quick):
        checks.check_config(preset)


@pytest.mark.slow
def test_a_short_pose_run_trains_and_its_encoder_embeds(tmp_path, monkeypatch):
    monkeypatch.setattr(pose_procedural, "PROCEDURAL", SMALL)  # 3 instances x 6 views
    config = get_preset("pose_ml_vae_quick").replace(
        set_size=4, pairs_per_step=2, steps=2, log_every=2, base_channels=4, eval_images=16
    )
    result = training.train(config, str(tmp_path / "run"), verbose=0)
    assert result.final_step == 2 and all(
        np.isfinite(value) for values in result.history.values() for value in values
    )
    run = load_run(str(tmp_path / "run"))
    images = pose_procedural.training_images("car", 64, 0.5)[0][:5, ..., :3]
    codes = embed(run.encoder, images)
    assert codes.shape == (5, 10) and np.all(np.isfinite(codes))
    np.testing.assert_allclose(
        codes, run.network("posterior")(images.astype(np.float32) / 255.0)[0], atol=1e-5
    )

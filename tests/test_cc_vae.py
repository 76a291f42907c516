"""CC-VAE (abc_tf/methods/cc_vae: model.py, losses.py, its config and presets;
models/cc_vae_networks.py): both cycles' loss terms and their gradients against a NumPy
restatement of the authors' networks and losses under the same pairing and noise, the step's
draws, the two updates' variables, the networks, a short run through the trainer (trained,
resumed, its networks loaded and embedding), the presets against the authors' code and bad
settings refused; the 64 x 64 networks (models/vae64_networks.py), the shape refusal, the pose
presets and a short pose run."""

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
from abc_tf.methods.cc_vae import losses as cc_vae_losses
from abc_tf.methods.cc_vae import model as cc_vae
from abc_tf.methods import cc_vae as cc_vae_config
from abc_tf.runs import checkpoints, training
from abc_tf.runs.run_dir import embed, load_run
from models import vae64_networks
from models import cc_vae_networks
from pose_data_helpers import SMALL
from tolerance_helpers import rounding_rtol

P, N, SHAPE = 2, 5, (28, 28, 1)  # two stacks of five: two pairs each, one image left out
DIMS = dict(style_dim=3, class_dim=2, base_channels=2)
WEIGHTS = dict(reconstruction_weight=2.0, kl_weight=3.0, reverse_cycle_weight=10.0)
# The roundings on the longest chain, encoder -> decoder -> encoder (reverse cycle), b = 2: the
# encoder's fan-ins (25 C, 25 b, 50 b, 16 b) and its normalisations' sums (169, 36, 4 pixels);
# the decoder's fan-ins (d, 4 x 8b, 4 x 2b, 4 x b) and sums (36, 196 pixels); the encoder again;
# the means over 784 pixels and 8 images; about 30 elementwise operations.
ENCODER = 25 + 50 + 100 + 32 + 169 + 36 + 4
DECODER = 3 + 64 + 16 + 8 + 36 + 196
ROUNDINGS = 2 * ENCODER + DECODER + 784 + 8 + 30


def tiny_model(**overrides) -> cc_vae.CcVaeModel:
    config = experiments.config_for(data="mnist", method="cc_vae", seed=3, **{**DIMS, **WEIGHTS, **overrides})
    return cc_vae.build(config, SHAPE)


def lively(model: cc_vae.CcVaeModel) -> cc_vae.CcVaeModel:
    """``model`` with the heads and the decoder's linear and last layers scaled up, so that the
    codes move the images: at the authors' init the decoder's output is nearly flat (0.5), and
    a mistaken pairing would hardly change the terms."""
    for network, name, factor in (
        (model.decoder, "deconv_3", 20.0),
        (model.decoder, "class_input", 10.0),
        (model.decoder, "style_input", 10.0),
        (model.posterior, "class_code", 4.0),
        (model.posterior, "style_mean", 4.0),
    ):
        layer = network.get_layer(name)
        layer.kernel.assign(layer.kernel * factor)
    return model


def tiny_batch(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {key: rng.integers(0, 256, size=(P, N, *SHAPE), dtype=np.uint8) for key in ("set_a", "set_b")}


# ---------------------------------------------------------------- NumPy restatement


def weights_of(model: cc_vae.CcVaeModel) -> dict[str, np.ndarray]:
    """Every kernel and bias, float64, by "<network>/<layer>/<kernel|bias>"."""
    return {
        f"{network.name}/{layer.name}/{part}": np.asarray(getattr(layer, part), np.float64)
        for network in (model.posterior, model.decoder)
        for layer in network.layers
        if hasattr(layer, "kernel")
        for part in ("kernel", "bias")
    }


def conv(x, kernel, bias):
    """PyTorch's Conv2d(k=5, stride=2, padding=1): out[i, j] = sum_ab x_pad[2i + a, 2j + b] kernel[a, b]."""
    x = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    size = (x.shape[1] - 5) // 2 + 1
    out = np.zeros((x.shape[0], size, size, kernel.shape[-1]))
    for a in range(5):
        for b in range(5):
            out += x[:, a : a + 2 * size - 1 : 2, b : b + 2 * size - 1 : 2] @ kernel[a, b]
    return out + bias


def transposed(x, kernel, bias, crop):
    """PyTorch's ConvTranspose2d(k=4, stride=2, padding=crop): out[2i + a, 2j + b] += x[i, j] kernel[a, b]
    (Keras' kernel is [4, 4, out, in])."""
    size = 2 * (x.shape[1] - 1) + 4
    out = np.zeros((x.shape[0], size, size, kernel.shape[2]))
    for a in range(4):
        for b in range(4):
            out[:, a : a + 2 * x.shape[1] - 1 : 2, b : b + 2 * x.shape[2] - 1 : 2] += x @ kernel[a, b].T
    out = out + bias
    return out[:, crop : size - crop, crop : size - crop] if crop else out


def instance_norm(x, record):
    """Each image's channels to mean 0, variance 1 (biased variance, epsilon 1e-5). Records the
    condition of the subtraction, max |x| / std."""
    mean, variance = x.mean(axis=(1, 2), keepdims=True), x.var(axis=(1, 2), keepdims=True)
    record.append(float(np.max(np.abs(x).max(axis=(1, 2), keepdims=True) / np.sqrt(variance + 1e-5))))
    return (x - mean) / np.sqrt(variance + 1e-5)


def leaky(x):
    return np.where(x > 0, x, 0.2 * x)


def encode(w, images, record):
    x = images
    for index in (1, 2, 3):
        x = np.maximum(
            instance_norm(
                conv(x, w[f"posterior/conv_{index}/kernel"], w[f"posterior/conv_{index}/bias"]), record
            ),
            0,
        )
    flat = x.reshape(len(x), -1)  # channels-last, as Keras' Flatten
    return [
        flat @ w[f"posterior/{name}/kernel"] + w[f"posterior/{name}/bias"]
        for name in cc_vae_networks.ENCODER_OUTPUTS
    ]


def decode(w, style, code, record):
    parts = [
        leaky(value @ w[f"decoder/{name}_input/kernel"] + w[f"decoder/{name}_input/bias"])
        for name, value in (("style", style), ("class", code))
    ]
    x = np.concatenate(parts, axis=1).reshape(len(style), 2, 2, -1)
    for index in (1, 2):
        x = leaky(
            instance_norm(
                transposed(x, w[f"decoder/deconv_{index}/kernel"], w[f"decoder/deconv_{index}/bias"], 0),
                record,
            )
        )
    return 1 / (1 + np.exp(-transposed(x, w["decoder/deconv_3/kernel"], w["decoder/deconv_3/bias"], 1)))


def numpy_terms(
    w: dict, set_a: np.ndarray, set_b: np.ndarray, draws: dict, code_weights: dict | None = None
) -> dict:
    """Both cycles in float64, restated from the authors' training.py with our pairing: images
    [P, N, H, W, C] in [0, 1]; pair k of stack p is (order[p, 2k], order[p, 2k + 1]). The
    reverse cycle's class codes are detached: computed with ``code_weights`` (default ``w``), so
    a derivative in ``w`` with ``code_weights`` fixed does not pass through them. Also
    "scale_*", the magnitudes each term adds up, and "condition" (for tolerances)."""
    record = []
    order = draws["order"]
    pairs = order.shape[1] // 2
    rows = np.arange(P)[:, None]
    x1, x2 = set_a[rows, order[:, 0::2]].reshape(-1, *SHAPE), set_a[rows, order[:, 1::2]].reshape(-1, *SHAPE)
    (mu1, lv1, s1), (mu2, lv2, s2) = encode(w, x1, record), encode(w, x2, record)
    e1, e2 = draws["style_noise"][:, 0::2].reshape(-1, 3), draws["style_noise"][:, 1::2].reshape(-1, 3)
    z1, z2 = mu1 + np.exp(lv1 / 2) * e1, mu2 + np.exp(lv2 / 2) * e2
    r1, r2 = decode(w, z1, s2, record), decode(w, z2, s1, record)  # each with its partner's class code
    pixels = np.prod(SHAPE)
    batch = P * pairs  # the authors' batch: the pairs
    terms = {"reconstruction": np.mean((r1 - x1) ** 2) + np.mean((r2 - x2) ** 2)}
    kl_sum = sum(-0.5 * np.sum(1 + lv - mu**2 - np.exp(lv)) for mu, lv in ((mu1, lv1), (mu2, lv2)))
    terms["kl"] = kl_sum / (batch * pixels)
    terms["forward_loss"] = (
        WEIGHTS["reconstruction_weight"] * terms["reconstruction"] + WEIGHTS["kl_weight"] * terms["kl"]
    )
    # Reverse cycle: z ~ N(0, I) with the class codes of set A's first members and set B's images.
    b = set_b[rows, order[:, 1::2]].reshape(-1, *SHAPE)
    codes = code_weights or w
    code_a, code_b = encode(codes, x1, record)[2], encode(codes, b, record)[2]
    z = draws["z"].reshape(-1, 3)
    generated_a, generated_b = decode(w, z, code_a, record), decode(w, z, code_b, record)
    mean_a, mean_b = encode(w, generated_a, record)[0], encode(w, generated_b, record)[0]
    terms["reverse_cycle"] = np.mean(np.abs(mean_a - mean_b))
    terms["reverse_loss"] = WEIGHTS["reverse_cycle_weight"] * terms["reverse_cycle"]
    terms["loss"] = terms["forward_loss"] + terms["reverse_loss"]
    # Magnitudes: a squared difference errs by 2 |r - x| times r's error; KL's var + mu^2 - 1 - lv
    # cancels; |a - b| errs by the errors of a and b.
    terms["scale_reconstruction"] = sum(
        np.mean(2 * np.abs(r - x) * (np.abs(r) + np.abs(x))) for r, x in ((r1, x1), (r2, x2))
    )
    terms["scale_kl"] = sum(
        0.5 * np.sum(np.exp(lv) + mu**2 + 1 + np.abs(lv)) for mu, lv in ((mu1, lv1), (mu2, lv2))
    ) / (batch * pixels)
    terms["scale_reverse_cycle"] = np.mean(np.abs(mean_a) + np.abs(mean_b))
    terms["condition"] = max(1.0, *record, np.abs(lv1).max(), np.abs(lv2).max())
    return terms


def tolerances(expected: dict) -> dict:
    rtol = rounding_rtol(ROUNDINGS, expected["condition"])
    found = {name: rtol * expected[f"scale_{name}"] for name in ("reconstruction", "kl", "reverse_cycle")}
    found["forward_loss"] = (
        WEIGHTS["reconstruction_weight"] * found["reconstruction"] + WEIGHTS["kl_weight"] * found["kl"]
    )
    found["reverse_loss"] = WEIGHTS["reverse_cycle_weight"] * found["reverse_cycle"]
    found["loss"] = found["forward_loss"] + found["reverse_loss"]
    return found


# ---------------------------------------------------------------- the loss against NumPy


def test_both_cycles_terms_and_gradients_match_numpy():
    model = lively(tiny_model())
    batch = tiny_batch()
    set_a, set_b = (batch[key].astype(np.float64) / 255.0 for key in ("set_a", "set_b"))
    weights = weights_of(model)
    # The step's draws, as the forward update draws them from (seed, step).
    draws = {key: np.asarray(value) for key, value in model.draws_at(0, P, N).items()}
    assert (
        draws["order"].shape == (P, 4)
        and draws["style_noise"].shape == (P, 4, 3)
        and draws["z"].shape == (P, 2, 3)
    )
    assert all(len(set(row)) == 4 and set(row) <= set(range(N)) for row in draws["order"])
    expected = numpy_terms(weights, set_a, set_b, draws)
    tolerance = tolerances(expected)
    # The estimate holds with room: the condition stays moderate on these weights.
    assert expected["condition"] < 100 and tolerance["loss"] < 0.05 * expected["loss"]

    tensors = {key: tf.constant(value) for key, value in batch.items()}
    with tf.GradientTape(persistent=True) as tape:
        terms = model.compute_terms(tensors, tf.constant(0), True)
    for name in ("reconstruction", "kl", "forward_loss", "reverse_cycle", "reverse_loss", "loss"):
        assert float(terms[name]) == pytest.approx(expected[name], abs=tolerance[name]), name

    layers = {
        f"{network.name}/{layer.name}/{part}": getattr(layer, part)
        for network in (model.posterior, model.decoder)
        for layer in network.layers
        if hasattr(layer, "kernel")
        for part in ("kernel", "bias")
    }
    # Gradients against central differences of the NumPy losses (float64: truncation h^2 ~ 1e-10,
    # rounding 1e-16 / h, both far below float32's roundings). A few entries of the larger kernels.
    checks = {
        "forward_loss": [
            ("posterior/style_log_variance/bias", None),
            ("posterior/class_code/bias", None),
            ("posterior/conv_2/kernel", [(0, 1, 0, 2), (4, 3, 1, 0)]),
            ("decoder/class_input/bias", None),
            ("decoder/deconv_3/bias", None),
            ("decoder/deconv_2/kernel", [(1, 2, 0, 3)]),
        ],
        # (Not the style mean's bias: it cancels in the difference of two style means.)
        "reverse_loss": [
            ("posterior/style_mean/kernel", [(0, 0), (7, 1), (30, 2)]),
            ("posterior/conv_3/kernel", [(2, 2, 1, 5), (0, 4, 3, 1)]),
        ],
    }
    step = 1e-5
    for loss, checked in checks.items():
        gradients = tape.gradient(terms[loss], [layers[name] for name, _ in checked])
        for (name, entries), gradient in zip(checked, gradients):
            entries = entries or list(np.ndindex(weights[name].shape))
            numeric = []
            for index in entries:
                shifted = {}
                for sign in (1, -1):
                    moved = dict(weights)
                    moved[name] = weights[name].copy()
                    moved[name][index] += sign * step
                    shifted[sign] = numpy_terms(moved, set_a, set_b, draws, code_weights=weights)[loss]
                numeric.append((shifted[1] - shifted[-1]) / (2 * step))
            numeric = np.asarray(numeric)
            computed = np.asarray([np.asarray(gradient)[index] for index in entries])
            # float32 back-propagation: the same chain's roundings, relative to the largest component.
            np.testing.assert_allclose(
                computed,
                numeric,
                rtol=0,
                err_msg=f"{loss}: {name}",
                atol=rounding_rtol(2 * ROUNDINGS, expected["condition"]) * np.abs(numeric).max() + 1e-7,
            )
    # The reverse cycle reaches neither the specified head (its codes are detached) nor the
    # log-variance head; it does reach the decoder, which its update leaves alone.
    unreached = tape.gradient(
        terms["reverse_loss"],
        [layers["posterior/class_code/kernel"], layers["posterior/style_log_variance/kernel"]],
    )
    assert all(gradient is None for gradient in unreached)


def test_pairs_swap_codes_within_a_stack_and_the_reverse_cycle_crosses_stacks():
    model = lively(tiny_model())
    batch = {key: tf.cast(value, tf.float32) / 255.0 for key, value in tiny_batch(2).items()}
    draws = model.draws_at(4, P, N)
    draws["style_noise"] = tf.zeros_like(draws["style_noise"])  # z = the style mean
    forward = cc_vae_losses.forward_cycle(model.posterior, model.decoder, batch["set_a"], draws)
    reverse = cc_vae_losses.reverse_cycle(
        model.posterior, model.decoder, batch["set_a"], batch["set_b"], draws
    )
    order, z = np.asarray(draws["order"]), draws["z"]
    # The same layers on other batches (oneDNN may block the sums otherwise): within the
    # roundings of the encoder and decoder chains.
    atol = rounding_rtol(ENCODER + DECODER)
    for p in range(P):
        for k in range(2):
            first, second = batch["set_a"][p, order[p, 2 * k]], batch["set_a"][p, order[p, 2 * k + 1]]
            (mean, _, code), (other_mean, _, other_code) = (
                model.posterior(image[None]) for image in (first, second)
            )
            # Each member from its own style and its partner's class code.
            np.testing.assert_allclose(
                forward["reconstructed"][p, 2 * k], model.decoder([mean, other_code])[0], atol=atol
            )
            np.testing.assert_allclose(
                forward["reconstructed"][p, 2 * k + 1], model.decoder([other_mean, code])[0], atol=atol
            )
            # The reverse cycle: one z with the first member's code and with set B's image's.
            b_code = model.posterior(batch["set_b"][p, order[p, 2 * k + 1]][None])[2]
            row = p * 2 + k
            np.testing.assert_allclose(
                reverse["generated"][0, row], model.decoder([z[p, k][None], code])[0], atol=atol
            )
            np.testing.assert_allclose(
                reverse["generated"][1, row], model.decoder([z[p, k][None], b_code])[0], atol=atol
            )
    np.testing.assert_allclose(
        reverse["style_means"][1], model.posterior(reverse["generated"][1])[0], atol=atol
    )


def test_the_draws_are_a_function_of_seed_and_step():
    model, again = tiny_model(), tiny_model()
    first, same, later = model.draws_at(7, P, 6), again.draws_at(7, P, 6), model.draws_at(8, P, 6)
    for key in cc_vae.DRAWS:
        np.testing.assert_array_equal(first[key], same[key])
        assert not np.array_equal(first[key], later[key])
    # Even stacks: every image in one pair; a shuffle of each stack.
    assert sorted(np.asarray(first["order"])[0]) == list(range(6))


def test_a_step_is_the_forward_update_then_the_reverse_one():
    model = tiny_model()
    updates = model.updates()
    assert [update.optimizer for update in updates] == [model.optimizer, model.reverse_optimizer]
    assert [update.loss for update in updates] == ["forward_loss", "reverse_loss"]
    posterior, decoder = model.posterior.trainable_variables, model.decoder.trainable_variables
    assert updates[0].variables() == posterior + decoder
    reverse = {variable.path for variable in updates[1].variables()}
    assert reverse == {
        variable.path
        for variable in posterior
        if not variable.path.startswith(("class_code/", "style_log_variance/"))
    }
    tensors = {key: tf.constant(value) for key, value in tiny_batch(1).items()}
    before = model.compute_terms(tensors, tf.constant(0), True)
    decoder_before = [np.asarray(variable) for variable in decoder]
    logs = model.train_step(tensors)
    # The forward terms are logged at the step's starting weights (float32 roundings of one
    # path taken twice: equal up to the order of XLA-free kernels, here identical).
    for name in ("reconstruction", "kl"):
        assert float(logs[name]) == pytest.approx(float(before[name]), rel=1e-6), name
    # The reverse cycle ran after the forward update, on the moved encoder and decoder.
    assert float(logs["reverse_cycle"]) != float(before["reverse_cycle"])
    assert int(model.optimizer.iterations) == int(model.reverse_optimizer.iterations) == 1
    assert any(not np.array_equal(old, np.asarray(new)) for old, new in zip(decoder_before, decoder))


# ---------------------------------------------------------------- networks and declaration


def test_the_networks_are_the_authors():
    posterior = cc_vae_networks.cc_vae_encoder()
    assert [tuple(output.shape) for output in posterior.outputs] == [(None, 16)] * 3
    assert [posterior.get_layer(f"conv_{i}").output.shape[1:] for i in (1, 2, 3)] == [
        (13, 13, 16),
        (6, 6, 32),
        (2, 2, 64),
    ]
    norm = posterior.get_layer("norm_1")
    assert norm.groups == 16 and not norm.center and not norm.scale and norm.epsilon == 1e-5
    # weights_init: N(0, 0.05^2) kernels, zero biases, for convolutions and linear layers.
    assert np.std(np.asarray(posterior.get_layer("conv_3").kernel)) == pytest.approx(0.05, rel=0.02)
    assert not np.any(np.asarray(posterior.get_layer("class_code").bias))
    decoder = cc_vae_networks.cc_vae_decoder()
    assert tuple(decoder.output.shape) == (None, 28, 28, 1)
    assert [decoder.get_layer(f"deconv_{i}").output.shape[1:] for i in (1, 2, 3)] == [
        (6, 6, 32),
        (14, 14, 16),
        (30, 30, 1),
    ]
    # PyTorch 0.4's default for the transposed convolutions: U(+-1/sqrt(in x 16)).
    kernel = np.asarray(decoder.get_layer("deconv_1").kernel)
    assert np.abs(kernel).max() <= 1 / math.sqrt(128 * 16) and np.std(kernel) == pytest.approx(
        1 / math.sqrt(3 * 128 * 16), rel=0.02
    )
    images = np.asarray(decoder([np.random.default_rng(0).normal(size=(4, 16))] * 2))
    assert images.min() >= 0 and images.max() <= 1
    with pytest.raises(ValueError, match="authors' MNIST networks for 28 x 28 images"):
        cc_vae_networks.cc_vae_encoder(input_shape=(32, 32, 1))


def test_the_declaration():
    method, config_class = methods.get_method("cc_vae"), experiments.method_config_class("cc_vae")
    assert config_class is cc_vae_config.CcVaeConfig
    assert (
        config_class.batch_format == "sets"
        and not config_class.has_encoder_part
        and config_class(name=method.name).length_scale() is None
    )
    preset = get_preset("mnist_cc_vae")
    assert method.supervision_for(preset).startswith(
        "group membership: which images share the specified factor (the digit)"
    )
    assert "(the object instance)" in method.supervision_for(get_preset("pose_cc_vae"))
    assert not method.accepts_two_view_sets
    assert method.label_for(preset) == "cc_vae"
    assert (
        method.label_for(preset.replace(reverse_cycle_weight=0.0, kl_weight=1.0))
        == "cc_vae (forward cycle only, KL weight 1)"
    )


# ---------------------------------------------------------------- through the trainer


@pytest.mark.slow
def test_a_short_run_trains_resumes_and_its_networks_embed(tmp_path, small_mnist):
    run_dir = str(tmp_path / "run")
    config = get_preset("mnist_cc_vae_quick").replace(  # a constant rate (no drop): an optimizer variable
        source="procedural",
        set_size=8,
        pairs_per_step=2,
        steps=4,
        log_every=2,
        jit_compile=False,
        eval_images=64,
        lr_drop_step=0,
    )
    result = training.train(config, run_dir, verbose=0)
    assert result.final_step == 4 and set(cc_vae.LOG_NAMES) <= set(result.history)
    assert all(np.isfinite(value) for values in result.history.values() for value in values)
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == [2, 4]
    run = load_run(run_dir)
    images = small_mnist["x_test"][:10, ..., None]
    codes = embed(run.encoder, images)
    assert codes.shape == (10, 16) and np.all(np.isfinite(codes))
    # The encoder is the posterior's style mean, the specified network its class code.
    posterior = run.network("posterior")(images.astype(np.float32) / 255.0)
    np.testing.assert_allclose(codes, posterior[0], atol=1e-5)
    np.testing.assert_allclose(embed(run.network("specified"), images), posterior[2], atol=1e-5)
    assert run.network("decoder") is not None
    # A stopped run resumes from its checkpoint, both optimizers with it; a learning rate changed
    # on resume reaches both (the checkpoint's rates would otherwise win for the second).
    resumed = training.train(
        config.replace(steps=6, learning_rate=5e-4),
        run_dir,
        verbose=0,
        allow_changes=["trainer.learning_rate"],
    )
    assert resumed.final_step == 6
    saved = training.build_model(config)
    checkpoints.restore(saved, run_dir)
    assert [float(optimizer.learning_rate) for optimizer in saved.optimizers()] == pytest.approx([5e-4, 5e-4])


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"set_size": 1}, r"--batch.set_size must be at least 2"),
        ({"kl_weight": -1.0}, r"--method.kl_weight must be a finite number >= 0"),
        (
            {"reverse_cycle_weight": float("nan")},
            r"--method.reverse_cycle_weight must be a finite number >= 0",
        ),
        ({"style_dim": 0}, r"--method.style_dim must be positive"),
        ({"augmentation_baseline": True, "holdout_digit": "none"}, r"--method=cc_vae does not train on them"),
    ],
)
def test_bad_settings_fail_before_training(overrides, message):
    with pytest.raises(ValueError, match=message):
        checks.check_config(get_preset("mnist_cc_vae_quick").replace(source="procedural", **overrides))


def test_images_that_the_networks_do_not_take_are_refused_before_training():
    # Before any data is read: the family's image shape against the chosen networks.
    with pytest.raises(
        ValueError,
        match=r"--method=cc_vae --method.networks=mnist \(the authors' MNIST networks\) takes 28 x 28 "
        r"images; data 'pose' gives \(64, 64, 3\). Use data of 28 x 28 images, or "
        r"--method.networks=conv64 for 64 x 64.",
    ):
        checks.check_config(get_preset("pose_cc_vae_quick").replace(networks="mnist"))
    with pytest.raises(
        ValueError,
        match=r"--method.networks=conv64 \(the 64 x 64 networks\) takes 64 x 64 images; "
        r"data 'mnist' gives \(28, 28, 1\). Use data of 64 x 64 images, or "
        r"--method.networks=mnist for 28 x 28.",
    ):
        checks.check_config(get_preset("mnist_cc_vae_quick").replace(source="procedural", networks="conv64"))
    with pytest.raises(ValueError, match=r"data 'pose' gives \(32, 32, 3\). Use data of 64 x 64 images"):
        checks.check_config(get_preset("pose_cc_vae_quick").replace(image_size=32))
    with pytest.raises(ValueError, match=r"--method.networks='resnet'; choose one of mnist, conv64"):
        checks.check_config(get_preset("pose_cc_vae_quick").replace(networks="resnet"))


# ---------------------------------------------------------------- presets against the sources


def test_the_presets_are_the_authors_settings():
    paper, quick = get_preset("mnist_cc_vae"), get_preset("mnist_cc_vae_quick")
    method = paper.method
    # cycle-consistent-vae main.py L12-L15, L18-L25, L36; networks.py L19-L39; training.py L67-L81.
    assert (method.name, method.style_dim, method.class_dim, method.base_channels) == ("cc_vae", 16, 16, 16)
    assert (method.reconstruction_weight, method.kl_weight, method.reverse_cycle_weight) == (2.0, 3.0, 10.0)
    assert paper.trainer.learning_rate == 1e-4 and optimizers.PYTORCH_ADAM_EPSILON == 1e-8
    # Stacks of ABC's MNIST size (ABC supplement L164), 32 pairs each: two make the authors'
    # batch of 64 pairs; digit 9 held out (L114); 100 epochs of the 54,051 remaining images.
    assert paper.batch.set_size == 64 and paper.batch.pairs_per_step * paper.batch.set_size // 2 == 64
    assert paper.data.holdout_digit == "9" and paper.encoder is None
    assert paper.trainer.steps * 64 / 54_051 == pytest.approx(100, rel=1e-4)
    # Both rates / 10 after 80 of the 100 epochs (training.py L79-81); the quick preset stops before.
    assert paper.trainer.lr_halving_steps == 0 and paper.trainer.lr_drop_factor == 0.1
    assert paper.trainer.lr_drop_step * 64 / 54_051 == pytest.approx(80, rel=1e-4)
    assert quick.trainer.steps < paper.trainer.lr_drop_step
    assert (
        quick.method == paper.method
        and quick.batch == paper.batch
        and quick.trainer.steps < paper.trainer.steps
    )
    checks.check_config(quick.replace(source="procedural"))


# ---------------------------------------------------------------- 64 x 64 networks and pose presets


def test_the_64_by_64_networks():
    """models/vae64_networks.py (sizes ours: CC-VAE's supplement could not be read): four 4 x 4
    stride-2 convolutions of b, 2b, 4b, 8b channels to 4 x 4 and three heads; the decoder's two
    codes into a 4 x 4 map of 8b, transposed convolutions of 4b, 2b, b, C and a sigmoid."""
    posterior = vae64_networks.cc_vae_encoder_64(style_dim=3, class_dim=2, base_channels=8)
    assert [tuple(output.shape) for output in posterior.outputs] == [(None, 3), (None, 3), (None, 2)]
    assert [layer.name for layer in posterior.layers[-3:]] == list(cc_vae_networks.ENCODER_OUTPUTS)
    assert [posterior.get_layer(f"conv_{i}").output.shape[1:] for i in (1, 2, 3, 4)] == [
        (32, 32, 8),
        (16, 16, 16),
        (8, 8, 32),
        (4, 4, 64),
    ]
    norm = posterior.get_layer("norm_1")
    assert norm.groups == 8 and not norm.center and not norm.scale and norm.epsilon == 1e-5
    # The CC-VAE authors' weights_init: N(0, 0.05^2) kernels, zero biases.
    assert np.std(np.asarray(posterior.get_layer("conv_4").kernel)) == pytest.approx(0.05, rel=0.02)
    assert not np.any(np.asarray(posterior.get_layer("class_code").bias))
    decoder = vae64_networks.cc_vae_decoder_64(style_dim=3, class_dim=2, base_channels=8)
    assert tuple(decoder.output.shape) == (None, 64, 64, 3)
    assert decoder.get_layer("style_input").units == decoder.get_layer("class_input").units == 4 * 8 * 4 * 4
    assert [decoder.get_layer(f"deconv_{i}").output.shape[1:] for i in (1, 2, 3, 4)] == [
        (8, 8, 32),
        (16, 16, 16),
        (32, 32, 8),
        (64, 64, 3),
    ]
    deconv = decoder.get_layer("deconv_1")
    assert deconv.kernel_size == (4, 4) and deconv.strides == (2, 2)
    rng = np.random.default_rng(0)
    images = np.asarray(decoder([rng.normal(size=(4, 3)), rng.normal(size=(4, 2))]))
    assert images.min() >= 0 and images.max() <= 1
    # The default width, b = 32 (the pose presets'), from the registry.
    assert models.build("cc_vae_encoder_64").get_layer("conv_4").output.shape[1:] == (4, 4, 256)
    with pytest.raises(ValueError, match=r"take 64 x 64 images, not \(28, 28, 1\)"):
        vae64_networks.cc_vae_decoder_64(output_shape=(28, 28, 1))


def test_the_pose_presets():
    paper, quick = get_preset("pose_cc_vae"), get_preset("pose_cc_vae_quick")
    data = paper.data
    # Clean procedural renders on black at 64 x 64 (ABC supplement L217; Table S1's synthetic queries).
    assert (data.family, data.source, data.image_size, data.real_fraction) == ("pose", "auto", 64, 0.0)
    assert (data.crop_amplitude, data.augmentation_amplitude, data.paint_backgrounds) == (0.0, 0.0, False)
    # Stacks of ABC's pose size (32), 16 pairs each: four make the authors' 64 pairs per step.
    assert (paper.batch.set_size, paper.batch.double_augmentation) == (32, False)
    assert paper.batch.pairs_per_step * paper.batch.set_size // 2 == 64
    method = paper.method
    assert (method.networks, method.base_channels, method.style_dim, method.class_dim) == (
        "conv64",
        32,
        16,
        16,
    )
    assert (method.reconstruction_weight, method.kl_weight, method.reverse_cycle_weight) == (2.0, 3.0, 10.0)
    assert paper.trainer.learning_rate == 1e-4 and paper.encoder is None
    # The authors' 100 epochs over the 4,000 procedural training renders in steps of 64 pairs.
    sizes = pose_procedural.ProceduralSizes()
    assert sizes.train_instances * sizes.views_per_instance == cc_vae_config.POSE_TRAINING_RENDERS == 4000
    assert paper.trainer.steps * 64 / 4000 == pytest.approx(100)
    assert paper.trainer.lr_drop_step * 64 / 4000 == pytest.approx(80) and paper.trainer.lr_drop_factor == 0.1
    assert quick.method == method and quick.data == data and quick.batch.set_size == 32
    assert quick.trainer.steps < paper.trainer.steps and quick.trainer.learning_rate == 1e-4
    for preset in (paper, quick):
        checks.check_config(preset)


@pytest.mark.slow
def test_a_short_pose_run_trains_and_its_encoder_embeds(tmp_path, monkeypatch):
    monkeypatch.setattr(pose_procedural, "PROCEDURAL", SMALL)  # 3 instances x 6 views
    config = get_preset("pose_cc_vae_quick").replace(
        set_size=4, pairs_per_step=2, steps=2, log_every=2, base_channels=4, eval_images=16
    )
    result = training.train(config, str(tmp_path / "run"), verbose=0)
    assert result.final_step == 2 and set(cc_vae.LOG_NAMES) <= set(result.history)
    assert all(np.isfinite(value) for values in result.history.values() for value in values)
    run = load_run(str(tmp_path / "run"))
    images = pose_procedural.training_images("car", 64, 0.5)[0][:5, ..., :3]
    codes = embed(run.encoder, images)
    assert codes.shape == (5, 16) and np.all(np.isfinite(codes))
    np.testing.assert_allclose(
        codes, run.network("posterior")(images.astype(np.float32) / 255.0)[0], atol=1e-5
    )

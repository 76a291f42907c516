"""LORD (abc_tf/methods/lord: model.py, losses.py, networks.py, its config and presets): both stages'
loss terms and their gradients against a NumPy restatement of the authors' networks and losses
under the same noise, the switch between the stages (which variables move, the optimisers'
rates and steps), the networks, a run through the trainer killed at the switch and resumed
across it, the presets against the authors' code, and bad settings refused."""

from __future__ import annotations

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from abc_tf import methods
from abc_tf.runs import checks
from abc_tf.runs import experiments
from abc_tf.data.pose import procedural as pose_procedural
from abc_tf.runs.experiments import get_preset
from abc_tf.methods.lord import losses as lord_losses
from abc_tf.methods.lord import model as lord
from abc_tf.methods import lord as lord_config
from abc_tf.runs import checkpoints, training
from abc_tf.runs.run_dir import embed, load_run
from abc_tf.methods.lord import networks as lord_networks
from pose_data_helpers import SMALL
from tolerance_helpers import rounding_rtol

P, N, SHAPE = 2, 3, (8, 8, 3)  # two groups of three images
IMAGES, GROUPS = 8, 3  # bank rows (6 and 7 unused by the batch) and groups (2 unused)
DIMS = dict(content_dim=3, class_dim=2, n_adain_layers=2, adain_dim=8, base_channels=2)
DECAY, STD, CODE_WEIGHT, MULTIPLIER = 0.01, 0.7, 3.0, 10.0
# The roundings on the longest chain, generator then (stage 2) encoder: the generator's fan-ins
# (3, 4, 8 linear; 72, 72 convolutions; 200, 98 output convolutions; 2 modulation), its
# normalisations' sums (16, 64 pixels); the encoder's (147, 32, 64, 128, 128 convolutions; 8, 8,
# 8 linear); the means over 192 values and 6 images; about 30 elementwise operations.
GENERATOR = 3 + 4 + 8 + 72 + 72 + 200 + 98 + 2 + 16 + 64
ENCODER = 147 + 32 + 64 + 128 + 128 + 8 + 8 + 8
ROUNDINGS = GENERATOR + ENCODER + 192 + 6 + 30


def tiny_config(**overrides):
    fields = dict(
        DIMS,
        content_std=STD,
        content_decay=DECAY,
        code_weight=CODE_WEIGHT,
        latent_lr_multiplier=MULTIPLIER,
        stage1_steps=2,
        steps=4,
        seed=3,
        image_size=16,
    )
    return experiments.config_for(data="pose", method="lord", **{**fields, **overrides})


def tiny_model(**overrides) -> lord.LordModel:
    model, rng = lord.build_model(tiny_config(**overrides), SHAPE, IMAGES, GROUPS), np.random.default_rng(5)
    # Codes of unit size (the authors' init gives 0.05, where the generator barely reads them).
    for table in (model.content_table, model.class_table):
        table.assign(rng.normal(size=table.shape) / MULTIPLIER)
    return model


def tiny_batch(seed: int = 0) -> dict[str, tf.Tensor]:
    return {
        "set_a": tf.constant(
            np.random.default_rng(seed).integers(0, 256, size=(P, N, *SHAPE), dtype=np.uint8)
        ),
        "index_a": tf.constant([[4, 0, 2], [1, 5, 3]], tf.int64),
        "group_a": tf.constant([2, 0], tf.int64),
    }


# ---------------------------------------------------------------- NumPy restatement


def weights_of(*networks: keras.Model) -> dict[str, np.ndarray]:
    """Every kernel and bias, float64, by "<network>/<layer>/<kernel|bias>"."""
    return {
        f"{network.name}/{layer.name}/{part}": np.asarray(getattr(layer, part), np.float64)
        for network in networks
        for layer in network.layers
        if hasattr(layer, "kernel")
        for part in ("kernel", "bias")
    }


def conv(x, kernel, bias, stride=1):
    """Keras' Conv2D with padding "same": out[i, j] = sum_ab x_pad[s i + a, s j + b] kernel[a, b]."""
    size, k = x.shape[1], kernel.shape[0]
    out_size = -(-size // stride)
    pad = max((out_size - 1) * stride + k - size, 0)
    x = np.pad(x, ((0, 0), (pad // 2, pad - pad // 2), (pad // 2, pad - pad // 2), (0, 0)))
    out = np.zeros((x.shape[0], out_size, out_size, kernel.shape[-1]))
    span = stride * (out_size - 1) + 1
    for a in range(k):
        for b in range(k):
            out += x[:, a : a + span : stride, b : b + span : stride] @ kernel[a, b]
    return out + bias


def leaky(x):
    return np.where(x > 0, x, 0.3 * x)


def generate(w, content, class_code, record):
    """The generator in float64 (module docstring of abc_tf/methods/lord/networks.py); ``record`` gets the
    condition of each normalisation's subtraction, max |x| / std."""
    x = content
    for i in (1, 2, 3):
        x = leaky(x @ w[f"generator/dense_{i}/kernel"] + w[f"generator/dense_{i}/bias"])
    x = x.reshape(len(content), 2, 2, 8)
    for i in (1, 2):
        x = np.repeat(np.repeat(x, 2, axis=1), 2, axis=2)
        x = leaky(conv(x, w[f"generator/conv_{i}/kernel"], w[f"generator/conv_{i}/bias"]))
        pairs = (
            class_code @ w[f"generator/modulation_{i}/kernel"] + w[f"generator/modulation_{i}/bias"]
        ).reshape(-1, 1, 1, 8, 2)
        mean, std = x.mean(axis=(1, 2), keepdims=True), x.std(axis=(1, 2), keepdims=True)
        record.append(float(np.max(np.abs(x).max(axis=(1, 2), keepdims=True) / std)))
        x = (x - mean) / (std + 1e-7) * pairs[..., 1] + pairs[..., 0]
    x = leaky(conv(x, w["generator/conv_out_1/kernel"], w["generator/conv_out_1/bias"]))
    return 1 / (1 + np.exp(-conv(x, w["generator/conv_out_2/kernel"], w["generator/conv_out_2/bias"])))


def encode(w, name, images):
    x = images
    for i, stride in zip(range(1, 6), (1, 2, 2, 2, 2)):
        x = leaky(conv(x, w[f"{name}/conv_{i}/kernel"], w[f"{name}/conv_{i}/bias"], stride))
    x = x.reshape(len(x), -1)
    for i in (1, 2):
        x = leaky(x @ w[f"{name}/dense_{i}/kernel"] + w[f"{name}/dense_{i}/bias"])
    return x @ w[f"{name}/code_linear/kernel"] + w[f"{name}/code_linear/bias"]


def pixel_error(generated, images):
    return 255.0 * np.abs(generated - images).reshape(len(images), -1).mean(axis=1)


def images_and_codes(batch, content_table, class_table):
    """The batch's 6 images in [0, 1] and their optimised codes (multiplier x table rows; the class
    code of an image its set's group's)."""
    return (
        batch["set_a"].astype(np.float64).reshape(-1, *SHAPE) / 255.0,
        MULTIPLIER * content_table[batch["index_a"].reshape(-1)],
        MULTIPLIER * class_table[np.repeat(batch["group_a"], N)],
    )


def numpy_stage1(w, content_table, class_table, batch, noise) -> dict:
    """Stage 1 in float64; the penalty summed over the step's images."""
    record, (images, content, class_code) = [], images_and_codes(batch, content_table, class_table)
    generated = generate(w, content + STD * noise.reshape(-1, 3), class_code, record)
    errors = pixel_error(generated, images)
    terms = {"latent_reconstruction": errors.mean(), "content_penalty": DECAY * np.sum(content**2)}
    terms["latent_loss"] = terms["latent_reconstruction"] + terms["content_penalty"]
    terms["scale"] = 255.0 * np.mean(np.abs(generated) + np.abs(images)) + terms["content_penalty"]
    terms["condition"] = max(1.0, *record)
    return terms


def numpy_stage2(w, content_table, class_table, batch) -> dict:
    record, (images, target_content, target_class) = [], images_and_codes(batch, content_table, class_table)
    content, class_code = encode(w, "encoder", images), encode(w, "class_encoder", images)
    generated = generate(w, content, class_code, record)
    terms = {
        "amortized_reconstruction": pixel_error(generated, images).mean(),
        "content_error": np.mean((content - target_content) ** 2),
        "class_error": np.mean((class_code - target_class) ** 2),
    }
    terms["amortized_loss"] = terms["amortized_reconstruction"] + CODE_WEIGHT * (
        terms["content_error"] + terms["class_error"]
    )
    terms["scale"] = 255.0 * np.mean(np.abs(generated) + np.abs(images)) + CODE_WEIGHT * 2 * (
        np.mean((np.abs(content) + np.abs(target_content)) ** 2)
        + np.mean((np.abs(class_code) + np.abs(target_class)) ** 2)
    )
    terms["condition"] = max(1.0, *record)
    return terms


def numeric_gradient(loss, array: np.ndarray, entries, step: float = 1e-6) -> np.ndarray:
    """Central differences of ``loss(moved array)`` at ``entries`` of ``array`` (float64)."""

    def shifted(index, delta):
        moved = array.copy()
        moved[index] += delta
        return loss(moved)

    return np.asarray([(shifted(index, step) - shifted(index, -step)) / (2 * step) for index in entries])


# ---------------------------------------------------------------- the losses against NumPy


def test_stage_one_terms_and_their_gradients_in_the_code_tables_match_numpy():
    model, batch = tiny_model(), tiny_batch()
    numpy_batch = {key: value.numpy() for key, value in batch.items()}
    w = weights_of(model.generator)
    content_table, class_table = (np.asarray(t, np.float64) for t in (model.content_table, model.class_table))
    noise = np.asarray(model.noise_at(0, P, N), np.float64)  # the step's draw, reproducible from (seed, step)
    np.testing.assert_array_equal(noise, model.noise_at(0, P, N))
    assert not np.array_equal(noise, model.noise_at(1, P, N))
    expected = numpy_stage1(w, content_table, class_table, numpy_batch, noise)
    rtol = rounding_rtol(ROUNDINGS, expected["condition"])
    assert expected["condition"] < 100 and rtol * expected["scale"] < 0.01 * expected["latent_loss"]

    with tf.GradientTape(persistent=True) as tape:
        terms = model.compute_terms(batch, tf.constant(0, tf.int64), True)
    for name in ("latent_reconstruction", "content_penalty", "latent_loss"):
        assert float(terms[name]) == pytest.approx(expected[name], abs=rtol * expected["scale"]), name
    assert float(terms["loss"]) == float(terms["latent_loss"]) and float(terms["stage"]) == 1.0
    assert all(float(terms[name]) == 0.0 for name in lord.AMORTIZED_TERMS)  # stage 2 idle

    # The gradient in the table rows: the batch's rows (float32 back-propagation against central
    # differences of the float64 loss), and zeros for the rows and groups the batch does not hold.
    for table, other, rows, is_content in (
        (content_table, class_table, range(6), True),
        (class_table, content_table, (0, 2), False),
    ):
        variable = model.content_table if is_content else model.class_table
        gradient = np.asarray(tf.convert_to_tensor(tape.gradient(terms["latent_loss"], variable)))

        def loss(moved):
            pair = (moved, other) if is_content else (other, moved)
            return numpy_stage1(w, *pair, numpy_batch, noise)["latent_loss"]

        entries = [(row, k) for row in rows for k in range(table.shape[1])]
        numeric = numeric_gradient(loss, table, entries)
        computed = np.asarray([gradient[index] for index in entries])
        np.testing.assert_allclose(
            computed,
            numeric,
            rtol=0,
            atol=rounding_rtol(2 * ROUNDINGS, expected["condition"]) * np.abs(numeric).max() + 1e-6,
        )
        unused = [row for row in range(len(table)) if row not in rows]
        assert not np.any(gradient[unused])


def test_stage_two_terms_and_their_gradients_match_numpy():
    model, batch = tiny_model(), tiny_batch(1)
    numpy_batch = {key: value.numpy() for key, value in batch.items()}
    w = weights_of(model.generator, model.content_encoder, model.class_encoder)
    tables = [np.asarray(t, np.float64) for t in (model.content_table, model.class_table)]
    expected = numpy_stage2(w, *tables, numpy_batch)
    rtol = rounding_rtol(ROUNDINGS, expected["condition"])
    assert expected["condition"] < 100 and rtol * expected["scale"] < 0.01 * expected["amortized_loss"]

    with tf.GradientTape(persistent=True) as tape:
        terms = model.compute_terms(batch, tf.constant(2, tf.int64), True)  # stage1_steps = 2: stage 2
    for name in ("amortized_reconstruction", "content_error", "class_error", "amortized_loss"):
        assert float(terms[name]) == pytest.approx(expected[name], abs=rtol * expected["scale"]), name
    assert float(terms["loss"]) == float(terms["amortized_loss"]) and float(terms["stage"]) == 2.0
    assert all(float(terms[name]) == 0.0 for name in lord.LATENT_TERMS)  # stage 1 idle

    layers = {
        f"{net.name}/{layer.name}/{part}": getattr(layer, part)
        for net in (model.generator, model.content_encoder, model.class_encoder)
        for layer in net.layers
        if hasattr(layer, "kernel")
        for part in ("kernel", "bias")
    }
    checked = [
        ("encoder/code_linear/bias", None),
        ("class_encoder/code_linear/bias", None),
        ("encoder/conv_1/kernel", [(0, 3, 1, 0), (6, 2, 2, 1)]),
        ("class_encoder/dense_1/kernel", [(5, 3), (7, 0)]),
        ("generator/conv_out_2/bias", None),
        ("generator/modulation_2/kernel", [(1, 6), (0, 13)]),
    ]
    gradients = tape.gradient(terms["amortized_loss"], [layers[name] for name, _ in checked])
    for (name, entries), gradient in zip(checked, gradients):
        entries = entries or list(np.ndindex(w[name].shape))

        def loss(moved, name=name):
            return numpy_stage2({**w, name: moved}, *tables, numpy_batch)["amortized_loss"]

        numeric = numeric_gradient(loss, w[name], entries)
        computed = np.asarray([np.asarray(gradient)[index] for index in entries])
        np.testing.assert_allclose(
            computed,
            numeric,
            rtol=0,
            err_msg=name,
            atol=rounding_rtol(2 * ROUNDINGS, expected["condition"]) * np.abs(numeric).max() + 1e-6,
        )
    # The optimised codes are targets: no gradient reaches the tables in stage 2.
    assert all(
        g is None for g in tape.gradient(terms["amortized_loss"], [model.content_table, model.class_table])
    )


def snapshot(variables) -> list[np.ndarray]:
    return [np.array(variable) for variable in variables]


def moved(before, variables) -> bool:
    return any(not np.array_equal(old, np.asarray(new)) for old, new in zip(before, variables))


@pytest.mark.slow
def test_the_stage_switch_sets_the_rates_moves_other_variables_and_starts_the_encoders_adam_afresh():
    # Stage 1's rate: the authors' cosine, from the maximum to the minimum over stage 1.
    rates = [float(lord_losses.cosine_rate(step, 100, 3e-4, 1e-5)) for step in (0, 50, 100, 200)]
    assert rates == pytest.approx([3e-4, (3e-4 + 1e-5) / 2, 1e-5, 1e-5], rel=1e-6)
    model, seen = tiny_model(stage1_steps=1000, steps=2000), []
    model.run_eagerly = True  # fast here; the compiled step is checked through the trainer below
    dataset = tf.data.Dataset.from_tensors(tiny_batch(2)).repeat()
    tables, generator = [model.content_table, model.class_table], model.generator.trainable_variables
    encoders = model.content_encoder.trainable_variables + model.class_encoder.trainable_variables
    bias = model.content_encoder.get_layer("code_linear").bias
    for epoch, step in enumerate((0, 1, 999, 1000, 1001)):
        model.optimizer.iterations.assign(step)  # steps 2 to 998 skipped: the same code path
        before = [snapshot(tables), snapshot(encoders), snapshot(generator), np.array(bias)]
        logs = model.fit(dataset, epochs=epoch + 1, initial_epoch=epoch, steps_per_epoch=1, verbose=0).history
        seen.append(
            (
                moved(before[0], tables),
                moved(before[1], encoders),
                moved(before[2], generator),
                logs["stage"][0],
            )
        )
        rates = float(model.optimizer.learning_rate), float(model.encoder_optimizer.learning_rate)
        expected = (
            (float(lord_losses.cosine_rate(step, 1000, 3e-5, 1e-5)), 0.0) if step < 1000 else (0.0, 1e-4)
        )
        assert rates == pytest.approx(expected, rel=1e-6)
        if step == 1000:
            # A fresh Adam's first step is the rate times the gradient's sign (up to epsilon); an
            # Adam counting the 1000 steps of stage 1 would step 12.6 times that.
            np.testing.assert_allclose(np.abs(np.asarray(bias) - before[3]), 1e-4, rtol=1e-2)
    # Stage 1 moves the codes and the generator, stage 2 the encoders and the generator.
    assert seen == [(True, False, True, 1.0)] * 3 + [(False, True, True, 2.0)] * 2
    assert int(model.optimizer.iterations) == 1002 and int(model.encoder_optimizer.iterations) == 2


@pytest.mark.slow
def test_the_xla_step_reads_the_tables_and_weights_as_parameters_so_it_compiles_once():
    """Compiled by XLA, the step takes the code tables and the generator's weights as parameters,
    not as compile-time constants. When the tables were gathered inside the stage switch's tf.cond,
    the dense shape of their gradient was an output of the cond's gradient, which Adam's update
    needs when XLA compiles; XLA then took every input of the step as a constant, baked the
    tables into the program and compiled the step again at every step (9 to 11 s a step of the
    tests' tiny config on 2 CPU cores, against 0.02 s when it is compiled once)."""
    model = tiny_model()
    hlo = tf.function(model.train_step, jit_compile=True).experimental_get_compiler_ir(tiny_batch())(
        stage="hlo"
    )
    variables = [model.content_table, model.class_table, *model.generator.trainable_variables]
    baked = {
        variable.path
        for variable in variables
        if len(variable.shape) >= 2
        and re.search(rf"f32\[{','.join(map(str, variable.shape))}\]\{{[0-9,]*\}} constant\(", hlo)
    }
    assert not baked, baked


# ---------------------------------------------------------------- networks and declaration


def test_the_networks_are_the_authors():
    generator = lord_networks.lord_generator()
    assert tuple(generator.output.shape) == (None, 64, 64, 3)
    assert generator.get_layer("dense_1").output.shape[1:] == (4 * 4 * 32,)
    assert generator.get_layer("to_map").output.shape[1:] == (4, 4, 256)
    assert [generator.get_layer(f"adain_{i}").output.shape[1:3] for i in (1, 2, 3, 4)] == [
        (8, 8),
        (16, 16),
        (32, 32),
        (64, 64),
    ]
    assert (
        generator.get_layer("modulation_1").output.shape[1:] == (512,)
        and generator.get_layer("conv_out_1").filters == 64
    )
    encoder = lord_networks.lord_encoder()
    assert [encoder.get_layer(f"conv_{i}").output.shape[1:] for i in range(1, 6)] == [
        (64, 64, 64),
        (32, 32, 128),
        (16, 16, 256),
        (8, 8, 256),
        (4, 4, 256),
    ]
    assert tuple(encoder.output.shape) == (None, 128) and encoder.get_layer("dense_2").units == 256
    # Nearest upsampling as Keras' UpSampling2D; AdaIN standardises each image's channels.
    x = np.random.default_rng(0).normal(size=(2, 3, 5, 4)).astype(np.float32)
    np.testing.assert_array_equal(lord_networks.NearestUpsample()(x), keras.layers.UpSampling2D(2)(x))
    out = np.asarray(
        lord_networks.AdaptiveInstanceNorm()([x, np.tile([[0.5, 2.0]], (2, 4)).astype(np.float32)])
    )
    np.testing.assert_allclose(out.mean(axis=(1, 2)), 0.5, atol=1e-5)
    np.testing.assert_allclose(out.std(axis=(1, 2)), 2.0, rtol=1e-5)
    with pytest.raises(ValueError, match="must be multiples of 16"):
        lord_networks.lord_generator(output_shape=(72, 72, 3))
    # The authors' VGG16 layer indices (lord config.py L12) are these layers of Keras' VGG16.
    vgg = keras.applications.VGG16(include_top=False, weights=None, input_shape=(32, 32, 3))
    assert tuple(vgg.layers[i].name for i in lord_networks.VGG_LAYER_INDICES) == lord_networks.VGG_LAYERS


@pytest.mark.slow
def test_the_perceptual_loss_reads_a_local_vgg_file(tmp_path):
    path, rng = str(tmp_path / "vgg16_notop.weights.h5"), np.random.default_rng(4)
    vgg = keras.applications.VGG16(include_top=False, weights=None, input_shape=(32, 32, 3))
    vgg.save_weights(path)  # random weights: what matters is that the file's are the ones used
    model = lord.build_model(
        tiny_config(reconstruction="perceptual", vgg_weights=path), (32, 32, 3), IMAGES, GROUPS
    )
    images, generated = (rng.uniform(size=(3, 32, 32, 3)).astype(np.float32) for _ in range(2))
    features = keras.Model(vgg.input, [vgg.get_layer(name).output for name in lord_networks.VGG_LAYERS])
    prepared = [keras.applications.vgg16.preprocess_input(255.0 * x) for x in (generated, images)]
    expected = np.mean(
        [
            np.abs(np.asarray(a) - np.asarray(b)).reshape(3, -1).mean(axis=1)
            for a, b in zip(features(prepared[0]), features(prepared[1]))
        ],
        axis=0,
    )
    # 13 float32 convolutions on batches of 6 and of 3 (other kernels may be chosen): 1e-3 is far
    # above their rounding and far below what other weights would change.
    np.testing.assert_allclose(
        lord_losses.perceptual_error(model.vgg, images, generated), expected, rtol=1e-3
    )
    assert (
        methods.get_method("lord").label_for(tiny_config(reconstruction="perceptual", vgg_weights=path))
        == "lord"
    )


def test_the_declaration():
    method, config_class = methods.get_method("lord"), experiments.method_config_class("lord")
    assert (
        config_class is lord_config.LordConfig
        and config_class.batch_format == "sets"
        and not config_class.has_encoder_part
    )
    assert (
        method.needs_training_bank
        and config_class(name="lord").length_scale() is None
        and not method.accepts_two_view_sets
    )
    assert method.supervision.startswith("group membership")
    assert method.label_for(get_preset("pose_lord")) == "lord (pixel loss)"
    assert (
        method.label_for(get_preset("pose_lord").replace(content_std=0.0))
        == "lord (pixel loss, no content noise)"
    )


# ---------------------------------------------------------------- through the trainer


@pytest.mark.slow
def test_a_run_killed_at_the_switch_resumes_into_stage_two(tmp_path, monkeypatch):
    monkeypatch.setattr(pose_procedural, "PROCEDURAL", SMALL)
    run_dir = str(tmp_path / "run")
    config = get_preset("pose_lord_quick").replace(
        image_size=16, set_size=3, steps=4, stage1_steps=2, log_every=2, **DIMS
    )

    def crash(epoch, logs):
        if epoch == 0:  # after the checkpoint of step 2, the last of stage 1
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        training.train(
            config, run_dir, verbose=0, callbacks=[keras.callbacks.LambdaCallback(on_epoch_end=crash)]
        )
    at_switch, initial = training.build_model(config), training.build_model(config)
    # The encoders' Adam is set to 0 steps before each stage-1 step, which counts one.
    assert checkpoints.restore(at_switch, run_dir) == 2 and int(at_switch.encoder_optimizer.iterations) == 1
    # Stage 1 (compiled, as the trainer runs it) trained the codes, not the encoders.
    assert moved(snapshot([initial.content_table]), [at_switch.content_table])
    for network in ("content_encoder", "class_encoder"):
        assert not moved(snapshot(getattr(initial, network).weights), getattr(at_switch, network).weights), (
            network
        )
    result = training.train(config, run_dir, verbose=0)
    assert result.final_step == 4 and result.history["stage"] == [2.0]
    assert all(np.isfinite(value) for values in result.history.values() for value in values)
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == [2, 4]
    done = training.build_model(config)
    assert checkpoints.restore(done, run_dir) == 4 and int(done.encoder_optimizer.iterations) == 2
    # Stage 2 left the codes as stage 1 left them and trained the encoders.
    np.testing.assert_array_equal(done.content_table, at_switch.content_table)
    np.testing.assert_array_equal(done.class_table, at_switch.class_table)
    assert moved(
        snapshot(at_switch.content_encoder.trainable_variables), done.content_encoder.trainable_variables
    )
    run, images = (
        load_run(run_dir),
        np.random.default_rng(0).integers(0, 256, size=(5, 16, 16, 3), dtype=np.uint8),
    )
    codes = embed(run.encoder, images)
    assert codes.shape == (5, DIMS["content_dim"]) and np.all(np.isfinite(codes))
    # The same weights through predict's graph and an eager call (kernels may differ): float32 rounding only.
    np.testing.assert_allclose(
        codes, done.content_encoder(images.astype(np.float32) / 255.0), rtol=1e-4, atol=1e-4
    )
    assert run.network("class_encoder") is not None and run.network("generator") is not None


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"stage1_steps": 1500}, r"--method.stage1_steps=1500 must be below --trainer.steps=1500"),
        (
            {"lr_halving_steps": 100},
            r"--trainer.lr_halving_steps and --trainer.lr_drop_step must be 0 for --method=lord",
        ),
        (
            {"lr_drop_step": 100},
            r"--trainer.lr_halving_steps and --trainer.lr_drop_step must be 0 for --method=lord",
        ),
        ({"reconstruction": "perceptual"}, r"--method.reconstruction=perceptual needs --method.vgg_weights"),
        (
            {"reconstruction": "perceptual", "vgg_weights": "/no/such/vgg.h5"},
            r"--method.vgg_weights=/no/such/vgg.h5 does not exist",
        ),
        ({"reconstruction": "vgg"}, r"--method.reconstruction='vgg'; choose one of pixel, perceptual"),
        ({"image_size": 72}, r"--method.n_adain_layers=4 with data 'pose'.*multiples of 16"),
        ({"adain_dim": 4}, r"--method.adain_dim must be at least 8"),
        ({"content_decay": -1.0}, r"--method.content_decay must be a finite number >= 0"),
        (
            {"data": "mnist", "n_adain_layers": 2},
            r"--method=lord learns a code per training image.*Families that do: pose",
        ),
    ],
)
def test_bad_settings_fail_before_training(overrides, message):
    with pytest.raises(ValueError, match=message):
        checks.check_config(experiments.choose(get_preset("pose_lord_quick"), **overrides))


# ---------------------------------------------------------------- presets against the sources


def test_the_presets_are_the_authors_settings():
    paper, quick = get_preset("pose_lord"), get_preset("pose_lord_quick")
    method, data = paper.method, paper.data
    # lord config.py L2-9: the codes, the noise and penalty, the generator.
    assert (method.content_dim, method.class_dim, method.content_std, method.content_decay) == (
        128,
        256,
        1.0,
        1e-3,
    )
    assert (method.n_adain_layers, method.adain_dim, method.base_channels) == (4, 256, 64)
    # network.py L114-125 (stage 1: cosine 3e-4 -> 1e-5, codes x10), L150-153 (stage 2: 1e-4, weights 1e4).
    assert (paper.trainer.learning_rate, method.min_learning_rate, method.latent_lr_multiplier) == (
        3e-4,
        1e-5,
        10.0,
    )
    assert (method.encoder_learning_rate, method.code_weight) == (1e-4, 1e4) and lord.BETAS == (0.5, 0.999)
    # Batches of 64 (config.py L18, L23): two sets of 32 views of one instance; 1000 and 200
    # epochs (L19, L24) of the procedural bank's 100 x 40 renders.
    assert paper.batch.set_size * paper.batch.pairs_per_step == 64 and not paper.batch.double_augmentation
    bank = pose_procedural.ProceduralSizes()
    epoch = bank.train_instances * bank.views_per_instance / 64
    assert method.stage1_steps == 1000 * epoch and paper.trainer.steps - method.stage1_steps == 200 * epoch
    assert paper.trainer.lr_halving_steps == 0 and paper.encoder is None
    # Clean 64 x 64 renders (ABC supplement L219): no backgrounds, crops, colours or real images.
    assert (data.image_size, data.real_fraction, data.crop_amplitude, data.augmentation_amplitude) == (
        64,
        0.0,
        0.0,
        0.0,
    )
    assert not data.paint_backgrounds and data.source == "auto"
    assert (
        quick.data == paper.data
        and quick.trainer.steps < paper.trainer.steps
        and quick.trainer.jit_compile == "false"
    )
    assert quick.method.stage1_steps * 6 == quick.trainer.steps * 5  # the authors' 1000 : 200 split
    checks.check_config(quick)

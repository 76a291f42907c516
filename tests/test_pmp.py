"""Product-manifold projection (abc_tf/methods/pmp: model.py, losses.py, monitor.py): each loss
term against a NumPy restatement, the schedule, a train step, a short run of shapes3d_pmp_quick
with its TensorBoard logs, the checkpoint of a run restored into a fresh model, and bad settings
refused before training."""

from __future__ import annotations

import glob
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator

from abc_tf import methods
from abc_tf.runs import experiments
from abc_tf.config import ExperimentConfig
from abc_tf.runs.experiments import get_preset
from abc_tf.data.shapes3d import family as shapes3d
from abc_tf.methods.pmp import losses as pmp_losses
from abc_tf.methods.pmp import model as pmp
from abc_tf.runs import checkpoints, training
from abc_tf.runs.run_dir import load_keras_file
from tolerance_helpers import rounding_rtol

QUICK = get_preset("shapes3d_pmp_quick")
TINY = QUICK.replace(steps=8, log_every=4, eval_every=4, pairs_per_step=4, mixed_precision=False)


@pytest.fixture(autouse=True)
def float32_policy():
    yield
    keras.mixed_precision.set_global_policy("float32")  # build_model sets it from the config


def random_codes(seed: int, batch: int = 5, k: int = 3, d: int = 4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(batch, k, d)).astype(np.float32), rng.normal(size=(batch, k, d)).astype(
        np.float32
    )


# ---------------------------------------------------------------- NumPy restatements (loops, no vectorising)


def np_sparsity(codes: np.ndarray) -> float:
    n, k, d = codes.shape
    total = 0.0
    for image in range(n):
        for i in range(k):
            others = sum(codes[image, j] for j in range(k) if j != i)
            total += np.abs(codes[image, i] * others).sum()  # eq. 1's L1 norm
    return total / (n * d)  # averaged over images and coordinates, as the authors' code


def np_changed(codes1: np.ndarray, codes2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    batch, k, _ = codes1.shape
    squared = np.array([[np.sum((codes1[b, i] - codes2[b, i]) ** 2) for i in range(k)] for b in range(batch)])
    every = np.concatenate([codes1, codes2])
    scale = np.array([np.mean([np.linalg.norm(u[i] - v[i]) for u in every for v in every]) for i in range(k)])
    return squared, np.argmax(squared / scale, axis=1)


def np_distance(squared: np.ndarray, changed: np.ndarray) -> float:
    batch, k = squared.shape
    total = 0.0
    for b in range(batch):
        total += sum(squared[b, i] for i in range(k) if i != changed[b])
        total += 10 * max(0.05 - squared[b, changed[b]], 0.0)
    return total / (batch * k)


def np_usage(squared: np.ndarray) -> float:
    batch, k = squared.shape
    logits = 1000 * squared
    soft = np.exp(logits - logits.max(axis=1, keepdims=True))
    soft /= soft.sum(axis=1, keepdims=True)
    return 100 * np.mean([(1 / k - soft[:, i].mean()) ** 2 for i in range(k)])


# ---------------------------------------------------------------- the loss terms


def test_sparsity_loss_is_eq_1_averaged_over_images_and_coordinates():
    codes, _ = random_codes(0)
    # Two float32 evaluations: 60 products of one sign summed, each with the sum of the k = 3
    # codes minus its own (rounding relative to sum |c|, about 3 times |others| for normal codes).
    np.testing.assert_allclose(
        pmp_losses.sparsity_loss(tf.constant(codes)),
        np_sparsity(codes),
        rtol=rounding_rtol(60 + 3, condition=3),
    )
    # Codes on disjoint coordinates cost nothing.
    disjoint = np.zeros((2, 3, 4), np.float32)
    disjoint[:, 0, 0], disjoint[:, 1, 1], disjoint[:, 2, 2:] = 1.0, -2.0, 3.0
    assert float(pmp_losses.sparsity_loss(tf.constant(disjoint))) == 0.0


def test_the_changed_subspace_is_picked_on_distances_normalised_by_the_batch_spread():
    # Subspace 0 spreads widely across the batch (codes 0..30, each pair 2 apart: D = 4), subspace
    # 1 hardly (codes 0..1.3, each pair 1 apart: D = 1). Raw distances would pick subspace 0;
    # divided by each subspace's mean distance in the batch they pick subspace 1.
    wide, narrow = np.array([0.0, 10, 20, 30]), np.array([0.0, 0.1, 0.2, 0.3])
    codes1 = np.stack([wide, narrow], axis=1)[:, :, None].astype(np.float32)  # [B=4, k=2, d=1]
    codes2 = np.stack([wide + 2, narrow + 1], axis=1)[:, :, None].astype(np.float32)
    squared, changed = pmp_losses.pair_distances(tf.constant(codes1), tf.constant(codes2))
    np.testing.assert_allclose(
        squared, [[4.0, 1.0]] * 4, rtol=1e-5
    )  # 2 exactly; 0.1k + 1 - 0.1k: 2 roundings of 1
    np.testing.assert_array_equal(changed, [[0.0, 1.0]] * 4)
    assert np_changed(codes1, codes2)[1].tolist() == [1] * 4
    # Random codes: the same choice as the restatement, one subspace per pair.
    codes1, codes2 = random_codes(1, batch=6)
    squared, changed = pmp_losses.pair_distances(tf.constant(codes1), tf.constant(codes2))
    expected_squared, expected_changed = np_changed(codes1, codes2)
    # Two float32 evaluations of d = 4 squares of one sign (rounding_rtol(5) = 1.2e-6), then 18 of
    # them summed, of one sign (rounding_rtol(18 + 5) = 5.5e-6).
    np.testing.assert_allclose(squared, expected_squared, rtol=1e-5)
    np.testing.assert_array_equal(np.argmax(changed, axis=1), expected_changed)
    assert np.all(np.sum(changed, axis=1) == 1)
    np.testing.assert_allclose(
        pmp_losses.distance_loss(squared, changed), np_distance(expected_squared, expected_changed), rtol=1e-5
    )


def test_distance_loss_gradients_stop_at_the_argmax_and_the_margin():
    codes1, codes2 = random_codes(2, batch=4, k=3, d=2)
    codes2[:2] = codes1[:2] + 0.01 * (codes2[:2] - codes1[:2])  # pairs 0, 1: every D below the 0.05 margin
    first, second = tf.Variable(codes1), tf.Variable(codes2)
    with tf.GradientTape() as tape:
        squared, changed = pmp_losses.pair_distances(first, second)
        loss = pmp_losses.distance_loss(squared, changed)
    gradient = tape.gradient(loss, first).numpy()
    squared, chosen = np_changed(codes1, codes2)
    batch, k = squared.shape
    for b in range(batch):
        for i in range(k):
            difference = 2 * (codes1[b, i] - codes2[b, i]) / (batch * k)
            if i != chosen[b]:
                expected = difference  # pulled together
            elif squared[b, i] < 0.05:
                expected = -10 * difference  # pushed apart up to the margin
            else:
                expected = 0 * difference  # beyond the margin: no gradient, and none through the argmax
            # 2 (x1 - x2) / (B k) and its factors: a few roundings (1e-6); the zero gradients are 0.
            np.testing.assert_allclose(gradient[b, i], expected, rtol=1e-4, atol=1e-7)


def test_usage_loss():
    codes1, codes2 = random_codes(3, batch=7, k=4)
    codes1 *= 0.05  # distances of order 1e-3..1e-2: a soft softmax(1000 D)
    codes2 *= 0.05
    squared, _ = pmp_losses.pair_distances(tf.constant(codes1), tf.constant(codes2))
    # Two float32 softmaxes of 1000 D (logits up to 10: exp multiplies their rounding by 10) over
    # k = 4, means over 7 pairs; 100 mean_i (1/k - m_i)^2 moves by at most 100 x 2 x 0.75 / 4 x 2
    # = 75 times an m_i's error.
    np.testing.assert_allclose(
        pmp_losses.usage_loss(squared),
        np_usage(squared.numpy()),
        rtol=0,
        atol=75 * rounding_rtol(4 + 7 + 2, condition=10),
    )
    # Every pair changing a different subspace, equally often: no penalty.
    balanced = tf.constant(np.eye(4, dtype=np.float32))
    assert float(pmp_losses.usage_loss(balanced)) < 1e-10
    # All pairs changing subspace 0: 100 * ((1/4 - 1)^2 + 3 (1/4)^2) / 4.
    # Quarters and their squares are exact in float32; the factor 100 and the mean round twice.
    np.testing.assert_allclose(
        pmp_losses.usage_loss(tf.constant([[1.0, 0, 0, 0]] * 3)), 100 * (0.75**2 + 3 / 16) / 4, rtol=1e-5
    )


def test_consistency_loss_decodes_the_mixes_and_compares_their_codes():
    batch, k, d = 3, 4, 2
    codes1, codes2 = random_codes(4, batch, k, d)
    mixes = pmp_losses.draw_mixes(tf.constant(batch), k, tf.constant([7, 1], tf.int64)).numpy()
    assert mixes.shape == (2 * batch,) and len(set(mixes.tolist())) == 2 * batch and mixes.max() < k * batch
    np.testing.assert_array_equal(
        mixes, pmp_losses.draw_mixes(tf.constant(batch), k, tf.constant([7, 1], tf.int64)).numpy()
    )
    assert not np.array_equal(
        mixes, pmp_losses.draw_mixes(tf.constant(batch), k, tf.constant([7, 2], tf.int64)).numpy()
    )
    mixed = pmp_losses.mix_codes(tf.constant(codes1), tf.constant(codes2), tf.constant(mixes)).numpy()
    recode_matrix = (
        np.random.default_rng(5).normal(size=(d, k * d)).astype(np.float32)
    )  # a stand-in for f(g(z))

    def recode(z):
        return tf.reshape(tf.matmul(z, recode_matrix), [-1, k, d])

    total = 0.0
    for row, m in enumerate(mixes):
        i, b = m // batch, m % batch
        expected = np.array([codes1[b, j] if j == i else codes2[b, j] for j in range(k)])
        np.testing.assert_allclose(mixed[row], expected)  # s_i(x1_b) with s_j(x2_b), j != i
        z_mix = codes1[b, i] + sum(codes2[b, j] for j in range(k) if j != i)
        total += np.sum(((z_mix @ recode_matrix).reshape(k, d) - expected) ** 2)
    # Two float32 evaluations: a sum of k = 4 codes, a product of d = 2, 24 squares of one sign
    # summed, the differences cancelling to about half the terms' size: rounding_rtol(30, 4) = 3e-5.
    np.testing.assert_allclose(
        pmp_losses.consistency_loss(tf.constant(mixed), recode), total / (len(mixes) * k * d), rtol=1e-4
    )


def test_schedule_warm_up_and_ramps():
    def weights(step, total=1000, warmup=0.25):
        return [float(w) for w in pmp_losses.loss_weights(step, total, warmup)]

    for step in (0, 100, 250):  # reconstruction alone while t <= 0.25
        assert weights(step) == [0.0, 0.0, 0.0]
    # float32 against float64: t = step / total and 25 (t - centre) round 3 times, and exp
    # multiplies that by its argument (up to 5 at step 300, 2.5 at step 400, 7.5 below).
    b1, b2, b3 = weights(300)
    np.testing.assert_allclose(
        [b1, b2, b3], [np.exp(-2.5), np.exp(-5.0), 1 - np.exp(-2.5)], rtol=rounding_rtol(3, condition=5)
    )
    assert weights(400) == pytest.approx([1.0, np.exp(-2.5), 0.0], rel=rounding_rtol(3, condition=2.5))
    assert weights(500) == [1.0, 1.0, 0.0] and weights(999) == [1.0, 1.0, 0.0]
    b1s = [weights(step)[0] for step in range(251, 1000, 7)]
    assert b1s == sorted(b1s)
    assert weights(100, warmup=0.0)[0] == pytest.approx(
        np.exp(25 * (0.1 - 0.4)), rel=rounding_rtol(3, condition=7.5)
    )
    # L_cons starts once b2 exceeds 0.01: t > 0.5 - ln(100) / 25.
    assert weights(315)[1] < pmp_losses.CONSISTENCY_FROM < weights(317)[1]


# ---------------------------------------------------------------- the model and a run


def fixed_batch(config: ExperimentConfig) -> dict[str, tf.Tensor]:
    return next(iter(shapes3d.FAMILY.stream("pairs")(config, 0, 0)))


@pytest.mark.slow
def test_train_steps_lower_the_reconstruction_loss_in_every_phase():
    config = TINY.replace(steps=200)
    batch = fixed_batch(config)
    for start in (0, 150):  # warm-up, then every term at full weight (L_cons included)
        model = training.build_model(config)
        model.optimizer.iterations.assign(start)
        step = tf.function(model.train_step)  # traced once: 10% less time than 25 steps op by op
        logs = []
        for _ in range(25):
            model.reset_metrics()  # the logs are running means: one step each
            logs.append(step(batch))
        first, last = float(logs[0]["rec_loss"]), float(logs[-1]["rec_loss"])
        assert last < 0.8 * first, (start, first, last)
        if start:
            assert float(logs[-1]["beta2"]) == 1.0 and float(logs[-1]["cons_loss"]) > 0.0
        else:
            assert float(logs[-1]["beta1"]) == 0.0 and float(logs[-1]["loss"]) == float(logs[-1]["rec_loss"])
        assert set(LOG_KEYS) <= set(logs[-1])


LOG_KEYS = ("loss", "rec_loss", "spar_loss", "dis_loss", "cons_loss", "reg_loss", "beta1", "beta2", "beta3")


def test_the_method_declaration():
    method, config_class = methods.get_method("pmp"), experiments.method_config_class("pmp")
    assert config_class.batch_format == "pairs" and "num_subspaces" in config_class.field_names()
    assert "pair_factors" in TINY.batch.field_names() and TINY.batch.global_batch_field == "pairs_per_step"
    assert (
        "differ in exactly one factor" in method.supervision
        and config_class(name="pmp").length_scale() is None
    )
    model = training.build_model(TINY)
    assert set(model.networks()) == {"encoder", "features", "projectors", "decoder"}
    images = fixed_batch(TINY)["x1"]
    z = model.networks()["encoder"](tf.cast(images, tf.float32) / 255.0)
    assert z.shape == (4, 10)
    # The same codes summed over k = 10 subspaces by two ops: 10 roundings of the codes' size.
    codes = model.codes(tf.cast(images, tf.float32) / 255.0)
    size = float(tf.reduce_max(tf.reduce_sum(tf.abs(codes), axis=1)))
    np.testing.assert_allclose(z, tf.reduce_sum(codes, axis=1), rtol=0, atol=rounding_rtol(10) * size)
    # One optimizer: the authors' Adam.
    assert model.optimizer.beta_2 == 0.99 and model.optimizer.epsilon == 1e-8
    # The same seed builds the same initial weights.
    again = training.build_model(TINY)
    for one, two in zip(model.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(one, two)


@pytest.mark.slow
def test_a_short_quick_run_trains_logs_and_keeps_its_networks(tmp_path):
    run_dir = str(tmp_path / "run")
    config = QUICK.replace(
        steps=8, log_every=4, eval_every=4, pairs_per_step=4
    )  # the preset, bfloat16 included
    result = training.train(config, run_dir, verbose=0)
    assert result.final_step == 8
    assert set(LOG_KEYS) <= set(result.history) and len(result.history["rec_loss"]) == 2
    assert result.history["beta1"] == [pytest.approx(float(pmp_losses.loss_weights(3, 8, 0.25)[0])), 1.0]
    for name in ("encoder", "features", "projectors", "decoder"):
        assert os.path.isfile(os.path.join(run_dir, f"{name}.keras"))
    encoder = load_keras_file(os.path.join(run_dir, "encoder.keras"))
    assert encoder(np.zeros((2, 64, 64, 3), np.float32)).shape == (2, 10)
    # The method's TensorBoard logs: the usage histogram and scalars every log step, the image
    # grid every eval_every steps.
    events = event_accumulator.EventAccumulator(
        os.path.join(run_dir, "logs", pmp.LOG_SUBDIR), size_guidance={"tensors": 0}
    )
    events.Reload()
    tags = set(events.Tags()["tensors"])
    assert {"subspace_usage", "reconstruction_and_swaps"} | {f"subspace_usage/{i}" for i in range(10)} <= tags
    assert [event.step for event in events.Tensors("subspace_usage")] == [4, 8]
    assert [event.step for event in events.Tensors("reconstruction_and_swaps")] == [4, 8]
    usage = [
        float(tf.make_ndarray(events.Tensors(f"subspace_usage/{i}")[-1].tensor_proto)) for i in range(10)
    ]
    assert sum(usage) == pytest.approx(1.0)
    grid = tf.io.decode_png(tf.make_ndarray(events.Tensors("reconstruction_and_swaps")[-1].tensor_proto)[2])
    assert grid.shape == (4 * 64, 14 * 64, 3)  # 4 pairs x (x1, rec, 10 swaps, rec, x2)
    assert glob.glob(os.path.join(run_dir, "logs", "train", "events.*"))


@pytest.mark.slow
def test_a_run_s_checkpoint_restores_into_a_fresh_model_and_the_run_resumes(tmp_path):
    run_dir = str(tmp_path / "run")
    result = training.train(TINY, run_dir, verbose=0)
    fresh = training.build_model(TINY)
    assert checkpoints.restore(fresh, run_dir) == 8
    assert int(fresh.optimizer.iterations.numpy()) == 8
    for name, network in result.networks.items():
        for restored, trained in zip(fresh.networks()[name].get_weights(), network.get_weights()):
            np.testing.assert_array_equal(restored, trained)
    # A killed run restarts from its newest checkpoint: here the one of step 8, extended to 12.
    resumed = training.train(TINY.replace(steps=12), run_dir, verbose=0)
    assert resumed.final_step == 12 and len(resumed.history["loss"]) == 1


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"pair_factors": "colour"}, r"--batch.pair_factors: unknown factor 'colour'"),
        ({"num_subspaces": 1}, r"--method.num_subspaces must be at least 2"),
        ({"warmup": 1.0}, r"--method.warmup must lie in \[0, 1\)"),
        ({"consistency_weight": -1.0}, r"--method.consistency_weight must be a finite number >= 0"),
        ({"augmentations": "hue:0.1"}, r"--data.augmentations does not apply to pairs"),
        (
            {"data": "mnist", "source": "procedural", "eval_every": 0},
            r"--method=pmp trains on 'pairs' batches; data family 'mnist' streams sets",
        ),
    ],
)
def test_bad_settings_fail_before_training(tmp_path, overrides, message):
    run_dir = tmp_path / "run"
    with pytest.raises(ValueError, match=message):
        training.train(experiments.choose(TINY, **overrides), str(run_dir), verbose=0)
    assert not (run_dir / "config.json").exists() and not checkpoints.list_checkpoints(str(run_dir))


def test_pmp_fields_are_refused_for_other_methods():
    # ABC's parts have neither PMP's subspaces nor its pairs; the set size is ABC's batch field.
    abc = get_preset("shapes3d")
    fields = {key.partition(".")[2] for key in abc.flat()}
    assert [name for name in ("num_subspaces", "pair_factors", "set_size") if name not in fields] == [
        "num_subspaces",
        "pair_factors",
    ]
    with pytest.raises(
        ValueError,
        match=r"--method.num_subspaces: method 'abc' \(AbcConfig\) has no field "
        r"'num_subspaces'; its fields: similarity, temperature",
    ):
        experiments.override(abc, {"method.num_subspaces": 4})
    with pytest.raises(
        ValueError,
        match=r"--batch.pair_factors: the batch part \(SetBatch\) has no field "
        r"'pair_factors'; its fields: set_size, pairs_per_step",
    ):
        experiments.override(abc, {"batch.pair_factors": "shape"})
    with pytest.raises(
        ValueError, match=r"This config has no field 'num_subspaces' \(data family 'shapes3d', method 'abc'\)"
    ):
        abc.replace(num_subspaces=4)

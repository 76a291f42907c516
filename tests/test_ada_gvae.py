"""Ada-GVAE (abc_tf/methods/ada_gvae: the config and presets, model.py, networks.py): one step's
loss and each of its terms against a float64 NumPy restatement of the authors' model under the
same noise (Ada-GVAE, its ML-VAE averaging, GVAE with the changed factor), the adaptive choice of
the shared dimensions on hand-made divergences and against the authors' op, gradients against
finite differences in float64, a run killed and resumed through the trainer ending where an
unbroken one ends, disentanglement_lib's networks, the declaration, and the presets and the
smoke config validated and built."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from abc_tf import methods
from abc_tf.runs import checks
from abc_tf.runs import experiments
from abc_tf.runs.experiments import get_preset
from abc_tf.methods import ada_gvae
from abc_tf.methods.ada_gvae import model as ada_model, networks
from abc_tf.runs import checkpoints, training
from abc_tf.runs.run_dir import embed, load_run
from tolerance_helpers import EPS64, rounding_rtol

PAIRS, SHAPE, LATENT = 3, (4, 4, 1), 4  # three pairs of 4 x 4 images, 4 latent dimensions
HIDDEN = 5
# The roundings on the loss's longest chain: the encoder's fan-ins (16 pixels, then 5 hidden
# units), the averaging and the draw (about 10 elementwise operations), the decoder's fan-ins (4
# codes, 5 units), the sum over 16 pixels, the mean over the pairs and the halves' sum.
ROUNDINGS = 16 + HIDDEN + 10 + LATENT + HIDDEN + 16 + PAIRS + 1


# ---------------------------------------------------------------- a tiny model and its NumPy twin


def tiny_networks(dtype: str = "float32", seed: int = 3) -> tuple[keras.Model, keras.Model]:
    """A posterior (16 pixels -> tanh 5 -> mean, log-variance of 4) and a decoder (4 -> tanh 5 ->
    16 logits): dense layers, so that NumPy restates them exactly. The log-variance head's bias is
    spread over [-1, 1] so that the variances differ from 1 (the averaging and the divergence
    then see them)."""
    keras.utils.set_random_seed(seed)
    images = keras.Input(shape=SHAPE, dtype=dtype, name="images")
    hidden = keras.layers.Dense(HIDDEN, activation="tanh", name="hidden", dtype=dtype)(
        keras.layers.Flatten(dtype=dtype)(images)
    )
    heads = [keras.layers.Dense(LATENT, name=name, dtype=dtype)(hidden) for name in networks.OUTPUTS]
    posterior = keras.Model(images, heads, name="posterior")
    posterior.get_layer("log_variance").bias.assign(np.linspace(-1, 1, LATENT))
    z = keras.Input(shape=(LATENT,), dtype=dtype, name="z")
    hidden = keras.layers.Dense(HIDDEN, activation="tanh", name="hidden", dtype=dtype)(z)
    logits = keras.layers.Dense(int(np.prod(SHAPE)), name="logits", dtype=dtype)(hidden)
    decoder = keras.Model(z, keras.layers.Reshape(SHAPE, dtype=dtype)(logits), name="decoder")
    return posterior, decoder


def tiny_model(
    aggregation: str = "argmax", averaging: str = "group_vae", beta: float = 2.0
) -> ada_model.AdaGvaeModel:
    posterior, decoder = tiny_networks()
    model = ada_model.AdaGvaeModel(
        posterior, decoder, beta=beta, aggregation=aggregation, averaging=averaging, seed=3
    )
    model.compile(optimizer=keras.optimizers.Adam(1e-4))
    return model


def tiny_batch(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    batch = {key: rng.integers(0, 256, size=(PAIRS, *SHAPE), dtype=np.uint8) for key in ("x1", "x2")}
    batch[ada_model.LABEL_KEY] = np.array([2, 0, 3], np.int32)
    return batch


def weights_of(posterior: keras.Model, decoder: keras.Model) -> dict[str, np.ndarray]:
    """Every kernel and bias, float64, by "<network>/<layer>/<kernel|bias>"."""
    return {
        f"{network.name}/{layer.name}/{part}": np.asarray(getattr(layer, part), np.float64)
        for network in (posterior, decoder)
        for layer in network.layers
        if hasattr(layer, "kernel")
        for part in ("kernel", "bias")
    }


def numpy_terms(
    weights: dict,
    x1: np.ndarray,
    x2: np.ndarray,
    noise: np.ndarray,
    aggregation: str,
    averaging: str,
    beta: float,
    labels: np.ndarray | None = None,
) -> dict:
    """The loss of a batch of pairs in float64, restated from the paper and the authors'
    weak_vae.py in their own form (variances, not log-space): images [B, H, W, C] in [0, 1],
    noise [B, 2, d]. Also "kept" (the dimensions keeping their own posterior) and "scale_*", the
    sum of the magnitudes each term adds up (for tolerances)."""

    def dense(x, network, layer):
        return x @ weights[f"{network}/{layer}/kernel"] + weights[f"{network}/{layer}/bias"]

    def encode(x):
        hidden = np.tanh(dense(x.reshape(len(x), -1), "posterior", "hidden"))
        return dense(hidden, "posterior", "mean"), dense(hidden, "posterior", "log_variance")

    (m1, l1), (m2, l2) = encode(x1), encode(x2)
    v1, v2 = np.exp(l1), np.exp(l2)
    divergence = v1 / v2 + (m2 - m1) ** 2 / v2 - 1 + l2 - l1  # compute_kl: 2 KL(q1 || q2) per dimension
    if aggregation == "labels":
        kept = np.eye(m1.shape[1], dtype=bool)[labels]
    else:  # the upper of two equal-width bins: at or above the midpoint of the row's range; none if all equal
        low, high = divergence.min(1, keepdims=True), divergence.max(1, keepdims=True)
        kept = (high > low) & (divergence >= (low + high) / 2)
    if averaging == "group_vae":
        shared_mean, shared_variance = (m1 + m2) / 2, (v1 + v2) / 2
    else:  # MLVae.model_fn
        shared_variance = 2 * v1 * v2 / (v1 + v2)
        shared_mean = (m1 / v1 + m2 / v2) * shared_variance * 0.5
    terms = {"kept": kept, "reconstruction": 0.0, "kl": 0.0, "scale_reconstruction": 0.0, "scale_kl": 0.0}
    for index, (x, mean, variance) in enumerate(((x1, m1, v1), (x2, m2, v2))):
        mean = np.where(kept, mean, shared_mean)
        variance = np.where(kept, variance, shared_variance)
        z = mean + np.sqrt(variance) * noise[:, index]
        logits = dense(np.tanh(dense(z, "decoder", "hidden")), "decoder", "logits")
        pixels = x.reshape(len(x), -1)
        nll = np.sum(
            np.logaddexp(0, logits) - pixels * logits, axis=1
        )  # sigmoid cross-entropy summed over pixels
        kl = 0.5 * np.sum(mean**2 + variance - np.log(variance) - 1, axis=1)
        terms["reconstruction"] += 0.5 * np.mean(nll)
        terms["kl"] += 0.5 * np.mean(kl)
        terms["scale_reconstruction"] += 0.5 * np.mean(
            np.sum(np.logaddexp(0, np.abs(logits)) + np.abs(pixels * logits), 1)
        )
        terms["scale_kl"] += 0.5 * np.mean(
            0.5 * np.sum(mean**2 + variance + np.abs(np.log(variance)) + 1, axis=1)
        )
    terms["loss"] = terms["reconstruction"] + beta * terms["kl"]
    terms["shared_dimensions"] = np.mean(np.sum(~kept, axis=1))
    terms["condition"] = max(
        1.0, np.abs(l1).max(), np.abs(l2).max()
    )  # exp(x) magnifies a relative error by |x|
    return terms


VARIANTS = [("argmax", "group_vae"), ("argmax", "mlvae"), ("labels", "group_vae"), ("labels", "mlvae")]


# ---------------------------------------------------------------- 1. one step's loss against NumPy


@pytest.mark.parametrize("aggregation, averaging", VARIANTS)
def test_a_steps_loss_and_its_terms_match_the_numpy_restatement(aggregation, averaging):
    model, batch, beta = tiny_model(aggregation, averaging), tiny_batch(), 2.0
    x1, x2 = (batch[key].astype(np.float64) / 255.0 for key in ("x1", "x2"))
    # The step's noise, drawn as compute_terms draws it from (seed, step 0).
    noise = np.asarray(model.noise_at(0, PAIRS), np.float64)
    assert noise.shape == (PAIRS, 2, LATENT)
    expected = numpy_terms(
        weights_of(model.posterior, model.decoder),
        x1,
        x2,
        noise,
        aggregation,
        averaging,
        beta,
        batch[ada_model.LABEL_KEY],
    )
    if aggregation == "argmax":  # the batch mixes shared and kept dimensions
        assert 0 < expected["shared_dimensions"] < LATENT - 1
    # Each term within the float32 roundings of its chain (ROUNDINGS), relative to the magnitudes
    # it adds up (the KL's v - 1 - log v cancels), times the log-variances' condition.
    tolerance = {
        name: rounding_rtol(ROUNDINGS, expected["condition"]) * expected[f"scale_{name}"]
        for name in ("reconstruction", "kl")
    }
    tolerance["loss"] = tolerance["reconstruction"] + beta * tolerance["kl"]

    tensors = {key: tf.constant(value) for key, value in batch.items()}
    terms = model.compute_terms(tensors, tf.constant(0), True)
    for name in ("loss", "reconstruction", "kl"):
        assert float(terms[name]) == pytest.approx(expected[name], abs=tolerance[name]), name
    # The shared dimensions are counted exactly (the float32 mask is the float64 one): a sum of
    # small integers, divided once, is the float32 nearest the exact mean.
    assert float(terms["shared_dimensions"]) == float(np.float32(expected["shared_dimensions"]))
    out = ada_model.pair_terms(
        model.posterior,
        model.decoder,
        tf.constant(x1, tf.float32),
        tf.constant(x2, tf.float32),
        model.noise_at(0, PAIRS),
        aggregation,
        averaging,
        tensors[ada_model.LABEL_KEY],
    )
    np.testing.assert_array_equal(np.asarray(out["kept"]), expected["kept"])
    # The logged loss of one training step is the same loss, at step 0's noise.
    logs = model.train_step(tensors)
    assert float(logs["loss"]) == pytest.approx(expected["loss"], abs=tolerance["loss"])


def test_the_labelled_variant_keeps_exactly_the_changed_factor_s_dimension():
    model, batch = tiny_model("labels"), tiny_batch()
    x1, x2 = (tf.constant(batch[key], tf.float32) / 255.0 for key in ("x1", "x2"))
    out = ada_model.pair_terms(
        model.posterior,
        model.decoder,
        x1,
        x2,
        model.noise_at(0, PAIRS),
        "labels",
        "group_vae",
        tf.constant(batch[ada_model.LABEL_KEY]),
    )
    np.testing.assert_array_equal(np.argmax(np.asarray(out["kept"]), axis=1), batch[ada_model.LABEL_KEY])
    assert np.asarray(out["kept"]).sum() == PAIRS and np.all(
        np.asarray(out["shared_dimensions"]) == LATENT - 1
    )


def test_the_averaged_posteriors():
    rng = np.random.default_rng(4)
    m1, m2 = rng.normal(size=(2, 6, 3))
    l1, l2 = rng.uniform(-3, 3, size=(2, 6, 3))
    v1, v2 = np.exp(l1), np.exp(l2)
    # float32 exp, logsumexp and a few products of log-variances up to 3: a handful of roundings,
    # condition 3 (exp(x)).
    atol = rounding_rtol(8, 3) * 10
    mean, log_var = (
        np.asarray(value)
        for value in ada_model.averaged_posterior(
            *(tf.constant(v, tf.float32) for v in (m1, l1, m2, l2)), "group_vae"
        )
    )
    np.testing.assert_allclose(mean, (m1 + m2) / 2, atol=atol)
    np.testing.assert_allclose(log_var, np.log((v1 + v2) / 2), atol=atol)
    mean, log_var = (
        np.asarray(value)
        for value in ada_model.averaged_posterior(
            *(tf.constant(v, tf.float32) for v in (m1, l1, m2, l2)), "mlvae"
        )
    )
    variance = 2 * v1 * v2 / (v1 + v2)
    np.testing.assert_allclose(mean, (m1 / v1 + m2 / v2) * variance / 2, atol=atol)
    np.testing.assert_allclose(log_var, np.log(variance), atol=atol)
    # Two equal posteriors average to themselves either way; the divergence of one to itself is 0.
    for averaging in ("group_vae", "mlvae"):
        same_mean, same_log_var = ada_model.averaged_posterior(m1, l1, m1, l1, averaging)
        np.testing.assert_allclose(same_mean, m1, atol=1e-12)
        np.testing.assert_allclose(same_log_var, l1, atol=1e-12)
    np.testing.assert_allclose(ada_model.pair_divergence(m1, l1, m1, l1), 0.0, atol=1e-12)
    # compute_kl is twice KL(q1 || q2), from the first posterior to the second (not symmetric).
    kl = 0.5 * (l2 - l1 + (v1 + (m1 - m2) ** 2) / v2 - 1)
    np.testing.assert_allclose(ada_model.pair_divergence(m1, l1, m2, l2), 2 * kl, rtol=1e-12)
    assert not np.allclose(
        ada_model.pair_divergence(m1, l1, m2, l2), ada_model.pair_divergence(m2, l2, m1, l1)
    )


# ---------------------------------------------------------------- 2. the adaptive mask


def kept_of(rows) -> np.ndarray:
    return np.asarray(ada_model.adaptive_kept(tf.constant(np.asarray(rows, np.float32))))


def authors_kept(rows: np.ndarray) -> np.ndarray:
    """dlib's aggregate_argmax, row by row: tf.histogram_fixed_width_bins(row, [min, max], nbins=2) == 1."""
    return np.stack(
        [
            np.asarray(tf.histogram_fixed_width_bins(row, [tf.reduce_min(row), tf.reduce_max(row)], nbins=2))
            == 1
            for row in tf.constant(np.asarray(rows, np.float32))
        ]
    )


def test_the_adaptive_mask_on_hand_made_divergences():
    below = np.nextafter(np.float32(1.0), np.float32(0))  # the float32 just below the midpoint
    cases = {
        # min 0, max 2, midpoint 1: the midpoint itself and the maximum keep their own posteriors.
        "midpoint": ([0.0, 1.0, 0.5, below, 2.0], [False, True, False, False, True]),
        "one changed": ([0.01, 0.02, 5.0, 0.03], [False, False, True, False]),
        "two changed": ([0.0, 4.0, 3.0, 0.1], [False, True, True, False]),
        "tied maxima": ([1.0, 3.0, 3.0, 1.0], [False, True, True, False]),
        "tied minima": ([0.5, 0.5, 0.9, 0.5], [False, False, True, False]),
        # All equal: no spread, no upper bin (the authors' op divides 0 by 0): every dimension shared.
        "all equal": ([0.7, 0.7, 0.7, 0.7], [False] * 4),
        "all zero": ([0.0, 0.0, 0.0, 0.0], [False] * 4),
        "one dimension": ([3.0], [False]),
        # Rounding can leave a divergence just below 0; the bins follow the row's own minimum.
        "negative rounding": ([-1e-7, 2.0, 0.999, 1.0 - 0.5e-7], [False, True, False, True]),
    }
    for name, (row, want) in cases.items():
        np.testing.assert_array_equal(kept_of([row])[0], want, err_msg=name)
        np.testing.assert_array_equal(authors_kept([row])[0], want, err_msg=name)
    # Rows are independent: a batch gives each row its own bins.
    rows = [case[0] for case in cases.values() if len(case[0]) == 4]
    np.testing.assert_array_equal(
        kept_of(rows), np.array([case[1] for case in cases.values() if len(case[0]) == 4])
    )


def test_the_adaptive_mask_is_the_authors_histogram_bins():
    rng = np.random.default_rng(5)
    rows = rng.exponential(size=(500, 10)).astype(np.float32)
    # Values on and next to the midpoint of their rows, where rounding decides the bin.
    middle = (rows.min(1) + rows.max(1)) / 2
    rows[:100, 3] = middle[:100]
    rows[100:200, 3] = np.nextafter(middle[100:200], np.float32(0))
    rows[200:300, 3] = np.nextafter(middle[200:300], np.float32(np.inf))
    rows[300:310] = rows[300:310, :1]  # all equal
    np.testing.assert_array_equal(kept_of(rows), authors_kept(rows))  # the same float32 operations: equal
    assert kept_of(rows)[:300].any(axis=1).all()  # the largest always keeps its own


def test_the_labels_mask_is_one_hot():
    np.testing.assert_array_equal(
        np.asarray(ada_model.label_kept(tf.constant([0, 3, 1]), 4)), np.eye(4, dtype=bool)[[0, 3, 1]]
    )


# ---------------------------------------------------------------- 3. gradients in float64


@pytest.mark.parametrize(
    "aggregation, averaging", [("argmax", "group_vae"), ("argmax", "mlvae"), ("labels", "group_vae")]
)
def test_gradients_match_finite_differences_in_float64(aggregation, averaging):
    posterior, decoder = tiny_networks("float64", seed=7)
    batch, beta = tiny_batch(1), 2.0
    x1, x2 = (batch[key].astype(np.float64) / 255.0 for key in ("x1", "x2"))
    noise = np.random.default_rng(2).normal(size=(PAIRS, 2, LATENT))
    labels = batch[ada_model.LABEL_KEY]
    weights = weights_of(posterior, decoder)
    layers = {
        f"{network.name}/{layer.name}/{part}": getattr(layer, part)
        for network in (posterior, decoder)
        for layer in network.layers
        if hasattr(layer, "kernel")
        for part in ("kernel", "bias")
    }
    with tf.GradientTape() as tape:
        out = ada_model.pair_terms(
            posterior,
            decoder,
            tf.constant(x1),
            tf.constant(x2),
            tf.constant(noise),
            aggregation,
            averaging,
            tf.constant(labels),
        )
        loss = tf.reduce_mean(out["reconstruction"]) + beta * tf.reduce_mean(out["kl"])
    assert loss.dtype == tf.float64
    expected = numpy_terms(weights, x1, x2, noise, aggregation, averaging, beta, labels)
    np.testing.assert_array_equal(np.asarray(out["kept"]), expected["kept"])
    # float64 against float64 along two paths: a few hundred roundings of 2.2e-16.
    assert float(loss) == pytest.approx(expected["loss"], rel=1e-12)
    gradients = dict(zip(layers, tape.gradient(loss, list(layers.values()))))
    # Central differences of the NumPy loss, step h = 1e-5: rounding eps64 |f| / h, 3e-10 for this
    # loss of about 14 (checked below), and truncation h^2 / 6 |f'''| = 1.7e-11 |f'''|, below
    # 1e-7 while the third derivatives stay below 6,000 (tanh and exp of values of order 1); the
    # mask, piecewise constant, must not move under the steps (checked).
    step, atol = 1e-5, 1e-7
    for name, weight in weights.items():
        numeric = np.zeros_like(weight)
        for index in np.ndindex(weight.shape):
            losses = []
            for sign in (1, -1):
                shifted = dict(weights)
                shifted[name] = weight.copy()
                shifted[name][index] += sign * step
                terms = numpy_terms(shifted, x1, x2, noise, aggregation, averaging, beta, labels)
                assert np.array_equal(terms["kept"], expected["kept"]), (name, index)
                losses.append(terms["loss"])
            numeric[index] = (losses[0] - losses[1]) / (2 * step)
        assert EPS64 * expected["loss"] / step < atol / 100
        np.testing.assert_allclose(np.asarray(gradients[name]), numeric, rtol=0, atol=atol, err_msg=name)
    # The shared dimensions' averaging passes gradient to both images' posteriors.
    assert np.abs(np.asarray(gradients["posterior/mean/kernel"])).min() > 0


# ---------------------------------------------------------------- 4. through the trainer


SMOKE = methods.get_method("ada_gvae").smallest_run


def network_weights(run_dir: str, config) -> list[np.ndarray]:
    model = training.build_model(config)
    assert checkpoints.restore(model, run_dir) == config.trainer.steps
    assert int(model.optimizer.iterations.numpy()) == config.trainer.steps
    return [np.asarray(value) for value in model.weights]


@pytest.mark.slow
def test_a_killed_run_resumes_to_what_an_unbroken_run_trains(tmp_path, monkeypatch):
    # The trainer gives a resumed run fresh batches on purpose (training.data_seed); here the
    # stream replays the unbroken run's batches from the resumed step, so that what the method
    # owns is compared: its (seed, step) noise, its networks and Adam's state in the checkpoint.
    fresh_batches = training.make_family_dataset
    monkeypatch.setattr(
        training,
        "make_family_dataset",
        lambda family, config, start_step: fresh_batches(family, config, 0).skip(start_step),
    )
    unbroken = training.train(SMOKE, str(tmp_path / "unbroken"), verbose=0)
    assert unbroken.final_step == 4 and set(ada_model.LOG_NAMES) <= set(unbroken.history)
    assert all(np.isfinite(value) for values in unbroken.history.values() for value in values)

    def crash(epoch, logs):
        if epoch == 0:  # after the checkpoint of step 2 (the trainer's own callbacks run first)
            raise RuntimeError("killed")

    run_dir = str(tmp_path / "killed")
    with pytest.raises(RuntimeError, match="killed"):
        training.train(
            SMOKE, run_dir, verbose=0, callbacks=[keras.callbacks.LambdaCallback(on_epoch_end=crash)]
        )
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == [2]
    resumed = training.train(SMOKE, run_dir, verbose=0)
    assert resumed.final_step == 4 and len(resumed.history["loss"]) == 1
    # The same batches, noise, weights and Adam moments through the same kernels: equal.
    assert resumed.history["loss"][-1] == unbroken.history["loss"][-1]
    for ours, theirs in zip(
        network_weights(run_dir, SMOKE), network_weights(str(tmp_path / "unbroken"), SMOKE)
    ):
        np.testing.assert_array_equal(ours, theirs)
    # The run's encoder embeds images as the posterior's means.
    run = load_run(run_dir)
    images = np.random.default_rng(0).integers(0, 256, size=(5, 64, 64, 3), dtype=np.uint8)
    codes = embed(run.encoder, images)
    assert codes.shape == (5, 10) and np.all(np.isfinite(codes))
    # The same weights through predict's graph and an eager call (kernels may differ): float32 rounding only.
    means = run.network("posterior")(images.astype(np.float32) / 255.0)[0]
    np.testing.assert_allclose(codes, means, rtol=1e-4, atol=1e-5)
    assert run.network("decoder") is not None


def test_the_labelled_variant_trains_on_pairs_that_carry_the_changed_factor(tmp_path):
    # The Shapes3D pairs stream puts the changed factor in its batches under --batch.pair_labels.
    with pytest.raises(
        ValueError,
        match=r"--method.aggregation=labels reads each pair's changed factor "
        r"\('changed_factor'\): add --batch.pair_labels",
    ):
        checks.check_config(SMOKE.replace(aggregation="labels"))
    result = training.train(
        SMOKE.replace(aggregation="labels", pair_labels=True), str(tmp_path / "run"), verbose=0
    )
    assert np.isfinite(result.history["loss"][-1])


# ---------------------------------------------------------------- 5. networks, declaration, presets


def test_the_networks_are_disentanglement_lib_s():
    posterior = networks.gaussian_encoder()
    assert [tuple(output.shape) for output in posterior.outputs] == [(None, 10), (None, 10)]
    convolutions = [posterior.get_layer(f"e{index}") for index in range(1, 5)]
    assert [(layer.filters, layer.kernel_size, layer.strides, layer.padding) for layer in convolutions] == [
        (32, (4, 4), (2, 2), "same"),
        (32, (4, 4), (2, 2), "same"),
        (64, (2, 2), (2, 2), "same"),
        (64, (2, 2), (2, 2), "same"),
    ]
    assert tuple(convolutions[-1].output.shape) == (None, 4, 4, 64) and posterior.get_layer("e5").units == 256
    # Parameters by hand: convolutions k*k*in*out + out, then 1024*256 + 256 and two heads 256*10 + 10.
    assert posterior.count_params() == (16 * 3 * 32 + 32) + (16 * 32 * 32 + 32) + (4 * 32 * 64 + 64) + (
        4 * 64 * 64 + 64
    ) + (1024 * 256 + 256) + 2 * (256 * 10 + 10)
    decoder = networks.bernoulli_decoder()
    assert tuple(decoder.output.shape) == (None, 64, 64, 3)
    assert [decoder.get_layer(name).units for name in ("d1", "d2")] == [256, 1024]
    assert [
        (decoder.get_layer(f"d{index}").filters, decoder.get_layer(f"d{index}").kernel_size)
        for index in range(3, 7)
    ] == [(64, (4, 4)), (32, (4, 4)), (32, (4, 4)), (3, (4, 4))]
    assert decoder.get_layer("d6").activation.__name__ == "linear"  # logits
    assert decoder.count_params() == (10 * 256 + 256) + (256 * 1024 + 1024) + (16 * 64 * 64 + 64) + (
        16 * 64 * 32 + 32
    ) + (16 * 32 * 32 + 32) + (16 * 32 * 3 + 3)
    with pytest.raises(ValueError, match=r"take 64 x 64 images, not \(32, 32, 3\)"):
        networks.gaussian_encoder(input_shape=(32, 32, 3))


def test_the_declaration():
    method, config_class = methods.get_method("ada_gvae"), experiments.method_config_class("ada_gvae")
    assert config_class is method.config is ada_gvae.AdaGvaeConfig
    assert (
        config_class.batch_format == "pairs"
        and not config_class.has_encoder_part
        and config_class(name=method.name).length_scale() is None
    )
    paper = get_preset("shapes3d_ada_gvae")
    assert method.supervision_for(paper).startswith("pairs that differ in one factor, which one unknown")
    assert (
        method.supervision_for(paper.replace(aggregation="labels"))
        == "pairs that differ in one factor, and which factor it is"
    )
    assert method.label_for(paper) == "ada_gvae"
    assert method.label_for(paper.replace(averaging="mlvae")) == "ada_gvae (Ada-ML-VAE)"
    assert method.label_for(paper.replace(aggregation="labels")) == "ada_gvae (GVAE with the changed factor)"
    assert not method.accepts_two_view_sets and not method.needs_training_bank


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"aggregation": "adaptive"}, r"--method.aggregation='adaptive'; choose one of argmax, labels"),
        ({"averaging": "product"}, r"--method.averaging='product'; choose one of group_vae, mlvae"),
        ({"beta": -1.0}, r"--method.beta must be a finite number >= 0"),
        ({"beta": float("inf")}, r"--method.beta must be a finite number >= 0"),
        ({"latent_dim": 0}, r"--method.latent_dim must be positive"),
        (
            {"aggregation": "labels", "latent_dim": 5},
            r"--method.latent_dim=5 is below the 6 factors of data 'shapes3d'",
        ),
        ({"data": "mnist", "source": "procedural"}, r"--method=ada_gvae trains on 'pairs' batches"),
    ],
)
def test_bad_settings_fail_before_training(overrides, message):
    with pytest.raises(ValueError, match=message):
        checks.check_config(experiments.choose(SMOKE, **overrides))


def test_the_presets_and_the_smoke_config_validate_and_build():
    paper, quick = get_preset("shapes3d_ada_gvae"), get_preset("shapes3d_ada_gvae_quick")
    method = paper.method
    # dlib shared.gin: num_latent 10, batch 64 (pairs), 300,000 steps, Adam 1e-4 (0.9, 0.999, 1e-8);
    # beta 1 (shared.gin vae.beta, weakly_supervised/train_test.gin group_vae.beta; the sweep 1-16).
    assert (method.name, method.latent_dim, method.beta, method.aggregation, method.averaging) == (
        "ada_gvae",
        10,
        1.0,
        "argmax",
        "group_vae",
    )
    assert (paper.batch.pairs_per_step, paper.trainer.steps, paper.trainer.learning_rate) == (
        64,
        300_000,
        1e-4,
    )
    assert ada_model.ADAM_BETAS == (0.9, 0.999) and ada_model.ADAM_EPSILON == 1e-8
    assert (paper.data.family, paper.data.source, paper.encoder) == ("shapes3d", "auto", None)
    assert quick.method == paper.method and quick.data == paper.data and quick.trainer.steps <= 2000
    assert SMOKE.trainer.steps <= 4 and SMOKE.batch.pairs_per_step == 2 and SMOKE.data.source == "auto"
    for config in (paper, quick, SMOKE):
        checks.check_config(config)
        model = training.build_model(config)
        assert isinstance(model, ada_model.AdaGvaeModel) and set(model.networks()) == {
            "encoder",
            "posterior",
            "decoder",
        }
        assert tuple(model.networks()["encoder"].output.shape) == (None, 10)
        optimizer = model.optimizer
        assert (float(optimizer.beta_1), float(optimizer.beta_2), float(optimizer.epsilon)) == (
            0.9,
            0.999,
            1e-8,
        )
        assert float(keras.ops.convert_to_numpy(optimizer.learning_rate)) == pytest.approx(1e-4)
    # One seed, one set of initial weights.
    first, second = training.build_model(SMOKE), training.build_model(SMOKE)
    for one, two in zip(first.weights, second.weights):
        np.testing.assert_array_equal(one, two)

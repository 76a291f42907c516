"""The VAE family's measures (abc_tf/evaluation/tasks/likelihood.py): the ELBO terms and importance
weights against a NumPy restatement of a tiny linear VAE, the importance-weighted bound above
the ELBO, rising with K and close to the exact log p(x), log-mean-exp, kNN accuracy on a
hand-made case, and a short run's measures end to end."""

from __future__ import annotations

import math

import keras
import numpy as np
import pytest

from abc_tf.runs import experiments
from abc_tf.runs.experiments import get_preset
from abc_tf.evaluation.tasks import likelihood
from abc_tf.methods.vae import VaeConfig
from abc_tf.methods.vae import losses as vitae_losses
from abc_tf.runs import training
from abc_tf.runs.run_dir import TrainedRun, load_run
from tolerance_helpers import rounding_rtol


class FixedPosterior(keras.Model):
    """q(z | x) = N(x_flat W, diag v) with fixed W and v: a posterior NumPy can restate."""

    def __init__(self, weights: np.ndarray, variance: np.ndarray):
        super().__init__()
        self.w, self.v = weights.astype(np.float32), variance.astype(np.float32)

    def call(self, images):
        flat = keras.ops.reshape(images, (keras.ops.shape(images)[0], -1))
        mean = keras.ops.matmul(flat, self.w)
        return [mean, keras.ops.ones_like(mean) * self.v]


class FixedDecoder(keras.Model):
    """p(x | z) = Bernoulli(sigmoid(z U + b)) on 2 x 2 images."""

    def __init__(self, weights: np.ndarray, bias: np.ndarray):
        super().__init__()
        self.u, self.b = weights.astype(np.float32), bias.astype(np.float32)

    def call(self, z):
        return keras.ops.reshape(keras.ops.sigmoid(keras.ops.matmul(z, self.u) + self.b), (-1, 2, 2, 1))


def tiny_vae(seed: int) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    params = {
        "W": rng.normal(scale=0.5, size=(4, 2)),
        "v": rng.uniform(0.2, 0.8, size=2),
        "U": rng.normal(size=(2, 4)),
        "b": rng.normal(scale=0.3, size=4),
    }
    return {
        "appearance_posterior": FixedPosterior(params["W"], params["v"]),
        "appearance_decoder": FixedDecoder(params["U"], params["b"]),
    }, params


def np_terms(x: np.ndarray, z: np.ndarray, params: dict) -> tuple[float, float, float]:
    """(-log p(x | z), KL(q || N(0, I)), log p(x, z) - log q(z | x)) for one image, by loops."""
    flat = x.reshape(-1)
    mean = [sum(flat[i] * params["W"][i, j] for i in range(4)) for j in range(2)]
    logits = [sum(z[j] * params["U"][j, i] for j in range(2)) + params["b"][i] for i in range(4)]
    p = [1 / (1 + math.exp(-logit)) for logit in logits]
    log_px = sum(flat[i] * math.log(p[i]) + (1 - flat[i]) * math.log(1 - p[i]) for i in range(4))
    v = params["v"]
    kl = sum(0.5 * (v[j] + mean[j] ** 2 - 1 - math.log(v[j])) for j in range(2))
    log_prior = sum(-0.5 * math.log(2 * math.pi) - 0.5 * z[j] ** 2 for j in range(2))
    log_q = sum(-0.5 * math.log(2 * math.pi * v[j]) - (z[j] - mean[j]) ** 2 / (2 * v[j]) for j in range(2))
    return -log_px, kl, log_px + log_prior - log_q


def test_elbo_terms_and_importance_weights_match_numpy():
    networks, params = tiny_vae(0)
    x = np.random.default_rng(1).uniform(size=(3, 2, 2, 1)).astype(np.float32)
    noise = vitae_losses.draw_noise(3, (2, 0), np.array([5, 6], np.int64))
    inferred = vitae_losses.infer(networks, VaeConfig.structure, x, noise)
    terms = vitae_losses.elbo_terms(x, inferred)
    log_w = np.asarray(vitae_losses.log_weights(x, inferred))
    for b in range(3):
        z = np.asarray(inferred["appearance_z"])[b]
        rec, kl, weight = np_terms(x[b], z, params)
        # float32 (the parameters rounded once) against float64. A logit z U + b rounds 4 times
        # on its terms' size, and -log p(x | z) sums 4 terms that each move by at most a logit's
        # error. KL's 4 roundings (x W, then v + m^2 - 1 - log v) are on its terms' size, which
        # may be 10 times KL's own where v nears 1 and m 0.
        logit_size = (np.abs(z) @ np.abs(params["U"]) + np.abs(params["b"])).max()
        assert float(terms["reconstruction"][b]) == pytest.approx(rec, abs=4 * rounding_rtol(4) * logit_size)
        mean = x[b].reshape(-1) @ params["W"]
        kl_size = 0.5 * np.sum(params["v"] + mean**2 + 1 + np.abs(np.log(params["v"])))
        assert float(terms["kl_appearance"][b]) == pytest.approx(kl, abs=rounding_rtol(4 + 4) * kl_size)
        assert float(terms["kl_perspective"][b]) == 0.0
        # The three log densities: about 15 roundings on terms of size < 10 (rounding_rtol(15) x
        # 10 = 3.6e-5).
        assert float(log_w[b]) == pytest.approx(weight, rel=1e-4, abs=1e-4)


def test_the_importance_weighted_bound_is_above_the_elbo_rises_with_k_and_nears_log_p():
    networks, _ = tiny_vae(2)
    x = (np.random.default_rng(3).uniform(size=(40, 2, 2, 1)) > 0.5).astype(np.float32)
    few = likelihood.bounds(networks, VaeConfig.structure, x, samples=2, seed=0, dims=(2, 0))
    many = likelihood.bounds(networks, VaeConfig.structure, x, samples=500, seed=0, dims=(2, 0))
    assert np.mean(many["iw_log_likelihood"]) >= np.mean(many["elbo"])
    assert np.mean(few["iw_log_likelihood"]) >= np.mean(few["elbo"]) - 0.1
    assert np.mean(many["iw_log_likelihood"]) > np.mean(few["iw_log_likelihood"])
    # The ELBO's sample mean does not depend on K beyond noise.
    assert np.mean(many["elbo"]) == pytest.approx(np.mean(few["elbo"]), abs=0.3)
    # The exact log p(x) of this tiny model by quadrature over z: above the bounds, near the IW one.
    grid = np.linspace(-7, 7, 281)
    z = np.stack(np.meshgrid(grid, grid, indexing="ij"), -1).reshape(-1, 2).astype(np.float32)
    probabilities = np.asarray(networks["appearance_decoder"](z), np.float64).reshape(len(z), 4)
    prior = np.exp(-0.5 * np.sum(z.astype(np.float64) ** 2, axis=1)) / (2 * np.pi) * (grid[1] - grid[0]) ** 2
    exact = np.array(
        [
            np.log(
                np.sum(
                    prior * np.prod(np.where(x[b].reshape(4) > 0.5, probabilities, 1 - probabilities), axis=1)
                )
            )
            for b in range(len(x))
        ]
    )
    assert np.mean(exact) >= np.mean(many["iw_log_likelihood"]) - 1e-3
    assert np.mean(many["iw_log_likelihood"]) == pytest.approx(np.mean(exact), abs=0.05)


def test_log_mean_exp_and_knn_accuracy():
    values = np.array([[1000.0, 1000.0], [0.0, math.log(3.0)]])
    np.testing.assert_allclose(likelihood.log_mean_exp(values, axis=1), [1000.0, math.log(2.0)])
    reference = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [5.2]])
    labels = np.array([0, 0, 1, 1, 1, 0])
    queries, truth = np.array([[0.05], [5.05], [0.15]]), np.array([0, 1, 1])
    # k = 3: votes 0,0,1 -> 0 (right); 1,1,0 -> 1 (right); 0,1,0 -> 0 (wrong).
    assert likelihood.knn_accuracy(reference, labels, queries, truth, k=3) == pytest.approx(2 / 3)
    # k = 1: 0 (right), 1 (right), 0 or 1 at equal distance 0.05 -> either.
    assert likelihood.knn_accuracy(reference, labels, queries[:2], truth[:2], k=1) == 1.0


def test_only_vae_family_runs_on_class_labelled_images_are_measured():
    # Refused from the run's declarations alone, before any network or image is read.
    for data, method in (("shapes3d", "vae"), ("mnist", "abc")):  # no class labels; not a VAE variant
        run = TrainedRun(
            run_dir="unused",
            config=experiments.choose(get_preset("mnist"), data=data, method=method),
            encoder=None,
        )
        with pytest.raises(
            ValueError,
            match=f"take runs of the VAE model \\(vae, u_vitae, c_vitae: a VaeConfig\\) on a "
            f"family that declares class_labelled_images, not {method} on {data}",
        ):
            likelihood.evaluate_run(run)


@pytest.mark.slow
def test_a_short_run_s_measures(tmp_path, small_mnist):
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    config = get_preset("mnist_c_vitae_quick").replace(
        path=path, batch_size=16, steps=2, log_every=2, jit_compile=False
    )
    training.train(config, str(tmp_path / "run"), verbose=0)
    metrics = likelihood.evaluate_run(load_run(str(tmp_path / "run")), samples=4, seed=0)
    assert metrics["num_test_images"] == 40 and metrics["importance_samples"] == 4
    assert metrics["iw_log_likelihood"] >= metrics["elbo"] - 1.0
    assert metrics["elbo"] == pytest.approx(
        -(metrics["reconstruction"] + metrics["kl_appearance"] + metrics["kl_perspective"])
    )
    for space in ("code", "appearance", "perspective"):
        assert (
            0.0 <= metrics["knn_accuracy"][space]["all"] <= 1.0
            and "held_out_digit" in metrics["knn_accuracy"][space]
        )
    assert "Test ELBO" in likelihood.summary(metrics)
    assert metrics["headline"] == {
        "test ELBO": metrics["elbo"],
        "IWAE log p(x)": metrics["iw_log_likelihood"],
    }
    (tmp_path / "run" / "appearance_decoder.keras").unlink()
    with pytest.raises(ValueError, match="lacks appearance_decoder.keras"):
        likelihood.evaluate_run(load_run(str(tmp_path / "run")))

"""The measures of the VAE family on the MNIST test images (docs/PAPERS.md section P2).

The methods are ``--method=vae``, ``u_vitae`` and ``c_vitae``. Measures, all in nats per image:

- ELBO: log p(x | z) - KL(q_A || p) - KL(q_P || p), with the KL terms in closed form.
  The likelihood is averaged over K reparameterised samples. For C-VITAE the appearance KL is
  averaged too, because q_A depends on the sampled z_P.
- Importance-weighted log p(x) (Burda et al. 2016): log (1/K) sum_k p(x, z_k) / q(z_k | x) over the
  same K samples. It is a tighter bound: >= the ELBO on average, rising with K.
  Ours: the paper gives no K; we use :data:`SAMPLES` = 100.
- kNN digit accuracy from z_A, z_P and [z_A, z_P], the posterior means; see :func:`evaluate_run`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from abc_tf import data
from abc_tf.evaluation.progress import Progress
from abc_tf.methods.vae import Structure, VaeConfig
from abc_tf.methods.vae import losses as vitae_losses
from abc_tf.runs.run_dir import TrainedRun, embed

SAMPLES = 100
NEIGHBOURS = 5
REFERENCE_IMAGES = 10_000
ROWS_PER_PASS = 8192  # images x samples per forward pass


def networks_of(run: TrainedRun) -> dict:
    """The networks :func:`abc_tf.methods.vae.losses.infer` needs, loaded from the run directory."""
    names = ["appearance_posterior", "appearance_decoder"]
    if run.config.method.structure.perspective:
        names += ["perspective_posterior", "affine_decoder"]
    networks = {name: run.network(name) for name in names}
    missing = [name for name, network in networks.items() if network is None]
    if missing:
        raise ValueError(
            f"{run.run_dir} lacks {', '.join(f'{name}.keras' for name in missing)}: "
            f"not a finished {run.config.method.name} run."
        )
    return networks


def log_mean_exp(values: np.ndarray, axis: int = 0) -> np.ndarray:
    """log mean exp along ``axis``, without overflow."""
    top = np.max(values, axis=axis, keepdims=True)
    return np.squeeze(top, axis) + np.log(np.mean(np.exp(values - top), axis=axis))


def bounds(
    networks: dict,
    structure: Structure,
    images: np.ndarray,
    samples: int = SAMPLES,
    seed: int = 0,
    dims: tuple[int, int] | None = None,
) -> dict[str, np.ndarray]:
    """Per-image "elbo", "reconstruction", "kl_appearance", "kl_perspective" and "iw_log_likelihood".

    Each is float64 [N] in nats, from ``samples`` draws per image under the variant's ``structure``.
    ``images`` are [N, H, W, C], uint8 or float in [0, 1].
    ``dims`` is (d_A, d_P); by default it is read from the posteriors' output shapes.
    """
    if dims is None:
        dims = tuple(
            int(networks[name].output_shape[0][-1]) if name in networks else 0
            for name in ("appearance_posterior", "perspective_posterior")
        )
    per_pass = max(1, ROWS_PER_PASS // samples)
    results: dict[str, list[np.ndarray]] = {
        name: [] for name in ("reconstruction", "kl_appearance", "kl_perspective", "log_weights")
    }
    progress = Progress(
        f"ELBO and importance-weighted log p(x), {samples} samples each", len(images), "images"
    )
    for start in range(0, len(images), per_pass):
        progress.update(start)
        x = tf.convert_to_tensor(np.asarray(images[start : start + per_pass]))
        x = tf.cast(x, tf.float32) / 255.0 if x.dtype == tf.uint8 else tf.cast(x, tf.float32)
        count = int(x.shape[0])
        tiled = tf.repeat(x, samples, axis=0)  # image-major: rows i * K .. i * K + K - 1
        noise = vitae_losses.draw_noise(count * samples, dims, tf.constant([seed, start], tf.int64))
        inferred = vitae_losses.infer(networks, structure, tiled, noise)
        terms = vitae_losses.elbo_terms(tiled, inferred)
        for name in ("reconstruction", "kl_appearance", "kl_perspective"):
            results[name].append(np.asarray(terms[name], np.float64).reshape(count, samples))
        results["log_weights"].append(
            np.asarray(vitae_losses.log_weights(tiled, inferred), np.float64).reshape(count, samples)
        )
    progress.close()
    stacked = {name: np.concatenate(parts) for name, parts in results.items()}
    out = {name: stacked[name].mean(axis=1) for name in ("reconstruction", "kl_appearance", "kl_perspective")}
    out["elbo"] = -(out["reconstruction"] + out["kl_appearance"] + out["kl_perspective"])
    out["iw_log_likelihood"] = log_mean_exp(stacked["log_weights"], axis=1)
    return out


def knn_accuracy(
    reference: np.ndarray,
    reference_labels: np.ndarray,
    queries: np.ndarray,
    query_labels: np.ndarray,
    k: int = NEIGHBOURS,
) -> float:
    """Fraction of ``queries`` [Q, d] whose k nearest ``reference`` rows [R, d] vote their own label.

    Distances are Euclidean. Ties go to the smaller label.
    """
    reference, queries = np.asarray(reference, np.float64), np.asarray(queries, np.float64)
    norms = np.sum(reference**2, axis=1)
    correct = 0
    for start in range(0, len(queries), 1024):
        block = queries[start : start + 1024]
        distances = norms[None, :] - 2.0 * block @ reference.T  # + |q|^2, the same for every row
        nearest = np.argpartition(distances, k - 1, axis=1)[:, :k]
        votes = np.apply_along_axis(
            np.bincount, 1, reference_labels[nearest], minlength=int(reference_labels.max()) + 1
        )
        correct += int(np.sum(np.argmax(votes, axis=1) == query_labels[start : start + 1024]))
    return correct / len(queries)


def evaluate_run(
    run: TrainedRun, samples: int = SAMPLES, seed: int = 0, max_images: int = 0
) -> dict[str, Any]:
    """The module's measures for a finished VAE or VITAE run on class-labelled images such as MNIST.

    kNN accuracy: k = 5 Euclidean neighbours among 10,000 training images vote each test image's digit.
    Ours: the paper gives neither number. It is reported on all test images and on the held-out digit alone.
    The run never saw that digit; its labelled neighbours are only looked up here.
    ``max_images`` > 0 caps the test and reference images.
    Use it to check that a run evaluates, not for figures.
    """
    method = run.config.method
    class_labelled_images = data.get_family(run.config.data.family).class_labelled_images
    if not isinstance(method, VaeConfig) or class_labelled_images is None:
        raise ValueError(
            f"The likelihood measures take runs of the VAE model (vae, u_vitae, c_vitae: a VaeConfig) on a "
            f"family that declares class_labelled_images, not {method.name} on {run.config.data.family}."
        )
    digits = class_labelled_images(run.config)
    test_images, test_labels = digits.test_images, digits.test_labels
    if max_images:
        test_images, test_labels = test_images[:max_images], test_labels[:max_images]
    per_image = bounds(networks_of(run), method.structure, test_images, samples, seed)
    metrics: dict[str, Any] = {name: float(np.mean(values)) for name, values in per_image.items()}
    metrics.update(
        importance_samples=int(samples), num_test_images=int(len(test_labels)), units="nats per image"
    )

    rows = np.sort(
        np.random.default_rng(seed).permutation(len(digits.train_labels))[
            : min(REFERENCE_IMAGES, max_images or REFERENCE_IMAGES)
        ]
    )
    reference_images = digits.train_images[rows]
    reference_labels = digits.train_labels[rows]
    spaces = {"code": run.encoder}
    if method.structure.perspective:
        spaces.update(appearance=run.network("appearance"), perspective=run.network("perspective"))
    holdout = digits.held_out
    knn: dict[str, Any] = {"k": NEIGHBOURS, "reference_images": int(len(rows)), "chance": 0.1}
    for name, network in spaces.items():
        reference, queries = embed(network, reference_images), embed(network, test_images)
        knn[name] = {"all": knn_accuracy(reference, reference_labels, queries, test_labels)}
        if holdout is not None:
            unseen = test_labels == holdout
            knn[name]["held_out_digit"] = knn_accuracy(
                reference, reference_labels, queries[unseen], test_labels[unseen]
            )
    metrics["knn_accuracy"] = knn
    # What a side-by-side comparison shows (abc_tf.evaluation.comparison reads it from metrics.json).
    metrics["headline"] = {"test ELBO": metrics["elbo"], "IWAE log p(x)": metrics["iw_log_likelihood"]}
    return metrics


def summary(metrics: dict[str, Any]) -> str:
    """A few lines for the terminal."""
    lines = [
        f"Test ELBO {metrics['elbo']:.2f} nats (reconstruction {metrics['reconstruction']:.2f}, "
        f"KL appearance {metrics['kl_appearance']:.2f}, KL perspective {metrics['kl_perspective']:.2f}); "
        f"importance-weighted log p(x) {metrics['iw_log_likelihood']:.2f} "
        f"(K = {metrics['importance_samples']})"
    ]
    for name, values in metrics["knn_accuracy"].items():
        if isinstance(values, dict):
            held = f", held-out digit {values['held_out_digit']:.3f}" if "held_out_digit" in values else ""
            lines.append(
                f"kNN digit accuracy (k = {metrics['knn_accuracy']['k']}) "
                f"from {name}: {values['all']:.3f}{held}"
            )
    return "\n".join(lines)

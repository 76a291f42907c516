"""How well a representation or a generator's categorical code finds the digits.

Elastic-InfoGAN's measures (docs/PAPERS.md section P3; supplement Table 3, sections 3 and 4.1): NMI
and ENT of the generated images' code against the digit a cached classifier sees, and the supplement's
1-NN accuracy of Q's code; ours, 1-NN accuracy and 10-means NMI of any representation.
"""

from __future__ import annotations

import json
import os

import keras
import matplotlib
import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score

from abc_tf.config import ExperimentConfig
from abc_tf.data.mnist import sources as mnist_sources
from abc_tf.evaluation.estimators import plots
from abc_tf.runs.run_dir import TrainedRun, embed
from abc_tf.runs.training import build_model
from abc_tf.evaluation.tasks.mnist_classifier import (
    CLASSIFIER_EPOCHS,
    DEFAULT_CACHE,
    NUM_DIGITS,
    classify,
    digit_classifier,
    first_images,
)

FIGURE = "code_digit_matrix.png"
SAMPLES_FIGURE, PRIOR_FIGURE = "samples_per_code.png", "prior.png"
GRID_COLUMNS = 10  # noise vectors per code in the sample grid
QUERY_FRACTION = 0.2  # supplement L153-154: an 80/20 (train/test) split, the test images as queries
PAPER_RANDOM_INIT_NN = 0.4865  # supplement Table 3, MNIST, "Randomly initialized" (+- 0.009 over 50 splits)


# ---------------------------------------------------------------- the measures


def entropy(counts: np.ndarray) -> float:
    """Entropy in nats of the distribution of ``counts``: non-negative, not all zero."""
    p = np.asarray(counts, np.float64)
    p = p[p > 0] / p.sum()
    return float(-(p * np.log(p)).sum())


def ent(matrix: np.ndarray) -> float:
    """ENT of a code x digit count matrix: the mean entropy of its rows and columns.

    Each row and column is normalised to a distribution; entropies are in nats. ENT is 0 when each
    code makes one digit and each digit comes from one code. It is NaN when a row or column is empty,
    as scipy's entropy gives in the authors' code.
    """
    matrix = np.asarray(matrix, np.float64)
    lines = list(matrix) + list(matrix.T)
    return float(np.mean([entropy(line) if line.sum() > 0 else np.nan for line in lines]))


def matrix_nmi(matrix: np.ndarray) -> float:
    """NMI of the (code, digit) pairs a count matrix holds.

    Uses sklearn with geometric normalisation: mutual information over the root of the two entropies.
    That is the default of sklearn 0.20, the authors' version. Later versions default to the arithmetic mean.
    """
    matrix = np.asarray(matrix, np.int64)
    codes, digits = np.nonzero(matrix)
    counts = matrix[codes, digits]
    return float(
        normalized_mutual_info_score(
            np.repeat(digits, counts), np.repeat(codes, counts), average_method="geometric"
        )
    )


def count_matrix(codes: np.ndarray, digits: np.ndarray, size: int = NUM_DIGITS) -> np.ndarray:
    """int64 [size, size]: entry (k, d) counts the items of code k classified as digit d."""
    matrix = np.zeros((size, size), np.int64)
    np.add.at(matrix, (np.asarray(codes, np.int64), np.asarray(digits, np.int64)), 1)
    return matrix


def nearest_neighbour_accuracy(
    features: np.ndarray, labels: np.ndarray, seed: int = 0, query_fraction: float = 0.2
) -> float:
    """Euclidean 1-NN accuracy of a random ``query_fraction`` of the items against the rest."""
    features, labels = np.asarray(features, np.float64), np.asarray(labels)
    order = np.random.default_rng(seed).permutation(len(labels))
    split = int(round(len(labels) * query_fraction))
    queries, references = order[:split], order[split:]
    reference_norms = (features[references] ** 2).sum(axis=1)
    correct = 0
    for start in range(0, len(queries), 512):  # tiles keep the distance matrix small
        chunk = queries[start : start + 512]
        distances = reference_norms[None, :] - 2.0 * features[chunk] @ features[references].T
        correct += int((labels[references][np.argmin(distances, axis=1)] == labels[chunk]).sum())
    return correct / len(queries)


def split_nearest_neighbour(network, config: ExperimentConfig, seed: int = 0, max_images: int = 0) -> float:
    """The supplement's 1-NN accuracy of ``network`` on the training images of ``config``.

    Source: supplement L149-157, Table 3. ``network`` maps images to features, e.g. the run's "q".
    The images are the run's class split's, at most ``max_images``; 0 means all. They are split 80/20
    at random. Each of the 20% is classified by its Euclidean nearest neighbour among the 80%.

    Ours: the text names no layer, so we use Q's logits of the categorical code, where an untrained
    network scores near the paper's 0.4865 for random weights (its penultimate features give 0.93).
    """
    data = first_images(mnist_sources.load_mnist(config), max_images)
    features = embed(network, data.x_train[..., None])
    return nearest_neighbour_accuracy(features, data.y_train, seed, QUERY_FRACTION)


def kmeans_nmi(features: np.ndarray, labels: np.ndarray, seed: int = 0, clusters: int = NUM_DIGITS) -> float:
    """NMI between a k-means clustering of ``features`` into ``clusters`` groups and ``labels``."""
    assignment = KMeans(n_clusters=clusters, n_init=4, random_state=seed).fit_predict(
        np.asarray(features, np.float64)
    )
    return float(normalized_mutual_info_score(labels, assignment))


# ---------------------------------------------------------------- the digit classifier


def generated_codes_and_digits(
    generator: keras.Model, classifier: keras.Model, per_code: int, seed: int = 0, num_codes: int = NUM_DIGITS
) -> tuple[np.ndarray, np.ndarray]:
    """(codes, digits) int64 [num_codes * per_code]: ``per_code`` generated images of each one-hot code,
    z ~ N(0, I), and the digit the classifier sees in each."""
    noise_dim = int(generator.input_shape[-1]) - num_codes
    rng = np.random.default_rng(seed)
    codes = np.repeat(np.arange(num_codes), per_code)
    inputs = np.concatenate(
        [rng.standard_normal((len(codes), noise_dim)), np.eye(num_codes)[codes]], axis=1
    ).astype(np.float32)
    images = np.concatenate(
        [np.asarray(generator(inputs[i : i + 1024], training=False)) for i in range(0, len(inputs), 1024)]
    )
    return codes, classify(classifier, images)


def plot_matrix(matrix: np.ndarray, path: str, title: str) -> None:
    """Draws the code x digit matrix as a heat map, rows normalised, counts written in."""
    matrix = np.asarray(matrix)
    figure = plots.new_figure(5.5, 5.0)
    axes = figure.add_subplot(1, 1, 1)
    shares = matrix / np.maximum(matrix.sum(axis=1, keepdims=True), 1)
    image = axes.imshow(shares, cmap="viridis", vmin=0.0, vmax=1.0)
    for (row, col), count in np.ndenumerate(matrix):
        if count:
            axes.text(
                col,
                row,
                str(count),
                ha="center",
                va="center",
                fontsize=6,
                color="black" if shares[row, col] > 0.5 else "white",
            )
    axes.set_xlabel("digit (classifier)")
    axes.set_ylabel("categorical code")
    axes.set_xticks(range(matrix.shape[1]))
    axes.set_yticks(range(matrix.shape[0]))
    figure.colorbar(image, ax=axes, label="share of the code's images")
    plots.finish_figure(figure, path, title)


def code_grid(
    generator: keras.Model, columns: int = GRID_COLUMNS, seed: int = 0, num_codes: int = NUM_DIGITS
) -> np.ndarray:
    """float [num_codes * 28, columns * 28] in [0, 1]: row k shows one-hot code k.

    Each of the ``columns`` noise vectors z ~ N(0, I) is the same in every row.
    """
    noise_dim = int(generator.input_shape[-1]) - num_codes
    z = np.random.default_rng(seed).standard_normal((columns, noise_dim))
    inputs = np.concatenate(
        [np.tile(z, (num_codes, 1)), np.repeat(np.eye(num_codes), columns, axis=0)], axis=1
    )
    images = np.clip(np.asarray(generator(inputs.astype(np.float32), training=False))[..., 0], 0.0, 1.0)
    return (
        images.reshape(num_codes, columns, 28, 28).transpose(0, 2, 1, 3).reshape(num_codes * 28, columns * 28)
    )


def plot_code_grid(grid: np.ndarray, path: str, title: str, num_codes: int = NUM_DIGITS) -> None:
    """Draws the sample grid with each row labelled by its code."""
    figure = plots.new_figure(6.0, 6.4)
    axes = figure.add_subplot(1, 1, 1)
    axes.imshow(grid, cmap="gray", vmin=0.0, vmax=1.0)
    rows = grid.shape[0] // num_codes
    axes.set_yticks([rows * k + rows / 2 for k in range(num_codes)], [f"code {k}" for k in range(num_codes)])
    axes.set_xticks([])
    plots.finish_figure(figure, path, title)


def plot_prior(prior: dict, path: str, title: str) -> None:
    """Draws prior.json: the sorted learned class probabilities beside the sorted true digit proportions.

    Both are sorted because codes and digits correspond in no known order.
    Where the run logged it, a second panel shows each sorted probability over the training steps.
    """
    learned = np.sort(prior["prior"])[::-1]
    true = None if prior.get("true_proportions") is None else np.sort(prior["true_proportions"])[::-1]
    history = prior.get("history", [])
    figure = plots.new_figure(10.0 if history else 5.5, 3.8)
    axes = figure.add_subplot(1, 2 if history else 1, 1)
    ranks = np.arange(len(learned))
    axes.bar(ranks - 0.2, learned, width=0.4, label=f"learned (step {prior['step']})")
    if true is not None:
        axes.bar(ranks + 0.2, true, width=0.4, label="true (training split)")
    axes.set_xlabel("rank")
    axes.set_ylabel("class probability")
    axes.set_xticks(ranks)
    axes.legend(fontsize=8)
    if history:
        trend = figure.add_subplot(1, 2, 2)
        steps = [entry["step"] for entry in history]
        sorted_history = np.sort(np.array([entry["prior"] for entry in history]), axis=1)[:, ::-1]
        colours = matplotlib.colormaps["viridis"](np.linspace(0.0, 0.9, len(learned)))
        for rank in range(len(learned)):
            trend.plot(steps, sorted_history[:, rank], color=colours[rank], linewidth=1.2)
            if true is not None:
                trend.axhline(true[rank], color=colours[rank], linestyle=":", linewidth=0.8)
        trend.set_xlabel("training step")
        trend.set_ylabel("learned probability, by rank (dotted: true)")
    plots.finish_figure(figure, path, title)


# ---------------------------------------------------------------- one run


def representation_scores(encoder, config: ExperimentConfig, seed: int = 0, max_images: int = 0) -> dict:
    """1-NN accuracy and k-means NMI of ``encoder``'s embeddings of at most ``max_images`` (0: all)
    real MNIST test images."""
    data = first_images(mnist_sources.load_mnist(config), max_images)
    features = embed(encoder, data.x_test[..., None])
    return {
        "nearest_neighbour_accuracy": nearest_neighbour_accuracy(features, data.y_test, seed),
        "kmeans_nmi": kmeans_nmi(features, data.y_test, seed),
        "num_images": int(len(data.y_test)),
    }


def evaluate_run(
    run: TrainedRun,
    out_dir: str,
    per_code: int = 1000,
    seed: int = 0,
    cache_dir: str = DEFAULT_CACHE,
    max_images: int = 0,
) -> dict:
    """Every measure of an MNIST run whose generator has a categorical code.

    The networks are "generator" and optionally "q".
    Returns metrics.json's "method" entry and draws the figures.
    ``max_images`` > 0 caps each set read or generated. Use it to check that a run evaluates, not for figures.
    """
    config = run.config
    if max_images:
        per_code = min(per_code, max(1, max_images // NUM_DIGITS))
    classifier, accuracy, path = digit_classifier(config, cache_dir, max_images)
    result = {"classifier": {"test_accuracy": accuracy, "file": path, "epochs": CLASSIFIER_EPOCHS}}
    generator = run.network("generator")
    if generator is not None:
        codes, digits = generated_codes_and_digits(generator, classifier, per_code, seed)
        matrix = count_matrix(codes, digits)
        result["generated"] = {
            "nmi": matrix_nmi(matrix),
            "ent": ent(matrix),
            "per_code": per_code,
            "code_digit_matrix": matrix.tolist(),
            "digits_never_made": np.flatnonzero(matrix.sum(axis=0) == 0).tolist(),
        }
        plot_matrix(
            matrix,
            os.path.join(out_dir, FIGURE),
            f"code x digit: NMI {result['generated']['nmi']:.3f}, ENT {result['generated']['ent']:.3f}",
        )
        plot_code_grid(
            code_grid(generator, seed=seed),
            os.path.join(out_dir, SAMPLES_FIGURE),
            f"{config.method.name}: samples per categorical code (columns: noise vectors)",
        )
        result["figures"] = [FIGURE, SAMPLES_FIGURE]
    result["representation"] = representation_scores(run.encoder, config, seed, max_images)
    q = run.network("q")
    if q is not None:  # Q's own code of real test images, against their digits
        data = first_images(mnist_sources.load_mnist(config), max_images)
        result["q_code_nmi"] = float(
            normalized_mutual_info_score(data.y_test, classify(q, data.x_test[..., None]))
        )
        result["nearest_neighbour"] = {
            "accuracy": split_nearest_neighbour(q, config, seed, max_images),
            "untrained": split_nearest_neighbour(
                build_model(config).networks()["q"], config, seed, max_images
            ),
            "paper_random_init": PAPER_RANDOM_INIT_NN,
            "images": int(len(data.y_train)),
        }
    for name in ("prior.json", "class_split.json", "training_warnings.json"):
        file = os.path.join(run.run_dir, name)
        if os.path.isfile(file):
            with open(file) as handle:
                result[name[: -len(".json")]] = json.load(handle)
    if result.get("prior") and run.step is not None:  # a checkpoint (learning curves): the prior of its step
        history = [entry for entry in result["prior"]["history"] if entry["step"] <= run.step]
        at_step = [entry["prior"] for entry in history if entry["step"] == run.step]
        # A step the callback did not log (none: checkpoints fall on log steps) leaves no prior to report.
        result["prior"] = (
            {**result["prior"], "step": run.step, "history": history, "prior": at_step[0]}
            if at_step
            else None
        )
    if result.get("prior"):
        plot_prior(
            result["prior"], os.path.join(out_dir, PRIOR_FIGURE), f"{config.method.name}: the class prior"
        )
        result.setdefault("figures", []).append(PRIOR_FIGURE)
    result["headline"] = headline(result)
    return result


def headline(result: dict) -> dict[str, float]:
    """The few measures of :func:`evaluate_run` that a side-by-side comparison shows.

    ``abc_tf.evaluation.comparison`` reads them from metrics.json.
    """
    measures = {}
    if "generated" in result:
        measures.update(
            {"NMI (code vs digit)": result["generated"]["nmi"], "ENT": result["generated"]["ent"]}
        )
    if "q_code_nmi" in result:
        measures["Q's code NMI"] = result["q_code_nmi"]
    if "nearest_neighbour" in result:
        measures["1-NN (Q, split's images)"] = result["nearest_neighbour"]["accuracy"]
    prior = result.get("prior")
    if prior:
        measures["largest prior"] = float(max(prior["prior"]))
        if prior.get("true_proportions"):
            learned, true = np.sort(prior["prior"]), np.sort(prior["true_proportions"])
            measures["prior L1 to truth"] = float(np.abs(learned - true).sum())
    return measures


def summary(result: dict) -> str:
    """The measures of :func:`evaluate_run` in a few lines, for the console."""
    lines = [f"  digit classifier: test accuracy {result['classifier']['test_accuracy']:.4f}"]
    if "generated" in result:
        generated = result["generated"]
        lines.append(
            f"  generated images ({generated['per_code']} per code): "
            f"NMI {generated['nmi']:.4f}, ENT {generated['ent']:.4f}"
        )
    representation = result["representation"]
    lines.append(
        f"  encoder on {representation['num_images']} real test images: 1-NN accuracy "
        f"{representation['nearest_neighbour_accuracy']:.4f}, k-means NMI {representation['kmeans_nmi']:.4f}"
    )
    if "q_code_nmi" in result:
        lines.append(f"  Q's code of real test images: NMI {result['q_code_nmi']:.4f}")
    if "nearest_neighbour" in result:
        found = result["nearest_neighbour"]
        lines.append(
            f"  1-NN of Q's code on the split's {found['images']} images (80/20): {found['accuracy']:.4f} "
            f"(untrained {found['untrained']:.4f}; the paper's random init {found['paper_random_init']})"
        )
    if "prior" in result:
        prior = result["prior"]
        lines.append("  learned prior: " + ", ".join(f"{p:.3f}" for p in prior["prior"]))
        if prior.get("true_proportions"):
            lines.append("  true proportions: " + ", ".join(f"{p:.3f}" for p in prior["true_proportions"]))
    for warning in result.get("training_warnings", []):
        lines.append(f"  training warning at step {warning['step']}: {warning['problem']}")
    return "\n".join(lines)

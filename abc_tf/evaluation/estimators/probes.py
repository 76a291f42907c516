"""Factor probes: how well a small classifier reads each generative factor off the embeddings.

Supplement S1 (Fig. S2) and ICLR appendix B: one classifier ``models.build("probe")``
(3 x Dense32 ReLU, softmax) per factor, trained on the embeddings plus Gaussian noise with
sigma = the loss's length scale (sqrt(tau) for l2sq), scored by test accuracy against chance
(1 / number of values). As in the ICLR text the noise is added while training and the test set
is classified without it (``noisy_test=True`` adds it at test time as well).

All probes are trained together, each by its own Adam on the sum of their cross-entropies: they
share only the (noisy) input, so each is trained exactly as if alone. Every epoch and batch runs
in one compiled call (:func:`train_probes`): Keras's ``fit`` spent some 40 ms of its own per epoch,
more than the 10-30 one-batch epochs of a small sample's probes compute.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import keras
import numpy as np
import tensorflow as tf

import models
from abc_tf import optimizers
from abc_tf.evaluation.estimators.noise import float32_policy


@dataclasses.dataclass(frozen=True)
class ProbeSettings:
    """Training of the probes. Units: epochs are passes over the training split."""

    epochs: int = 30
    batch_size: int = 256
    learning_rate: float = 1e-3
    test_fraction: float = 0.2
    noisy_test: bool = False

    def validate(self) -> None:
        if self.epochs <= 0 or self.batch_size <= 0:
            raise ValueError(f"Probe epochs and batch_size must be positive, got {self.epochs}, {self.batch_size}.")
        if not 0 < self.test_fraction < 1:
            raise ValueError(f"Probe test_fraction must lie in (0, 1), got {self.test_fraction}.")
        if not self.learning_rate > 0:
            raise ValueError(f"Probe learning_rate must be positive, got {self.learning_rate}.")


@dataclasses.dataclass
class ProbeResult:
    """accuracy [F]: test accuracy per factor; chance [F]: 1 / number of values; names [F]."""

    accuracy: np.ndarray
    chance: np.ndarray
    names: list[str]

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {
            name: {"accuracy": float(a), "chance": float(c)} for name, a, c in zip(self.names, self.accuracy, self.chance)
        }


def encode_classes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Factor values [N] (any numbers) -> class indices [N] in 0..K-1 and K."""
    uniques, classes = np.unique(np.asarray(values), return_inverse=True)
    return classes.ravel().astype(np.int32), len(uniques)


def probe_accuracies(
    embeddings: np.ndarray,
    factors: np.ndarray,
    sigma: float,
    names: Sequence[str] | None = None,
    num_classes: Sequence[int] | None = None,
    settings: ProbeSettings = ProbeSettings(),
    seed: int = 0,
) -> ProbeResult:
    """Trains one probe per factor on embeddings + N(0, sigma^2) noise; returns test accuracies.

    Args:
      embeddings: [N, D] float.
      factors: [N, F] discrete factor values (class indices or label values).
      sigma: noise scale in embedding units (the loss's length scale; 0 for none).
      names: F factor names (default factor_0...).
      num_classes: number of values of each factor, for the chance level (default: the number
        of distinct values seen). Class indices must then lie in 0..K-1.
      settings: training settings; seed: seeds the split, the weights and the noise.
    """
    settings.validate()
    embeddings = np.asarray(embeddings, dtype=np.float32)
    factors = np.asarray(factors)
    if factors.ndim == 1:
        factors = factors[:, None]
    if embeddings.ndim != 2 or factors.ndim != 2 or embeddings.shape[0] != factors.shape[0]:
        raise ValueError(
            f"Probes need embeddings [N, D] and factors [N, F] with the same N, got {embeddings.shape}, {factors.shape}."
        )
    if sigma < 0:
        raise ValueError(f"Probe noise sigma must be >= 0, got {sigma}.")
    num_factors = factors.shape[1]
    names = list(names) if names is not None else [f"factor_{i}" for i in range(num_factors)]
    if len(names) != num_factors:
        raise ValueError(f"Got {len(names)} factor names for {num_factors} factors.")
    if num_classes is None:
        encoded = [encode_classes(factors[:, i]) for i in range(num_factors)]
        labels = np.stack([classes for classes, _ in encoded], axis=1)
        num_classes = [k for _, k in encoded]
    else:
        num_classes = [int(k) for k in num_classes]
        if len(num_classes) != num_factors:
            raise ValueError(f"Got {len(num_classes)} class counts for {num_factors} factors.")
        labels = factors.astype(np.int32)
        if labels.min() < 0 or np.any(labels.max(axis=0) >= np.asarray(num_classes)):
            raise ValueError(f"Factor classes must lie in 0..K-1 for K = {num_classes}.")
    num_points = embeddings.shape[0]
    num_test = int(round(settings.test_fraction * num_points))
    if num_test < 1 or num_points - num_test < 1:
        raise ValueError(f"Too few points ({num_points}) to split into probe train and test sets.")

    rng = np.random.default_rng(seed)
    order = rng.permutation(num_points)
    test, train = order[:num_test], order[num_test:]
    keras.utils.set_random_seed(seed)
    with float32_policy():  # not the bfloat16 policy a mixed-precision encoder may have set
        networks = [models.build("probe", embedding_dim=embeddings.shape[1], num_classes=max(classes, 2))
                    for classes in num_classes]
    train_probes(networks, embeddings[train], labels[train], sigma, settings, seed)
    test_inputs = embeddings[test]
    if settings.noisy_test and sigma > 0:
        test_inputs = test_inputs + rng.normal(scale=sigma, size=test_inputs.shape).astype(np.float32)
    accuracy = np.array([np.mean(np.argmax(network(test_inputs).numpy(), axis=-1) == labels[test, index])
                         for index, network in enumerate(networks)])
    chance = 1.0 / np.asarray(num_classes, dtype=np.float64)
    return ProbeResult(accuracy=accuracy, chance=chance, names=names)


def train_probes(networks: Sequence[keras.Model], embeddings: np.ndarray, labels: np.ndarray, sigma: float,
                 settings: ProbeSettings, seed: int) -> None:
    """``settings.epochs`` passes over (embeddings [N, D], labels [N, F]) in batches of
    ``settings.batch_size`` (a fresh order each epoch, the last batch smaller), network f learning
    column f from the embeddings plus fresh N(0, sigma^2) noise per batch, by Adam on the mean
    sparse cross-entropy; all of it in one compiled call."""
    variables = [variable for network in networks for variable in network.trainable_variables]
    optimizer = optimizers.adam(settings.learning_rate)
    optimizer.build(variables)
    points = tf.constant(embeddings, tf.float32)
    targets = tf.constant(labels, tf.int32)
    size = len(embeddings)

    @tf.function
    def run() -> None:
        # int64 counters: the noise seeds count epochs x points, which may pass 2^31 on large samples.
        for epoch in tf.range(settings.epochs, dtype=tf.int64):
            # Even seeds order the epochs, odd ones draw the noise: no two draws share a seed.
            order = tf.argsort(tf.random.stateless_uniform([size], tf.stack([tf.constant(seed, tf.int64), 2 * epoch])))
            for start in tf.range(0, size, settings.batch_size, dtype=tf.int64):
                rows = order[start : start + settings.batch_size]
                batch = tf.gather(points, rows)
                if sigma > 0:
                    noise_seed = tf.stack([tf.constant(seed, tf.int64), 2 * (epoch * size + start) + 1])
                    batch += sigma * tf.random.stateless_normal(tf.shape(batch), noise_seed)
                batch_targets = tf.gather(targets, rows)
                with tf.GradientTape() as tape:
                    loss = tf.add_n([tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
                        batch_targets[:, index], network(batch, training=True))) for index, network in enumerate(networks)])
                optimizer.apply(tape.gradient(loss, variables), variables)

    run()

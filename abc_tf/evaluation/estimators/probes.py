"""Factor probes: how well a small classifier reads each generative factor off the embeddings.

Source: supplement S1 (Fig. S2) and ICLR appendix B. One classifier ``models.build("probe")``
(3 x Dense32 ReLU, softmax) per factor trains on the embeddings plus Gaussian noise. Sigma is the
loss's length scale, e.g. sqrt(tau) for l2sq. The score is test accuracy against chance, 1 / number of values.
As in the ICLR text, noise is added in training only; ``noisy_test=True`` adds it at test time too.

All probes train together in compiled calls of several epochs, each by its own Adam; they share only
the noisy input, so each trains exactly as if alone. Keras's ``fit`` spends more per epoch than a small
sample's probes compute, and the call is traced once per shape and reused, since tracing costs more.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from typing import Sequence

import keras
import numpy as np
import tensorflow as tf

import models
from abc_tf import optimizers
from abc_tf.evaluation.estimators.noise import float32_policy
from abc_tf.evaluation.progress import Progress

# Epochs per compiled call: progress is reported between calls. 5 epochs of 4,096 points of 6
# factors take some 0.5 s on 2 busy CPU cores, a call of no epoch 7 ms.
EPOCHS_PER_CALL = 5


@dataclasses.dataclass(frozen=True)
class ProbeSettings:
    """Training of the probes. Epochs are passes over the training split."""

    epochs: int = 30
    batch_size: int = 256
    learning_rate: float = 1e-3
    test_fraction: float = 0.2
    noisy_test: bool = False

    def validate(self) -> None:
        if self.epochs <= 0 or self.batch_size <= 0:
            raise ValueError(
                f"Probe epochs and batch_size must be positive, got {self.epochs}, {self.batch_size}."
            )
        if not 0 < self.test_fraction < 1:
            raise ValueError(f"Probe test_fraction must lie in (0, 1), got {self.test_fraction}.")
        if not self.learning_rate > 0:
            raise ValueError(f"Probe learning_rate must be positive, got {self.learning_rate}.")


@dataclasses.dataclass
class ProbeResult:
    """accuracy [F]: test accuracy per factor. chance [F]: 1 / number of values. names [F]."""

    accuracy: np.ndarray
    chance: np.ndarray
    names: list[str]

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {
            name: {"accuracy": float(a), "chance": float(c)}
            for name, a, c in zip(self.names, self.accuracy, self.chance)
        }


def encode_classes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Factor values [N], any numbers, -> class indices [N] in 0..K-1, and K."""
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

    ``factors`` [N, F] are discrete values; ``num_classes`` (default: the distinct values seen) sets the
    chance level, class indices then in 0..K-1. ``seed`` seeds the split, the weights and the noise.
    """
    settings.validate()
    embeddings = np.asarray(embeddings, dtype=np.float32)
    factors = np.asarray(factors)
    if factors.ndim == 1:
        factors = factors[:, None]
    if embeddings.ndim != 2 or factors.ndim != 2 or embeddings.shape[0] != factors.shape[0]:
        raise ValueError(
            "Probes need embeddings [N, D] and factors [N, F] with the same N, "
            f"got {embeddings.shape}, {factors.shape}."
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
    # Initial weights: Keras draws an unseeded initializer's seed from Python's random
    # (keras.random.make_default_seed). We avoid keras.utils.set_random_seed: it sets TensorFlow's
    # global seed, which clears function caches. Re-instantiating the compiled loop and a training
    # run's step then costs ~1 s per measurement.
    random.seed(seed)
    initial = build_probes(embeddings.shape[1], num_classes)  # before the trainer's first build draws
    trainer = probe_trainer(embeddings.shape[1], tuple(num_classes))
    networks = trainer.train(initial, embeddings[train], labels[train], sigma, settings, seed)
    test_inputs = embeddings[test]
    if settings.noisy_test and sigma > 0:
        test_inputs = test_inputs + rng.normal(scale=sigma, size=test_inputs.shape).astype(np.float32)
    accuracy = np.array(
        [
            np.mean(np.argmax(network(test_inputs).numpy(), axis=-1) == labels[test, index])
            for index, network in enumerate(networks)
        ]
    )
    chance = 1.0 / np.asarray(num_classes, dtype=np.float64)
    return ProbeResult(accuracy=accuracy, chance=chance, names=names)


def build_probes(embedding_dim: int, num_classes: Sequence[int]) -> list[keras.Model]:
    """One probe per factor (``models.build("probe")``, at least two classes), in float32.

    Float32 holds whatever the global policy, e.g. the bfloat16 one a mixed-precision encoder may set.
    """
    with float32_policy():
        return [
            models.build("probe", embedding_dim=embedding_dim, num_classes=max(classes, 2))
            for classes in num_classes
        ]


class ProbeTrainer:
    """Probes for embeddings of width D and the given class counts, their Adam, and their compiled loop.

    The loop is traced once; each :meth:`train` starts from the weights it is given and zeroed optimizer
    state, so it trains as a freshly built set would. One call at a time: the variables are shared.
    """

    def __init__(self, embedding_dim: int, num_classes: tuple[int, ...]):
        self.networks = build_probes(embedding_dim, num_classes)
        self.variables = [variable for network in self.networks for variable in network.trainable_variables]
        self.optimizer = optimizers.adam(ProbeSettings.learning_rate)
        self.optimizer.build(self.variables)
        scalar = tf.TensorSpec([], tf.int64)
        self._run = tf.function(
            self._train_epochs,
            input_signature=[
                tf.TensorSpec([None, embedding_dim], tf.float32),
                tf.TensorSpec([None, len(num_classes)], tf.int32),
                tf.TensorSpec([], tf.float32),
                scalar,
                scalar,
                scalar,
                scalar,
            ],
        )

    def train(
        self,
        initial: Sequence[keras.Model],
        embeddings: np.ndarray,
        labels: np.ndarray,
        sigma: float,
        settings: ProbeSettings,
        seed: int,
    ) -> list[keras.Model]:
        """Trains from the weights of ``initial`` and returns the trained probes.

        Probe f learns column f of ``labels`` from the embeddings plus fresh N(0, sigma^2) noise per batch.
        """
        for network, start in zip(self.networks, initial, strict=True):
            network.set_weights(start.get_weights())
        for variable in self.optimizer.variables:
            variable.assign(tf.zeros_like(variable))
        # The learning rate is one of the optimizer's variables too; zeroing took it away.
        self.optimizer.learning_rate = settings.learning_rate
        inputs = (
            tf.constant(embeddings, tf.float32),
            tf.constant(labels, tf.int32),
            tf.constant(sigma, tf.float32),
        )
        with Progress(f"probes ({labels.shape[1]} factors)", settings.epochs, "epochs") as progress:
            for first in range(0, settings.epochs, EPOCHS_PER_CALL):
                epochs = min(EPOCHS_PER_CALL, settings.epochs - first)
                self._run(
                    *inputs,
                    tf.constant(first, tf.int64),
                    tf.constant(epochs, tf.int64),
                    tf.constant(settings.batch_size, tf.int64),
                    tf.constant(seed, tf.int64),
                )
                progress.update(first + epochs)
        return self.networks

    def _train_epochs(
        self,
        points: tf.Tensor,
        targets: tf.Tensor,
        sigma: tf.Tensor,
        first: tf.Tensor,
        epochs: tf.Tensor,
        batch_size: tf.Tensor,
        seed: tf.Tensor,
    ) -> None:
        """Epochs ``first`` .. ``first + epochs - 1``; each one's order and noise hang on its number only."""
        size = tf.shape(points, out_type=tf.int64)[0]
        # int64 counters: the noise seeds count epochs x points, which may pass 2^31 on large samples.
        for epoch in tf.range(first, first + epochs):
            # Even seeds order the epochs, odd ones draw the noise: no two draws share a seed.
            order = tf.argsort(tf.random.stateless_uniform([size], tf.stack([seed, 2 * epoch])))
            for start in tf.range(0, size, batch_size):
                rows = order[start : start + batch_size]
                batch = tf.gather(points, rows)
                # With sigma = 0 the noise adds exact zeros.
                batch += sigma * tf.random.stateless_normal(
                    tf.shape(batch), tf.stack([seed, 2 * (epoch * size + start) + 1])
                )
                batch_targets = tf.gather(targets, rows)
                with tf.GradientTape() as tape:
                    loss = tf.add_n(
                        [
                            tf.reduce_mean(
                                keras.losses.sparse_categorical_crossentropy(
                                    batch_targets[:, index], network(batch, training=True)
                                )
                            )
                            for index, network in enumerate(self.networks)
                        ]
                    )
                self.optimizer.apply(tape.gradient(loss, self.variables), self.variables)


@functools.lru_cache(maxsize=8)
def probe_trainer(embedding_dim: int, num_classes: tuple[int, ...]) -> ProbeTrainer:
    """This process's trainer for probes of this shape, built and traced on first use."""
    return ProbeTrainer(embedding_dim, num_classes)

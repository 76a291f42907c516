"""Factor probes: how well a small classifier reads each generative factor off the embeddings.

Supplement S1 (Fig. S2) and ICLR appendix B: one classifier ``models.build("probe")``
(3 x Dense32 ReLU, softmax) per factor, trained on the embeddings plus Gaussian noise with
sigma = the loss's length scale (sqrt(tau) for l2sq), scored by test accuracy against chance
(1 / number of values). As in the ICLR text the noise is added while training and the test set
is classified without it (``noisy_test=True`` adds it at test time as well).

All probes are branches of one Keras model fitted with one compiled ``fit``: they share only
the (noisy) input, so each is trained exactly as if alone, while the whole set costs a single
compiled training loop.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import keras
import numpy as np

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


class TrainingNoise(keras.layers.Layer):
    """Adds N(0, sigma^2) noise in training only (keras' GaussianNoise caps sigma at 1)."""

    def __init__(self, sigma: float, seed: int | None = None, **kwargs):
        super().__init__(**kwargs)
        self.sigma = float(sigma)
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, inputs, training=False):
        if not training or self.sigma == 0:
            return inputs
        return inputs + self.sigma * keras.random.normal(keras.ops.shape(inputs), seed=self.seed_generator)

    def get_config(self) -> dict:
        return {**super().get_config(), "sigma": self.sigma}


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
    keys = [f"probe_{i}" for i in range(num_factors)]
    with float32_policy():  # not the bfloat16 policy a mixed-precision encoder may have set
        inputs = keras.Input(shape=(embeddings.shape[1],), name="embedding")
        noisy = TrainingNoise(float(sigma), seed=seed, name="noise")(inputs) if sigma > 0 else inputs
        outputs = {}
        for key, classes in zip(keys, num_classes):
            probe = models.build("probe", embedding_dim=embeddings.shape[1], num_classes=max(classes, 2))
            probe.name = key
            outputs[key] = probe(noisy)
        model = keras.Model(inputs, outputs, name="factor_probes")
        model.compile(
            optimizer=optimizers.adam(settings.learning_rate),
            loss={key: "sparse_categorical_crossentropy" for key in keys},
            metrics={key: ["sparse_categorical_accuracy"] for key in keys},
        )
    targets = {key: labels[:, i] for i, key in enumerate(keys)}
    model.fit(
        embeddings[train],
        {key: value[train] for key, value in targets.items()},
        batch_size=settings.batch_size,
        epochs=settings.epochs,
        verbose=0,
        shuffle=True,
    )
    test_inputs = embeddings[test]
    if settings.noisy_test and sigma > 0:
        test_inputs = test_inputs + rng.normal(scale=sigma, size=test_inputs.shape).astype(np.float32)
    predictions = model.predict(test_inputs, batch_size=4096, verbose=0)
    accuracy = np.array([np.mean(np.argmax(predictions[key], axis=-1) == targets[key][test]) for key in keys])
    chance = 1.0 / np.asarray(num_classes, dtype=np.float64)
    return ProbeResult(accuracy=accuracy, chance=chance, names=names)

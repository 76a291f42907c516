"""Sources of known structure, shared by the tests of the disentanglement scores
(tests/test_disentanglement*.py)."""

from __future__ import annotations

import dataclasses

import numpy as np

from abc_tf.evaluation.estimators.disentanglement import ScoreSettings

SIZES = (4, 5, 3)
NAMES = ("colour", "size", "shape")
SMALL = ScoreSettings(
    beta_vae_num_train=300,
    beta_vae_num_eval=200,
    factor_vae_num_train=300,
    factor_vae_num_eval=200,
    factor_vae_num_variance_estimate=600,
    num_train=600,
    num_test=300,
    dci_num_train=600,
    n_jobs=1,
)


@dataclasses.dataclass
class NoisyLinear:
    """Codes = ((factors + noise * N(0, 1)) @ mixing) * scale + shift; counts the codes drawn."""

    mixing: np.ndarray
    scale: np.ndarray | float = 1.0
    shift: np.ndarray | float = 0.0
    noise: float = 0.01
    sizes: tuple[int, ...] = SIZES
    factor_names: tuple[str, ...] = NAMES
    drawn: int = 0
    largest_call: int = 0

    def sample_factors(self, n, rng):
        return np.stack([rng.integers(0, s, n) for s in self.sizes], axis=1)

    def codes(self, factors, rng):
        self.drawn += factors.shape[0]
        self.largest_call = max(self.largest_call, factors.shape[0])
        noisy = factors + self.noise * rng.normal(size=factors.shape)
        return (noisy @ self.mixing) * self.scale + self.shift


class RandomCodes(NoisyLinear):
    """Codes independent of the factors: N(0, 1) in d dimensions."""

    def codes(self, factors, rng):
        self.drawn += factors.shape[0]
        return rng.normal(size=(factors.shape[0], self.mixing.shape[1]))


def identity() -> NoisyLinear:
    return NoisyLinear(np.eye(len(SIZES)))


ENTANGLED = np.array([[1.0, 0.6, 0.0], [0.3, 1.0, 0.5], [0.0, 0.4, 1.0]])


def permuted_rescaled(mixing: np.ndarray, noise: float) -> NoisyLinear:
    # Columns permuted, signs flipped, scaled by 0.5..3 and shifted: std stays above FactorVAE's 0.05.
    return NoisyLinear(
        mixing[:, [2, 0, 1]], scale=np.array([-3.0, 0.5, 2.0]), shift=np.array([7.0, -1.0, 0.25]), noise=noise
    )


def flat(results: dict) -> dict[str, float]:
    return {
        f"{score}.{key}": value
        for score, values in results.items()
        for key, value in values.items()
        if key != "per_factor"
    }

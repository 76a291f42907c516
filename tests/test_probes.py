"""Factor probes: one 3x32 classifier per factor on noisy embeddings (docs/PAPERS.md section 4)."""

from __future__ import annotations

import numpy as np
import pytest

from abc_tf.evaluation.estimators import probes

FAST = probes.ProbeSettings(epochs=15, batch_size=128)


pytestmark = pytest.mark.slow


def clustered(n: int = 1500, k: int = 4, seed: int = 0):
    """Embeddings [n, 3] that separate factor 0 (k values) and ignore factor 1 (3 values)."""
    rng = np.random.default_rng(seed)
    factors = np.stack([rng.integers(0, k, n), rng.integers(0, 3, n)], axis=1)
    centres = 3.0 * rng.normal(size=(k, 3))
    return centres[factors[:, 0]] + 0.05 * rng.normal(size=(n, 3)), factors


def test_probe_reads_separated_factor_and_not_the_independent_one():
    embeddings, factors = clustered()
    result = probes.probe_accuracies(
        embeddings, factors, sigma=0.05, names=["kept", "ignored"], settings=FAST
    )
    assert result.names == ["kept", "ignored"]
    np.testing.assert_allclose(result.chance, [1 / 4, 1 / 3])
    assert result.accuracy[0] > 0.95
    assert abs(result.accuracy[1] - 1 / 3) < 0.12
    assert set(result.as_dict()["kept"]) == {"accuracy", "chance"}


def test_noise_far_above_the_spread_leaves_chance_accuracy():
    embeddings, factors = clustered()
    # Noise 100x the cluster distances: the probe learns nothing beyond the class prior.
    result = probes.probe_accuracies(embeddings, factors, sigma=300.0, settings=FAST)
    assert np.all(result.accuracy < result.chance + 0.15)


def test_declared_class_counts_set_chance_and_are_checked():
    embeddings, factors = clustered()
    result = probes.probe_accuracies(
        embeddings, factors, 0.0, num_classes=[10, 3], settings=probes.ProbeSettings(epochs=2)
    )
    np.testing.assert_allclose(result.chance, [0.1, 1 / 3])
    with pytest.raises(ValueError, match="0..K-1"):
        probes.probe_accuracies(embeddings, factors, 0.0, num_classes=[2, 3], settings=FAST)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="same N"):
        probes.probe_accuracies(np.zeros((10, 2)), np.zeros((9, 1)), 0.1)
    with pytest.raises(ValueError, match="sigma"):
        probes.probe_accuracies(np.zeros((10, 2)), np.zeros((10, 1)), -1.0)
    with pytest.raises(ValueError, match="test_fraction"):
        probes.probe_accuracies(
            np.zeros((10, 2)), np.zeros((10, 1)), 0.1, settings=probes.ProbeSettings(test_fraction=1.5)
        )


def test_probes_of_one_shape_are_traced_once_and_train_as_if_fresh():
    embeddings, factors = clustered()
    other, other_factors = clustered(n=900, seed=1)
    start = probes.build_probes(3, (4, 3))

    def trained(trainer: probes.ProbeTrainer, points, labels, sigma, seed) -> list[np.ndarray]:
        return [
            w
            for network in trainer.train(start, points, labels, sigma, FAST, seed)
            for w in network.get_weights()
        ]

    fresh = trained(probes.ProbeTrainer(3, (4, 3)), embeddings, factors, 0.05, 2)
    reused_trainer = probes.ProbeTrainer(3, (4, 3))
    trained(reused_trainer, other, other_factors, 0.3, 5)  # another sample, noise and seed first
    reused = trained(reused_trainer, embeddings, factors, 0.05, 2)
    # The same ops on the same values: equal but for a sum that threads might reorder (float32
    # rounding, ~1e-7 relative, over 150 Adam steps of small networks).
    for a, b in zip(reused, fresh, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert reused_trainer._run.experimental_get_tracing_count() == 1
    # probe_accuracies keeps one trainer per shape in the process.
    assert probes.probe_trainer(3, (4, 3)) is probes.probe_trainer(3, (4, 3))

"""abc_tf.evaluation.tasks.seeds: the seeds' metrics merged into one summary."""

from __future__ import annotations

import numpy as np

from abc_tf.evaluation.tasks.seeds import aggregate_numbers


def test_aggregate_numbers_merges_every_number_of_the_seeds_at_its_own_path():
    """evaluate.py's summary of seeds for tasks other than factor isolation (MNIST style, pose,
    labels): every number at its path as mean, std and values; shared texts kept; per-seed
    lists and differing texts left to the seeds' files."""
    seeds = [
        {
            "trained": {"style_r2": {"slant": 0.5}, "pca": [0.6, 0.3]},
            "holdout_digit": 9,
            "source": "idx",
            "figure": "a.png",
            "flag": True,
        },
        {
            "trained": {"style_r2": {"slant": 0.7}, "pca": [0.5, 0.4]},
            "holdout_digit": 9,
            "source": "idx",
            "figure": "b.png",
            "flag": False,
        },
    ]
    merged = aggregate_numbers(seeds)
    slant = merged["trained"]["style_r2"]["slant"]
    assert slant["values"] == [0.5, 0.7]
    np.testing.assert_allclose([slant["mean"], slant["std"]], [0.6, 0.1])
    assert merged["holdout_digit"] == {"mean": 9.0, "std": 0.0, "values": [9.0, 9.0]}
    assert merged["source"] == "idx"
    assert "pca" not in merged["trained"] and "figure" not in merged and "flag" not in merged

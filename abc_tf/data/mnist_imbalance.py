"""Class-imbalanced MNIST (Elastic-InfoGAN, PEERS.md section 3; supplement section 5.0.1).

The paper trains on 50 random class-proportion splits of MNIST's 60,000 training images, each
subsampling the training set class by class; the test set stays whole. The supplement lists the
proportions of the splits (L274-323), of which its text keeps 47: ``class_split`` 0..46 are
those rows, in the supplement's order. It does not say how they were drawn ("random
imbalances"); the rows fit a symmetric Dirichlet: their mean sum of squared proportions is
0.120 +- 0.008 (the supplement's E(F.N.) for all 50: 0.119 +- 0.008), and the method of moments
gives alpha = 4.32 per class. ``class_split`` >= 47 draws from Dirichlet(4.32) with the split
number as seed [ours], so splits 47..49 complete the paper's 50 and any number of further ones
are reproducible.

Subsampling [ours: the paper gives proportions, not counts]: the largest subset whose class
sizes follow the proportions, N_c = floor(p_c * N) with N = min_c(available_c / p_c) (on MNIST
25,600 to 45,800 images over the 50 splits), at least one image per class; which images are
kept is drawn with the split number as seed, so every seed of an experiment sees the same images.
"""

from __future__ import annotations

import numpy as np

NUM_CLASSES = 10
NO_SPLIT = -1  # config.class_split: the whole training set

# Supplement section 5.0.1: the class frequencies of digits 0..9, one split per row.
PAPER_SPLITS = np.array([
    (0.147, 0.037, 0.033, 0.143, 0.136, 0.114, 0.057, 0.112, 0.143, 0.078),
    (0.061, 0.152, 0.025, 0.19, 0.12, 0.036, 0.092, 0.185, 0.075, 0.064),
    (0.173, 0.09, 0.109, 0.145, 0.056, 0.114, 0.075, 0.03, 0.093, 0.116),
    (0.079, 0.061, 0.033, 0.139, 0.145, 0.135, 0.057, 0.062, 0.169, 0.121),
    (0.053, 0.028, 0.111, 0.142, 0.13, 0.121, 0.107, 0.066, 0.125, 0.118),
    (0.072, 0.148, 0.092, 0.081, 0.119, 0.172, 0.05, 0.109, 0.085, 0.073),
    (0.084, 0.143, 0.07, 0.082, 0.059, 0.163, 0.156, 0.063, 0.074, 0.105),
    (0.062, 0.073, 0.065, 0.183, 0.099, 0.08, 0.05, 0.16, 0.052, 0.177),
    (0.139, 0.113, 0.074, 0.06, 0.068, 0.133, 0.142, 0.13, 0.112, 0.03),
    (0.046, 0.128, 0.059, 0.112, 0.135, 0.164, 0.142, 0.125, 0.051, 0.037),
    (0.107, 0.057, 0.154, 0.122, 0.05, 0.111, 0.032, 0.044, 0.136, 0.187),
    (0.129, 0.1, 0.039, 0.112, 0.119, 0.095, 0.047, 0.14, 0.156, 0.064),
    (0.146, 0.08, 0.06, 0.072, 0.051, 0.119, 0.176, 0.11, 0.158, 0.028),
    (0.035, 0.051, 0.112, 0.143, 0.033, 0.165, 0.082, 0.165, 0.054, 0.161),
    (0.041, 0.1, 0.073, 0.054, 0.155, 0.117, 0.091, 0.124, 0.142, 0.104),
    (0.052, 0.139, 0.128, 0.133, 0.104, 0.107, 0.058, 0.137, 0.036, 0.107),
    (0.055, 0.138, 0.059, 0.074, 0.08, 0.135, 0.085, 0.064, 0.172, 0.139),
    (0.141, 0.156, 0.119, 0.062, 0.08, 0.022, 0.043, 0.159, 0.101, 0.118),
    (0.11, 0.088, 0.033, 0.062, 0.089, 0.176, 0.161, 0.105, 0.144, 0.032),
    (0.157, 0.111, 0.125, 0.099, 0.036, 0.119, 0.036, 0.05, 0.147, 0.121),
    (0.119, 0.121, 0.117, 0.152, 0.026, 0.174, 0.027, 0.065, 0.151, 0.049),
    (0.057, 0.07, 0.134, 0.118, 0.058, 0.185, 0.07, 0.13, 0.116, 0.063),
    (0.102, 0.082, 0.135, 0.046, 0.128, 0.106, 0.116, 0.085, 0.133, 0.066),
    (0.057, 0.193, 0.2, 0.123, 0.022, 0.154, 0.115, 0.025, 0.065, 0.047),
    (0.056, 0.196, 0.168, 0.052, 0.116, 0.062, 0.099, 0.133, 0.065, 0.053),
    (0.04, 0.022, 0.2, 0.194, 0.038, 0.033, 0.161, 0.097, 0.159, 0.056),
    (0.04, 0.036, 0.119, 0.204, 0.16, 0.103, 0.089, 0.061, 0.136, 0.052),
    (0.112, 0.189, 0.145, 0.163, 0.113, 0.031, 0.028, 0.062, 0.045, 0.112),
    (0.071, 0.099, 0.113, 0.175, 0.082, 0.068, 0.03, 0.066, 0.133, 0.164),
    (0.134, 0.074, 0.111, 0.091, 0.051, 0.119, 0.044, 0.085, 0.144, 0.148),
    (0.103, 0.126, 0.084, 0.117, 0.084, 0.127, 0.131, 0.092, 0.117, 0.019),
    (0.096, 0.121, 0.026, 0.046, 0.043, 0.124, 0.165, 0.04, 0.127, 0.213),
    (0.117, 0.115, 0.125, 0.128, 0.081, 0.103, 0.073, 0.044, 0.137, 0.077),
    (0.037, 0.021, 0.143, 0.165, 0.075, 0.111, 0.028, 0.132, 0.134, 0.154),
    (0.154, 0.049, 0.128, 0.089, 0.082, 0.072, 0.034, 0.138, 0.108, 0.146),
    (0.078, 0.141, 0.084, 0.139, 0.085, 0.062, 0.035, 0.174, 0.15, 0.053),
    (0.112, 0.112, 0.128, 0.112, 0.107, 0.142, 0.032, 0.142, 0.063, 0.049),
    (0.084, 0.091, 0.128, 0.129, 0.045, 0.105, 0.05, 0.091, 0.089, 0.188),
    (0.062, 0.136, 0.112, 0.153, 0.091, 0.046, 0.089, 0.03, 0.161, 0.12),
    (0.143, 0.1, 0.046, 0.166, 0.107, 0.191, 0.026, 0.078, 0.097, 0.047),
    (0.077, 0.174, 0.05, 0.098, 0.028, 0.173, 0.067, 0.106, 0.096, 0.13),
    (0.105, 0.022, 0.183, 0.056, 0.045, 0.103, 0.081, 0.135, 0.119, 0.149),
    (0.083, 0.127, 0.126, 0.028, 0.209, 0.03, 0.066, 0.125, 0.1, 0.107),
    (0.138, 0.142, 0.074, 0.091, 0.103, 0.067, 0.12, 0.04, 0.1, 0.124),
    (0.058, 0.039, 0.088, 0.113, 0.093, 0.055, 0.162, 0.069, 0.168, 0.155),
    (0.02, 0.162, 0.133, 0.138, 0.137, 0.051, 0.069, 0.032, 0.118, 0.14),
    (0.071, 0.046, 0.134, 0.119, 0.159, 0.057, 0.039, 0.135, 0.057, 0.184),
])
DIRICHLET_ALPHA = 4.32  # per class, fitted to PAPER_SPLITS by the method of moments (module docstring)


def check_split(split: int) -> None:
    """ValueError naming the flag unless ``split`` is -1 (no imbalance) or a split number >= 0."""
    if int(split) < NO_SPLIT:
        raise ValueError(f"--class_split must be -1 (no imbalance) or a split number >= 0 (0..{len(PAPER_SPLITS) - 1}: "
                         f"the supplement's), got {split}.")


def class_proportions(split: int) -> np.ndarray:
    """float64 [10] proportions of digits 0..9 (summing to 1) of split ``split`` >= 0."""
    check_split(split)
    if split == NO_SPLIT:
        raise ValueError("class_proportions: split -1 means no imbalance; it has no proportions.")
    if split < len(PAPER_SPLITS):
        row = PAPER_SPLITS[split]
    else:
        row = np.random.default_rng(int(split)).dirichlet(np.full(NUM_CLASSES, DIRICHLET_ALPHA))
    return row / row.sum()  # the printed rows sum to 1 +- 0.002 (3 decimals)


def class_counts(proportions: np.ndarray, available: np.ndarray) -> np.ndarray:
    """int64 [10]: the largest counts N_c = floor(p_c N) with N_c <= available_c (module
    docstring), at least one per class that has an image."""
    proportions, available = np.asarray(proportions, np.float64), np.asarray(available, np.int64)
    present = available > 0
    total = np.min(available[present] / proportions[present])
    # The small epsilon keeps floor(p_c * available_c / p_c) at available_c despite rounding.
    counts = np.floor(proportions * total + 1e-9).astype(np.int64)
    return np.clip(counts, np.minimum(available, 1), available)


def subsample(labels: np.ndarray, split: int) -> np.ndarray:
    """Sorted int64 indices of the training images split ``split`` keeps (labels: digits [N])."""
    labels = np.asarray(labels)
    available = np.bincount(labels, minlength=NUM_CLASSES)[:NUM_CLASSES]
    counts = class_counts(class_proportions(split), available)
    rng = np.random.default_rng([int(split), 1])  # the split alone decides which images stay
    kept = [rng.choice(np.flatnonzero(labels == digit), counts[digit], replace=False) for digit in range(NUM_CLASSES)]
    return np.sort(np.concatenate(kept)).astype(np.int64)


def describe(split: int, labels: np.ndarray) -> dict:
    """What a run's class_split.json records: the split, its proportions and the kept counts."""
    kept = np.bincount(np.asarray(labels)[subsample(labels, split)], minlength=NUM_CLASSES)
    return {
        "class_split": int(split),
        "source": "supplement 5.0.1" if split < len(PAPER_SPLITS) else f"Dirichlet({DIRICHLET_ALPHA}) seeded {split}",
        "proportions": [round(float(p), 6) for p in class_proportions(split)],
        "counts": [int(c) for c in kept],
    }

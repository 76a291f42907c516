"""Class-imbalanced MNIST (Elastic-InfoGAN, docs/PAPERS.md section P3; supplement section 5.0.1).

The authors train on 50 imbalanced splits, each drawn from all 70,000 MNIST images [code: their
create_mnist.py]. ``--data.class_split=k`` is their ``--ind k``: row k - 1 of their
``splits/50_data_imbalance.npy``. -1 means no imbalance. It keeps ``AUTHORS_COUNTS[k - 1][d]`` images of
digit d, drawn uniformly without replacement from the pool. :func:`split_counts` gives the counts.

[ours] Which images: create_mnist.py draws with unseeded ``random.sample``, so no seed gives theirs. We seed
with the split number, so every seed of an experiment sees the same images. The pool is the training images,
then the test images. The procedural digits make a pool of the same size.

[ours] ``--data.class_split_pool=train`` draws from the 60,000 training images alone. So the test images,
on which the evaluators measure, stay out of training. See :func:`class_counts` for a pool that falls short.
"""

from __future__ import annotations

import numpy as np

NUM_CLASSES = 10
NO_SPLIT = -1  # config.data.class_split: no imbalance, the training images as they are
POOLS = ("all", "train")  # config.data.class_split_pool

# The authors' class counts: splits/50_data_imbalance.npy of github.com/WisconsinAIVision/
# elastic-infogan (commit caaccbbe29526920c79cef6c182a36bc130da5e8; float64 [50, 10]) truncated
# to integers as their create_mnist.py reads it. Row k - 1 is split k, columns digits 0..9.
AUTHORS_COUNTS = np.array(
    [
        (6300, 1585, 1407, 6134, 5812, 4882, 2424, 4785, 6125, 3340),
        (2034, 5017, 828, 6300, 3957, 1182, 3053, 6136, 2478, 2117),
        (6300, 3288, 3977, 5279, 2025, 4142, 2714, 1088, 3388, 4205),
        (2945, 2263, 1234, 5194, 5415, 5035, 2139, 2296, 6300, 4515),
        (2352, 1228, 4922, 6300, 5728, 5329, 4716, 2914, 5529, 5205),
        (2624, 5439, 3374, 2961, 4355, 6300, 1838, 3980, 3110, 2661),
        (3237, 5526, 2696, 3184, 2295, 6300, 6029, 2448, 2862, 4076),
        (2135, 2502, 2249, 6300, 3397, 2746, 1731, 5497, 1781, 6111),
        (6177, 5008, 3292, 2671, 3011, 5904, 6300, 5802, 4970, 1342),
        (1762, 4901, 2260, 4303, 5166, 6300, 5453, 4810, 1946, 1434),
        (3610, 1929, 5197, 4098, 1678, 3748, 1077, 1476, 4592, 6300),
        (5193, 4052, 1560, 4513, 4790, 3821, 1908, 5648, 6300, 2567),
        (5240, 2884, 2142, 2590, 1822, 4260, 6300, 3947, 5678, 990),
        (1345, 1936, 4266, 5469, 1259, 6300, 3128, 6285, 2047, 6148),
        (1651, 4061, 2962, 2174, 6300, 4739, 3699, 5028, 5755, 4235),
        (2339, 6300, 5794, 6031, 4715, 4845, 2638, 6224, 1649, 4858),
        (2024, 5052, 2169, 2702, 2925, 4948, 3097, 2333, 6300, 5085),
        (5576, 6173, 4703, 2466, 3179, 858, 1685, 6300, 4015, 4677),
        (3926, 3156, 1174, 2237, 3191, 6300, 5756, 3774, 5160, 1146),
        (6300, 4461, 5004, 3963, 1436, 4800, 1457, 2007, 5898, 4842),
        (4328, 4373, 4253, 5501, 929, 6300, 961, 2341, 5458, 1783),
        (1935, 2391, 4573, 4025, 1988, 6300, 2374, 4440, 3948, 2147),
        (4746, 3812, 6300, 2160, 5978, 4925, 5390, 3976, 6179, 3086),
        (1785, 6088, 6300, 3886, 684, 4852, 3622, 782, 2059, 1469),
        (1783, 6300, 5386, 1681, 3736, 2003, 3175, 4256, 2085, 1703),
        (1274, 692, 6300, 6115, 1200, 1026, 5070, 3046, 5027, 1765),
        (1223, 1123, 3679, 6300, 4943, 3190, 2735, 1890, 4214, 1614),
        (3744, 6300, 4839, 5433, 3753, 1040, 921, 2064, 1484, 3748),
        (2546, 3574, 4070, 6300, 2942, 2465, 1080, 2379, 4812, 5915),
        (5719, 3127, 4706, 3851, 2167, 5048, 1868, 3620, 6120, 6300),
        (4971, 6078, 4039, 5639, 4023, 6117, 6300, 4405, 5653, 897),
        (2835, 3590, 769, 1352, 1275, 3681, 4885, 1177, 3776, 6300),
        (6000, 2521, 1318, 6227, 5781, 3870, 4854, 6300, 3730, 4535),
        (3311, 1797, 2716, 3967, 6300, 2040, 5171, 6128, 2358, 2739),
        (3508, 6300, 4919, 3999, 2715, 4104, 5604, 4030, 2755, 5777),
        (5348, 5292, 5719, 5865, 3722, 4708, 3362, 2022, 6300, 3556),
        (1396, 818, 5453, 6300, 2874, 4227, 1079, 5028, 5098, 5868),
        (6300, 2008, 5248, 3638, 3381, 2949, 1402, 5669, 4430, 6003),
        (2830, 5103, 3019, 5036, 3060, 2231, 1248, 6300, 5410, 1916),
        (4957, 4931, 5667, 4972, 4713, 6283, 1414, 6300, 2795, 2183),
        (2818, 3061, 4290, 4313, 1510, 3506, 1661, 3042, 2978, 6300),
        (2424, 5300, 4393, 5999, 3547, 1804, 3461, 1190, 6300, 4685),
        (4727, 3289, 1502, 5465, 3535, 6300, 874, 2583, 3193, 1541),
        (2794, 6300, 1818, 3544, 1017, 6273, 2437, 3859, 3485, 4719),
        (3621, 759, 6300, 1931, 1561, 3539, 2789, 4629, 4106, 5135),
        (2488, 3837, 3812, 833, 6300, 895, 1993, 3761, 3026, 3217),
        (6149, 6300, 3282, 4029, 4591, 2980, 5308, 1792, 4451, 5516),
        (2194, 1480, 3297, 4237, 3489, 2053, 6102, 2594, 6300, 5808),
        (775, 6300, 5143, 5340, 5313, 1983, 2658, 1251, 4593, 5421),
        (2422, 1588, 4590, 4061, 5445, 1940, 1324, 4621, 1947, 6300),
    ],
    np.int64,
)
NUM_SPLITS = len(AUTHORS_COUNTS)


def check_split(split: int) -> None:
    """ValueError naming the flag unless ``split`` is -1, no imbalance, or one of the authors'
    1..50.
    """
    if int(split) != NO_SPLIT and not 1 <= int(split) <= NUM_SPLITS:
        raise ValueError(
            f"--data.class_split must be -1 (no imbalance) or one of the authors' splits 1..{NUM_SPLITS} "
            f"(numbered as their --ind), got {split}."
        )


def check_pool(pool: str) -> None:
    """ValueError naming the flag unless ``pool`` is one of :data:`POOLS`."""
    if pool not in POOLS:
        raise ValueError(f"--data.class_split_pool must be one of {', '.join(POOLS)}, got {pool!r}.")


def split_counts(split: int) -> np.ndarray:
    """int64 [10]: the images of digits 0..9 that the authors' split ``split`` (1..50) keeps.

    The counts are the file's values truncated by ``int()``, as create_mnist.py reads them. Split
    1 keeps 6300, 1585, 1407, 6134, 5812, 4882, 2424, 4785, 6125 and 3340, 42,794 in all. Every
    split's largest class has 6,300 images; MNIST's rarest digit, 5, has 6,313. The splits hold
    29,640 to 48,122 images. The supplement prints them as proportions (L274-323), without splits
    33-35.
    """
    check_split(split)
    if split == NO_SPLIT:
        raise ValueError("split_counts: split -1 means no imbalance; it has no counts.")
    return AUTHORS_COUNTS[int(split) - 1].copy()


def class_counts(wanted: np.ndarray, available: np.ndarray) -> np.ndarray:
    """int64 [10]: ``wanted``, or the largest counts in the same proportions that the pool allows.

    The training images have only 5,421 fives, and a small test file fewer. Then N_d = floor(s *
    count_d) with s = min_d(available_d / count_d). Each digit present keeps at least one image.
    """
    wanted, available = np.asarray(wanted, np.int64), np.asarray(available, np.int64)
    present = (available > 0) & (wanted > 0)
    scale = min(1.0, float(np.min(available[present] / wanted[present])))
    # The small epsilon keeps floor(wanted_d * available_d / wanted_d) at available_d despite rounding.
    counts = np.floor(wanted * scale + 1e-9).astype(np.int64)
    return np.clip(counts, np.minimum(available, 1), available)


def pool(
    x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray, which: str
) -> tuple[np.ndarray, np.ndarray]:
    """Images and digits that a split draws from.

    "all": the training images, then the test images, the authors' 70,000. "train": the training
    images.
    """
    check_pool(which)
    if which == "train":
        return x_train, y_train
    return np.concatenate([x_train, x_test]), np.concatenate([y_train, y_test])


def subsample(labels: np.ndarray, split: int) -> np.ndarray:
    """Sorted int64 indices of the pool's images that split ``split`` keeps. ``labels`` [N] are
    their digits.
    """
    labels = np.asarray(labels)
    available = np.bincount(labels, minlength=NUM_CLASSES)[:NUM_CLASSES]
    counts = class_counts(split_counts(split), available)
    rng = np.random.default_rng([int(split), 1])  # the split alone decides which images stay
    kept = [
        rng.choice(np.flatnonzero(labels == digit), counts[digit], replace=False)
        for digit in range(NUM_CLASSES)
    ]
    return np.sort(np.concatenate(kept)).astype(np.int64)


def describe(split: int, labels: np.ndarray, which: str) -> dict:
    """What a run's class_split.json records.

    The split, where its counts come from, the pool (``which`` and its digits ``labels``), the
    authors' counts and the counts kept.
    """
    wanted = split_counts(split)
    kept = np.bincount(np.asarray(labels)[subsample(labels, split)], minlength=NUM_CLASSES)
    return {
        "class_split": int(split),
        "source": (
            f"the authors' splits/50_data_imbalance.npy, row {int(split) - 1} (their --ind {int(split)})"
        ),
        "pool": which,
        "pool_images": int(len(labels)),
        "authors_counts": [int(c) for c in wanted],
        "counts": [int(c) for c in kept],
        "proportions": [round(float(p), 6) for p in wanted / wanted.sum()],
    }

"""The MNIST family's config (``--data=mnist``; docs/PAPERS.md section 3)."""

from __future__ import annotations

import dataclasses

from abc_tf.config import DataConfig, field


@dataclasses.dataclass(frozen=True)
class MnistConfig(DataConfig):
    holdout_digit: str = field("9", "Digit kept out of training ('none' keeps all ten).")
    allow_same_digit: bool = field(False, "The two stacks of a step may show the same digit.")
    class_split: int = field(
        -1,
        "Train on Elastic-InfoGAN's class-imbalanced split k (1..50, numbered as the authors' --ind; their "
        "per-digit counts, e.g. split 1: 42,794 images), drawn class by class from --data.class_split_pool; "
        "-1: no imbalance.",
    )
    class_split_pool: str = field(
        "all",
        "With --data.class_split: the images a split is drawn from, 'all' (the 70,000 training and test "
        "images, as the authors) or 'train' (the 60,000 training images, so the test images stay out of "
        "training; a split then keeps its proportions at a smaller size).",
    )

"""The MNIST family's config (``--data=mnist``; docs/PAPERS.md section 3)."""

from __future__ import annotations

import dataclasses

from abc_tf.config import DataConfig, field


@dataclasses.dataclass(frozen=True)
class MnistConfig(DataConfig):
    """The MNIST family's flags.

    class_split k in 1..50 is numbered as the authors' --ind, with their per-digit counts; split 1
    has 42,794 images. It is drawn class by class from class_split_pool. -1 means no imbalance.
    class_split_pool 'all' is the 70,000 training and test images, as the authors. 'train' is the
    60,000 training images, so the test images stay out of training. A split then keeps its
    proportions at a smaller size.
    """

    holdout_digit: str = field("9", "Digit kept out of training ('none' keeps all ten).")
    allow_same_digit: bool = field(False, "The two stacks of a step may show the same digit.")
    class_split: int = field(
        -1,
        "Train on Elastic-InfoGAN's class-imbalanced split k, 1 to 50, or -1 for no imbalance.",
    )
    class_split_pool: str = field(
        "all",
        "The images a class split is drawn from: 'all', as the authors, or 'train', without the test images.",
    )

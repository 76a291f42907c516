"""The Shapes3D family's config (``--data=shapes3d``; docs/PAPERS.md sections 3 and 6)."""

from __future__ import annotations

import dataclasses

from abc_tf.config import DataConfig, field


@dataclasses.dataclass(frozen=True)
class Shapes3DConfig(DataConfig):
    inactive_factors: str = field(
        "wall_hue", "Factors fixed within a set, comma separated names or the authors' digits."
    )
    curate_both_sets: bool = field(
        True, "Curate set B like set A (False: set B unconstrained, drawn from the whole data set)."
    )
    sample_with_replacement: bool = field(
        False,
        "Allow repeated images inside a set (needed when set_size exceeds the distinct images that share the "
        "inactive values).",
    )
    data_in_memory: bool = field(
        False,
        "h5: read all images into RAM first (5.9 GB for the real file) instead of reading each set from "
        "disk.",
    )
    augmentations: str = field(
        "",
        "Per-image augmentations 'name:amplitude,...' applied in order (hue, contrast, saturation, crop; see "
        "abc_tf.data.augment); twice under --batch.double_augmentation.",
    )

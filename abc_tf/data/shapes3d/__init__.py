"""The Shapes3D family's config (``--data=shapes3d``; docs/PAPERS.md sections 3 and 6)."""

from __future__ import annotations

import dataclasses

from abc_tf.config import DataConfig, field


@dataclasses.dataclass(frozen=True)
class Shapes3DConfig(DataConfig):
    """The Shapes3D family's flags.

    Without curate_both_sets, set B is unconstrained, drawn from the whole data set. Repeated
    images are needed when set_size exceeds the distinct images that share the inactive values.
    data_in_memory applies to h5 and takes 5.9 GB for the real file. The augmentations are hue,
    contrast, saturation and crop (see abc_tf.data.augment). They apply twice under
    --batch.double_augmentation.
    """

    inactive_factors: str = field(
        "wall_hue", "Factors fixed within a set, comma separated names or the authors' digits."
    )
    curate_both_sets: bool = field(True, "Curate set B like set A.")
    sample_with_replacement: bool = field(
        False,
        "Allow repeated images inside a set.",
    )
    data_in_memory: bool = field(
        False,
        "Read all h5 images into RAM first instead of reading each set from disk.",
    )
    augmentations: str = field(
        "",
        "Per-image augmentations 'name:amplitude,...', applied in order.",
    )

"""The config of the image-folder families: the user's grouped folders (``--data=folders``),
YaleB and EPFL cars (docs/PAPERS.md section 3, supplement S8.4)."""

from __future__ import annotations

import dataclasses

from abc_tf.config import DataConfig, field


@dataclasses.dataclass(frozen=True)
class ImageFolderConfig(DataConfig):
    image_size: int = field(64, "Images are resized to image_size x image_size.")
    image_channels: int = field(3, "Channels images are converted to: 1 (gray) or 3 (RGB).")
    inactive_factors: str = field(
        "group",
        "What a set shares. folders: 'group'; yaleb: 'person,pose' (illumination active) or 'person' (pose "
        "and illumination active); epfl_cars: 'car'.",
    )
    curate_both_sets: bool = field(True, "Curate set B like set A (False: set B drawn from every group).")
    augmentations: str = field(
        "",
        "Per-image augmentations 'name:amplitude,...' applied in order (contrast, saturation, crop; see "
        "abc_tf.data.augment); twice under --batch.double_augmentation.",
    )

    def validate(self) -> None:
        super().validate()
        self.check_positive("image_size")

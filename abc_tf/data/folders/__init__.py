"""The config of the image-folder families (docs/PAPERS.md section 3, supplement S8.4).

They are the user's grouped folders (``--data=folders``), YaleB and EPFL cars.
"""

from __future__ import annotations

import dataclasses

from abc_tf.config import DataConfig, field


@dataclasses.dataclass(frozen=True)
class ImageFolderConfig(DataConfig):
    """The image-folder families' flags.

    inactive_factors per family: folders 'group'; yaleb 'person,pose', with illumination active,
    or 'person', with pose and illumination active; epfl_cars 'car'. Without curate_both_sets,
    set B is drawn from every group. The augmentations are contrast, saturation and crop (see
    abc_tf.data.augment). They apply twice under --batch.double_augmentation.
    """

    image_size: int = field(64, "Images are resized to image_size x image_size.")
    image_channels: int = field(3, "Channels images are converted to, 1 for gray or 3 for RGB.")
    inactive_factors: str = field(
        "group",
        "What a set shares, comma separated, e.g. 'group', 'person,pose' or 'car'.",
    )
    curate_both_sets: bool = field(True, "Curate set B like set A.")
    augmentations: str = field(
        "",
        "Per-image augmentations 'name:amplitude,...', applied in order.",
    )

    def validate(self) -> None:
        super().validate()
        self.check_positive("image_size")

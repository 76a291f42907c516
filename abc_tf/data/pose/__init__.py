"""The pose family's config (``--data=pose``; docs/PAPERS.md sections 3, 5, 6; supplement S5, S8.3)."""

from __future__ import annotations

import dataclasses

from abc_tf.config import DataConfig, field


@dataclasses.dataclass(frozen=True)
class PoseConfig(DataConfig):
    pose_category: str = field("car", "Object category: car or chair (sets the default maximum elevation).")
    image_size: int = field(64, "Images are resized to image_size x image_size.")
    image_channels: int = field(3, "Channels of the images: 3 (RGB).")
    sample_with_replacement: bool = field(False, "Allow repeated images inside a set.")
    max_elevation: float = field(
        0.0, "Keep synthetic views up to this elevation in radians (0: the category's 0.5 car / 1.3 chair)."
    )
    real_fraction: float = field(
        0.1, "Fraction of real images in the unconstrained set B once titration is complete."
    )
    titration_interval: int = field(
        4000,
        "The real fraction steps up every this many steps, from 0 to real_fraction (0: no titration, "
        "real_fraction from the start).",
    )
    crop_amplitude: float = field(
        0.1, "Random translation of the bounding box, as a fraction of its height and width."
    )
    augmentation_amplitude: float = field(
        1.0, "Scale of the colouring augmentations (brightness, hue, noise, Sobel; 0: none)."
    )
    augmentations: str = field(
        "", "Further per-image augmentations 'name:amplitude,...' (see abc_tf.data.augment)."
    )
    real_data_path: str = field(
        "", "Folder of unlabelled real images titrated into set B; empty with source=procedural.", path=True
    )
    background_data_path: str = field(
        "",
        "Folder of images whose random crops are painted behind the synthetic renders (the paper: "
        "ImageNet-A, images without the category's objects); empty: built-in procedural clutter scenes.",
        path=True,
    )
    paint_backgrounds: bool = field(
        True,
        "Paint backgrounds behind the synthetic renders (False: renders on black, the clean images of the "
        "synthetic-domain evaluation; the reconstruction baselines train on these).",
    )
    pose_test_list: str = field(
        "",
        "Pascal3D+-style test list 'image left top right bottom azimuth elevation tilt' (evaluation only).",
        path=True,
    )
    pose_test_images: str = field(
        "", "Folder the test list's image names are relative to (default: the list's folder).", path=True
    )
    validation_instances: int = field(
        0,
        "Hold the last N training instances out of training and out of the lookup dictionaries; evaluate.py "
        "--pose_query_split=validation queries their synthetic renders (tuning without the test instances; "
        "0: none).",
    )

    def validate(self) -> None:
        super().validate()
        self.check_positive("image_size")
        if self.validation_instances < 0:
            raise ValueError(
                f"--data.validation_instances must be >= 0 (0: none), got {self.validation_instances}."
            )

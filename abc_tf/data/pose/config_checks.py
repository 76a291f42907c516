"""What a pose config reads, and the checks that refuse a pose setting that cannot work.

The source (procedural renders or KeypointNet files), the elevation filter and the training
instances held out for validation are read from the config here, by the family's streams and
by its labelled views alike.
"""

from __future__ import annotations

import os

import numpy as np

from abc_tf.config import ExperimentConfig
from abc_tf.data.family import DataSources
from abc_tf.data.pose.objects import CATEGORIES, DEFAULT_MAX_ELEVATION


def _detect(path: str) -> str | None:
    """``keypointnet`` for a .tfrecord file or a folder holding some; None otherwise."""
    if os.path.isfile(path):
        return "keypointnet" if path.endswith(".tfrecord") else None
    return "keypointnet" if any(name.endswith(".tfrecord") for name in os.listdir(path)) else None


SOURCES = DataSources(
    reading={"keypointnet": "a folder of KeypointNet .tfrecord files, or one such file"},
    built_in=("procedural",),
    detect=_detect,
    default=lambda: "procedural",
)
# The paths only the keypointnet source reads: the procedural data has its own real domain.
_KEYPOINTNET_PATHS = ("real_data_path", "pose_test_list", "pose_test_images")


def source(config: ExperimentConfig) -> str:
    """The source ``config`` reads, ``auto`` resolved."""
    return SOURCES.resolve("pose", config.data.source, config.data.path)[0]


def max_elevation(config: ExperimentConfig) -> float:
    """The elevation filter in radians: ``max_elevation``, or the category's (0.5 car, 1.3 chair)."""
    if config.data.max_elevation > 0:
        return float(config.data.max_elevation)
    return DEFAULT_MAX_ELEVATION[config.data.pose_category]


def held_out_instances(config: ExperimentConfig) -> int:
    """How many of the last training instances ``config`` holds out for validation."""
    return int(config.data.validation_instances)


def check_config(config: ExperimentConfig) -> None:
    """Raises ValueError naming the flag when a pose setting cannot work."""
    if config.data.pose_category not in CATEGORIES:
        raise ValueError(
            f"--data.pose_category must be one of {', '.join(CATEGORIES)}, got {config.data.pose_category!r}."
        )
    if source(config) == "procedural":
        for name in _KEYPOINTNET_PATHS:
            if getattr(config.data, name):
                raise ValueError(
                    f"--data.{name} is read with KeypointNet renders only (--data.path=<tfrecords>); the "
                    "built-in procedural data has its own real images, so it would be ignored."
                )
    if not 0.0 <= config.data.max_elevation <= np.pi / 2:
        raise ValueError(
            "--data.max_elevation must lie in [0, pi/2] radians (0: category default), got "
            f"{config.data.max_elevation}."
        )
    if not 0.0 <= config.data.real_fraction <= 1.0:
        raise ValueError(f"--data.real_fraction must lie in [0, 1], got {config.data.real_fraction}.")
    if config.data.titration_interval < 0:
        raise ValueError(
            f"--data.titration_interval must be >= 0 (0: no titration), got {config.data.titration_interval}."
        )
    if config.data.real_fraction > 0 and config.data.titration_interval >= config.trainer.steps:
        raise ValueError(
            f"--data.titration_interval={config.data.titration_interval} is not below "
            f"--trainer.steps={config.trainer.steps}: real images would never enter set B. Lower "
            "--data.titration_interval, or set --data.real_fraction=0."
        )
    if not 0.0 <= config.data.crop_amplitude < 1.0:
        raise ValueError(f"--data.crop_amplitude must lie in [0, 1), got {config.data.crop_amplitude}.")
    if not 0.0 <= config.data.augmentation_amplitude <= 5.0:
        raise ValueError(
            f"--data.augmentation_amplitude must lie in [0, 5], got {config.data.augmentation_amplitude}."
        )
    if config.data.augmentations:
        raise ValueError(
            "--data.augmentations is not used by data=pose; its augmentations (supplement S5) are set by "
            "--data.crop_amplitude and --augmentation_amplitude."
        )
    if config.data.background_data_path and not config.data.paint_backgrounds:
        raise ValueError(
            "--data.background_data_path names backgrounds, but --data.paint_backgrounds=false paints none."
        )
    if config.data.image_channels != 3:
        raise ValueError(
            "data=pose works on RGB images: --data.image_channels must be 3, got "
            f"{config.data.image_channels}."
        )
    if config.data.image_size < 16:
        raise ValueError(
            f"--data.image_size must be at least 16 for pose images, got {config.data.image_size}."
        )
    if source(config) == "keypointnet" and config.data.real_fraction > 0 and not config.data.real_data_path:
        raise ValueError(
            "--data.real_fraction > 0 needs unlabelled real images: give --data.real_data_path (a folder of "
            "images), or set --data.real_fraction=0."
        )

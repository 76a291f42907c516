"""Grouped image folders written by the tests (abc_tf.data.folders.family): flat images whose colours
say their group and index, and the folders preset pointed at them."""

from __future__ import annotations

import os

import keras
import numpy as np

from abc_tf.runs.experiments import get_preset
from abc_tf.runs.run_dir import network_file
from image_helpers import write_png


def coded_image(group: int, index: int, height: int = 12, width: int = 12) -> np.ndarray:
    """A flat image whose red channel says the group and green channel the index (exact after resizing)."""
    image = np.zeros((height, width, 3), np.uint8)
    image[..., 0] = 20 * group + 10
    image[..., 1] = 5 * index
    return image


def make_folder(root: str, sizes: dict[str, int], image_size: tuple[int, int] = (12, 12)) -> None:
    """``root/<group>/img_<k>.png`` for each group (sorted) with ``sizes[group]`` coded images."""
    for group_index, (name, count) in enumerate(sorted(sizes.items())):
        os.makedirs(os.path.join(root, name), exist_ok=True)
        for index in range(count):
            write_png(
                os.path.join(root, name, f"img_{index:03d}.png"), coded_image(group_index, index, *image_size)
            )


def config_for(root: str, **overrides):
    """The folders preset reading ``root``: 8x8 images, sets of 3, two pairs, no augmentation."""
    settings = dict(
        path=str(root),
        image_size=8,
        set_size=3,
        pairs_per_step=2,
        augmentations="",
        double_augmentation=False,
    )
    settings.update(overrides)
    return get_preset("folders").replace(**settings)


def write_stand_in_run(run_dir, config) -> None:
    """A run directory of ``config`` as training leaves it, for evaluators: its config.json and
    a small stand-in encoder (flatten, dense 4) of the config's image shape."""
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, "config.json"), "w") as handle:
        handle.write(config.to_json())
    shape = (config.data.image_size, config.data.image_size, config.data.image_channels)
    encoder = keras.Sequential([keras.Input(shape), keras.layers.Flatten(), keras.layers.Dense(4)])
    encoder.save(network_file(str(run_dir), "encoder"))

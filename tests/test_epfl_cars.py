"""EPFL multi-view cars in their distributed layout (abc_tf/data/epfl_cars: the family ``epfl_cars``).

The tests write small data sets with the real file naming: JPEG car frames
``tripod_seq_01_001.jpg`` with the 7-line ``tripod-seq.txt`` and ``times.txt``.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from abc_tf.runs.experiments import get_preset
from abc_tf.data import get_family
from abc_tf.data.epfl_cars import family as epfl_cars

FRAMES = (10, 12, 9)
FULL_TURN = (9, 11, 9)  # frame at which the car has turned 360 degrees since frame 1
FRONT = (3, 1, 5)
DIRECTION = (1, -1, 1)


def make_epfl(root: str, times: bool = False, sizes: tuple[int, ...] = FRAMES) -> None:
    os.makedirs(root, exist_ok=True)
    lines = [
        f"{len(sizes)} 376 250",
        " ".join(map(str, sizes)),
        "tripod_seq_%02i_%03i.jpg",
        "bbox_%02i.txt",
        " ".join(map(str, FULL_TURN[: len(sizes)])),
        " ".join(map(str, FRONT[: len(sizes)])),
        " ".join(map(str, DIRECTION[: len(sizes)])),
    ]
    with open(os.path.join(root, "tripod-seq.txt"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    for sequence, count in enumerate(sizes):
        for frame in range(1, count + 1):
            # Gray level = sequence (JPEG keeps flat gray exactly enough); a frame-numbered bar.
            image = np.full((25, 37, 3), 80 * sequence + 40, np.uint8)
            image[:3, : 3 * frame] = 255
            tf.io.write_file(
                os.path.join(root, f"tripod_seq_{sequence + 1:02d}_{frame:03d}.jpg"),
                tf.io.encode_jpeg(image, quality=100),
            )
    if times:
        # Uneven capture times: sequence 1 pauses 2 s after frame 5 (angles follow time, not frame).
        with open(os.path.join(root, "times.txt"), "w") as handle:
            for sequence, count in enumerate(sizes):
                t = np.arange(max(count, FULL_TURN[sequence])) * 4
                if sequence == 0:
                    t[5:] += 2
                handle.write(" ".join(map(str, t)) + "\n")


def epfl_config(root, **overrides):
    settings = dict(path=str(root), image_size=8, set_size=8, augmentations="", double_augmentation=False)
    settings.update(overrides)
    return get_preset("epfl_cars").replace(**settings)


def test_epfl_metadata_and_azimuths_from_frame_numbers(tmp_path):
    make_epfl(str(tmp_path / "tripod-seq"))
    # --data.path may be the folder above tripod-seq/.
    grouped = epfl_cars.FAMILY.grouped_images(epfl_config(tmp_path))
    assert grouped.images.shape == (31, 8, 8, 3) and grouped.group_names == ["seq_01", "seq_02", "seq_03"]
    np.testing.assert_array_equal(grouped.group_index().counts, FRAMES)
    azimuth = grouped.attributes["azimuth"]
    first = azimuth[:10]  # sequence 1: 8 frames per turn, front = frame 3, counter-clockwise = +1
    np.testing.assert_allclose(first[[2, 3, 0, 8, 9]], [0.0, 45.0, 270.0, 270.0, 315.0])
    second = azimuth[10:22]  # 10 frames per turn, front = frame 1, direction -1
    np.testing.assert_allclose(second[[0, 1, 10]], [0.0, 324.0, 0.0])
    bins = grouped.labels["azimuth_bin"]
    np.testing.assert_array_equal(bins[[2, 3, 0]], [0, 1, 6])
    np.testing.assert_array_equal(grouped.labels["car"], np.repeat([0, 1, 2], FRAMES))


def test_epfl_azimuths_follow_capture_times(tmp_path):
    make_epfl(str(tmp_path), times=True)
    azimuth = epfl_cars.FAMILY.grouped_images(epfl_config(tmp_path)).attributes["azimuth"][:10]
    # Times 0 4 8 12 16 22 26 30 34 38: a full turn at frame 9 (t = 34), front at t = 8.
    t = np.array([0, 4, 8, 12, 16, 22, 26, 30, 34, 38], float)
    np.testing.assert_allclose(azimuth, np.mod((t - 8) * 360 / 34, 360))


def test_epfl_sets_are_frames_of_one_sequence(tmp_path):
    make_epfl(str(tmp_path))
    config = epfl_config(tmp_path, pairs_per_step=2)
    assert (
        get_family("epfl_cars").image_shape(get_preset("epfl_cars")) == (64, 64, 3)
        and get_preset("epfl_cars").batch.set_size == 81
    )
    dataset = get_family("epfl_cars").stream("sets")(config, seed=0)
    assert dataset.element_spec["set_a"].shape == (2, 8, 8, 8, 3)
    for batch in dataset.take(5):
        for pair in range(2):
            car_a = np.round((batch["set_a"].numpy()[pair, :, 5, 4, 0] - 40) / 80.0)
            car_b = np.round((batch["set_b"].numpy()[pair, :, 5, 4, 0] - 40) / 80.0)
            assert len(set(car_a)) == 1 and len(set(car_b)) == 1 and car_a[0] != car_b[0]


def test_epfl_bad_input(tmp_path, caplog):
    with pytest.raises(ValueError, match="no tripod-seq.txt"):
        epfl_cars.FAMILY.grouped_images(epfl_config(tmp_path))
    make_epfl(str(tmp_path))
    with pytest.raises(ValueError, match="use 'car'"):
        epfl_cars.FAMILY.grouped_images(epfl_config(tmp_path, inactive_factors="person"))
    # Sequence 3 (9 frames) is shorter than the set: skipped with a warning; 2 remain.
    with caplog.at_level(logging.WARNING):
        epfl_cars.FAMILY.stream("sets")(epfl_config(tmp_path, set_size=10), seed=0)
    assert "seq_03 (9)" in caplog.text
    with pytest.raises(ValueError, match="--batch.set_size=11"):
        epfl_cars.FAMILY.stream("sets")(epfl_config(tmp_path, set_size=11), seed=0)
    # A missing frame names its file.
    os.remove(tmp_path / "tripod_seq_02_004.jpg")
    with pytest.raises(ValueError, match="tripod_seq_02_004.jpg is missing"):
        epfl_cars.FAMILY.grouped_images(epfl_config(tmp_path))
    # Malformed metadata names the line.
    metadata = tmp_path / "tripod-seq.txt"
    lines = metadata.read_text().splitlines()
    metadata.write_text("\n".join(lines[:5] + ["3 1"] + lines[6:]) + "\n")
    with pytest.raises(ValueError, match="line 6: 2 values for frontal frame"):
        epfl_cars.FAMILY.grouped_images(epfl_config(tmp_path))
    metadata.write_text("\n".join(lines[:6] + ["1 0 1"]) + "\n")
    with pytest.raises(ValueError, match="line 7: rotation direction of sequence 2"):
        epfl_cars.FAMILY.grouped_images(epfl_config(tmp_path))
    metadata.write_text("\n".join(lines[:3]) + "\n")
    with pytest.raises(ValueError, match="7 expected"):
        epfl_cars.FAMILY.grouped_images(epfl_config(tmp_path))
    metadata.write_text("\n".join(lines))
    (tmp_path / "times.txt").write_text("0 1 2\n")
    with pytest.raises(ValueError, match="times.txt: 1 lines"):
        epfl_cars.FAMILY.grouped_images(epfl_config(tmp_path))

"""Extended YaleB and EPFL multi-view cars in their distributed layouts (abc_tf.data.faces_cars).

The tests write small data sets with the real file naming: PGM faces
``yaleB11/yaleB11_P00A+000E+00.pgm`` (plus ambient images and an info file) and JPEG car
frames ``tripod_seq_01_001.jpg`` with the 7-line ``tripod-seq.txt`` and ``times.txt``.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from abc_tf.experiments import get_preset
from abc_tf.data import faces_cars, get_family
from image_helpers import write_pgm

PERSONS = ("yaleB11", "yaleB12", "yaleB13")
POSES = (0, 1)
LIGHTS = ((0, 0), (-5, 10), (25, -20), (130, 90))  # (azimuth, elevation) in degrees


def face(person: int, pose: int, light: int) -> np.ndarray:
    """A flat 24x32 gray image whose value encodes (person, pose, light)."""
    return np.full((24, 32), 60 * person + 20 * pose + 4 * light + 10, np.uint8)


def make_yaleb(root: str) -> None:
    for p, person in enumerate(PERSONS):
        folder = os.path.join(root, person)
        os.makedirs(folder)
        for pose in POSES:
            for index, (azimuth, elevation) in enumerate(LIGHTS):
                name = f"{person}_P{pose:02d}A{azimuth:+04d}E{elevation:+03d}.pgm"
                write_pgm(os.path.join(folder, name), face(p, pose, index))
            write_pgm(os.path.join(folder, f"{person}_P{pose:02d}_Ambient.pgm"), np.zeros((24, 32)))
        with open(os.path.join(folder, f"{person}_P00.info"), "w") as handle:
            handle.write("file list\n")


def yaleb_config(root, **overrides):
    settings = dict(path=str(root), image_size=8, set_size=4, augmentations="", double_augmentation=False)
    settings.update(overrides)
    return get_preset("yaleb_illumination").replace(**settings)


def test_yaleb_names_parse_and_ambient_images_are_skipped(tmp_path):
    make_yaleb(str(tmp_path))
    grouped = faces_cars.YALEB.grouped_images(yaleb_config(tmp_path))
    assert grouped.images.shape == (24, 8, 8, 1)
    assert grouped.group_names == [f"{p}/P{q:02d}" for p in PERSONS for q in POSES]
    np.testing.assert_array_equal(grouped.group_index().counts, [4] * 6)
    assert not any("Ambient" in f for f in grouped.files)
    np.testing.assert_array_equal(grouped.label_values["light_azimuth"], [-5, 0, 25, 130])
    np.testing.assert_array_equal(grouped.label_values["light_elevation"], [-20, 0, 10, 90])
    index = grouped.files.index(os.path.join("yaleB12", "yaleB12_P01A-005E+10.pgm"))
    values = {name: grouped.label_values[name][grouped.labels[name][index]] for name in grouped.labels}
    assert values == {"person": "yaleB12", "pose": 1, "light_azimuth": -5, "light_elevation": 10}
    assert np.all(grouped.images[index] == 60 * 1 + 20 * 1 + 4 * 1 + 10)


def test_yaleb_illumination_sets_hold_all_lights_of_one_person_and_pose(tmp_path):
    make_yaleb(str(tmp_path))
    dataset = get_family("yaleb").make_dataset(yaleb_config(tmp_path, pairs_per_step=2), seed=0)
    assert dataset.element_spec["set_a"].shape == (2, 4, 8, 8, 1)
    for batch in dataset.take(8):
        for key in ("set_a", "set_b"):
            for values in batch[key].numpy()[:, :, 0, 0, 0]:
                # value = 60 person + 20 pose + 4 light + 10: one (person, pose), all four lights.
                codes = sorted(values.astype(int) - 10)
                base = codes[0]
                assert codes == [base, base + 4, base + 8, base + 12]


def test_yaleb_pose_and_illumination_sets_span_poses_of_one_person(tmp_path):
    make_yaleb(str(tmp_path))
    config = yaleb_config(tmp_path, inactive_factors="person", set_size=6)
    grouped = faces_cars.YALEB.grouped_images(config)
    assert grouped.group_names == list(PERSONS) and list(grouped.group_index().counts) == [8, 8, 8]
    two_poses = 0
    for batch in faces_cars.YALEB.make_dataset(config, seed=0).take(10):
        codes = batch["set_a"].numpy()[0, :, 0, 0, 0].astype(int) - 10
        assert len(set(codes // 60)) == 1 and len(set(codes)) == 6  # one person, distinct images
        two_poses += len(set((codes % 60) // 20)) == 2
    assert two_poses == 10  # 6 of 8 images always include both poses


def test_yaleb_preset_shapes_and_views(tmp_path):
    make_yaleb(str(tmp_path))
    assert get_family("yaleb").image_shape(get_preset("yaleb_illumination")) == (64, 64, 1)
    assert get_preset("yaleb_pose_illumination").batch.set_size == 384
    config = yaleb_config(tmp_path, augmentations="contrast:0.3,crop:0.2", double_augmentation=True)
    batch = next(iter(faces_cars.YALEB.make_dataset(config, seed=0)))
    assert sorted(batch) == ["set_a", "set_a_view2", "set_b", "set_b_view2"]
    assert batch["set_b_view2"].shape == (1, 4, 8, 8, 1) and batch["set_b_view2"].dtype == tf.float32


def test_yaleb_bad_input(tmp_path, caplog):
    with pytest.raises(ValueError, match="--data.path is empty"):
        faces_cars.YALEB.make_dataset(yaleb_config(""), seed=0)
    with pytest.raises(ValueError, match="no person folders"):
        faces_cars.YALEB.make_dataset(yaleb_config(tmp_path), seed=0)
    make_yaleb(str(tmp_path))
    with pytest.raises(ValueError, match="--data.inactive_factors='wall_hue' for yaleb"):
        faces_cars.YALEB.make_dataset(yaleb_config(tmp_path, inactive_factors="wall_hue"), seed=0)
    # The paper's 64 illuminations do not fit groups of 4: a clear error naming --set_size.
    with pytest.raises(ValueError, match="--batch.set_size=64"):
        faces_cars.YALEB.make_dataset(yaleb_config(tmp_path, set_size=64), seed=0)
    # An empty person folder is skipped with a warning.
    os.makedirs(tmp_path / "yaleB15")
    with caplog.at_level(logging.WARNING):
        faces_cars.YALEB.make_dataset(yaleb_config(tmp_path, inactive_factors="person"), seed=0)
    assert "yaleB15 (0)" in caplog.text
    # A PGM that does not follow the naming, or sits in another person's folder, is an error.
    write_pgm(str(tmp_path / "yaleB12" / "yaleB11_P00A+000E+00.pgm"), np.zeros((4, 4)))
    with pytest.raises(ValueError, match="in the folder of yaleB12"):
        faces_cars.YALEB.grouped_images(yaleb_config(tmp_path))
    os.remove(tmp_path / "yaleB12" / "yaleB11_P00A+000E+00.pgm")
    write_pgm(str(tmp_path / "yaleB12" / "face.pgm"), np.zeros((4, 4)))
    with pytest.raises(ValueError, match="face.pgm: not an Extended YaleB file name"):
        faces_cars.YALEB.grouped_images(yaleb_config(tmp_path))
    os.remove(tmp_path / "yaleB12" / "face.pgm")
    # A corrupt image names its file.
    with open(tmp_path / "yaleB13" / "yaleB13_P01A+025E-20.pgm", "wb") as handle:
        handle.write(b"P5\n32 24\n255\n\0\0")
    with pytest.raises(ValueError, match=r"yaleB13_P01A\+025E-20.pgm"):
        faces_cars.YALEB.grouped_images(yaleb_config(tmp_path))


# ----------------------------------------------------------------------------- EPFL cars

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
    grouped = faces_cars.EPFL_CARS.grouped_images(epfl_config(tmp_path))
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
    azimuth = faces_cars.EPFL_CARS.grouped_images(epfl_config(tmp_path)).attributes["azimuth"][:10]
    # Times 0 4 8 12 16 22 26 30 34 38: a full turn at frame 9 (t = 34), front at t = 8.
    t = np.array([0, 4, 8, 12, 16, 22, 26, 30, 34, 38], float)
    np.testing.assert_allclose(azimuth, np.mod((t - 8) * 360 / 34, 360))


def test_epfl_sets_are_frames_of_one_sequence(tmp_path):
    make_epfl(str(tmp_path))
    config = epfl_config(tmp_path, pairs_per_step=2)
    assert get_family("epfl_cars").image_shape(get_preset("epfl_cars")) == (64, 64, 3) and get_preset("epfl_cars").batch.set_size == 81
    dataset = get_family("epfl_cars").make_dataset(config, seed=0)
    assert dataset.element_spec["set_a"].shape == (2, 8, 8, 8, 3)
    for batch in dataset.take(5):
        for pair in range(2):
            car_a = np.round((batch["set_a"].numpy()[pair, :, 5, 4, 0] - 40) / 80.0)
            car_b = np.round((batch["set_b"].numpy()[pair, :, 5, 4, 0] - 40) / 80.0)
            assert len(set(car_a)) == 1 and len(set(car_b)) == 1 and car_a[0] != car_b[0]


def test_epfl_bad_input(tmp_path, caplog):
    with pytest.raises(ValueError, match="no tripod-seq.txt"):
        faces_cars.EPFL_CARS.grouped_images(epfl_config(tmp_path))
    make_epfl(str(tmp_path))
    with pytest.raises(ValueError, match="use 'car'"):
        faces_cars.EPFL_CARS.grouped_images(epfl_config(tmp_path, inactive_factors="person"))
    # Sequence 3 (9 frames) is shorter than the set: skipped with a warning; 2 remain.
    with caplog.at_level(logging.WARNING):
        faces_cars.EPFL_CARS.make_dataset(epfl_config(tmp_path, set_size=10), seed=0)
    assert "seq_03 (9)" in caplog.text
    with pytest.raises(ValueError, match="--batch.set_size=11"):
        faces_cars.EPFL_CARS.make_dataset(epfl_config(tmp_path, set_size=11), seed=0)
    # A missing frame names its file.
    os.remove(tmp_path / "tripod_seq_02_004.jpg")
    with pytest.raises(ValueError, match="tripod_seq_02_004.jpg is missing"):
        faces_cars.EPFL_CARS.grouped_images(epfl_config(tmp_path))
    # Malformed metadata names the line.
    metadata = tmp_path / "tripod-seq.txt"
    lines = metadata.read_text().splitlines()
    metadata.write_text("\n".join(lines[:5] + ["3 1"] + lines[6:]) + "\n")
    with pytest.raises(ValueError, match="line 6: 2 values for frontal frame"):
        faces_cars.EPFL_CARS.grouped_images(epfl_config(tmp_path))
    metadata.write_text("\n".join(lines[:6] + ["1 0 1"]) + "\n")
    with pytest.raises(ValueError, match="line 7: rotation direction of sequence 2"):
        faces_cars.EPFL_CARS.grouped_images(epfl_config(tmp_path))
    metadata.write_text("\n".join(lines[:3]) + "\n")
    with pytest.raises(ValueError, match="7 expected"):
        faces_cars.EPFL_CARS.grouped_images(epfl_config(tmp_path))
    metadata.write_text("\n".join(lines))
    (tmp_path / "times.txt").write_text("0 1 2\n")
    with pytest.raises(ValueError, match="times.txt: 1 lines"):
        faces_cars.EPFL_CARS.grouped_images(epfl_config(tmp_path))

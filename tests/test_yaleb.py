"""Extended YaleB in its distributed layout (abc_tf/data/yaleb: the family ``yaleb``).

The tests write small data sets with the real file naming: PGM faces
``yaleB11/yaleB11_P00A+000E+00.pgm`` (plus ambient images and an info file).
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from abc_tf.runs.experiments import get_preset
from abc_tf.data import get_family
from abc_tf.data.yaleb import family as yaleb
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
    grouped = yaleb.FAMILY.grouped_images(yaleb_config(tmp_path))
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
    dataset = get_family("yaleb").stream("sets")(yaleb_config(tmp_path, pairs_per_step=2), seed=0)
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
    grouped = yaleb.FAMILY.grouped_images(config)
    assert grouped.group_names == list(PERSONS) and list(grouped.group_index().counts) == [8, 8, 8]
    two_poses = 0
    for batch in yaleb.FAMILY.stream("sets")(config, seed=0).take(10):
        codes = batch["set_a"].numpy()[0, :, 0, 0, 0].astype(int) - 10
        assert len(set(codes // 60)) == 1 and len(set(codes)) == 6  # one person, distinct images
        two_poses += len(set((codes % 60) // 20)) == 2
    assert two_poses == 10  # 6 of 8 images always include both poses


@pytest.mark.slow
def test_yaleb_preset_shapes_and_views(tmp_path):
    make_yaleb(str(tmp_path))
    assert get_family("yaleb").image_shape(get_preset("yaleb_illumination")) == (64, 64, 1)
    assert get_preset("yaleb_pose_illumination").batch.set_size == 384
    config = yaleb_config(tmp_path, augmentations="contrast:0.3,crop:0.2", double_augmentation=True)
    batch = next(iter(yaleb.FAMILY.stream("sets")(config, seed=0)))
    assert sorted(batch) == ["set_a", "set_a_view2", "set_b", "set_b_view2"]
    assert batch["set_b_view2"].shape == (1, 4, 8, 8, 1) and batch["set_b_view2"].dtype == tf.float32


def test_yaleb_bad_input(tmp_path, caplog):
    with pytest.raises(
        ValueError, match="--data.source=files needs --data.path: a folder of images, the yaleb data set"
    ):
        yaleb.FAMILY.stream("sets")(yaleb_config(""), seed=0)
    with pytest.raises(ValueError, match="no person folders"):
        yaleb.FAMILY.stream("sets")(yaleb_config(tmp_path), seed=0)
    make_yaleb(str(tmp_path))
    with pytest.raises(ValueError, match="--data.inactive_factors='wall_hue' for yaleb"):
        yaleb.FAMILY.stream("sets")(yaleb_config(tmp_path, inactive_factors="wall_hue"), seed=0)
    # The paper's 64 illuminations do not fit groups of 4: a clear error naming --set_size.
    with pytest.raises(ValueError, match="--batch.set_size=64"):
        yaleb.FAMILY.stream("sets")(yaleb_config(tmp_path, set_size=64), seed=0)
    # An empty person folder is skipped with a warning.
    os.makedirs(tmp_path / "yaleB15")
    with caplog.at_level(logging.WARNING):
        yaleb.FAMILY.stream("sets")(yaleb_config(tmp_path, inactive_factors="person"), seed=0)
    assert "yaleB15 (0)" in caplog.text
    # A PGM that does not follow the naming, or sits in another person's folder, is an error.
    write_pgm(str(tmp_path / "yaleB12" / "yaleB11_P00A+000E+00.pgm"), np.zeros((4, 4)))
    with pytest.raises(ValueError, match="in the folder of yaleB12"):
        yaleb.FAMILY.grouped_images(yaleb_config(tmp_path))
    os.remove(tmp_path / "yaleB12" / "yaleB11_P00A+000E+00.pgm")
    write_pgm(str(tmp_path / "yaleB12" / "face.pgm"), np.zeros((4, 4)))
    with pytest.raises(ValueError, match="face.pgm: not an Extended YaleB file name"):
        yaleb.FAMILY.grouped_images(yaleb_config(tmp_path))
    os.remove(tmp_path / "yaleB12" / "face.pgm")
    # A corrupt image names its file.
    with open(tmp_path / "yaleB13" / "yaleB13_P01A+025E-20.pgm", "wb") as handle:
        handle.write(b"P5\n32 24\n255\n\0\0")
    with pytest.raises(ValueError, match=r"yaleB13_P01A\+025E-20.pgm"):
        yaleb.FAMILY.grouped_images(yaleb_config(tmp_path))

"""Grouped folders (abc_tf.data.folders.family): messy layouts, set sampling, labels, training. Image
files: tests/test_image_files.py; label CSVs: tests/test_labels_csv.py."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from abc_tf.data import get_family
from abc_tf.data.folders import family as folders
from folder_helpers import config_for, make_folder
from image_helpers import write_bmp, write_jpeg, write_png


def test_unreadable_image_in_a_group_stops_loading(tmp_path):
    make_folder(str(tmp_path), {"a": 4, "b": 4})
    (tmp_path / "b" / "broken.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    with pytest.raises(ValueError, match="broken.jpg"):
        folders.make_dataset(config_for(tmp_path), seed=0)


def test_mixed_sizes_and_channels_are_resized_to_image_size(tmp_path):
    write_png(str(tmp_path / "a" / "big.png"), np.full((40, 30, 3), 200, np.uint8))
    write_png(str(tmp_path / "a" / "small.png"), np.full((6, 9, 1), 100, np.uint8))  # gray PNG
    write_jpeg(str(tmp_path / "a" / "photo.jpg"), np.full((16, 16, 3), 50, np.uint8))
    write_bmp(str(tmp_path / "a" / "icon.bmp"), np.full((5, 5, 3), 10, np.uint8))
    grouped = folders.load_grouped_folder(tmp_path, image_size=8, channels=3)
    assert grouped.images.shape == (4, 8, 8, 3) and grouped.images.dtype == np.uint8
    by_file = dict(zip(grouped.files, grouped.images))
    # Flat images stay flat through resizing (JPEG within rounding).
    assert np.all(by_file[os.path.join("a", "big.png")] == 200)
    assert np.all(by_file[os.path.join("a", "small.png")] == 100)
    assert np.all(np.abs(by_file[os.path.join("a", "photo.jpg")].astype(int) - 50) <= 2)
    assert np.all(by_file[os.path.join("a", "icon.bmp")] == 10)


# ----------------------------------------------------------------------------- layout errors


def test_missing_or_empty_directories_raise(tmp_path):
    with pytest.raises(ValueError, match="--data.path is empty"):
        folders.make_dataset(config_for(""), seed=0)
    with pytest.raises(ValueError, match="not a directory"):
        folders.make_dataset(config_for(tmp_path / "nope"), seed=0)
    with pytest.raises(ValueError, match="no sub-folders"):
        folders.make_dataset(config_for(tmp_path), seed=0)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "notes.txt").write_text("not an image")
    with pytest.raises(ValueError, match="no images in any group"):
        folders.make_dataset(config_for(tmp_path), seed=0)


def test_small_and_empty_groups_are_skipped_with_a_warning(tmp_path, caplog):
    make_folder(str(tmp_path), {"a": 5, "b": 4, "c": 2})
    (tmp_path / "empty").mkdir()
    with caplog.at_level(logging.WARNING, logger="abc_tf.data.groups"):
        dataset = folders.make_dataset(config_for(tmp_path, set_size=4), seed=0)
    assert "c (2)" in caplog.text and "empty (0)" in caplog.text
    seen = set()
    for batch in dataset.take(10):
        for key in ("set_a", "set_b"):
            seen.update(np.unique(batch[key].numpy()[..., 0]).tolist())
    assert seen == {10, 30}  # groups a and b only (red = 20 * group + 10)


def test_too_few_large_groups_is_an_error(tmp_path):
    make_folder(str(tmp_path), {"a": 5, "b": 2})
    with pytest.raises(ValueError, match=r"--batch.set_size=4: only 1 of 2 group\(s\)"):
        folders.make_dataset(config_for(tmp_path, set_size=4), seed=0)
    # An unconstrained set B needs one large group only.
    folders.make_dataset(config_for(tmp_path, set_size=4, curate_both_sets=False), seed=0)
    with pytest.raises(ValueError, match="--batch.set_size=6"):
        folders.make_dataset(config_for(tmp_path, set_size=6, curate_both_sets=False), seed=0)


def test_bad_image_settings_name_the_flag(tmp_path):
    make_folder(str(tmp_path), {"a": 3, "b": 3})
    with pytest.raises(ValueError, match="--data.image_channels"):
        folders.make_dataset(config_for(tmp_path, image_channels=2), seed=0)
    with pytest.raises(ValueError, match="--data.augmentations"):
        folders.make_dataset(config_for(tmp_path, augmentations="blur:0.1"), seed=0)


# ----------------------------------------------------------------------------- set sampling


def test_sets_come_from_one_group_each_and_differ_between_a_and_b(tmp_path):
    make_folder(str(tmp_path), {"a": 6, "b": 5, "c": 7, "d": 4})
    dataset = folders.make_dataset(config_for(tmp_path, set_size=4, pairs_per_step=3), seed=1)
    assert dataset.element_spec["set_a"].shape == (3, 4, 8, 8, 3)
    groups_used = set()
    for batch in dataset.take(20):
        for pair in range(3):
            red_a = batch["set_a"].numpy()[pair, :, 0, 0, 0]
            red_b = batch["set_b"].numpy()[pair, :, 0, 0, 0]
            assert len(set(red_a)) == 1 and len(set(red_b)) == 1 and red_a[0] != red_b[0]
            groups_used.add(int(red_a[0]))
            # Distinct images within a set (no replacement).
            for key in ("set_a", "set_b"):
                green = batch[key].numpy()[pair, :, 0, 0, 1]
                assert len(set(green)) == len(green)
    assert groups_used == {10, 30, 50, 70}


def test_unconstrained_set_b_mixes_groups(tmp_path):
    make_folder(str(tmp_path), {"a": 6, "b": 6, "c": 6})
    dataset = folders.make_dataset(config_for(tmp_path, set_size=6, curate_both_sets=False), seed=0)
    mixed = 0
    for batch in dataset.take(10):
        for pair in range(2):
            pixels = batch["set_b"].numpy()[pair, :, 0, 0, :2]
            assert len({tuple(p) for p in pixels}) == 6  # distinct images
            mixed += len(set(pixels[:, 0])) > 1
            assert len(set(batch["set_a"].numpy()[pair, :, 0, 0, 0])) == 1
    assert mixed >= 15


@pytest.mark.slow
def test_batches_are_reproducible_from_the_seed(tmp_path):
    make_folder(str(tmp_path), {"a": 6, "b": 6, "c": 6})
    config = config_for(tmp_path, augmentations="contrast:0.3,crop:0.2", double_augmentation=True)
    first = [b["set_a_view2"].numpy() for b in folders.make_dataset(config, seed=3).take(3)]
    again = [b["set_a_view2"].numpy() for b in folders.make_dataset(config, seed=3).take(3)]
    other = [b["set_a_view2"].numpy() for b in folders.make_dataset(config, seed=4).take(3)]
    np.testing.assert_array_equal(np.stack(first), np.stack(again))
    assert not np.array_equal(np.stack(first), np.stack(other))


@pytest.mark.slow
def test_double_augmentation_gives_two_float_views(tmp_path):
    make_folder(str(tmp_path), {"a": 4, "b": 4})
    config = config_for(
        tmp_path, augmentations="contrast:0.5,saturation:0.5,crop:0.3", double_augmentation=True
    )
    batch = next(iter(folders.make_dataset(config, seed=0)))
    assert sorted(batch) == ["set_a", "set_a_view2", "set_b", "set_b_view2"]
    for value in batch.values():
        assert value.dtype == tf.float32 and value.shape == (2, 3, 8, 8, 3)
        assert 0.0 <= float(tf.reduce_min(value)) and float(tf.reduce_max(value)) <= 1.0
    assert not np.allclose(batch["set_a"].numpy(), batch["set_a_view2"].numpy())
    # Without augmentation the images stay uint8 and unchanged.
    plain = next(iter(folders.make_dataset(config_for(tmp_path), seed=0)))
    assert sorted(plain) == ["set_a", "set_b"] and plain["set_a"].dtype == tf.uint8


# ----------------------------------------------------------------------------- labels CSV


def test_labels_csv_matches_paths_and_names(tmp_path):
    make_folder(str(tmp_path), {"a": 3, "b": 2})
    (tmp_path / "labels.csv").write_text(
        "filename,colour,size\n"
        "a/img_000.png,red,1\n"
        "./a/img_001.png,blue,2\n"
        "b/img_000.png,red,\n"
        "b/img_001.png,green,3\n"
    )
    grouped = folders.load(config_for(tmp_path))
    by_file = {f.replace(os.sep, "/"): i for i, f in enumerate(grouped.files)}
    colour, size = grouped.labels["colour"], grouped.labels["size"]
    assert list(grouped.label_values["colour"]) == ["blue", "green", "red"]
    assert colour[by_file["a/img_000.png"]] == 2 and colour[by_file["a/img_001.png"]] == 0
    assert colour[by_file["a/img_002.png"]] == -1  # no row: unknown
    assert size[by_file["b/img_000.png"]] == -1  # empty cell: unknown
    np.testing.assert_array_equal(grouped.label_values["size"], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(grouped.labels["group"], [0, 0, 0, 1, 1])


def test_labels_csv_errors_stop_loading(tmp_path):
    """A bad labels.csv stops loading (the CSV's own errors: tests/test_labels_csv.py)."""
    make_folder(str(tmp_path), {"a": 2, "b": 2})
    csv_path = tmp_path / "labels.csv"
    csv_path.write_text("filename,group\na/img_000.png,x\n")
    with pytest.raises(ValueError, match="'group' is reserved"):
        folders.load(config_for(tmp_path))
    with pytest.raises(ValueError, match="does not exist"):
        folders.load(config_for(tmp_path), labels_csv=str(tmp_path / "other.csv"))


# ----------------------------------------------------------------------------- end to end


@pytest.mark.slow
def test_family_registration_and_a_short_training_run(tmp_path):
    from abc_tf.runs import training

    make_folder(str(tmp_path / "data"), {"a": 6, "b": 6, "c": 6}, image_size=(20, 16))
    assert get_family("folders") is folders.FAMILY
    config = config_for(
        tmp_path / "data",
        image_size=32,
        set_size=4,
        pairs_per_step=1,
        steps=2,
        log_every=1,
        augmentations="contrast:0.3,saturation:0.3,crop:0.2",
        double_augmentation=True,
    )
    assert folders.image_shape(config) == (32, 32, 3)
    result = training.train(config, str(tmp_path / "run"), verbose=0)
    assert len(result.history["loss"]) == 2 and np.all(np.isfinite(result.history["loss"]))

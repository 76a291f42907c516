"""Shapes3D family (abc_tf.data.shapes3d.family): the tf.data pipeline, bad input. The procedural
renderer: tests/test_shapes3d_scenes.py; the h5 and tfds backends: tests/test_shapes3d_sources.py."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from abc_tf.runs.experiments import get_preset
from abc_tf.data import factor_grid
from abc_tf.data.shapes3d import family as s3d
from abc_tf.data.shapes3d import scenes as render

SIZES = np.array(s3d.FACTOR_SIZES)


def config(**overrides):
    return get_preset("shapes3d").replace(**overrides)


# ---------------------------------------------------------------- pipeline (procedural)


def test_batches_have_the_contract_format_and_are_the_curated_sets():
    cfg = config(set_size=8, pairs_per_step=2)
    batch = next(iter(s3d.make_dataset(cfg, seed=5)))
    assert set(batch) == {"set_a", "set_b"}
    for key in batch:
        assert batch[key].shape == (2, 8, 64, 64, 3) and batch[key].dtype == tf.uint8
    # The images are exactly those of the curated ids of step 0: wall hue fixed per set.
    curator = factor_grid.SetCurator(s3d.GRID, s3d.inactive_factors(cfg), cfg.batch.set_size)
    ids_a, ids_b = s3d.step_item_ids(curator, cfg, seed=5, step=0)
    np.testing.assert_array_equal(batch["set_a"].numpy(), render.render(s3d.GRID.unravel(ids_a)))
    np.testing.assert_array_equal(batch["set_b"].numpy(), render.render(s3d.GRID.unravel(ids_b)))
    for ids in (ids_a, ids_b):
        walls = s3d.GRID.unravel(ids)[..., s3d.FACTOR_NAMES.index("wall_hue")]
        assert np.all(walls == walls[:, :1])


def test_set_b_unconstrained_and_four_inactive_factors():
    cfg = config(set_size=16, pairs_per_step=4, curate_both_sets=False, inactive_factors="0,1,2,scale")
    inactive = s3d.inactive_factors(cfg)
    curator = factor_grid.SetCurator(s3d.GRID, inactive, cfg.batch.set_size)
    ids_a, ids_b = s3d.step_item_ids(curator, cfg, seed=0, step=3)
    factors_a, factors_b = s3d.GRID.unravel(ids_a), s3d.GRID.unravel(ids_b)
    for f in range(6):
        distinct_a = [np.unique(x[:, f]).size for x in factors_a]
        assert all(d == 1 for d in distinct_a) if f in inactive else all(d > 1 for d in distinct_a)
        assert all(np.unique(x[:, f]).size > 1 for x in factors_b)  # set B: nothing fixed
    batch = next(iter(s3d.make_dataset(cfg, seed=0)))
    assert batch["set_b"].shape == (4, 16, 64, 64, 3)


def test_dataset_is_reproducible_from_its_seed():
    cfg = config(set_size=4)
    first = [b["set_a"].numpy() for b in s3d.make_dataset(cfg, seed=11).take(3)]
    again = [b["set_a"].numpy() for b in s3d.make_dataset(cfg, seed=11).take(3)]
    other = [b["set_a"].numpy() for b in s3d.make_dataset(cfg, seed=12).take(3)]
    np.testing.assert_array_equal(np.stack(first), np.stack(again))
    assert not np.array_equal(np.stack(first), np.stack(other))
    assert not np.array_equal(first[0], first[1])  # steps differ


def test_hue_augmentation_baseline_gives_two_hue_views_of_one_batch():
    cfg = get_preset("shapes3d_hue_baseline").replace(set_size=8, pairs_per_step=2)
    batch = next(iter(s3d.make_dataset(cfg, seed=0)))
    assert set(batch) == {"set_a", "set_a_view2"}
    first, second = batch["set_a"].numpy(), batch["set_a_view2"].numpy()
    assert first.shape == second.shape == (2, 8, 64, 64, 3) and first.dtype == np.float32
    assert not np.allclose(first, second)
    # Only the hue moved: value (max channel) is the same in both views (HSV's back conversion
    # returns v itself as one channel; the tolerance only for the record).
    np.testing.assert_allclose(first.max(axis=-1), second.max(axis=-1), atol=1e-5)


def test_double_augmentation_with_named_augmentations():
    cfg = config(set_size=4, augmentations="hue:0.1", double_augmentation=True)
    batch = next(iter(s3d.make_dataset(cfg, seed=0)))
    assert set(batch) == {"set_a", "set_a_view2", "set_b", "set_b_view2"}
    assert batch["set_b_view2"].shape == (1, 4, 64, 64, 3) and batch["set_b_view2"].dtype == tf.float32
    assert not np.allclose(batch["set_a"], batch["set_a_view2"])


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"inactive_factors": "wall_hue,texture"}, "--data.inactive_factors: unknown factor 'texture'"),
        ({"inactive_factors": "7"}, "unknown factor '7'"),
        ({"inactive_factors": "0,1,2,3,4,5"}, "All 6 factors"),
        ({"inactive_factors": ""}, "--data.inactive_factors is empty"),
        ({"inactive_factors": "0,1,2,3,5"}, "exceeds the 4 distinct images.*--data.sample_with_replacement"),
        ({"source": "zip"}, "--data.source='zip' is not a source of data family 'shapes3d'"),
        ({"augmentation_baseline": True, "augmentations": "hue:0.1"}, "makes its own two random_hue"),
        ({"double_augmentation": True}, "needs --data.augmentations"),
        ({"source": "h5"}, "needs --data.path"),
    ],
)
def test_bad_settings_are_clear_errors(overrides, message):
    with pytest.raises(ValueError, match=message):
        s3d.make_dataset(config(**overrides), seed=0)


def test_replacement_on_request_allows_large_sets():
    cfg = config(inactive_factors="0,1,2,3,5", set_size=6, sample_with_replacement=True)
    batch = next(iter(s3d.make_dataset(cfg, seed=0)))
    images = batch["set_a"].numpy()[0]
    assert len({image.tobytes() for image in images}) <= 4  # at most the 4 shapes


def test_labelled_sample_is_uniform_and_labelled():
    images, factors = s3d.labelled_sample(config(), 600, seed=0)
    assert images.shape == (600, 64, 64, 3) and images.dtype == np.uint8 and factors.shape == (600, 6)
    np.testing.assert_array_equal(images, render.render(factors))
    assert np.unique(s3d.GRID.ravel(factors)).size == 600
    for f, size in enumerate(SIZES):
        assert np.unique(factors[:, f]).size == size


def test_images_of_given_factor_values():
    factors = np.array([[0, 1, 2, 3, 0, 14], [9, 9, 9, 7, 3, 0], [0, 1, 2, 3, 0, 14]])
    images = s3d.FAMILY.known_factors.images_of(config(), factors)
    np.testing.assert_array_equal(images, render.render(factors))
    with pytest.raises(ValueError, match="outside the factor sizes"):
        s3d.images_of(config(), np.array([[10, 0, 0, 0, 0, 0]]))
    with pytest.raises(ValueError, match=r"shape \[n, 6\]"):
        s3d.images_of(config(), np.zeros((2, 5), np.int64))


def test_images_of_a_partial_copy_takes_the_first_record_or_says_none(monkeypatch):
    class Partial:
        description = "partial copy"
        items = np.array([[0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1]])

        def images(self, ids):
            return np.asarray(ids, np.uint8)[:, None, None, None] * np.ones((1, 64, 64, 3), np.uint8)

    monkeypatch.setattr(s3d, "_open_cached", lambda *args: Partial())
    images = s3d.images_of(config(), np.array([[0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0]]))
    assert images[:, 0, 0, 0].tolist() == [0, 1]
    with pytest.raises(ValueError, match=r"holds no image of the factor values \[0, 0, 0, 0, 1, 0\]"):
        s3d.images_of(config(), np.array([[0, 0, 0, 0, 1, 0]]))

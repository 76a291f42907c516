"""Shapes3D pairs (abc_tf.data.shapes3d.pairs): exactly one factor differs in every pair, the
changed factor is uniform and its new value differs, draws are a pure function of (seed, step),
the three backends give the same pairs, and bad settings are clear errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import tensorflow as tf

from abc_tf.runs import experiments
from abc_tf.runs.experiments import get_preset
from abc_tf.data import factor_grid
from abc_tf.data.shapes3d import family as s3d
from abc_tf.data.shapes3d import pairs
from abc_tf.data.shapes3d import sources
from shapes3d_helpers import code_image, decode_image, write_h5

GRID = sources.GRID
SIZES = np.array(sources.FACTOR_SIZES)


def config(**overrides):
    return experiments.choose(get_preset("shapes3d"), method="pmp", **overrides)


def check_pairs(first: np.ndarray, second: np.ndarray, changed: np.ndarray) -> None:
    """Factor indices [n, 6] of both images: they differ in exactly the reported factor."""
    differs = first != second
    assert np.all(differs.sum(axis=1) == 1)
    np.testing.assert_array_equal(differs.argmax(axis=1), changed)


# ---------------------------------------------------------------- the sampling rule


def test_exactly_one_factor_differs_and_the_changed_factor_is_uniform():
    sampler = pairs.PairSampler(GRID, range(6))
    num = 60_000
    first, second, changed = sampler.draw(np.random.default_rng(11), num)
    check_pairs(GRID.unravel(first), GRID.unravel(second), changed)
    # Uniform over the six factors: each count within 5 standard deviations of num / 6 (fixed seed).
    counts = np.bincount(changed, minlength=6)
    sd = np.sqrt(num * (1 / 6) * (5 / 6))
    assert np.all(np.abs(counts - num / 6) < 5 * sd), counts
    # x1 is uniform over the grid: every factor's values about equally often.
    for factor, size in enumerate(SIZES):
        values = np.bincount(GRID.unravel(first)[:, factor], minlength=size)
        assert np.all(np.abs(values - num / size) < 5 * np.sqrt(num / size)), (factor, values)


def test_the_new_value_differs_and_is_uniform_over_the_other_values():
    orientation = sources.FACTOR_NAMES.index("orientation")
    sampler = pairs.PairSampler(GRID, [orientation])
    num = 30_000
    first, second, changed = sampler.draw(np.random.default_rng(12), num)
    assert np.all(changed == orientation)
    old, new = GRID.unravel(first)[:, orientation], GRID.unravel(second)[:, orientation]
    shifts = (new - old) % 15
    assert np.all(shifts > 0)
    counts = np.bincount(shifts, minlength=15)[1:]  # 14 other values
    assert np.all(np.abs(counts - num / 14) < 5 * np.sqrt(num / 14)), counts


def test_pair_factors_restrict_the_changing_factors():
    cfg = config(pair_factors="scale, 0")  # a name and an authors' digit (0 = wall_hue)
    changing = pairs.changing_factors(cfg)
    assert changing == (sources.FACTOR_NAMES.index("wall_hue"), sources.FACTOR_NAMES.index("scale"))
    _, _, changed = pairs.PairSampler(GRID, changing).draw(np.random.default_rng(0), 2000)
    assert set(changed.tolist()) == set(changing)
    assert pairs.changing_factors(config()) == tuple(range(6))


def test_draws_are_a_pure_function_of_seed_and_step():
    sampler = pairs.PairSampler(GRID, range(6))
    first = pairs.step_pair_ids(sampler, seed=5, step=3, num=16)[0]
    assert first.shape == (2, 16) and first.dtype == np.int64
    np.testing.assert_array_equal(first, pairs.step_pair_ids(sampler, seed=5, step=3, num=16)[0])
    assert not np.array_equal(first, pairs.step_pair_ids(sampler, seed=5, step=4, num=16)[0])
    assert not np.array_equal(first, pairs.step_pair_ids(sampler, seed=6, step=3, num=16)[0])


def test_item_tables_pair_the_items_present_only():
    # A partial copy of the grid with repeated records: every pair is two records present that
    # differ in one factor, and x2 is uniform among x1's partners.
    rng = np.random.default_rng(2)
    items = GRID.unravel(rng.choice(GRID.num_points, size=30_000, replace=False))
    items = np.concatenate([items, items[:300]])
    sampler = pairs.PairSampler(GRID, range(6), items=items)
    first, second, changed = sampler.draw(np.random.default_rng(3), 20_000)
    assert np.all(first != second)
    check_pairs(items[first], items[second], changed)
    # A tiny table written out by hand: item 0 has partners 1, 2 and 3 (a repeat of 2) in
    # scale, item 4 has none (its wall hue is unique), so it is never drawn for scale.
    scale = sources.FACTOR_NAMES.index("scale")
    base = np.zeros(6, np.int64)
    table = np.array(
        [
            base,
            base + np.eye(6, dtype=np.int64)[scale],
            base + 2 * np.eye(6, dtype=np.int64)[scale],
            base + 2 * np.eye(6, dtype=np.int64)[scale],
            base + np.eye(6, dtype=np.int64)[1],
        ]
    )
    first, second, _ = pairs.PairSampler(GRID, [scale], items=table).draw(np.random.default_rng(4), 9000)
    assert 4 not in first and 4 not in second
    partners_of_0 = np.bincount(second[first == 0], minlength=5)
    assert partners_of_0[0] == 0 and partners_of_0[4] == 0
    assert np.all(
        np.abs(partners_of_0[1:4] - partners_of_0[1:4].mean()) < 5 * np.sqrt(partners_of_0[1:4].mean())
    )
    for one, two in zip(first, second):
        assert np.sum(table[one] != table[two]) == 1


# ---------------------------------------------------------------- the three backends


def test_procedural_pipeline_gives_the_drawn_pairs():
    cfg = config(pairs_per_step=6)
    sampler = pairs.PairSampler(GRID, pairs.changing_factors(cfg))
    source = sources.ProceduralSource()
    batches = list(pairs.make_pairs_dataset(cfg, seed=9).take(2))
    for step, batch in enumerate(batches):
        assert set(batch) == {"x1", "x2"}
        assert batch["x1"].shape == (6, 64, 64, 3) and batch["x1"].dtype == tf.uint8
        ids = pairs.step_pair_ids(sampler, 9, step, 6)[0]
        np.testing.assert_array_equal(batch["x1"].numpy(), source.images(ids[0]))
        np.testing.assert_array_equal(batch["x2"].numpy(), source.images(ids[1]))
    again = next(iter(pairs.make_pairs_dataset(cfg, seed=9)))
    np.testing.assert_array_equal(again["x2"].numpy(), batches[0]["x2"].numpy())
    # The family streams the format, and the stream is this one.
    assert s3d.FAMILY.stream("pairs") is pairs.make_pairs_dataset
    # --batch.pair_labels adds the changed factor's position, as drawn.
    labelled = next(iter(pairs.make_pairs_dataset(config(pairs_per_step=6, pair_labels=True), seed=9)))
    ids, changed = pairs.step_pair_ids(sampler, 9, 0, 6)
    assert set(labelled) == {"x1", "x2", "changed_factor"} and labelled["changed_factor"].dtype == tf.int64
    np.testing.assert_array_equal(labelled["changed_factor"].numpy(), changed)
    np.testing.assert_array_equal(np.argmax(GRID.unravel(ids[0]) != GRID.unravel(ids[1]), axis=1), changed)


def test_h5_pipeline_gives_pairs_that_differ_in_one_factor(tmp_path):
    cfg = config(source="h5", pairs_per_step=5)
    sampler = pairs.PairSampler(GRID, range(6))
    ids = np.concatenate([pairs.step_pair_ids(sampler, 4, step, 5)[0].ravel() for step in range(2)])
    path = write_h5(tmp_path / "3dshapes.h5", coded_rows=np.unique(ids))
    for batch in pairs.make_pairs_dataset(cfg.replace(path=str(path)), seed=4).take(2):
        first, second = decode_image(batch["x1"].numpy()), decode_image(batch["x2"].numpy())
        assert np.all((first != second).sum(axis=1) == 1)


def _mock_shapes3d(records: np.ndarray):
    """tfds mock records: one encoded image carrying its factors per row of ``records``."""

    def as_dataset(*args, **kwargs):
        images = [tf.io.encode_png(code_image(row)).numpy() for row in records]
        features = {"image": tf.constant(images)}
        for column, name in enumerate(sources.FACTOR_NAMES):
            features[f"label_{name}"] = tf.constant(records[:, column], tf.int64)
        return tf.data.Dataset.from_tensor_slices(features)

    return as_dataset


def test_tfds_pipeline_on_a_partial_grid():
    tfds = pytest.importorskip("tensorflow_datasets")
    # 64 records: floor hue 0-1 x scale 0-7 x shape 0-3, the other factors fixed.
    records = np.array(
        [
            [floor, 0, 0, scale, shape, 0]
            for floor, scale, shape in itertools.product(range(2), range(8), range(4))
        ]
    )
    with tfds.testing.mock_data(as_dataset_fn=_mock_shapes3d(records)):
        cfg = config(source="tfds", pairs_per_step=8, pair_factors="floor_hue,scale,shape")
        for batch in pairs.make_pairs_dataset(cfg, seed=1).take(3):
            first, second = decode_image(batch["x1"].numpy()), decode_image(batch["x2"].numpy())
            assert np.all((first != second).sum(axis=1) == 1)
            assert np.all(first[:, [1, 2, 5]] == 0) and np.all(second[:, [1, 2, 5]] == 0)
        # Every factor by default: the wall hue never varies among these records.
        with pytest.raises(
            ValueError, match=r"--batch.pair_factors: among the 64 images .* no two differ in wall_hue alone"
        ):
            pairs.make_pairs_dataset(config(source="tfds", pairs_per_step=8), seed=1)


# ---------------------------------------------------------------- bad settings


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            {"pair_factors": "colour"},
            r"--batch.pair_factors: unknown factor 'colour'\. Use factor names \(floor_hue",
        ),
        ({"pair_factors": " , "}, r"--batch.pair_factors names no factor"),
        ({"augmentations": "hue:0.1"}, r"--data.augmentations does not apply to pairs"),
        ({"source": "mnist"}, r"--data.source='mnist' is not a source of data family 'shapes3d'"),
    ],
)
def test_bad_settings_are_clear_errors_before_any_data(overrides, message):
    with pytest.raises(ValueError, match=message):
        pairs.check_config(config(**overrides))
    with pytest.raises(ValueError, match=message):
        pairs.make_pairs_dataset(config(**overrides), seed=0)


def test_a_factor_with_one_value_is_refused():
    grid = factor_grid.FactorGrid(("hue", "size", "shape"), (5, 1, 3))
    with pytest.raises(ValueError, match=r"--batch.pair_factors: factor\(s\) size take a single value"):
        pairs.PairSampler(grid, [0, 1])
    sampler = pairs.PairSampler(grid, [0, 2])  # leaving it out works
    first, second, changed = sampler.draw(np.random.default_rng(0), 500)
    check_pairs(grid.unravel(first), grid.unravel(second), changed)
    # On an item table, a factor that shows a single value among the items present.
    items = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0]])
    with pytest.raises(ValueError, match=r"no two differ in shape alone \(1 value\(s\) present\)"):
        pairs.PairSampler(grid, [0, 2], items=items)

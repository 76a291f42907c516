"""Set curation by index arithmetic (abc_tf.data.factor_grid) on the Shapes3D grid and on item tables
(the sampler underneath is tested in tests/test_groups.py)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from abc_tf.data import factor_grid
from abc_tf.data.shapes3d.family import FACTOR_NAMES, FACTOR_SIZES, GRID

WALL, OBJECT, FLOOR, SCALE, SHAPE, ORIENTATION = (
    FACTOR_NAMES.index(n) for n in ("wall_hue", "object_hue", "floor_hue", "scale", "shape", "orientation")
)


def test_mixed_radix_has_orientation_fastest():
    assert GRID.num_points == 480000
    np.testing.assert_array_equal(GRID.strides, [48000, 4800, 480, 60, 15, 1])
    # Brute-force enumeration in the storage order (last factor fastest) matches ravel/unravel.
    small = factor_grid.FactorGrid(("a", "b", "c"), (2, 3, 4))
    points = np.array(list(itertools.product(range(2), range(3), range(4))))
    np.testing.assert_array_equal(small.ravel(points), np.arange(24))
    np.testing.assert_array_equal(small.unravel(np.arange(24)), points)
    flat = np.random.default_rng(0).integers(0, GRID.num_points, size=(7, 5))
    np.testing.assert_array_equal(GRID.ravel(GRID.unravel(flat)), flat)


def test_parse_factors_by_name_and_by_the_authors_digits():
    assert GRID.parse_factors("wall_hue") == (WALL,)
    assert GRID.parse_factors("wall_hue,object_hue") == tuple(sorted((WALL, OBJECT)))
    # Authors: 0 wall hue, 1 object hue, 2 floor hue, 3 scale, 4 shape, 5 orientation.
    digits = [GRID.parse_factors(str(d)) for d in range(6)]
    assert digits == [(WALL,), (OBJECT,), (FLOOR,), (SCALE,), (SHAPE,), (ORIENTATION,)]
    assert GRID.parse_factors(" 0, 2 ,object_hue,0") == tuple(sorted((WALL, FLOOR, OBJECT)))
    assert GRID.parse_factors("") == ()


@pytest.mark.parametrize("spec", ["wall", "6", "wall_hue,colour", "-1"])
def test_unknown_factor_is_a_clear_error(spec):
    with pytest.raises(ValueError, match="^--data.inactive_factors: unknown factor"):
        GRID.parse_factors(spec)


@pytest.mark.parametrize("inactive", ["wall_hue", "0,1", "floor_hue,wall_hue,object_hue", "0,1,2,3"])
def test_curated_sets_fix_inactive_factors_and_vary_active_ones(inactive):
    positions = GRID.parse_factors(inactive)
    curator = factor_grid.SetCurator(GRID, positions, set_size=32)
    ids = curator.curated(np.random.default_rng(4), 200)
    assert ids.shape == (200, 32)
    factors = curator.factors(ids)  # [200, 32, 6]
    for set_factors, set_ids in zip(factors, ids):
        assert np.unique(set_ids).size == 32  # distinct images
        for f in range(6):
            distinct = np.unique(set_factors[:, f]).size
            assert distinct == 1 if f in positions else distinct > 1, (inactive, FACTOR_NAMES[f])
    # The inactive value is random per set: over 200 sets every value shows up.
    for f in positions:
        assert np.unique(factors[:, 0, f]).size == FACTOR_SIZES[f]


def test_unconstrained_sets_cover_every_factor():
    curator = factor_grid.SetCurator(GRID, GRID.parse_factors("wall_hue"), set_size=32)
    factors = curator.factors(curator.unconstrained(np.random.default_rng(5), 100))
    for f, size in enumerate(FACTOR_SIZES):
        assert np.unique(factors[..., f]).size == size
        # Within one set the factor varies as well (nothing fixed).
        assert np.all([np.unique(s[:, f]).size > 1 for s in factors])


def test_curation_is_reproducible_and_seed_dependent():
    curator = factor_grid.SetCurator(GRID, (WALL,), set_size=32)
    first = curator.curated(np.random.default_rng(7), 4)
    np.testing.assert_array_equal(first, curator.curated(np.random.default_rng(7), 4))
    assert not np.array_equal(first, curator.curated(np.random.default_rng(8), 4))


def test_set_size_larger_than_distinct_images_is_an_error_unless_replacement_is_asked():
    # Everything but shape inactive: 4 distinct images per set.
    inactive = GRID.parse_factors("0,1,2,3,5")
    with pytest.raises(
        ValueError,
        match=r"^--batch.set_size=32 exceeds the 4 distinct images.*pass --data.sample_with_replacement",
    ):
        factor_grid.SetCurator(GRID, inactive, set_size=32)
    curator = factor_grid.SetCurator(GRID, inactive, set_size=32, replace=True)
    factors = curator.factors(curator.curated(np.random.default_rng(9), 3))
    for set_factors in factors:
        assert np.unique(set_factors[:, SHAPE]).size == 4  # 32 draws of 4 values: all appear
        assert all(np.unique(set_factors[:, f]).size == 1 for f in inactive)


def test_all_six_factors_inactive_is_an_error():
    with pytest.raises(ValueError, match="All 6 factors"):
        factor_grid.SetCurator(GRID, range(6), set_size=1, replace=True)


def test_item_table_curation_groups_the_items_present():
    rng = np.random.default_rng(10)
    # A subset of the grid with repeats, like tfds mock data: 3000 random grid points.
    items = GRID.unravel(rng.integers(0, GRID.num_points, size=3000))
    curator = factor_grid.SetCurator(GRID, (WALL, SHAPE), set_size=8, items=items)
    ids = curator.curated(rng, 300)
    assert ids.shape == (300, 8)
    for set_ids in ids:
        assert np.unique(set_ids).size == 8
        fixed = items[set_ids][:, [WALL, SHAPE]]
        assert np.all(fixed == fixed[0])
    np.testing.assert_array_equal(curator.factors(ids), items[ids])
    assert np.unique(curator.unconstrained(rng, 1)).size == 8
    # No group of one wall hue and shape holds 500 items.
    with pytest.raises(
        ValueError,
        match=r"--batch.set_size=500: only 0 of .* group\(s\).*pass --data.sample_with_replacement",
    ):
        factor_grid.SetCurator(GRID, (WALL, SHAPE), set_size=500, items=items)


def test_item_table_skips_groups_that_are_too_small():
    items = np.zeros((12, 6), dtype=np.int64)
    items[:10, WALL] = 3  # ten items with wall hue 3, two with wall hue 0
    curator = factor_grid.SetCurator(GRID, (WALL,), set_size=5, items=items)
    factors = curator.factors(curator.curated(np.random.default_rng(11), 50))
    assert np.all(factors[..., WALL] == 3)

"""The one set sampler (abc_tf.data.groups): distinct and uniform draws within groups, group
draws, draws from the whole collection, replacement, the errors that name the flag, and the
stream of steps the graph pipelines draw from."""

from __future__ import annotations

import logging
import tracemalloc

import numpy as np
import pytest
import tensorflow as tf

from abc_tf.data import groups
from abc_tf.data.groups import GroupIndex


def chi_square_ok(counts: np.ndarray, expected: np.ndarray | float) -> bool:
    """Pearson's statistic within 5 standard deviations of its mean (df = cells - 1): a fixed
    seed makes it deterministic, and a biased sampler (e.g. one cell never drawn) fails it."""
    counts = np.asarray(counts, np.float64)
    expected = np.broadcast_to(np.asarray(expected, np.float64), counts.shape)
    statistic = np.sum((counts - expected) ** 2 / expected)
    df = counts.size - 1
    return statistic < df + 5 * np.sqrt(2 * df)


def test_chi_square_bound_rejects_a_biased_count():
    assert chi_square_ok(np.array([100, 104, 96, 100]), 100.0)
    assert not chi_square_ok(np.array([130, 100, 100, 70]), 100.0)


# ----------------------------------------------------------------------------- sample_distinct


@pytest.mark.parametrize("population,count", [(np.array([5, 9, 40]), 5), (np.array([48000] * 50), 32)])
def test_sample_distinct_gives_distinct_values_in_range(population, count):
    draws = groups.sample_distinct(np.random.default_rng(1), population, count)
    assert draws.shape == (population.size, count) and draws.dtype == np.int64
    assert np.all(draws >= 0) and np.all(draws < population[:, None])
    for row in draws:
        assert np.unique(row).size == count


@pytest.mark.parametrize("population,count", [(6, 3), (40, 4)])  # key ranking, then rejection of repeats
def test_sample_distinct_is_uniform_in_value_and_position(population, count):
    draws = groups.sample_distinct(np.random.default_rng(2), np.full(20000, population), count)
    assert chi_square_ok(np.bincount(draws.ravel(), minlength=population), draws.size / population)
    # Positions inside a row are exchangeable (the order is random too).
    assert chi_square_ok(np.bincount(draws[:, 0], minlength=population), 20000 / population)


def test_sample_distinct_replacement_and_errors():
    rng = np.random.default_rng(3)
    with pytest.raises(ValueError, match="distinct"):
        groups.sample_distinct(rng, np.array([4]), 32)
    draws = groups.sample_distinct(rng, np.array([4]), 32, replace=True)
    assert draws.shape == (1, 32) and set(draws[0]) == {0, 1, 2, 3}


def test_sample_distinct_from_a_huge_population_stays_small():
    # count^2 > population (the birthday regime) with a population far above the key cap.
    population = np.array([groups._MAX_KEY_WIDTH * 64, 5000])
    tracemalloc.start()
    draws = groups.sample_distinct(np.random.default_rng(0), population, 3000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10e6  # ranking one key per value would take ~1 GB here
    assert draws.shape == (2, 3000)
    for row, size in zip(draws, population):
        assert np.unique(row).size == 3000 and row.min() >= 0 and row.max() < size
    # Uniform over the range: the mean of 3000 draws is near the middle.
    assert abs(draws[0].mean() / population[0] - 0.5) < 0.03


def test_step_and_chunk_generators_are_pure_functions_of_their_seeds():
    first = groups.step_rng(7, 3).integers(0, 1 << 30, 8)
    np.testing.assert_array_equal(first, groups.step_rng(7, 3).integers(0, 1 << 30, 8))
    assert not np.array_equal(first, groups.step_rng(7, 4).integers(0, 1 << 30, 8))
    assert not np.array_equal(first, groups.step_rng(8, 3).integers(0, 1 << 30, 8))
    groups.step_rng(-1, 0), groups.step_rng(1 << 70, 0)  # any integer seed
    chunk = groups.chunk_rng(7, 3).integers(0, 1 << 30, 8)
    np.testing.assert_array_equal(chunk, groups.chunk_rng(7, 3).integers(0, 1 << 30, 8))
    assert not np.array_equal(chunk, groups.chunk_rng(7, 4).integers(0, 1 << 30, 8))


# ----------------------------------------------------------------------------- the index


def test_index_from_sorted_groups_and_from_keys():
    index = GroupIndex.from_groups(np.array([0, 0, 2, 2, 2]), 4, names=["a", "b", "c", "d"])
    np.testing.assert_array_equal(index.counts, [2, 0, 3, 0])
    np.testing.assert_array_equal(index.offsets, [0, 2, 2, 5])
    assert index.order is None and index.num_groups == 4 and index.num_items == 5
    assert index.describe(2) == "c (3)"
    with pytest.raises(ValueError, match="sorted"):
        GroupIndex.from_groups(np.array([1, 0]))
    with pytest.raises(ValueError, match="2 names for 3 groups"):
        GroupIndex.from_groups(np.array([0, 1, 2]), names=["a", "b"])
    keys = np.array([5, 3, 5, 9, 3, 5])
    by_key, present = GroupIndex.from_keys(keys)
    np.testing.assert_array_equal(present, [3, 5, 9])
    np.testing.assert_array_equal(by_key.counts, [2, 3, 1])
    np.testing.assert_array_equal(keys[by_key.order], [3, 3, 5, 5, 5, 9])
    # Chosen keys only, in the caller's order, empty ones kept; items of other keys left out.
    chosen, wanted = GroupIndex.from_keys(keys, groups=[9, 4, 5])
    np.testing.assert_array_equal(wanted, [9, 4, 5])
    np.testing.assert_array_equal(chosen.counts, [1, 0, 3])
    np.testing.assert_array_equal(keys[chosen.order], [9, 5, 5, 5])


def uneven() -> tuple[GroupIndex, np.ndarray]:
    """Items of five groups of 3, 7, 1, 20 and 9 items, stored in shuffled order (keys per item)."""
    keys = np.repeat(np.arange(5), [3, 7, 1, 20, 9])
    keys = np.random.default_rng(0).permutation(keys)
    index, _ = GroupIndex.from_keys(keys)
    return index, keys


def test_draw_within_is_distinct_inside_the_group_and_uniform():
    index, keys = uneven()
    rng = np.random.default_rng(4)
    chosen = np.repeat([0, 1, 3, 4], 3000)
    items = index.draw_within(rng, chosen, 3)
    assert items.shape == (chosen.size, 3) and items.dtype == np.int64
    assert np.all(keys[items] == chosen[:, None])  # every item of its group
    assert all(np.unique(row).size == 3 for row in items)  # distinct within a set
    for group in (0, 1, 3, 4):
        members = np.flatnonzero(keys == group)
        counts = np.array([np.sum(items[chosen == group] == member) for member in members])
        assert chi_square_ok(counts, 3000 * 3 / members.size), group


def test_draw_within_with_replacement_and_when_a_group_is_too_small():
    index, keys = uneven()
    rng = np.random.default_rng(5)
    with pytest.raises(ValueError, match="distinct"):
        index.draw_within(rng, np.array([2]), 2)  # group 2 holds one item
    items = index.draw_within(rng, np.array([0] * 200), 8, replace=True)
    assert np.all(keys[items] == 0)
    assert set(np.unique(items)) == set(np.flatnonzero(keys == 0))


def test_draw_groups_is_uniform_and_can_avoid_a_given_group():
    index, _ = uneven()
    rng = np.random.default_rng(6)
    among = np.array([0, 1, 3, 4])
    drawn = index.draw_groups(rng, 20000, among=among)
    assert set(np.unique(drawn)) == set(among.tolist())
    assert chi_square_ok(np.bincount(drawn, minlength=5)[among], 5000.0)
    other = index.draw_groups(rng, 20000, among=among, exclude=drawn)
    assert np.all(other != drawn) and set(np.unique(other)) <= set(among.tolist())
    for group in among:  # given group g, uniform over the three others
        counts = np.bincount(other[drawn == group], minlength=5)[np.setdiff1d(among, [group])]
        assert chi_square_ok(counts, counts.sum() / 3), group
    assert np.all(index.draw_groups(rng, 50) < 5)  # default: every group
    with pytest.raises(ValueError, match="at least two groups"):
        index.draw_groups(rng, 3, among=np.array([1]), exclude=np.array([1, 1, 1]))
    with pytest.raises(ValueError, match="excluded group"):
        index.draw_groups(rng, 1, among=among, exclude=np.array([2]))


def test_draw_from_all_covers_every_item_uniformly():
    index, keys = uneven()
    rng = np.random.default_rng(7)
    items = index.draw_from_all(rng, 4000, 10)
    assert all(np.unique(row).size == 10 for row in items)
    assert chi_square_ok(np.bincount(items.ravel(), minlength=keys.size), items.size / keys.size)
    # Through a subset's order: only the items of the chosen keys.
    subset, _ = GroupIndex.from_keys(keys, groups=[0, 2])
    assert set(np.unique(subset.draw_from_all(rng, 200, 4))) == set(np.flatnonzero((keys == 0) | (keys == 2)))
    with pytest.raises(ValueError, match="--batch.set_size=5 exceeds the 4 images"):
        subset.draw_from_all(rng, 1, 5)
    assert subset.draw_from_all(rng, 1, 9, replace=True).shape == (1, 9)
    whole = GroupIndex.whole(480000)
    assert whole.draw_from_all(rng, 2, 32).max() < 480000


def test_eligible_groups_name_the_flags_and_log_the_skipped(caplog):
    index = GroupIndex.from_groups(np.repeat([0, 1, 2, 3], [5, 4, 2, 0]), 4, names=["a", "b", "c", "empty"])
    with caplog.at_level(logging.WARNING, logger="abc_tf.data.groups"):
        np.testing.assert_array_equal(index.eligible(4, needed=2), [0, 1])
    assert "c (2)" in caplog.text and "empty (0)" in caplog.text
    with pytest.raises(
        ValueError, match=r"--batch.set_size=5: only 1 of 4 group\(s\) hold that many images, 2 needed"
    ):
        index.eligible(5, needed=2)
    with pytest.raises(
        ValueError,
        match=r"--batch.set_size=6: .*largest: 5.*"
        r"Lower --batch.set_size or pass --data.sample_with_replacement",
    ):
        index.eligible(6, replace_flag="sample_with_replacement")
    with pytest.raises(
        ValueError, match=r"too small: a \(5\), b \(4\), c \(2\), empty \(0\)\)\. Lower --batch.set_size\.$"
    ):
        index.eligible(6, what="images")
    # With replacement any non-empty group can give a set.
    np.testing.assert_array_equal(index.eligible(6, replace=True), [0, 1, 2])


# ----------------------------------------------------------------------------- the stream of steps


def test_draw_stream_gives_each_step_its_chunk_row_and_resumes_anywhere():
    index, _ = uneven()

    def draw_chunk(chunk: int) -> tuple[np.ndarray, np.ndarray]:
        rng = groups.chunk_rng(11, chunk)
        chosen = index.draw_groups(rng, groups.CHUNK_STEPS * 2, among=np.array([1, 3, 4]))
        items = index.draw_within(rng, chosen, 3).reshape(groups.CHUNK_STEPS, 2, 3)
        return items, chosen.reshape(groups.CHUNK_STEPS, 2).astype(np.int32)

    first = [
        (int(step), items.numpy())
        for step, (items, _) in groups.draw_stream(draw_chunk, [tf.int64, tf.int32], [(2, 3), (2,)]).take(
            groups.CHUNK_STEPS + 5
        )
    ]
    assert [step for step, _ in first] == list(range(groups.CHUNK_STEPS + 5))
    for step, items in first:
        np.testing.assert_array_equal(items, groups.step_draws(draw_chunk, step)[0])
    assert not np.array_equal(first[0][1], first[1][1])  # steps differ
    # A stream that starts late (a resumed run) gives the same sets from its first step on.
    start = groups.CHUNK_STEPS - 2
    resumed = groups.draw_stream(draw_chunk, [tf.int64, tf.int32], [(2, 3), (2,)], start_step=start).take(4)
    for offset, (step, (items, chosen)) in enumerate(resumed):
        assert int(step) == start + offset
        np.testing.assert_array_equal(items.numpy(), first[start + offset][1])
        assert chosen.dtype == tf.int32 and chosen.shape == (2,)


def test_draw_groups_in_proportion_to_weights_and_avoiding_a_given_group():
    index, _ = uneven()
    rng = np.random.default_rng(8)
    among, weights = np.array([0, 1, 3, 4]), np.array([0.1, 0.2, 0.3, 0.4])
    drawn = index.draw_groups(rng, 40000, among=among, weights=weights)
    assert chi_square_ok(np.bincount(drawn, minlength=5)[among], 40000 * weights)
    other = index.draw_groups(rng, 40000, among=among, exclude=drawn, weights=weights)
    assert np.all(other != drawn) and set(np.unique(other)) <= set(among.tolist())
    for position, group in enumerate(among):  # given group g, in proportion among the three others
        rest = np.setdiff1d(np.arange(4), [position])
        counts = np.bincount(other[drawn == group], minlength=5)[among[rest]]
        assert chi_square_ok(counts, counts.sum() * weights[rest] / weights[rest].sum()), group
    zero = index.draw_groups(rng, 5000, among=among, weights=np.array([0.0, 1.0, 0.0, 1.0]))
    assert set(np.unique(zero)) == {1, 4}  # a weight of 0 is never drawn
    with pytest.raises(ValueError, match="weights must be 4 finite values"):
        index.draw_groups(rng, 3, among=among, weights=np.array([1.0, -1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="leave no group"):
        index.draw_groups(
            rng, 3, among=among, exclude=np.array([1, 1, 1]), weights=np.array([0.0, 1.0, 0.0, 0.0])
        )

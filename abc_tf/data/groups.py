"""The one sampler of sets: items in contiguous groups, k items drawn within chosen groups.

Every family draws its sets with a :class:`GroupIndex`. The draws are NumPy: rejection of repeats
costs about ``k`` per row whatever the population, where a TensorFlow form would rank one random key
per item every step, which does not scale to Shapes3D's full grid. The sets of step t are a pure
function of seed and t, whatever thread draws them and wherever a run resumes.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from typing import Callable, Sequence

import numpy as np
import tensorflow as tf

# Steps whose sets one call of draw_stream's NumPy function draws.
CHUNK_STEPS = 64
# Keys drawn per call of the small-population sampler are capped (float64: 128 MiB).
_MAX_KEYS_PER_CHUNK = 1 << 24
# Rows wider than this are drawn by Generator.choice (Floyd's algorithm, memory ~count) rather
# than by ranking one key per value (memory ~17 bytes x population: 170 MB at 10^7).
_MAX_KEY_WIDTH = 1 << 20

logger = logging.getLogger(__name__)


def step_rng(seed: int, step: int) -> np.random.Generator:
    """The generator of one training step: a pure function of seed and step, whatever thread calls it."""
    return np.random.default_rng([int(seed) % (1 << 63), int(step)])


def chunk_rng(seed: int, chunk: int) -> np.random.Generator:
    """The generator of steps ``chunk * CHUNK_STEPS`` to ``(chunk + 1) * CHUNK_STEPS - 1``."""
    return np.random.default_rng([int(seed) % (1 << 63), int(chunk), CHUNK_STEPS])


def draw_stream(
    draw_chunk: Callable[[int], Sequence[np.ndarray]],
    dtypes: Sequence[tf.DType],
    shapes: Sequence[tuple[int, ...]],
    start_step: int = 0,
) -> tf.data.Dataset:
    """Endless ``(step, arrays)`` for steps ``start_step, start_step + 1, ...``.

    draw_chunk: ``chunk -> arrays``, each ``[CHUNK_STEPS, *shape]``. These are the draws of that
    chunk's steps, a pure function of the chunk, e.g. through :func:`chunk_rng`.
    dtypes, shapes: of one step's arrays. One ``tf.numpy_function`` draws a whole chunk: one call per
    step would cost about 0.3 ms and cap the lightest pipelines near 2,000 batches/s.
    """
    dtypes, shapes = list(dtypes), [tuple(shape) for shape in shapes]

    def call(chunk: np.int64) -> list[np.ndarray]:
        return [
            np.asarray(array, dtype.as_numpy_dtype) for array, dtype in zip(draw_chunk(int(chunk)), dtypes)
        ]

    def chunk_arrays(chunk: tf.Tensor) -> tuple[tf.Tensor, ...]:
        arrays = tf.numpy_function(call, [chunk], dtypes, stateful=False)
        return tuple(tf.ensure_shape(array, (CHUNK_STEPS,) + shape) for array, shape in zip(arrays, shapes))

    draws = (
        tf.data.Dataset.counter(start=start_step // CHUNK_STEPS, dtype=tf.int64)
        .map(chunk_arrays, num_parallel_calls=2, deterministic=True)
        .unbatch()
        .skip(start_step % CHUNK_STEPS)
    )
    return tf.data.Dataset.zip((tf.data.Dataset.counter(start=start_step, dtype=tf.int64), draws))


def step_draws(draw_chunk: Callable[[int], Sequence[np.ndarray]], step: int) -> list[np.ndarray]:
    """The arrays of one step, as :func:`draw_stream` gives them. For tests and diagnostics."""
    return [array[step % CHUNK_STEPS] for array in draw_chunk(step // CHUNK_STEPS)]


def sample_distinct(
    rng: np.random.Generator, population: np.ndarray, count: int, replace: bool = False
) -> np.ndarray:
    """int64 [S, count]: per row, ``count`` uniform random integers in [0, population[row]).

    Without ``replace`` (population >= count), every ordered tuple of distinct values is equally likely.
    """
    population = np.asarray(population, dtype=np.int64)
    rows = population.shape[0]
    if replace:
        return rng.integers(0, population[:, None], size=(rows, count), dtype=np.int64)
    if np.any(population < count):
        raise ValueError(f"Cannot draw {count} distinct values from a population of {population.min()}.")
    out = np.empty((rows, count), dtype=np.int64)
    # Birthday regime: with count^2 > population a plain draw repeats a value too often, so
    # rank random keys instead (cost ~population per row, small there), or for populations
    # above _MAX_KEY_WIDTH use Generator.choice. Otherwise draw with replacement and redraw
    # the rows that repeat (P(repeat) < 1/2, cost ~count).
    small = population < count * count
    wide_rows = np.flatnonzero(small & (population > _MAX_KEY_WIDTH))
    for row in wide_rows:  # few rows (large count, huge population): one call each
        out[row] = rng.choice(population[row], size=count, replace=False)
    small_rows = np.flatnonzero(small & (population <= _MAX_KEY_WIDTH))
    if small_rows.size:
        width = int(population[small_rows].max())
        chunk = max(1, _MAX_KEYS_PER_CHUNK // width)
        for start in range(0, small_rows.size, chunk):
            part = small_rows[start : start + chunk]
            keys = rng.random((part.size, width))
            keys[np.arange(width)[None, :] >= population[part, None]] = 2.0  # beyond the range: never chosen
            chosen = np.argpartition(keys, count - 1, axis=1)[:, :count]
            # argpartition leaves the order arbitrary; sorting by key makes it uniformly random.
            order = np.argsort(np.take_along_axis(keys, chosen, axis=1), axis=1)
            out[part] = np.take_along_axis(chosen, order, axis=1)
    pending = np.flatnonzero(~small)
    while pending.size:
        draws = rng.integers(0, population[pending, None], size=(pending.size, count), dtype=np.int64)
        ordered = np.sort(draws, axis=1)
        repeats = np.any(ordered[:, 1:] == ordered[:, :-1], axis=1)
        out[pending[~repeats]] = draws[~repeats]
        pending = pending[repeats]
    return out


@dataclasses.dataclass(frozen=True, eq=False)
class GroupIndex:
    """Items in contiguous groups, in a CSR layout.

    counts: int64 [G] items per group. The groups tile the positions 0..num_items-1 in order;
    group g holds ``offsets[g] : offsets[g] + counts[g]``.
    order: int64 [num_items] item id at each position. None when the items are stored sorted by
    group, so a position is an item id.
    names: one per group, for messages.
    """

    counts: np.ndarray
    order: np.ndarray | None = None
    names: tuple[str, ...] | None = None

    @functools.cached_property
    def offsets(self) -> np.ndarray:
        """int64 [G]: the first position of each group."""
        return np.concatenate([[0], np.cumsum(self.counts)[:-1]]).astype(np.int64)

    @classmethod
    def from_groups(
        cls, groups: np.ndarray, num_groups: int | None = None, names: Sequence[str] | None = None
    ) -> "GroupIndex":
        """Items already sorted by group: ``groups`` int [N], non-decreasing. Empty groups are
        allowed.
        """
        groups = np.asarray(groups, np.int64)
        if groups.size and np.any(np.diff(groups) < 0):
            raise ValueError("GroupIndex.from_groups needs the items sorted by group.")
        num_groups = int(groups.max(initial=-1)) + 1 if num_groups is None else int(num_groups)
        counts = np.bincount(groups, minlength=num_groups).astype(np.int64)
        return cls(counts, None, _names(names, num_groups))

    @classmethod
    def from_keys(
        cls, keys: np.ndarray, groups: Sequence[int] | None = None, names: Sequence[str] | None = None
    ) -> tuple["GroupIndex", np.ndarray]:
        """Items in any order, grouped by an integer key each, with one stable sort.

        groups: the keys that form groups, in this order, empty ones included. Items with other
        keys are left out. None: the distinct keys present, ascending.
        Returns the index and the key of each group.
        """
        keys = np.asarray(keys, np.int64)
        order = np.argsort(keys, kind="stable")
        if groups is None:
            group_keys, counts = np.unique(keys[order], return_counts=True)
            return cls(counts.astype(np.int64), order, _names(names, len(group_keys))), group_keys
        group_keys = np.asarray(groups, np.int64)
        sorted_keys = keys[order]
        starts = np.searchsorted(sorted_keys, group_keys, side="left")
        counts = (np.searchsorted(sorted_keys, group_keys, side="right") - starts).astype(np.int64)
        # The wanted groups' slices of the sort order, concatenated: no per-item scan.
        kept = (
            np.concatenate([order[s : s + c] for s, c in zip(starts, counts)]) if len(counts) else order[:0]
        )
        return cls(counts, kept, _names(names, len(group_keys))), group_keys

    @classmethod
    def whole(cls, num_items: int) -> "GroupIndex":
        """One group of every item: a collection without groups allows only unconstrained draws."""
        return cls(np.array([num_items], np.int64))

    @property
    def num_groups(self) -> int:
        return int(self.counts.size)

    @property
    def num_items(self) -> int:
        return int(self.counts.sum())

    def describe(self, group: int) -> str:
        name = self.names[group] if self.names is not None else str(group)
        return f"{name} ({int(self.counts[group])})"

    def eligible(
        self,
        set_size: int,
        needed: int = 1,
        replace: bool = False,
        what: str = "images",
        replace_flag: str | None = None,
    ) -> np.ndarray:
        """Ascending ids of the groups that hold ``set_size`` items, or one with replacement.

        The others are logged as skipped. When fewer than ``needed`` groups qualify, a ValueError
        names ``--batch.set_size``. Where the family allows repeats, it also names
        ``--data.{replace_flag}``.
        """
        fits = self.counts >= (1 if replace else set_size)
        eligible, short = np.flatnonzero(fits), np.flatnonzero(~fits)
        listed = ", ".join(self.describe(g) for g in short[:10]) + (" ..." if short.size > 10 else "")
        if eligible.size < needed:
            hint = f" or pass --data.{replace_flag}" if replace_flag and not replace else ""
            raise ValueError(
                f"--batch.set_size={set_size}: only {eligible.size} of {self.num_groups} group(s) hold that "
                f"many {what}, {needed} needed (largest: {int(self.counts.max(initial=0))}; too small: "
                f"{listed}). Lower --batch.set_size{hint}."
            )
        if short.size:
            logger.warning(
                "%d group(s) hold fewer than --batch.set_size=%d %s and are skipped: %s",
                short.size,
                set_size,
                what,
                listed,
            )
        return eligible

    def draw_groups(
        self,
        rng: np.random.Generator,
        num: int,
        among: np.ndarray | None = None,
        exclude: np.ndarray | None = None,
        weights: np.ndarray | None = None,
    ) -> np.ndarray:
        """``num`` group ids drawn uniformly from ``among``: ascending ids, every group by default.

        exclude: int [num] group ids of ``among``. Draw i is uniform over the others, e.g. set
        B's group given set A's. It needs at least two groups.
        weights: float [len(among)] >= 0, one per group of ``among``. Draws are in proportion to
        them, among the others with ``exclude``.
        """
        among = np.arange(self.num_groups, dtype=np.int64) if among is None else np.asarray(among, np.int64)
        position = None
        if exclude is not None:
            if among.size < 2:
                raise ValueError("Drawing a group other than a given one needs at least two groups.")
            position = np.searchsorted(among, exclude)
            if np.any(position >= among.size) or np.any(
                among[np.minimum(position, among.size - 1)] != exclude
            ):
                raise ValueError("draw_groups: every excluded group must be one of the groups drawn from.")
        if weights is not None:
            return among[_weighted_draws(rng, num, np.asarray(weights, np.float64), among.size, position)]
        if exclude is None:
            return among[rng.integers(0, among.size, size=num)]
        # A shift in 1..n-1 modulo n: uniform over the other n - 1 groups.
        return among[(position + rng.integers(1, among.size, size=num)) % among.size]

    def draw_within(
        self, rng: np.random.Generator, groups: np.ndarray, count: int, replace: bool = False
    ) -> np.ndarray:
        """Item ids int64 [len(groups), count]: ``count`` items of each group, uniformly and in a
        random order, distinct unless ``replace``."""
        groups = np.asarray(groups, np.int64)
        positions = self.offsets[groups, None] + sample_distinct(rng, self.counts[groups], count, replace)
        return positions if self.order is None else self.order[positions]

    def draw_from_all(
        self, rng: np.random.Generator, num: int, count: int, replace: bool = False
    ) -> np.ndarray:
        """Item ids int64 [num, count]: ``count`` items of the whole collection per row, distinct unless
        ``replace``."""
        total = self.num_items
        if not replace and count > total:
            raise ValueError(
                f"--batch.set_size={count} exceeds the {total} images of the collection (unconstrained set)."
            )
        positions = sample_distinct(rng, np.full(num, total), count, replace)
        return positions if self.order is None else self.order[positions]


def _weighted_draws(
    rng: np.random.Generator, num: int, weights: np.ndarray, size: int, excluded: np.ndarray | None
) -> np.ndarray:
    """``num`` draws of positions 0..size-1 in proportion to ``weights`` [size], by inverse CDF.

    Draw i never takes ``excluded[i]``: its weight is 0 for that draw.
    """
    if weights.shape != (size,) or np.any(weights < 0) or not np.all(np.isfinite(weights)):
        raise ValueError(f"draw_groups: weights must be {size} finite values >= 0, got {weights!r}.")
    table = np.broadcast_to(weights, (num, size)).copy()
    if excluded is not None:
        table[np.arange(num), excluded] = 0.0
    cumulative = np.cumsum(table, axis=1)
    if np.any(cumulative[:, -1] <= 0):
        raise ValueError("draw_groups: the weights leave no group to draw.")
    targets = rng.random(num) * cumulative[:, -1]
    # The first position whose cumulative weight exceeds the target (never a zero-weight one).
    return np.minimum((cumulative <= targets[:, None]).sum(axis=1), size - 1)


def _names(names: Sequence[str] | None, count: int) -> tuple[str, ...] | None:
    if names is None:
        return None
    names = tuple(str(name) for name in names)
    if len(names) != count:
        raise ValueError(f"GroupIndex: {len(names)} names for {count} groups.")
    return names

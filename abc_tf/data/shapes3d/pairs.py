"""Shapes3D pairs, the "pairs" batch format: two images that share every factor but one.

This is Locatello et al.'s (2020) weak supervision, which product-manifold projection trains on
(docs/PAPERS.md section P1). A pair is drawn at O(1) by index arithmetic on the grid of
:mod:`abc_tf.data.shapes3d.sources`:

1. ``x1`` uniformly from the data set;
2. the changed factor uniformly among those ``--batch.pair_factors`` allows, every factor by default;
3. its new value ``new = (old + u) mod size``, ``u`` uniform in ``1 .. size - 1``, so it always differs;
4. ``x2`` = ``x1`` with that value: ``id2 = id1 + (new - old) * stride`` on the full grid.
   A partial grid uses :class:`_FactorPartners`.

Batches: ``{"x1", "x2"}``, uint8 [B, 64, 64, 3], ``B = --batch.pairs_per_step``. ``--batch.pair_labels``
adds ``"changed_factor": int64 [B]`` for GVAE, which is told it. A step is a pure function of seed and step.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import tensorflow as tf

from abc_tf.config import ExperimentConfig
from abc_tf.data.groups import GroupIndex, step_rng
from abc_tf.data.factor_grid import FactorGrid
from abc_tf.data.shapes3d.sources import SOURCES, GRID, IMAGE_SHAPE, open_source

FLAG = "batch.pair_factors"  # the flag named in errors

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, eq=False)
class _FactorPartners:
    """For one factor ``f`` of an item table: which items differ from a given one in ``f`` alone.

    A :class:`abc_tf.data.groups.GroupIndex` sorts the items by all other factors, then ``f``. A
    run is the items identical in every factor, i.e. repeats of one grid point. A group is the
    consecutive runs that share the other factors. An item's partners are its group without its
    own run. So the j-th partner is position ``j`` of the group, shifted past the run: O(1) per
    draw.
    """

    order: np.ndarray  # int64 [N] item id at each sorted position
    run_of_position: np.ndarray  # int64 [N]
    run_offsets: np.ndarray  # int64 [R] first position of each run
    run_counts: np.ndarray  # int64 [R]
    group_of_run: np.ndarray  # int64 [R]
    group_offsets: np.ndarray  # int64 [G]
    group_counts: np.ndarray  # int64 [G]
    eligible: np.ndarray  # int64 positions whose item has at least one partner

    @classmethod
    def build(cls, grid: FactorGrid, items: np.ndarray, factor: int) -> "_FactorPartners":
        others = [g for g in range(grid.num_factors) if g != factor]
        other_grid = FactorGrid(tuple(grid.names[g] for g in others), tuple(grid.sizes[g] for g in others))
        keys = other_grid.ravel(items[:, others]) * grid.sizes[factor] + items[:, factor]
        runs, run_keys = GroupIndex.from_keys(keys)
        run_of_position = np.repeat(np.arange(runs.num_groups, dtype=np.int64), runs.counts)
        # run_keys ascend, so the runs of one group (one value of the other factors) are consecutive.
        _, group_of_run = np.unique(run_keys // grid.sizes[factor], return_inverse=True)
        groups = GroupIndex.from_groups(group_of_run[run_of_position])
        group_of_run = group_of_run.astype(np.int64)
        partners = groups.counts[group_of_run] - runs.counts
        return cls(
            order=runs.order,
            run_of_position=run_of_position,
            run_offsets=runs.offsets,
            run_counts=runs.counts,
            group_of_run=group_of_run,
            group_offsets=groups.offsets,
            group_counts=groups.counts,
            eligible=np.flatnonzero(partners[run_of_position] > 0).astype(np.int64),
        )

    def draw(self, rng: np.random.Generator, num: int) -> tuple[np.ndarray, np.ndarray]:
        """``num`` pairs of item ids, int64 [num] each.

        The first is uniform among the items that have a partner, the second uniform among its
        partners.
        """
        position = self.eligible[rng.integers(0, self.eligible.size, size=num)]
        run = self.run_of_position[position]
        group = self.group_of_run[run]
        start = self.group_offsets[group]
        u = rng.integers(0, self.group_counts[group] - self.run_counts[run])
        before = self.run_offsets[run] - start  # partners that sort before the item's own run
        partner = start + np.where(u < before, u, u + self.run_counts[run])
        return self.order[position], self.order[partner]


class PairSampler:
    """Draws pairs of item ids that differ in exactly one factor among ``changing``.

    Args:
      grid: the factor grid.
      changing: positions of the factors that may change, e.g. from ``grid.parse_factors``.
      items: optional int [N, F] factor indices of the items a data source holds. None means the
      full grid, with item id = flat index.
      flag: the flag named in errors.
    Raises:
      ValueError before any sampling when no factor may change, or one of them has a single
      value. Also when the items are malformed.
    """

    def __init__(self, grid: FactorGrid, changing, items: np.ndarray | None = None, flag: str = FLAG):
        self.grid = grid
        self.changing = np.array(sorted(set(int(f) for f in changing)), dtype=np.int64)
        if self.changing.size == 0:
            raise ValueError(
                f"--{flag} names no factor: a pair must be able to change one ({', '.join(grid.names)})."
            )
        if np.any(self.changing < 0) or np.any(self.changing >= grid.num_factors):
            raise ValueError(
                f"Changing factor positions {self.changing.tolist()} out of range for {grid.num_factors} "
                "factors."
            )
        sizes = np.asarray(grid.sizes, dtype=np.int64)
        single = [grid.names[f] for f in self.changing if sizes[f] < 2]
        if single:
            raise ValueError(
                f"--{flag}: factor(s) {', '.join(single)} take a single value, so no pair can change them; "
                "leave them out of --" + flag + "."
            )
        self._sizes, self._strides = sizes, grid.strides
        self.items = None if items is None else np.asarray(items, dtype=np.int64)
        self._partners: dict[int, _FactorPartners] = {}
        if self.items is None:
            return
        if self.items.ndim != 2 or self.items.shape[1] != grid.num_factors or self.items.shape[0] == 0:
            raise ValueError(
                f"items must be a non-empty [num_items, {grid.num_factors}] array, got {self.items.shape}."
            )
        if np.any(self.items < 0) or np.any(self.items >= sizes):
            raise ValueError(f"items hold factor indices outside the grid sizes {grid.sizes}.")
        for factor in self.changing.tolist():
            partners = _FactorPartners.build(grid, self.items, factor)
            if partners.eligible.size == 0:
                values = np.unique(self.items[:, factor]).size
                raise ValueError(
                    f"--{flag}: among the {self.items.shape[0]} images of the data source no two differ in "
                    f"{grid.names[factor]} alone ({values} value(s) present), so no pair can change it; "
                    f"leave it out of --{flag} or use a source with more of the grid."
                )
            self._partners[factor] = partners

    def draw(self, rng: np.random.Generator, num: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``num`` pairs: item ids ``first`` and ``second``, and the position of the changed factor.

        All are int64 [num]. The batch carries the factor only with ``--batch.pair_labels``.
        """
        changed = self.changing[rng.integers(0, self.changing.size, size=num)]
        if self.items is None:
            first = rng.integers(0, self.grid.num_points, size=num, dtype=np.int64)
            sizes, strides = self._sizes[changed], self._strides[changed]
            old = (first // strides) % sizes
            new = (old + rng.integers(1, sizes)) % sizes
            return first, first + (new - old) * strides, changed
        first = np.empty(num, dtype=np.int64)
        second = np.empty(num, dtype=np.int64)
        for factor in np.unique(changed).tolist():
            rows = np.flatnonzero(changed == factor)
            first[rows], second[rows] = self._partners[factor].draw(rng, rows.size)
        return first, second, changed


def changing_factors(config: ExperimentConfig) -> tuple[int, ...]:
    """Positions of ``--batch.pair_factors``, every factor when empty. ValueError naming the flag."""
    if not config.batch.pair_factors.strip():
        return tuple(range(GRID.num_factors))
    return GRID.parse_factors(config.batch.pair_factors, flag=FLAG)


def check_config(config: ExperimentConfig) -> tuple[int, ...]:
    """The pair settings that need no data; returns the changing factors."""
    SOURCES.resolve("shapes3d", config.data.source, config.data.path)
    if config.data.augmentations:
        raise ValueError(
            f"--data.augmentations does not apply to pairs (--method={config.method.name}): the pairs are "
            "not augmented."
        )
    changing = changing_factors(config)
    PairSampler(GRID, changing)  # refuses an empty list or a factor with one value, before any data is read
    return changing


def step_pair_ids(sampler: PairSampler, seed: int, step: int, num: int) -> tuple[np.ndarray, np.ndarray]:
    """Item ids int64 [2, num] of step ``step``'s pairs and the changed factors int64 [num].

    A pure function of seed and step.
    """
    first, second, changed = sampler.draw(step_rng(seed, step), num)
    return np.stack([first, second]), changed


def make_pairs_dataset(config: ExperimentConfig, seed: int, start_step: int = 0) -> tf.data.Dataset:
    """Endless, prefetched pair batches of ``config``, in the module docstring's format.

    Every check of flags and files runs before the dataset is returned. ``start_step`` is unused:
    the trainer derives ``seed`` from it.
    """
    del start_step
    changing = check_config(config)
    source = open_source(config.data)
    sampler = PairSampler(GRID, changing, items=source.items)
    num = config.batch.pairs_per_step

    def build(step: np.int64) -> tuple[np.ndarray, np.ndarray]:
        ids, changed = step_pair_ids(sampler, seed, int(step), num)
        return source.images(ids), changed  # one read for both images

    def to_batch(step: tf.Tensor) -> dict[str, tf.Tensor]:
        images, changed = tf.numpy_function(build, [step], (tf.uint8, tf.int64), stateful=False)
        images = tf.ensure_shape(images, (2, num) + IMAGE_SHAPE)
        batch = {"x1": images[0], "x2": images[1]}
        if config.batch.pair_labels:
            batch["changed_factor"] = tf.ensure_shape(changed, (num,))
        return batch

    dataset = tf.data.Dataset.counter(start=0, dtype=tf.int64)
    dataset = dataset.map(to_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    logger.info(
        "Shapes3D pairs from the %s; changing factors: %s.",
        source.description,
        ", ".join(GRID.names[f] for f in changing),
    )
    return dataset.prefetch(tf.data.AUTOTUNE)

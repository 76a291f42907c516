"""Set curation over a grid of generative factors, by index arithmetic (never a scan).

A factor grid has F factors with sizes ``(s_0, ..., s_{F-1})``; a grid point is a vector of
factor indices and its flat index is the mixed-radix number with the LAST factor varying
fastest (the layout of 3dshapes.h5: ``flat = sum_f index_f * prod(s_{f+1:})``).

A curated set fixes the inactive factors to one random value each (shared by the set) and
draws the active factors uniformly; an unconstrained set draws from the whole grid. Inside
a set the images are distinct (sampling without replacement), unless the caller asks for
replacement. Two sampling paths share one interface, ``SetCurator``:

- full grid (every grid point present once, item id = flat index): the set's inactive
  values plus a random offset in the active sub-grid are turned into flat indices by
  ravel/unravel arithmetic;
- item table (a data source holding any subset of the grid, possibly with repeats): the
  items are sorted once by their inactive values into groups (a CSR layout); a set picks one
  group with at least ``set_size`` items and random offsets inside it.

Both are vectorised over many sets at once and take a seeded ``numpy.random.Generator``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Mapping, Sequence

import numpy as np

# Keys drawn per call of the small-population sampler are capped (float64: 128 MiB).
_MAX_KEYS_PER_CHUNK = 1 << 24
# Rows wider than this are drawn by Generator.choice (Floyd's algorithm, memory ~count) rather
# than by ranking one key per value (memory ~17 bytes x population: 170 MB at 10^7).
_MAX_KEY_WIDTH = 1 << 20

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class FactorGrid:
    """Names and value counts of the factors of a grid, with optional aliases.

    Attributes:
      names: factor names in storage order (the last varies fastest in the flat index).
      sizes: number of values of each factor.
      aliases: other spellings of factor names, e.g. the authors' digits {"0": "wall_hue"}.
    """

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    aliases: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.names) != len(self.sizes) or not self.names:
            raise ValueError(f"FactorGrid needs one size per name, got {self.names} and {self.sizes}.")
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"FactorGrid names must be unique, got {self.names}.")
        if any(int(size) < 1 for size in self.sizes):
            raise ValueError(f"FactorGrid sizes must be positive, got {self.sizes}.")
        unknown = sorted(set(self.aliases.values()) - set(self.names))
        if unknown:
            raise ValueError(f"FactorGrid aliases point to unknown factors {unknown}.")

    @property
    def num_factors(self) -> int:
        return len(self.sizes)

    @property
    def num_points(self) -> int:
        """Number of grid points (the product of the sizes)."""
        return math.prod(self.sizes)

    @property
    def strides(self) -> np.ndarray:
        """Mixed-radix place values [F] int64: the last factor has stride 1."""
        return np.concatenate([np.cumprod(self.sizes[:0:-1])[::-1], [1]]).astype(np.int64)

    def ravel(self, factors: np.ndarray) -> np.ndarray:
        """Factor indices [..., F] -> flat indices [...] (int64)."""
        return np.asarray(factors, dtype=np.int64) @ self.strides

    def unravel(self, flat: np.ndarray) -> np.ndarray:
        """Flat indices [...] -> factor indices [..., F] (int64)."""
        flat = np.asarray(flat, dtype=np.int64)
        return (flat[..., None] // self.strides) % np.asarray(self.sizes, dtype=np.int64)

    def parse_factors(self, spec: str | Sequence[str | int], flag: str = "inactive_factors") -> tuple[int, ...]:
        """Factor positions (sorted, unique) named by ``spec``.

        ``spec`` is a comma-separated string or a sequence; each entry is a factor name or an
        alias (e.g. an authors' digit). Raises ValueError naming ``flag`` for unknown entries.
        """
        tokens = spec.split(",") if isinstance(spec, str) else [str(token) for token in spec]
        positions = set()
        for token in tokens:
            key = token.strip().lower()
            if not key:
                continue
            name = self.aliases.get(key, key)
            if name not in self.names:
                digits = ", ".join(f"{alias} {target}" for alias, target in sorted(self.aliases.items()))
                raise ValueError(
                    f"--{flag}: unknown factor {token.strip()!r}. Use factor names "
                    f"({', '.join(self.names)})" + (f" or the digits ({digits})" if digits else "") + "."
                )
            positions.add(self.names.index(name))
        return tuple(sorted(positions))


def sample_distinct(rng: np.random.Generator, population: np.ndarray, count: int, replace: bool = False) -> np.ndarray:
    """Per row, ``count`` uniform random integers in [0, population[row]).

    Args:
      rng: the random generator.
      population: int [S], the size of each row's range (all >= count unless ``replace``).
      count: samples per row.
      replace: with replacement (independent uniform draws) or distinct values.
    Returns:
      int64 [S, count]. Without replacement every ordered tuple of distinct values is equally
      likely.
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


class SetCurator:
    """Draws sets of item ids whose inactive factors take one value per set.

    Args:
      grid: the factor grid.
      inactive: positions of the inactive factors (e.g. from ``grid.parse_factors``).
      set_size: items per set.
      replace: allow repeated items inside a set (needed when a set must be larger than the
        number of distinct items that share its inactive values).
      items: optional int [num_items, F] factor indices of the items a data source holds;
        None means the full grid with item id = flat index.
      replace_flag: flag named in errors about set sizes.
    Raises:
      ValueError (before any sampling) when every factor is inactive, or when a set cannot
      hold ``set_size`` distinct items and ``replace`` is False.
    """

    def __init__(
        self,
        grid: FactorGrid,
        inactive: Sequence[int],
        set_size: int,
        replace: bool = False,
        items: np.ndarray | None = None,
        replace_flag: str = "sample_with_replacement",
    ):
        self.grid = grid
        self.inactive = tuple(sorted(set(int(i) for i in inactive)))
        self.active = tuple(i for i in range(grid.num_factors) if i not in self.inactive)
        self.set_size = int(set_size)
        self.replace = bool(replace)
        if self.set_size < 1:
            raise ValueError(f"set_size must be positive, got {set_size}.")
        if any(i < 0 or i >= grid.num_factors for i in self.inactive):
            raise ValueError(f"Inactive factor positions {self.inactive} out of range for {grid.num_factors} factors.")
        if not self.active:
            raise ValueError(
                f"All {grid.num_factors} factors ({', '.join(grid.names)}) are inactive: every set would show "
                "one image only. Leave at least one factor active."
            )
        sizes = np.asarray(grid.sizes, dtype=np.int64)
        self._inactive_sizes = sizes[list(self.inactive)]
        self._active_sizes = sizes[list(self.active)]
        inactive_names = ", ".join(grid.names[i] for i in self.inactive) or "none"
        hint = f"; lower --set_size or pass --{replace_flag} to allow repeated images"

        if items is None:
            self.items = None
            self.num_items = grid.num_points
            self.active_points = int(np.prod(self._active_sizes))
            if not self.replace and self.set_size > self.active_points:
                raise ValueError(
                    f"--set_size={self.set_size} exceeds the {self.active_points} distinct images that share one value "
                    f"of the inactive factors ({inactive_names}){hint}."
                )
        else:
            items = np.asarray(items, dtype=np.int64)
            if items.ndim != 2 or items.shape[1] != grid.num_factors or items.shape[0] == 0:
                raise ValueError(f"items must be a non-empty [num_items, {grid.num_factors}] array, got {items.shape}.")
            if np.any(items < 0) or np.any(items >= sizes):
                raise ValueError(f"items hold factor indices outside the grid sizes {grid.sizes}.")
            self.items = items
            self.num_items = items.shape[0]
            # Group the items by their inactive values once: CSR layout over a sort order.
            keys = items[:, list(self.inactive)] @ _strides(self._inactive_sizes) if self.inactive else np.zeros(len(items), np.int64)
            self._order = np.argsort(keys, kind="stable")
            group_keys, starts, counts = np.unique(keys[self._order], return_index=True, return_counts=True)
            usable = counts >= (1 if self.replace else self.set_size)
            if not np.any(usable):
                raise ValueError(
                    f"--set_size={self.set_size} exceeds the largest group of distinct images sharing one value of the "
                    f"inactive factors ({inactive_names}): {int(counts.max())} of {self.num_items} images{hint}."
                )
            if not np.all(usable):
                logger.warning(
                    "%d of %d values of the inactive factors have fewer than %d images; sets never use them.",
                    int((~usable).sum()), usable.size, self.set_size,
                )
            self._group_starts = starts[usable].astype(np.int64)
            self._group_counts = counts[usable].astype(np.int64)
            self.active_points = int(self._group_counts.max())
        if not self.replace and self.set_size > self.num_items:
            raise ValueError(f"--set_size={self.set_size} exceeds the {self.num_items} images of the data set{hint}.")

    def factors(self, ids: np.ndarray) -> np.ndarray:
        """Item ids [...] -> factor indices [..., F] (int64)."""
        if self.items is None:
            return self.grid.unravel(ids)
        return self.items[np.asarray(ids, dtype=np.int64)]

    def curated(self, rng: np.random.Generator, num_sets: int) -> np.ndarray:
        """Item ids [num_sets, set_size] of sets with one random value per inactive factor."""
        if self.items is None:
            values = rng.integers(0, self._inactive_sizes, size=(num_sets, len(self.inactive)), dtype=np.int64)
            offsets = sample_distinct(rng, np.full(num_sets, self.active_points), self.set_size, self.replace)
            active_values = (offsets[..., None] // _strides(self._active_sizes)) % self._active_sizes
            factors = np.empty((num_sets, self.set_size, self.grid.num_factors), dtype=np.int64)
            factors[..., list(self.inactive)] = values[:, None, :]
            factors[..., list(self.active)] = active_values
            return self.grid.ravel(factors)
        groups = rng.integers(0, self._group_counts.size, size=num_sets)
        offsets = sample_distinct(rng, self._group_counts[groups], self.set_size, self.replace)
        return self._order[self._group_starts[groups, None] + offsets]

    def unconstrained(self, rng: np.random.Generator, num_sets: int) -> np.ndarray:
        """Item ids [num_sets, set_size] drawn uniformly from all items (no inactive factor)."""
        return sample_distinct(rng, np.full(num_sets, self.num_items), self.set_size, self.replace)

    def sample_items(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` distinct item ids [count] drawn uniformly from all items (e.g. for evaluation)."""
        if count > self.num_items:
            raise ValueError(f"Asked for {count} distinct images; the data set holds {self.num_items}.")
        return sample_distinct(rng, np.array([self.num_items]), count)[0]


def _strides(sizes: np.ndarray) -> np.ndarray:
    """Mixed-radix place values of ``sizes`` (last fastest), int64 [len(sizes)]."""
    sizes = np.asarray(sizes, dtype=np.int64)
    return np.concatenate([np.cumprod(sizes[:0:-1])[::-1], [1]]).astype(np.int64)

"""Set curation over a grid of generative factors, by index arithmetic, never a scan.

A grid has F factors of sizes ``(s_0, ..., s_{F-1})``; a grid point is a vector of factor indices.
Its flat index is the mixed-radix number with the LAST factor varying fastest, as in 3dshapes.h5:
``flat = sum_f index_f * prod(s_{f+1:})``.

A curated set fixes each inactive factor to one random value and draws the active ones uniformly.
An unconstrained set draws from the whole grid. Images are distinct unless the caller asks for replacement.
``SetCurator`` draws many sets at once from a seeded ``numpy.random.Generator`` (:mod:`abc_tf.data.groups`):

- full grid, item id = flat index: ravel/unravel arithmetic turns the inactive values plus a random offset
  in the active sub-grid into flat indices;
- item table, any subset of the grid, maybe with repeats: items are grouped once by their inactive values
  (:class:`abc_tf.data.groups.GroupIndex`). A set is drawn within one group of at least ``set_size`` items.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Sequence

import numpy as np

from abc_tf.data.groups import GroupIndex, sample_distinct


@dataclasses.dataclass(frozen=True)
class FactorGrid:
    """Names and value counts of the factors of a grid, with optional aliases.

    Attributes:
      names: factor names in storage order. The last varies fastest in the flat index.
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
        """Number of grid points: the product of the sizes."""
        return math.prod(self.sizes)

    @property
    def strides(self) -> np.ndarray:
        """Mixed-radix place values [F] int64: the last factor has stride 1."""
        return np.concatenate([np.cumprod(self.sizes[:0:-1])[::-1], [1]]).astype(np.int64)

    def ravel(self, factors: np.ndarray) -> np.ndarray:
        """Factor indices [..., F] -> flat indices [...], int64."""
        return np.asarray(factors, dtype=np.int64) @ self.strides

    def unravel(self, flat: np.ndarray) -> np.ndarray:
        """Flat indices [...] -> factor indices [..., F], int64."""
        flat = np.asarray(flat, dtype=np.int64)
        return (flat[..., None] // self.strides) % np.asarray(self.sizes, dtype=np.int64)

    def parse_factors(
        self, spec: str | Sequence[str | int], flag: str = "data.inactive_factors"
    ) -> tuple[int, ...]:
        """Sorted, unique factor positions named by ``spec``.

        ``spec`` is a comma-separated string or a sequence. Each entry is a factor name or an
        alias, e.g. an authors' digit. Raises ValueError naming ``flag`` for unknown entries.
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


class SetCurator:
    """Draws sets of item ids whose inactive factors take one value per set.

    Args:
      grid: the factor grid.
      inactive: positions of the inactive factors, e.g. from ``grid.parse_factors``.
      set_size: items per set.
      replace: allow repeated items inside a set. A set larger than the distinct items that share
      its inactive values needs it.
      items: optional int [num_items, F] factor indices of the items a data source holds. None
      means the full grid, with item id = flat index.
      replace_flag: the data field ``--data.<replace_flag>`` that errors about set sizes name.
    Raises:
      ValueError before any sampling when every factor is inactive. Also when a set cannot hold
      ``set_size`` distinct items and ``replace`` is False.
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
            raise ValueError(
                f"Inactive factor positions {self.inactive} out of range for {grid.num_factors} factors."
            )
        if not self.active:
            raise ValueError(
                f"All {grid.num_factors} factors ({', '.join(grid.names)}) are inactive: every set would "
                "show one image only. Leave at least one factor active."
            )
        sizes = np.asarray(grid.sizes, dtype=np.int64)
        self._inactive_sizes = sizes[list(self.inactive)]
        self._active_sizes = sizes[list(self.active)]
        inactive_names = ", ".join(grid.names[i] for i in self.inactive) or "none"
        hint = f"; lower --batch.set_size or pass --data.{replace_flag} to allow repeated images"

        if items is None:
            self.items = None
            self.num_items = grid.num_points
            self.active_points = int(np.prod(self._active_sizes))
            if not self.replace and self.set_size > self.active_points:
                raise ValueError(
                    f"--batch.set_size={self.set_size} exceeds the {self.active_points} distinct images that "
                    f"share one value of the inactive factors ({inactive_names}){hint}."
                )
        else:
            items = np.asarray(items, dtype=np.int64)
            if items.ndim != 2 or items.shape[1] != grid.num_factors or items.shape[0] == 0:
                raise ValueError(
                    f"items must be a non-empty [num_items, {grid.num_factors}] array, got {items.shape}."
                )
            if np.any(items < 0) or np.any(items >= sizes):
                raise ValueError(f"items hold factor indices outside the grid sizes {grid.sizes}.")
            self.items = items
            self.num_items = items.shape[0]
            # Group the items by their inactive values once.
            keys = (
                items[:, list(self.inactive)] @ _strides(self._inactive_sizes)
                if self.inactive
                else np.zeros(len(items), np.int64)
            )
            self._groups, _ = GroupIndex.from_keys(keys)
            self._eligible = self._groups.eligible(
                self.set_size,
                replace=self.replace,
                replace_flag=replace_flag,
                what=f"images sharing one value of {inactive_names}",
            )
            self.active_points = int(self._groups.counts[self._eligible].max())
        self._all = GroupIndex.whole(self.num_items)
        if not self.replace and self.set_size > self.num_items:
            raise ValueError(
                f"--batch.set_size={self.set_size} exceeds the {self.num_items} images of the data set{hint}."
            )

    def factors(self, ids: np.ndarray) -> np.ndarray:
        """Item ids [...] -> factor indices [..., F], int64."""
        if self.items is None:
            return self.grid.unravel(ids)
        return self.items[np.asarray(ids, dtype=np.int64)]

    def curated(self, rng: np.random.Generator, num_sets: int) -> np.ndarray:
        """Item ids [num_sets, set_size] of sets with one random value per inactive factor."""
        if self.items is None:
            values = rng.integers(
                0, self._inactive_sizes, size=(num_sets, len(self.inactive)), dtype=np.int64
            )
            offsets = sample_distinct(rng, np.full(num_sets, self.active_points), self.set_size, self.replace)
            active_values = (offsets[..., None] // _strides(self._active_sizes)) % self._active_sizes
            factors = np.empty((num_sets, self.set_size, self.grid.num_factors), dtype=np.int64)
            factors[..., list(self.inactive)] = values[:, None, :]
            factors[..., list(self.active)] = active_values
            return self.grid.ravel(factors)
        groups = self._groups.draw_groups(rng, num_sets, among=self._eligible)
        return self._groups.draw_within(rng, groups, self.set_size, self.replace)

    def unconstrained(self, rng: np.random.Generator, num_sets: int) -> np.ndarray:
        """Item ids [num_sets, set_size] drawn uniformly from all items, with no inactive factor."""
        return self._all.draw_from_all(rng, num_sets, self.set_size, self.replace)

    def sample_items(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` distinct item ids [count] drawn uniformly from all items, e.g. for evaluation."""
        if count > self.num_items:
            raise ValueError(f"Asked for {count} distinct images; the data set holds {self.num_items}.")
        return self._all.draw_from_all(rng, 1, count)[0]


def _strides(sizes: np.ndarray) -> np.ndarray:
    """Mixed-radix place values of ``sizes``, the last fastest: int64 [len(sizes)]."""
    sizes = np.asarray(sizes, dtype=np.int64)
    return np.concatenate([np.cumprod(sizes[:0:-1])[::-1], [1]]).astype(np.int64)

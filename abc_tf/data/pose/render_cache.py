"""Procedural renders kept on disk between processes.

Rendering the built-in cars takes minutes (4,000 training views and 1,000 "real" images at 64 px:
about 3 min on 2 CPU cores), and every process renders them again: each point of a ``grid.py``
search, each ``evaluate.py`` of a run. The renders are deterministic, so they are kept as ``.npz``
files under ``$ABC_TF_RENDER_CACHE`` (default ``~/.cache/abc_tf/renders``; ``off`` keeps none),
named by a hash of what was asked and of the renderer's source (every module of
``abc_tf/data/pose`` and ``abc_tf/geometry.py``), so an edited renderer never reads old renders.
A file that cannot be read is rendered again; a directory that cannot be written only costs the
time (a warning says so once).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import zipfile
from typing import Callable

import numpy as np

CACHE_ENV = "ABC_TF_RENDER_CACHE"
OFF = "off"
_log = logging.getLogger(__name__)
_unwritable: set[str] = set()  # directories already warned about


def cache_dir() -> str | None:
    """The directory renders are kept in, or None when ``$ABC_TF_RENDER_CACHE`` is ``off``."""
    value = os.environ.get(CACHE_ENV)
    if value is None:
        return os.path.join(os.path.expanduser("~"), ".cache", "abc_tf", "renders")
    return None if value.strip().lower() in (OFF, "") else value


@functools.cache
def renderer_version() -> str:
    """A hash of the renderer's source: every module of this package and abc_tf/geometry.py."""
    package = os.path.dirname(os.path.abspath(__file__))
    sources = sorted(os.path.join(package, name) for name in os.listdir(package) if name.endswith(".py"))
    sources.append(os.path.join(os.path.dirname(package), os.pardir, "geometry.py"))
    digest = hashlib.sha256()
    for path in sources:
        with open(path, "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()


def cached(name: str, key: tuple, render: Callable[[], tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """``render()``'s arrays, read from the cache when an earlier process rendered the same
    ``name`` and ``key`` (a tuple whose ``repr`` names every argument of the render) with the
    same renderer, else rendered and written there."""
    directory = cache_dir()
    if directory is None:
        return render()
    digest = hashlib.sha256(repr((name, key, renderer_version())).encode()).hexdigest()[:24]
    path = os.path.join(directory, f"{name}-{digest}.npz")
    try:
        with np.load(path, allow_pickle=False) as stored:
            return tuple(stored[f"array_{index}"] for index in range(len(stored.files)))
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
        _log.warning("Rendering again: the cached renders %s could not be read (%s).", path, error)
    arrays = render()
    partial = f"{path}.{os.getpid()}.partial"  # renamed when complete: a reader never sees half a file
    try:
        os.makedirs(directory, exist_ok=True)
        with open(partial, "wb") as handle:
            np.savez(handle, **{f"array_{index}": array for index, array in enumerate(arrays)})
        os.replace(partial, path)
    except OSError as error:
        if os.path.exists(partial):
            os.remove(partial)
        if directory not in _unwritable:
            _unwritable.add(directory)
            _log.warning(
                "Renders are not kept between processes: %s cannot be written (%s). Set %s to a writable "
                "directory, or to '%s'.",
                directory,
                error,
                CACHE_ENV,
                OFF,
            )
    return arrays

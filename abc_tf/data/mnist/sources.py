"""Where a run's MNIST comes from: the source a config names or ``auto`` detects, read once per path.

Sources (:data:`SOURCES`): ``idx`` and ``npz`` files, ``tfds`` and the built-in ``procedural``
digits. ``class_split`` 1..50 subsamples one of Elastic-InfoGAN's imbalanced splits
(:func:`load_mnist`). The family (:mod:`abc_tf.data.mnist.family`) draws its batches from here.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import warnings

import numpy as np

from abc_tf.config import ExperimentConfig
from abc_tf.data.family import DataSources
from abc_tf.data.mnist import imbalance as mnist_imbalance
from abc_tf.data.mnist.formats import (
    IDX_FILES,
    MnistData,
    check_npz_start,
    find_idx_files,
    load_idx_dir,
    load_npz,
    load_procedural,
    load_tfds,
    tfds_prepared,
)

_log = logging.getLogger(__name__)


def _detect(path: str) -> str | None:
    """The source that reads ``path``: an ``.npz`` file, or a folder of the IDX files or a prepared
    tfds ``mnist``.

    ValueError naming the IDX files a folder lacks.
    """
    if os.path.isfile(path):
        check_npz_start(path)
        return "npz"
    found = find_idx_files(path)
    if all(found.values()):
        return "idx"
    if tfds_prepared(path):
        return "tfds"
    missing = "; ".join(f"{IDX_FILES[key][0]}[.gz]" for key, value in found.items() if value is None)
    raise ValueError(
        f"--data.path={path} is a folder without the MNIST IDX files (missing: {missing}) and without "
        "a prepared tfds 'mnist'."
    )


SOURCES = DataSources(
    reading={
        "idx": "a folder with the four MNIST IDX files (plain or .gz)",
        "npz": "an .npz file with x_train, y_train, x_test and y_test",
        "tfds": (
            "a tfds data folder (downloaded there on first use when online; default ~/tensorflow_datasets)"
        ),
    },
    built_in=("procedural",),
    detect=_detect,
    path_optional=("tfds",),
    default=lambda: "tfds" if tfds_prepared(None) else "procedural",
)


def resolve_source(config: ExperimentConfig) -> tuple[str, str]:
    """The source and path that ``config`` selects, ``auto`` resolved (:data:`SOURCES`). Raises
    ValueError.

    - ``idx``: a directory with the four MNIST IDX files, plain or ``.gz``.
    - ``npz``: one ``.npz`` with ``x_train``, ``y_train``, ``x_test``, ``y_test``.
    - ``tfds``: the tfds ``mnist`` data set. The path is the tfds data_dir,
      ``~/tensorflow_datasets`` by default. It is downloaded and prepared on first use when
      online.
    - ``procedural``: built-in handwritten-digit-like renders (:mod:`abc_tf.data.mnist.digits`),
      60,000 train and 10,000 test.
    - ``auto``: ``data_path`` if given, detected as an IDX folder, a tfds folder or an ``.npz``.
      Else tfds ``mnist`` if prepared, never downloaded. Else ``procedural``.
    """
    return SOURCES.resolve("mnist", config.data.source, config.data.path)


@functools.lru_cache(maxsize=4)
def _load_cached(source: str, path: str) -> MnistData:
    if source == "idx":
        data = load_idx_dir(path)
    elif source == "npz":
        data = load_npz(path)
    elif source == "tfds":
        data = load_tfds(path or None, download=True)
    else:
        data = load_procedural()
    for array in (data.x_train, data.y_train, data.x_test, data.y_test, *(data.test_style or {}).values()):
        array.flags.writeable = False  # shared by every caller of the cache
    return data


def class_split_pool(config: ExperimentConfig) -> tuple[np.ndarray, np.ndarray]:
    """Images [N, 28, 28] uint8 and digits [N] that ``config``'s class split draws from.

    See ``class_split_pool`` and :func:`abc_tf.data.mnist.imbalance.pool`.
    """
    return _pool(_whole(config)[1], config)


def _whole(config: ExperimentConfig) -> tuple[str, MnistData]:
    """The source ``config`` resolves to and its whole data set, from the cache."""
    source, path = resolve_source(config)
    return source, _load_cached(source, os.path.abspath(path) if path else "")


def _pool(data: MnistData, config: ExperimentConfig) -> tuple[np.ndarray, np.ndarray]:
    return mnist_imbalance.pool(
        data.x_train, data.y_train, data.x_test, data.y_test, config.data.class_split_pool
    )


def load_mnist(config: ExperimentConfig) -> MnistData:
    """The MNIST data ``config`` points at, cached per source and path.

    Under ``config.data.class_split``, the training images are the split's, drawn class by class
    from the pool before anything else. The pool is all 70,000 images as the authors', or the
    training images. So split 1 also trains on 6,022 of the 10,000 test images. The test split
    stays whole.
    """
    source, data = _whole(config)
    if config.data.class_split != mnist_imbalance.NO_SPLIT:
        images, labels = _pool(data, config)
        kept = mnist_imbalance.subsample(labels, config.data.class_split)
        data = dataclasses.replace(data, x_train=images[kept], y_train=labels[kept])
    if source == "procedural" and config.data.source == "auto":
        warnings.warn(  # once a process, however many streams and samples read the digits
            "No MNIST found (no --data.path, no prepared tfds 'mnist'): using the built-in procedural "
            "digits. Point --data.path at a directory of MNIST IDX files or an .npz to use real MNIST."
        )
    _log.info("MNIST data: %s (%d train, %d test images)", data.source, len(data.y_train), len(data.y_test))
    return data

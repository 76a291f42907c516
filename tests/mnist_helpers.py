"""Small MNIST files written by the tests: a coded MNIST whose pixels say what each image is,
IDX directories written by hand from the format description, the MNIST preset."""

from __future__ import annotations

import functools
import gzip
import os
import struct

import numpy as np

from abc_tf.runs.experiments import choose, get_preset
from abc_tf.data.mnist import formats as mnist_formats

PER_CLASS_TRAIN = 12
PER_CLASS_TEST = 4


def coded_split(per_class: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """Images whose pixels say what they are: [0, 0] = digit * 20 + 5, [0, 1] and [0, 2] =
    the image's index (low, high byte); labels in shuffled order."""
    labels = np.random.default_rng(offset).permutation(np.repeat(np.arange(10), per_class)).astype(np.uint8)
    images = np.zeros((len(labels), 28, 28), np.uint8)
    images[:, 0, 0] = labels * 20 + 5
    index = np.arange(len(labels)) + offset
    images[:, 0, 1], images[:, 0, 2] = index % 256, index // 256
    images[:, 10:18, 12:16] = 200  # some ink
    return images, labels


@functools.lru_cache(maxsize=1)
def small_arrays() -> dict[str, np.ndarray]:
    """A tiny coded MNIST: 12 training and 4 test images per digit (the ``small_mnist`` fixture)."""
    x_train, y_train = coded_split(PER_CLASS_TRAIN, 0)
    x_test, y_test = coded_split(PER_CLASS_TEST, 1000)
    return {"x_train": x_train, "y_train": y_train, "x_test": x_test, "y_test": y_test}


def raw_idx_bytes(array: np.ndarray) -> bytes:
    """IDX written by hand from the format description (independent of mnist_formats.write_idx)."""
    code = {np.dtype(np.uint8): 0x08}[array.dtype]
    return (
        struct.pack(">BBBB", 0, 0, code, array.ndim)
        + struct.pack(f">{array.ndim}I", *array.shape)
        + array.tobytes()
    )


def write_idx_dir(directory, arrays, compress: bool, dotted: bool = False) -> None:
    os.makedirs(directory, exist_ok=True)
    for key, names in mnist_formats.IDX_FILES.items():
        name = names[1] if dotted else names[0]
        payload = raw_idx_bytes(arrays[key])
        if compress:
            with gzip.open(os.path.join(directory, name + ".gz"), "wb") as handle:
                handle.write(payload)
        else:
            with open(os.path.join(directory, name), "wb") as handle:
                handle.write(payload)


def mnist_config(method: str | None = None, **overrides):
    """The mnist preset with ``overrides``; ``method``: another method on it (e.g. "vae", whose
    batch part of single images has ``batch_size``)."""
    return choose(get_preset("mnist"), method=method, **overrides)

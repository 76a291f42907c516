"""MNIST file formats (abc_tf.data.mnist_formats) on small files written here: IDX plain and
gzip, .npz, a mocked prepared tfds, and the errors that name the file."""

from __future__ import annotations

import functools
import gzip
import os
import struct

import numpy as np
import pytest

from abc_tf.data import mnist_formats

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
    """A tiny coded MNIST: 12 training and 4 test images per digit."""
    x_train, y_train = coded_split(PER_CLASS_TRAIN, 0)
    x_test, y_test = coded_split(PER_CLASS_TEST, 1000)
    return {"x_train": x_train, "y_train": y_train, "x_test": x_test, "y_test": y_test}


@pytest.fixture(scope="module")
def small_mnist():
    return small_arrays()


def raw_idx_bytes(array: np.ndarray) -> bytes:
    """IDX written by hand from the format description (independent of mnist_formats.write_idx)."""
    code = {np.dtype(np.uint8): 0x08}[array.dtype]
    return struct.pack(">BBBB", 0, 0, code, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()


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


@pytest.mark.parametrize("compress,dotted", [(False, False), (True, False), (True, True)])
def test_idx_directory_plain_and_gz(tmp_path, small_mnist, compress, dotted):
    write_idx_dir(tmp_path / "idx", small_mnist, compress, dotted)
    data = mnist_formats.load_idx_dir(str(tmp_path / "idx"))
    for key in mnist_formats.NPZ_KEYS:
        np.testing.assert_array_equal(getattr(data, key), small_mnist[key])
    assert data.x_train.dtype == np.uint8 and data.source.startswith("idx:")


def test_idx_round_trip_and_bad_files(tmp_path):
    array = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    for name in ("a-idx3-ubyte", "a-idx3-ubyte.gz"):
        mnist_formats.write_idx(str(tmp_path / name), array)
        np.testing.assert_array_equal(mnist_formats.read_idx(str(tmp_path / name)), array)
    (tmp_path / "junk").write_bytes(b"\x01\x02\x03\x04\x05")
    with pytest.raises(ValueError, match="not an IDX file"):
        mnist_formats.read_idx(str(tmp_path / "junk"))
    (tmp_path / "short").write_bytes(raw_idx_bytes(array)[:-3])
    with pytest.raises(ValueError, match="header says shape"):
        mnist_formats.read_idx(str(tmp_path / "short"))


def test_idx_directory_names_what_is_missing(tmp_path, small_mnist):
    write_idx_dir(tmp_path / "idx", small_mnist, compress=True)
    os.remove(tmp_path / "idx" / "t10k-labels-idx1-ubyte.gz")
    with pytest.raises(ValueError, match=r"lacks: t10k-labels-idx1-ubyte\[\.gz\]"):
        mnist_formats.load_idx_dir(str(tmp_path / "idx"))


def test_npz_loader_and_its_errors(tmp_path, small_mnist):
    path = str(tmp_path / "mnist_formats.npz")
    np.savez(path, **small_mnist)
    data = mnist_formats.load_npz(path)
    np.testing.assert_array_equal(data.y_test, small_mnist["y_test"])
    # Float images in [0, 1] and [N, 28, 28, 1] shapes are accepted and become uint8.
    floats = dict(small_mnist, x_train=small_mnist["x_train"][..., None] / 255.0)
    np.savez(tmp_path / "float.npz", **floats)
    np.testing.assert_array_equal(mnist_formats.load_npz(str(tmp_path / "float.npz")).x_train, small_mnist["x_train"])
    np.savez(tmp_path / "partial.npz", x_train=small_mnist["x_train"], y_train=small_mnist["y_train"])
    with pytest.raises(ValueError, match=r"lacks arrays \['x_test', 'y_test'\]"):
        mnist_formats.load_npz(str(tmp_path / "partial.npz"))
    np.savez(tmp_path / "labels.npz", **dict(small_mnist, y_test=small_mnist["y_test"] + 10))
    with pytest.raises(ValueError, match="digits 0..9"):
        mnist_formats.load_npz(str(tmp_path / "labels.npz"))
    with pytest.raises(ValueError, match="does not exist"):
        mnist_formats.load_npz(str(tmp_path / "nowhere.npz"))


def test_tfds_loader_needs_a_prepared_mnist(monkeypatch, tmp_path):
    """tfds' own mock of mnist stands in for prepared data (nothing is downloaded)."""
    import tensorflow_datasets as tfds

    # An empty data_dir says it is not prepared.
    with pytest.raises(ValueError, match="tfds 'mnist' is not prepared"):
        mnist_formats.load_tfds(str(tmp_path))
    assert not mnist_formats.tfds_prepared(str(tmp_path))
    with tfds.testing.mock_data(num_examples=30):
        monkeypatch.setattr(type(tfds.builder("mnist")), "is_prepared", lambda self: True)
        data = mnist_formats.load_tfds(str(tmp_path))
    assert data.x_train.shape == (30, 28, 28) and data.x_train.dtype == np.uint8
    assert data.y_test.shape == (30,) and data.y_test.max() <= 9 and data.source.startswith("tfds:")

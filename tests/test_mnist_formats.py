"""MNIST file formats (abc_tf.data.mnist.formats) on small files written here: IDX plain and
gzip, .npz, a mocked prepared tfds, and the errors that name the file."""

from __future__ import annotations

import functools
import os
import zipfile

import numpy as np
import pytest

from abc_tf.data.mnist import formats as mnist_formats
from abc_tf.data.mnist import digits as digit_renderer
from mnist_helpers import raw_idx_bytes, write_idx_dir


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
    np.testing.assert_array_equal(
        mnist_formats.load_npz(str(tmp_path / "float.npz")).x_train, small_mnist["x_train"]
    )
    np.savez(tmp_path / "partial.npz", x_train=small_mnist["x_train"], y_train=small_mnist["y_train"])
    with pytest.raises(ValueError, match=r"lacks arrays \['x_test', 'y_test'\]"):
        mnist_formats.load_npz(str(tmp_path / "partial.npz"))
    np.savez(tmp_path / "labels.npz", **dict(small_mnist, y_test=small_mnist["y_test"] + 10))
    with pytest.raises(ValueError, match="digits 0..9"):
        mnist_formats.load_npz(str(tmp_path / "labels.npz"))
    with pytest.raises(ValueError, match="does not exist"):
        mnist_formats.load_npz(str(tmp_path / "nowhere.npz"))


@pytest.mark.parametrize("compress", [True, False], ids=["gz", "plain"])
def test_one_idx_file_as_the_path_asks_for_its_folder(tmp_path, small_mnist, compress):
    write_idx_dir(tmp_path / "idx", small_mnist, compress)
    path = str(tmp_path / "idx" / ("train-images-idx3-ubyte" + (".gz" if compress else "")))
    kind = "gzipped file" if compress else "file"
    with pytest.raises(
        ValueError,
        match=f"MNIST --data.path='{path}' is a single {kind}; give the folder that holds the "
        "four IDX files \\(train-images-idx3-ubyte, train-labels-idx1-ubyte, ",
    ):
        mnist_formats.load_npz(path)


def test_tfds_loader_needs_a_prepared_mnist(monkeypatch, tmp_path):
    """tfds' own mock of mnist stands in for prepared data (nothing is downloaded)."""
    import tensorflow_datasets as tfds

    # An empty data_dir says it is not prepared.
    with pytest.raises(
        ValueError, match=r"tfds 'mnist' is not prepared.* or use --data.source=idx/npz with --data.path\.$"
    ):
        mnist_formats.load_tfds(str(tmp_path))
    assert not mnist_formats.tfds_prepared(str(tmp_path))
    with tfds.testing.mock_data(num_examples=30):
        monkeypatch.setattr(tfds.builder_cls("mnist"), "is_prepared", lambda self: True)
        data = mnist_formats.load_tfds(str(tmp_path))
    assert data.x_train.shape == (30, 28, 28) and data.x_train.dtype == np.uint8
    assert data.y_test.shape == (30,) and data.y_test.max() <= 9 and data.source.startswith("tfds:")


# ----------------------------------------------------------------------------- damaged files


def small_images() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (20, 28, 28), dtype=np.uint8)


def gz_idx(path, truncate: bool = False, corrupt: bool = False) -> str:
    mnist_formats.write_idx(str(path), small_images())
    content = open(path, "rb").read()
    if truncate:
        content = content[: len(content) // 2]
    if corrupt:
        content = content[:20] + bytes(b ^ 0xFF for b in content[20:40]) + content[40:]
    open(path, "wb").write(content)
    return str(path)


def npz_file(path, **arrays) -> str:
    np.savez(path, **arrays)
    return str(path)


def arrays() -> dict[str, np.ndarray]:
    labels = np.arange(20) % 10
    return {"x_train": small_images(), "y_train": labels, "x_test": small_images(), "y_test": labels}


def truncated(path: str) -> str:
    content = open(path, "rb").read()
    open(path, "wb").write(content[: len(content) // 2])
    return path


def text_file(path) -> str:
    path.write_text("x_train,y_train\n1,2\n")
    return str(path)


DAMAGED_FILES = {
    "truncated MNIST .gz": (
        lambda tmp: mnist_formats.read_idx(gz_idx(tmp / "x.gz", truncate=True)),
        "Cannot read IDX file {tmp}/x.gz",
    ),
    "corrupt MNIST .gz": (
        lambda tmp: mnist_formats.read_idx(gz_idx(tmp / "x.gz", corrupt=True)),
        "Cannot read IDX file {tmp}/x.gz",
    ),
    "truncated .npz": (
        lambda tmp: mnist_formats.load_npz(truncated(npz_file(tmp / "m.npz", **arrays()))),
        "Cannot read MNIST .npz file '{tmp}/m.npz'",
    ),
    "text file as .npz": (
        lambda tmp: mnist_formats.load_npz(text_file(tmp / "m.npz")),
        "MNIST .npz file '{tmp}/m.npz' (--data.path) is not an .npz archive (it starts with b'x_trai')",
    ),
    "object-array .npz": (
        lambda tmp: mnist_formats.load_npz(
            npz_file(tmp / "m.npz", **{**arrays(), "y_train": np.array([object()] * 20)})
        ),
        "Cannot read MNIST .npz file '{tmp}/m.npz': Object arrays cannot be loaded",
    ),
}


@pytest.mark.parametrize("case", sorted(DAMAGED_FILES))
def test_damaged_files_are_one_line_naming_the_file(tmp_path, case):
    load, message = DAMAGED_FILES[case]
    with pytest.raises(ValueError) as error:
        load(tmp_path)
    assert message.format(tmp=tmp_path) in str(error.value)
    assert "\n" not in str(error.value)


def test_a_corrupt_zip_is_a_bad_npz_not_a_traceback(tmp_path):
    path = tmp_path / "m.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("x_train.npy", b"\x93NUMPY garbage")
    with pytest.raises(ValueError, match="Cannot read MNIST .npz file"):
        mnist_formats.load_npz(str(path))


# ----------------------------------------------------------------------------- true style


def test_procedural_digits_keep_the_true_style_of_the_test_images(monkeypatch, tmp_path, small_mnist):
    """load_procedural's test_style: every renderer style factor, one value per test image
    (a small render stands in for 60k + 10k digits); every other source has none."""
    small = functools.partial(digit_renderer.procedural_mnist, train_size=40, test_size=30)
    monkeypatch.setattr(digit_renderer, "procedural_mnist", small)
    data = mnist_formats.load_procedural(seed=3)
    assert set(data.test_style) == set(digit_renderer.STYLE_FACTORS)
    _, test = small(3)
    for name in digit_renderer.STYLE_FACTORS:
        assert data.test_style[name].shape == (len(data.y_test),) == (30,)
        np.testing.assert_array_equal(data.test_style[name], test.style[name])
    np.savez(tmp_path / "m.npz", **small_mnist)
    write_idx_dir(tmp_path / "idx", small_mnist, compress=False)
    assert mnist_formats.load_npz(str(tmp_path / "m.npz")).test_style is None
    assert mnist_formats.load_idx_dir(str(tmp_path / "idx")).test_style is None

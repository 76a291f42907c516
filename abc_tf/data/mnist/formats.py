"""MNIST's file formats: the four IDX files (plain or gzip), an ``.npz`` archive, a prepared
tfds ``mnist``, and the built-in procedural digits, each read into :class:`MnistData`
(validated: [N, 28, 28] uint8 images, digits 0-9). Nothing is downloaded; every bad file
raises ValueError naming it. The family that chooses among them is :mod:`abc_tf.data.mnist.family`.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import zipfile
import zlib

import numpy as np

from abc_tf.data import tfds_builders
from abc_tf.data.mnist import digits as digit_renderer

IMAGE_SHAPE = (28, 28, 1)
NUM_CLASSES = 10
# Seed of the built-in procedural data set: fixed, so that runs with different training
# seeds see the same "data set" (like a file on disk), and evaluation sees the same test split.
PROCEDURAL_DATA_SEED = 0

# Names of the IDX files: the official names, and the dotted variant some mirrors use.
IDX_FILES = {
    "x_train": ("train-images-idx3-ubyte", "train-images.idx3-ubyte"),
    "y_train": ("train-labels-idx1-ubyte", "train-labels.idx1-ubyte"),
    "x_test": ("t10k-images-idx3-ubyte", "t10k-images.idx3-ubyte"),
    "y_test": ("t10k-labels-idx1-ubyte", "t10k-labels.idx1-ubyte"),
}
NPZ_KEYS = ("x_train", "y_train", "x_test", "y_test")

# IDX type codes (third byte of the magic number) -> big-endian numpy dtypes.
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


@dataclasses.dataclass(frozen=True)
class MnistData:
    """Images [N, 28, 28] uint8 (ink bright on black) and labels [N] uint8 digits, both splits.

    ``source`` says where the data came from (for logs and results). ``test_style``: the
    renderer's true style factors of the test images (factor name -> [N_test] values, the
    names of ``abc_tf.data.mnist.digits.STYLE_FACTORS``) for the procedural digits; None for
    every other source, whose style is unknown."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    source: str
    test_style: dict[str, np.ndarray] | None = None


def _open(path: str):
    """Opens plain or gzip files; gzip is recognised by its magic bytes, not only the name."""
    with open(path, "rb") as handle:
        magic = handle.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def read_idx(path: str) -> np.ndarray:
    """Reads one IDX file (plain or gzip) into an array of its stored shape and type.

    IDX layout: two zero bytes, a type code, the number of dimensions n, then n big-endian
    uint32 sizes, then the data in C order.
    """
    try:
        with _open(path) as handle:
            content = handle.read()
    except (OSError, EOFError, zlib.error) as error:  # unreadable, truncated or corrupt gzip
        raise ValueError(f"Cannot read IDX file {path}: {error or type(error).__name__}") from None
    if len(content) < 4 or content[0] != 0 or content[1] != 0 or content[2] not in _IDX_DTYPES:
        raise ValueError(f"{path} is not an IDX file (bad magic number {content[:4]!r}).")
    dtype = np.dtype(_IDX_DTYPES[content[2]])
    ndim = content[3]
    header = 4 + 4 * ndim
    shape = tuple(int(size) for size in np.frombuffer(content, ">u4", count=ndim, offset=4))
    expected = header + int(np.prod(shape)) * dtype.itemsize
    if len(content) != expected:
        raise ValueError(
            f"{path}: IDX header says shape {shape} ({expected} bytes) but the file has {len(content)} bytes."
        )
    return np.frombuffer(content, dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def write_idx(path: str, array: np.ndarray) -> None:
    """Writes ``array`` as an IDX file (gzip-compressed when ``path`` ends in .gz)."""
    array = np.asarray(array)
    codes = {np.dtype(dtype).newbyteorder("="): code for code, dtype in _IDX_DTYPES.items()}
    code = codes.get(array.dtype.newbyteorder("="))
    if code is None:
        raise ValueError(f"IDX cannot store dtype {array.dtype}; use one of {sorted(map(str, codes))}.")
    header = bytes([0, 0, code, array.ndim]) + np.asarray(array.shape, ">u4").tobytes()
    payload = header + np.ascontiguousarray(array.astype(_IDX_DTYPES[code])).tobytes()
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wb") as handle:
        handle.write(payload)


def _check_arrays(arrays: dict[str, np.ndarray], where: str) -> dict[str, np.ndarray]:
    """Validates and normalises images to [N, 28, 28] uint8 and labels to [N] uint8 digits."""
    out = {}
    for split in ("train", "test"):
        images, labels = np.asarray(arrays[f"x_{split}"]), np.asarray(arrays[f"y_{split}"])
        if images.ndim == 4 and images.shape[-1] == 1:
            images = images[..., 0]
        if images.ndim != 3 or images.shape[1:] != IMAGE_SHAPE[:2]:
            raise ValueError(
                f"{where}: x_{split} must be [N, 28, 28] (or [N, 28, 28, 1]) images, got shape "
                f"{images.shape}."
            )
        if labels.ndim == 2 and labels.shape[1] == 10:  # one-hot labels
            labels = labels.argmax(axis=1)
        if labels.shape != (images.shape[0],):
            raise ValueError(
                f"{where}: y_{split} must hold one label per image ({images.shape[0]}), got shape "
                f"{labels.shape}."
            )
        if labels.size and (
            labels.min() < 0 or labels.max() >= NUM_CLASSES or np.any(labels != np.round(labels))
        ):
            raise ValueError(f"{where}: y_{split} must hold digits 0..9.")
        if images.dtype != np.uint8:
            if np.issubdtype(images.dtype, np.floating) and images.size and images.max() <= 1.0:
                images = images * 255.0  # float images in [0, 1]
            if images.size and (images.min() < 0 or images.max() > 255):
                raise ValueError(
                    f"{where}: x_{split} must hold pixel values in 0..255 (or floats in [0, 1])."
                )
            images = np.round(images).astype(np.uint8)
        out[f"x_{split}"], out[f"y_{split}"] = images, labels.astype(np.uint8)
    return out


def find_idx_files(directory: str) -> dict[str, str | None]:
    """Path of each of the four IDX files in ``directory`` (plain or .gz), None where absent."""
    found: dict[str, str | None] = {}
    for key, names in IDX_FILES.items():
        found[key] = None
        for name in names:
            for candidate in (name, name + ".gz"):
                if os.path.isfile(os.path.join(directory, candidate)):
                    found[key] = os.path.join(directory, candidate)
                    break
            if found[key]:
                break
    return found


def load_idx_dir(directory: str) -> MnistData:
    """Loads MNIST from a directory of the four IDX files (plain or .gz)."""
    if not os.path.isdir(directory):
        raise ValueError(f"MNIST IDX directory {directory!r} (--data.path) does not exist.")
    found = find_idx_files(directory)
    missing = [key for key, path in found.items() if path is None]
    if missing:
        wanted = "; ".join(f"{IDX_FILES[key][0]}[.gz]" for key in missing)
        raise ValueError(f"MNIST IDX directory {directory!r} (--data.path) lacks: {wanted}.")
    arrays = {key: read_idx(path) for key, path in found.items()}
    return MnistData(**_check_arrays(arrays, directory), source=f"idx:{os.path.abspath(directory)}")


def check_npz_start(path: str) -> None:
    """ValueError unless the file ``path`` starts as an .npz archive does, naming what it is
    instead (one IDX file, gzipped or not; text): read before anything else is loaded."""
    with open(path, "rb") as handle:
        magic = handle.read(6)
    if magic.startswith((b"\x1f\x8b", b"\x00\x00\x08")):  # gzip, or an IDX file of unsigned bytes
        raise ValueError(
            f"MNIST --data.path={path!r} is a single {'gzipped ' if magic[0] == 0x1F else ''}file; give the "
            f"folder that holds the four IDX files ({', '.join(names[0] for names in IDX_FILES.values())}, "
            "plain or .gz), or an .npz archive."
        )
    if not magic.startswith((b"PK\x03\x04", b"\x93NUMPY")):  # NumPy would suggest unpickling it
        raise ValueError(
            f"MNIST .npz file {path!r} (--data.path) is not an .npz archive (it starts with {magic!r})."
        )


def load_npz(path: str) -> MnistData:
    """Loads MNIST from an .npz holding x_train, y_train, x_test, y_test."""
    if not os.path.isfile(path):
        raise ValueError(f"MNIST .npz file {path!r} (--data.path) does not exist.")
    check_npz_start(path)
    try:
        archive = np.load(path, allow_pickle=False)
        if not isinstance(archive, np.lib.npyio.NpzFile):  # a plain .npy file
            raise ValueError("it holds one array, not an archive of named arrays")
        with archive:
            missing = [key for key in NPZ_KEYS if key not in archive.files]
            if missing:
                raise ValueError(f"it lacks arrays {missing}; it has {sorted(archive.files)}")
            arrays = {key: archive[key] for key in NPZ_KEYS}
    # Not a zip archive (a text file), truncated, corrupt, object arrays (pickles are refused), ...
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error) as error:
        message = str(error).rstrip(".") or type(error).__name__
        raise ValueError(f"Cannot read MNIST .npz file {path!r}: {message}.") from None
    return MnistData(**_check_arrays(arrays, path), source=f"npz:{os.path.abspath(path)}")


def _tfds_builder(data_dir: str | None):
    return tfds_builders.builder("mnist", data_dir)


def tfds_prepared(data_dir: str | None = None) -> bool:
    """Whether tfds ``mnist`` is prepared under ``data_dir`` (default tfds data dir); no download."""
    try:
        return tfds_builders.is_prepared(_tfds_builder(data_dir))
    except Exception:  # noqa: BLE001 - a broken tfds install or folder means "not available"
        return False


def load_tfds(data_dir: str | None = None, download: bool = False) -> MnistData:
    """Loads tfds ``mnist`` from ``data_dir`` (default: tfds's data folder). Not prepared there,
    it is downloaded and prepared when ``download`` (``--data.source=tfds``: needs internet
    once), else refused; ``auto`` never downloads."""
    import tensorflow_datasets as tfds

    builder = _tfds_builder(data_dir)
    if not tfds_builders.is_prepared(builder) and download:
        try:
            builder.download_and_prepare()
        except Exception as error:  # noqa: BLE001 - offline, a proxy, a full disk: all end the same way
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise ValueError(
                f"--data.source=tfds: tfds 'mnist' is not prepared under {builder.data_dir} and downloading "
                f"it failed ({reason[:200]}). Offline, pass --data.path=<a folder with the four MNIST IDX "
                "files> instead."
            ) from None
    if not tfds_builders.is_prepared(builder):
        raise ValueError(
            f"tfds 'mnist' is not prepared: no dataset_info.json under {builder.data_dir} "
            "(--data.path sets the tfds data_dir). Prepare it where there is internet "
            "(`tfds build mnist`) and copy the folder, or use --data.source=idx/npz with --data.path."
        )
    arrays = {}
    for split in ("train", "test"):
        # Read in large batches and concatenate (70k images: a few seconds, 55 MB).
        dataset = builder.as_dataset(split=split, as_supervised=True, shuffle_files=False).batch(8192)
        pieces = list(tfds.as_numpy(dataset))
        arrays[f"x_{split}"] = np.concatenate([images for images, _ in pieces])
        arrays[f"y_{split}"] = np.concatenate([labels for _, labels in pieces])
    return MnistData(
        **_check_arrays(arrays, f"tfds mnist ({builder.data_dir})"), source=f"tfds:{builder.data_dir}"
    )


def load_procedural(seed: int = PROCEDURAL_DATA_SEED) -> MnistData:
    """The built-in stand-in: 60,000 + 10,000 rendered digits (abc_tf.data.mnist.digits),
    with the style factors each test image was rendered with (``test_style``)."""
    train, test = digit_renderer.procedural_mnist(seed)
    return MnistData(
        train.images,
        train.labels,
        test.images,
        test.labels,
        source=f"procedural:seed={seed}",
        test_style={name: test.style[name] for name in digit_renderer.STYLE_FACTORS},
    )

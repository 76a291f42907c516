"""MNIST digit-style isolation data (SPEC.md section 3, MNIST row; paper section 4.2, S8.2).

Sets are *stacks* of ``set_size`` (64) images of one digit; every step pairs two stacks of
two randomly chosen different digits (``allow_same_digit`` permits equal ones), so the digit
is the inactive factor and style (slant, thickness, ...) the active one. The digit
``holdout_digit`` (9 by default, ``none`` allowed) never enters a training batch.

Sources (``config.data_source``):
- ``idx``: a directory with the four MNIST IDX files, plain or ``.gz``;
- ``npz``: one ``.npz`` with ``x_train``, ``y_train``, ``x_test``, ``y_test``;
- ``tfds``: the tfds ``mnist`` data set, only if already prepared (``config.data_path`` is
  then the tfds data_dir, default ``~/tensorflow_datasets``); nothing is downloaded;
- ``procedural``: built-in handwritten-digit-like renders (``abc_tf.data.render.digits``),
  60,000 train / 10,000 test, used when no MNIST is available;
- ``auto`` (the preset's default): ``data_path`` if given (an IDX directory or an ``.npz``,
  detected), else tfds ``mnist`` if prepared, else ``procedural``.

Batches: ``{"set_a": [P, S, 28, 28, 1] uint8, "set_b": [P, S, 28, 28, 1] uint8}`` with
P = ``pairs_per_step``, S = ``set_size``. Sampling is stateless in (seed, step): every index
is computed from per-class index arrays (offsets into a class-sorted copy of the images).
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import logging
import os
import zipfile
import zlib

import numpy as np
import tensorflow as tf

from abc_tf.config import ExperimentConfig
from abc_tf.data import digit_style
from abc_tf.data.family import DataFamily, KnownFactors, quantile_bins
from abc_tf.data.render import digits as digit_renderer

IMAGE_SHAPE = (28, 28, 1)
NUM_CLASSES = 10
DATA_SOURCES = ("auto", "idx", "npz", "tfds", "procedural")
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

_log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class MnistData:
    """Images [N, 28, 28] uint8 (ink bright on black) and labels [N] uint8 digits, both splits.

    ``source`` says where the data came from (for logs and results)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    source: str


# ----------------------------------------------------------------------------- file formats


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
        raise ValueError(f"{path}: IDX header says shape {shape} ({expected} bytes) but the file has {len(content)} bytes.")
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
            raise ValueError(f"{where}: x_{split} must be [N, 28, 28] (or [N, 28, 28, 1]) images, got shape {images.shape}.")
        if labels.ndim == 2 and labels.shape[1] == 10:  # one-hot labels
            labels = labels.argmax(axis=1)
        if labels.shape != (images.shape[0],):
            raise ValueError(f"{where}: y_{split} must hold one label per image ({images.shape[0]}), got shape {labels.shape}.")
        if labels.size and (labels.min() < 0 or labels.max() >= NUM_CLASSES or np.any(labels != np.round(labels))):
            raise ValueError(f"{where}: y_{split} must hold digits 0..9.")
        if images.dtype != np.uint8:
            if np.issubdtype(images.dtype, np.floating) and images.size and images.max() <= 1.0:
                images = images * 255.0  # float images in [0, 1]
            if images.size and (images.min() < 0 or images.max() > 255):
                raise ValueError(f"{where}: x_{split} must hold pixel values in 0..255 (or floats in [0, 1]).")
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
        raise ValueError(f"MNIST IDX directory {directory!r} (--data_path) does not exist.")
    found = find_idx_files(directory)
    missing = [key for key, path in found.items() if path is None]
    if missing:
        wanted = "; ".join(f"{IDX_FILES[key][0]}[.gz]" for key in missing)
        raise ValueError(f"MNIST IDX directory {directory!r} (--data_path) lacks: {wanted}.")
    arrays = {key: read_idx(path) for key, path in found.items()}
    return MnistData(**_check_arrays(arrays, directory), source=f"idx:{os.path.abspath(directory)}")


def load_npz(path: str) -> MnistData:
    """Loads MNIST from an .npz holding x_train, y_train, x_test, y_test."""
    if not os.path.isfile(path):
        raise ValueError(f"MNIST .npz file {path!r} (--data_path) does not exist.")
    with open(path, "rb") as handle:
        magic = handle.read(6)
    if not magic.startswith((b"PK\x03\x04", b"\x93NUMPY")):  # NumPy would suggest unpickling it
        raise ValueError(f"MNIST .npz file {path!r} (--data_path) is not an .npz archive (it starts with {magic!r}).")
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
    import tensorflow_datasets as tfds  # imported lazily: slow, and only this source needs it

    return tfds.builder("mnist", data_dir=data_dir or None)


def tfds_prepared(data_dir: str | None = None) -> bool:
    """Whether tfds ``mnist`` is prepared under ``data_dir`` (default tfds data dir); no download."""
    try:
        return bool(_tfds_builder(data_dir).is_prepared())
    except Exception:  # noqa: BLE001 - a broken tfds install or folder means "not available"
        return False


def load_tfds(data_dir: str | None = None) -> MnistData:
    """Loads prepared tfds ``mnist``; never downloads (the build machines are offline)."""
    import tensorflow_datasets as tfds

    builder = _tfds_builder(data_dir)
    if not builder.is_prepared():
        raise ValueError(
            f"tfds 'mnist' is not prepared: no dataset_info.json under {builder.data_dir} "
            "(--data_path sets the tfds data_dir). Prepare it where there is internet "
            "(`tfds build mnist`) and copy the folder, or use --data_source=idx/npz with --data_path."
        )
    arrays = {}
    for split in ("train", "test"):
        # Read in large batches and concatenate (70k images: a few seconds, 55 MB).
        dataset = builder.as_dataset(split=split, as_supervised=True, shuffle_files=False).batch(8192)
        pieces = list(tfds.as_numpy(dataset))
        arrays[f"x_{split}"] = np.concatenate([images for images, _ in pieces])
        arrays[f"y_{split}"] = np.concatenate([labels for _, labels in pieces])
    return MnistData(**_check_arrays(arrays, f"tfds mnist ({builder.data_dir})"), source=f"tfds:{builder.data_dir}")


def load_procedural(seed: int = PROCEDURAL_DATA_SEED) -> MnistData:
    """The built-in stand-in: 60,000 + 10,000 rendered digits (abc_tf.data.render.digits)."""
    train, test = digit_renderer.procedural_mnist(seed)
    return MnistData(train.images, train.labels, test.images, test.labels, source=f"procedural:seed={seed}")


# ----------------------------------------------------------------------------- source choice


def resolve_source(config: ExperimentConfig) -> tuple[str, str]:
    """(source, path) that ``config`` selects; ``auto`` is resolved here. Raises ValueError."""
    source, path = config.data_source, config.data_path
    if source not in DATA_SOURCES:
        raise ValueError(f"Unknown MNIST data_source {source!r}; choose one of {', '.join(DATA_SOURCES)}.")
    if source in ("idx", "npz") and not path:
        raise ValueError(f"--data_source={source} needs --data_path (an IDX directory or an .npz file).")
    if source != "auto":
        return source, path
    if path:
        if os.path.isdir(path):
            found = find_idx_files(path)
            if all(found.values()):
                return "idx", path
            if tfds_prepared(path):
                return "tfds", path
            missing = "; ".join(f"{IDX_FILES[key][0]}[.gz]" for key, value in found.items() if value is None)
            raise ValueError(
                f"--data_path={path!r} is a directory without the MNIST IDX files (missing: {missing}) "
                "and without a prepared tfds 'mnist'."
            )
        if path.endswith(".npz") or os.path.isfile(path):
            return "npz", path
        raise ValueError(f"--data_path={path!r} does not exist (expected an IDX directory or an .npz file).")
    if tfds_prepared(None):
        return "tfds", ""
    return "procedural", ""


@functools.lru_cache(maxsize=4)
def _load_cached(source: str, path: str) -> MnistData:
    if source == "idx":
        data = load_idx_dir(path)
    elif source == "npz":
        data = load_npz(path)
    elif source == "tfds":
        data = load_tfds(path or None)
    else:
        data = load_procedural()
    for array in (data.x_train, data.y_train, data.x_test, data.y_test):
        array.flags.writeable = False  # shared by every caller of the cache
    return data


def load_mnist(config: ExperimentConfig) -> MnistData:
    """The MNIST data ``config`` points at (cached per source and path)."""
    source, path = resolve_source(config)
    data = _load_cached(source, os.path.abspath(path) if path else "")
    if source == "procedural" and config.data_source == "auto":
        _log.warning(
            "No MNIST found (no --data_path, no prepared tfds 'mnist'): using the built-in procedural digits. "
            "Point --data_path at a directory of MNIST IDX files or an .npz to use real MNIST."
        )
    _log.info("MNIST data: %s (%d train, %d test images)", data.source, len(data.y_train), len(data.y_test))
    return data


# ----------------------------------------------------------------------------- stacks


def parse_holdout_digit(value: str | int | None) -> int | None:
    """``holdout_digit`` as an int 0-9, or None for 'none'/''. Raises ValueError otherwise."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in ("", "none"):
        return None
    if text.isdigit() and 0 <= int(text) < NUM_CLASSES:
        return int(text)
    raise ValueError(f"holdout_digit must be a digit 0-9 or 'none', got {value!r}.")


def training_digits(config: ExperimentConfig) -> list[int]:
    """The digits that may appear in training batches: all but the held-out one."""
    holdout = parse_holdout_digit(config.holdout_digit)
    return [digit for digit in range(NUM_CLASSES) if digit != holdout]


@dataclasses.dataclass(frozen=True)
class ClassIndex:
    """Per-class index arrays over one split, restricted to ``digits``.

    ``order`` [M]: image indices sorted by class (stable), only images of ``digits``;
    class c (position in ``digits``) occupies ``order[offsets[c] : offsets[c] + counts[c]]``.
    """

    digits: np.ndarray
    order: np.ndarray
    offsets: np.ndarray
    counts: np.ndarray

    @classmethod
    def build(cls, labels: np.ndarray, digits: list[int] | np.ndarray) -> "ClassIndex":
        digits = np.asarray(digits, np.int64)
        labels = np.asarray(labels, np.int64)
        order = np.argsort(labels, kind="stable")
        all_counts = np.bincount(labels, minlength=NUM_CLASSES)
        starts = np.concatenate([[0], np.cumsum(all_counts)[:-1]])
        # Concatenate the wanted classes' slices of the sorted order (no per-image scan).
        pieces = [order[starts[d]: starts[d] + all_counts[d]] for d in digits]
        counts = all_counts[digits]
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        return cls(digits=digits, order=np.concatenate(pieces) if pieces else np.zeros(0, np.int64),
                   offsets=offsets, counts=counts.astype(np.int64))


def make_stack_dataset(
    images: np.ndarray,
    labels: np.ndarray,
    digits: list[int],
    set_size: int,
    pairs_per_step: int,
    allow_same_digit: bool,
    seed: int,
    with_digits: bool = False,
) -> tf.data.Dataset:
    """Endless batches of digit stacks from ``images`` [N, 28, 28] uint8 with ``labels`` [N].

    Each step draws, for each of the P pairs, two digits of ``digits`` (different unless
    ``allow_same_digit``) and for each a stack of ``set_size`` distinct images of that digit,
    uniformly without replacement. Batch: ``set_a``, ``set_b`` [P, S, 28, 28, 1] uint8; with
    ``with_digits`` also ``digit_a``, ``digit_b`` [P] int32 (for tests and diagnostics).
    Deterministic in (seed, step): stateless random ops keyed on both.
    """
    index = ClassIndex.build(labels, digits)
    if len(digits) == 0:
        raise ValueError("No digits left for training (holdout_digit removes the only one).")
    if not allow_same_digit and len(digits) < 2:
        raise ValueError(f"Two different digits per step need at least two training digits, got {list(digits)}; "
                         "set --allow_same_digit or change --holdout_digit.")
    short = [(int(d), int(c)) for d, c in zip(index.digits, index.counts) if c < set_size]
    if short:
        raise ValueError(f"set_size={set_size} exceeds the number of training images of digit(s) "
                         f"{', '.join(f'{d} ({c} images)' for d, c in short)}; lower --set_size.")
    # Class-sorted copy of the training images: a stack is a slice of offsets + positions.
    pool = tf.constant(np.asarray(images)[index.order][..., None])
    offsets = tf.constant(index.offsets, tf.int64)
    counts = tf.constant(index.counts, tf.int64)
    digit_values = tf.constant(index.digits, tf.int32)
    num_digits = len(index.digits)
    max_count = int(index.counts.max())
    pairs = int(pairs_per_step)

    def batch_for_step(step: tf.Tensor) -> dict[str, tf.Tensor]:
        key = tf.stack([tf.constant(seed, tf.int64), step])
        keys = tf.random.experimental.stateless_split(key, 3)
        first = tf.random.stateless_uniform([pairs], keys[0], 0, num_digits, dtype=tf.int64)
        if allow_same_digit:
            second = tf.random.stateless_uniform([pairs], keys[1], 0, num_digits, dtype=tf.int64)
        else:
            # A uniform draw among the other num_digits - 1 digits.
            second = (first + 1 + tf.random.stateless_uniform([pairs], keys[1], 0, num_digits - 1, dtype=tf.int64)) % num_digits
        stack_digits = tf.stack([first, second], axis=1)  # [P, 2] positions in `digits`
        stack_counts = tf.gather(counts, stack_digits)  # [P, 2]
        # Distinct positions within each class: the set_size smallest of uniform noise over
        # the class's positions (a uniform random subset); positions past the class end get
        # noise 2 and are never chosen.
        noise = tf.random.stateless_uniform([pairs, 2, max_count], keys[2])
        noise = tf.where(tf.range(max_count, dtype=tf.int64) < stack_counts[..., None], noise, 2.0)
        _, positions = tf.math.top_k(-noise, k=set_size)  # [P, 2, S]
        flat = tf.gather(offsets, stack_digits)[..., None] + tf.cast(positions, tf.int64)
        stacks = tf.gather(pool, flat)  # [P, 2, S, 28, 28, 1]
        batch = {"set_a": stacks[:, 0], "set_b": stacks[:, 1]}
        if with_digits:
            chosen = tf.gather(digit_values, stack_digits)
            batch["digit_a"], batch["digit_b"] = chosen[:, 0], chosen[:, 1]
        return batch

    dataset = tf.data.Dataset.counter(dtype=tf.int64).map(
        batch_for_step, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    return dataset.prefetch(tf.data.AUTOTUNE)


def make_dataset(config: ExperimentConfig, seed: int, start_step: int = 0) -> tf.data.Dataset:
    """Training batches of the MNIST style experiment (module docstring); checks settings first.
    ``start_step`` is unused: the trainer derives ``seed`` from it."""
    del start_step
    digits = training_digits(config)  # validates holdout_digit before loading anything
    data = load_mnist(config)
    return make_stack_dataset(
        data.x_train, data.y_train, digits, config.set_size, config.pairs_per_step,
        config.allow_same_digit, seed,
    )


def image_shape(config: ExperimentConfig) -> tuple[int, int, int]:
    """MNIST images are 28 x 28 grayscale."""
    del config
    return IMAGE_SHAPE


def check_config(config: ExperimentConfig) -> None:
    """The MNIST checks that read no image: the held-out digit, the source and its files."""
    training_digits(config)
    resolve_source(config)


# Known factors of the test images: the digit (fixed within a stack, the inactive factor) and
# two style measures (abc_tf.data.digit_style) in quantile bins.
FACTOR_NAMES = ("digit", "slant", "thickness")
STYLE_BINS = 4


def labelled_sample(config: ExperimentConfig, num_images: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct test images [n, 28, 28, 1] uint8 and their factors [n, 3] (FACTOR_NAMES order):
    digit 0-9, slant and stroke thickness in STYLE_BINS quantile bins of the sample."""
    digits = load_mnist(config)
    if not 0 < num_images <= len(digits.y_test):
        raise ValueError(f"num_images must lie in 1..{len(digits.y_test)} (the MNIST test images), got {num_images}.")
    rows = np.sort(np.random.default_rng(int(seed) % (1 << 63)).permutation(len(digits.y_test))[:num_images])
    images = digits.x_test[rows]
    style = digit_style.style_measures(images)
    factors = np.stack(
        [digits.y_test[rows].astype(np.int32), quantile_bins(style["slant"], STYLE_BINS),
         quantile_bins(style["thickness"], STYLE_BINS)], axis=1,
    )
    return images[..., np.newaxis], factors.astype(np.int64)


FAMILY = DataFamily(
    name="mnist",
    fields=("holdout_digit", "allow_same_digit"),
    image_shape=image_shape,
    make_dataset=make_dataset,
    check_config=check_config,
    known_factors=KnownFactors(FACTOR_NAMES, (NUM_CLASSES, STYLE_BINS, STYLE_BINS), labelled_sample, lambda config: (0,)),
)

"""Shapes3D's data (docs/PAPERS.md sections 3 and 6): the factor grid and the three backends.

Factors in storage order, the last varying fastest in 3dshapes.h5's flat index: floor_hue 10,
wall_hue 10, object_hue 10, scale 8, shape 4, orientation 15. That is 480,000 images.
The authors' command line numbered them 0 wall hue, 1 object hue, 2 floor hue, 3 scale, 4 shape,
5 orientation. ``--data.inactive_factors`` takes names, those digits, or a mix.

The backends of ``--data.source`` (``procedural``, ``h5``, ``tfds``) give images by item id.
"""

from __future__ import annotations

import io
import logging
import os
from typing import Protocol

import numpy as np
import tensorflow as tf

from abc_tf.data.shapes3d import Shapes3DConfig
from abc_tf.data import factor_grid, tfds_builders
from abc_tf.data.family import DataSources
from abc_tf.data.shapes3d import scenes as render

FACTOR_NAMES: tuple[str, ...] = ("floor_hue", "wall_hue", "object_hue", "scale", "shape", "orientation")
FACTOR_SIZES: tuple[int, ...] = (10, 10, 10, 8, 4, 15)
# The authors' command-line digits.
AUTHOR_DIGITS: dict[str, str] = {
    "0": "wall_hue",
    "1": "object_hue",
    "2": "floor_hue",
    "3": "scale",
    "4": "shape",
    "5": "orientation",
}
GRID = factor_grid.FactorGrid(FACTOR_NAMES, FACTOR_SIZES, AUTHOR_DIGITS)
NUM_IMAGES = GRID.num_points  # 480,000
IMAGE_SHAPE: tuple[int, int, int] = (64, 64, 3)
# Label values stored in 3dshapes.h5 (column order = FACTOR_NAMES); tfds stores the indices.
FACTOR_VALUES: tuple[np.ndarray, ...] = (
    render.HUES,
    render.HUES,
    render.HUES,
    render.SCALES,
    np.arange(4, dtype=np.float64),
    render.ORIENTATIONS_DEG,
)
SHAPES3D_URL = "https://storage.googleapis.com/3d-shapes/3dshapes.h5"


def _detect(path: str) -> str | None:
    """The backend that reads ``path``: an HDF5 file, or a tfds folder with a ``shapes3d``."""
    import h5py  # a declared dependency; loaded only where a path is given

    if os.path.isfile(path):
        return "h5" if h5py.is_hdf5(path) else None
    return "tfds" if os.path.isdir(os.path.join(path, "shapes3d")) else None


SOURCES = DataSources(
    reading={"h5": "the file 3dshapes.h5", "tfds": "a tfds data folder with a prepared shapes3d"},
    built_in=("procedural",),
    detect=_detect,
    default=lambda: "procedural",
    path_optional=("tfds",),
)
# Labels are compared with FACTOR_VALUES within this tolerance (they are float32/64 copies).
_LABEL_TOLERANCE = 1e-3

logger = logging.getLogger(__name__)


class Source(Protocol):
    """A Shapes3D backend: images by item id.

    ``items`` is None when the source holds the full grid, with item id = flat index. Else it is
    an int [num_items, 6] array of each item's factor indices.
    """

    description: str
    items: np.ndarray | None

    def images(self, ids: np.ndarray) -> np.ndarray:
        """Item ids int [...] -> uint8 images [..., 64, 64, 3]."""
        ...


class ProceduralSource:
    """The built-in renderer: the full grid, rendered on demand."""

    description = "procedural renderer (abc_tf.data.shapes3d.scenes)"
    items = None

    def __init__(self) -> None:
        render.weight_tables()  # ray cast now (about a second), not inside the first training step

    def images(self, ids: np.ndarray) -> np.ndarray:
        return render.render(GRID.unravel(ids))


def _read_or_raise(path: str, what: str, read):
    try:
        return read()
    except (OSError, RuntimeError, KeyError) as error:
        raise ValueError(
            f"--data.path={path}: cannot read {what} ({error}); the file may be truncated or damaged."
        ) from None


def labels_to_indices(labels: np.ndarray, where: str) -> np.ndarray:
    """3dshapes float label values [n, 6] -> factor indices [n, 6] int64; ValueError naming ``where``
    for an unknown value."""
    labels = np.asarray(labels, dtype=np.float64)
    indices = np.empty(labels.shape, dtype=np.int64)
    for column, values in enumerate(FACTOR_VALUES):
        distance = np.abs(labels[:, column, None] - values[None, :])
        indices[:, column] = distance.argmin(axis=1)
        worst = distance.min(axis=1).max(initial=0.0)
        if worst > _LABEL_TOLERANCE * max(1.0, float(np.abs(values).max())):
            raise ValueError(
                f"{where}: labels[:, {column}] ({FACTOR_NAMES[column]}) holds values that are not 3dshapes "
                f"values {np.round(values, 4).tolist()} (off by up to {worst:.4g})."
            )
    return indices


class H5Source:
    """The real ``3dshapes.h5``: ``images`` (480000, 64, 64, 3) uint8, ``labels`` (480000, 6).

    Its labels are checked against the grid order before training, so the index arithmetic is known to
    pick the right images. ``in_memory``: read every image first (5.9 GB), else each set with one selection.
    """

    items = None

    def __init__(self, path: str, in_memory: bool = False):
        import h5py  # a declared dependency; imported here so other backends do not need it loaded

        if not path:
            raise ValueError(
                f"--data.source=h5 needs --data.path pointing to 3dshapes.h5 (from {SHAPES3D_URL}; "
                "nothing is downloaded at run time)."
            )
        if not os.path.isfile(path):
            raise ValueError(
                f"--data.path={path}: no such file. Download 3dshapes.h5 from {SHAPES3D_URL} and pass its "
                "path."
            )
        try:
            self._file = h5py.File(path, "r")
        except OSError as error:
            raise ValueError(
                f"--data.path={path} cannot be opened as HDF5 ({error}); the file is truncated, damaged or "
                f"not an h5 file. Download it again from {SHAPES3D_URL}."
            ) from None
        for name in ("images", "labels"):
            if name not in self._file:
                raise ValueError(
                    f"--data.path={path} has no dataset {name!r} (found {sorted(self._file)}); expected "
                    "3dshapes.h5."
                )
        images, labels = self._file["images"], self._file["labels"]
        expected_images = (NUM_IMAGES,) + IMAGE_SHAPE
        if images.shape != expected_images or images.dtype != np.uint8:
            raise ValueError(
                f"--data.path={path}: 'images' is {images.dtype} {images.shape}, expected uint8 "
                f"{expected_images}."
            )
        if labels.shape != (NUM_IMAGES, len(FACTOR_NAMES)):
            raise ValueError(
                f"--data.path={path}: 'labels' has shape {labels.shape}, expected "
                f"{(NUM_IMAGES, len(FACTOR_NAMES))}."
            )
        # The flat index is only meaningful if row i carries the factors of grid point i.
        values = _read_or_raise(path, "'labels'", lambda: labels[()])
        indices = labels_to_indices(values, f"--data.path={path}")
        rows = np.flatnonzero(GRID.ravel(indices) != np.arange(NUM_IMAGES))
        if rows.size:
            raise ValueError(
                f"--data.path={path}: labels are not in the 3dshapes order ({', '.join(FACTOR_NAMES)}, the "
                f"last varying fastest); first mismatch at row {rows[0]}: {values[rows[0]].tolist()}."
            )
        self._images = images
        self._array = _read_or_raise(path, "'images'", lambda: images[()]) if in_memory else None
        chunks = images.chunks
        if self._array is None and chunks is not None and chunks[0] > 64:
            logger.warning(
                "%s stores %d images per chunk: every random image read decompresses a whole chunk. "
                "--data.data_in_memory avoids that (5.9 GB of RAM).",
                path,
                chunks[0],
            )
        self.description = f"h5 file {path}" + (" (in memory)" if in_memory else "")

    def images(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        if self._array is not None:
            return self._array[ids]
        # h5py selections must be increasing and unique: read those, then scatter back.
        unique, inverse = np.unique(ids.reshape(-1), return_inverse=True)
        block = self._images[unique]
        return block[inverse].reshape(ids.shape + IMAGE_SHAPE)


class TfdsSource:
    """tfds ``shapes3d`` from a prepared tfds data directory. Nothing is downloaded.

    The records come shuffled, so their labels are read once into an index table. Images stay
    PNG-encoded in memory, about 1-2 GB for the full set. Records that are exactly the full grid
    allow the other backends' arithmetic. A subset, or repeated grid points as in tfds mock data,
    groups the records present.
    ``data_dir``: the tfds data directory; '' is tfds's default.
    """

    def __init__(self, data_dir: str = ""):
        import tensorflow_datasets as tfds

        builder = tfds_builders.builder("shapes3d", data_dir)
        try:
            dataset = builder.as_dataset(
                split="train", shuffle_files=False, decoders={"image": tfds.decode.SkipDecoding()}
            )
        except (AssertionError, FileNotFoundError, OSError, tf.errors.NotFoundError) as error:
            root = data_dir or os.path.join(os.path.expanduser("~"), "tensorflow_datasets")
            raise ValueError(
                f"--data.source=tfds: the tfds data set 'shapes3d' is not prepared under {root} "
                f"(expected its version folder {builder.data_dir}; {type(error).__name__}). Nothing is "
                "downloaded at run time. Prepare it on a machine with internet (`tfds build shapes3d "
                f"--data_dir={root}`, which fetches {SHAPES3D_URL}) and copy the folder "
                f"{os.path.join(root, 'shapes3d')} here, pass another tfds data directory with --data.path, "
                "or read the h5 file directly with --data.source=h5 --data.path=/path/to/3dshapes.h5."
            ) from None
        encoded, labels = [], []
        keys = [f"label_{name}" for name in FACTOR_NAMES]
        for batch in tfds.as_numpy(dataset.batch(4096)):
            encoded.append(batch["image"])
            labels.append(np.stack([batch[key] for key in keys], axis=1))
        if not encoded:
            raise ValueError(
                f"--data.source=tfds: the prepared 'shapes3d' in {builder.data_dir} holds no records."
            )
        self._encoded = np.concatenate(encoded)
        factors = np.concatenate(labels).astype(np.int64)
        if np.any(factors < 0) or np.any(factors >= np.asarray(FACTOR_SIZES)):
            raise ValueError(
                f"--data.source=tfds: labels in {builder.data_dir} lie outside the factor sizes "
                f"{FACTOR_SIZES}."
            )
        first = _decode_png(self._encoded[0])
        if first.shape != IMAGE_SHAPE:
            raise ValueError(
                f"--data.source=tfds: images in {builder.data_dir} are {first.shape}, expected {IMAGE_SHAPE}."
            )
        flat = GRID.ravel(factors)
        if flat.size == NUM_IMAGES and np.unique(flat).size == NUM_IMAGES:
            # The full grid: keep arithmetic curation, with a table from flat index to record.
            self._record_of = np.empty(NUM_IMAGES, dtype=np.int64)
            self._record_of[flat] = np.arange(NUM_IMAGES)
            self.items = None
        else:
            self._record_of = None
            self.items = factors
            logger.warning(
                "tfds shapes3d in %s holds %d records, not the %d grid points once each: sets are drawn "
                "from the records present.",
                builder.data_dir,
                flat.size,
                NUM_IMAGES,
            )
        self.description = f"tfds shapes3d in {builder.data_dir} ({flat.size} records)"

    def images(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        records = ids if self._record_of is None else self._record_of[ids]
        flat = [_decode_png(data) for data in self._encoded[records.reshape(-1)]]
        return (
            np.stack(flat).reshape(ids.shape + IMAGE_SHAPE)
            if flat
            else np.zeros(ids.shape + IMAGE_SHAPE, np.uint8)
        )


def _decode_png(data: bytes) -> np.ndarray:
    """Encoded PNG or JPEG bytes -> uint8 [H, W, 3], by PIL: numpy pipeline code runs no TF op."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"))


def open_source(data: Shapes3DConfig) -> Source:
    """The backend that ``data.source`` and ``data.path`` name, ``auto`` resolved by :data:`SOURCES`."""
    source, path = SOURCES.resolve("shapes3d", data.source, data.path)
    if source == "procedural":
        return ProceduralSource()
    if source == "h5":
        return H5Source(path, in_memory=data.data_in_memory)
    return TfdsSource(path)

"""Image files to uint8 arrays: decoding (TensorFlow, Pillow for what it misses), channel
conversion and resizing, for the families that read images from disk (folders, yaleb,
epfl_cars, pose's real images and backgrounds).

Formats: PNG, JPEG, BMP and GIF (first frame) through ``tf.io.decode_image``, and binary or
ASCII PGM/PPM/PNM (8 or 16 bit) through Pillow (TensorFlow has no PNM decoder); Pillow also
reads the BMPs TensorFlow's decoder misses (1-bit, palette). Hidden files and other
extensions are not images. An image that cannot be decoded raises ValueError naming the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np
import tensorflow as tf
from PIL import Image

TF_IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif")
PNM_EXTENSIONS = (".pgm", ".ppm", ".pnm")
IMAGE_EXTENSIONS = TF_IMAGE_EXTENSIONS + PNM_EXTENSIONS
# Images resized per call of tf.image.resize; bounds the float32 memory of one call.
_RESIZE_CHUNK = 64


def _read_pnm(path: str) -> np.ndarray:
    """Netpbm PBM/PGM/PPM, ASCII or binary, 8 or 16 bit, through Pillow -> uint8 [H, W, 1 or 3].

    Pillow scales a maxval other than 255 to the full range of its mode: 0..255 for 8-bit
    files and for every PPM, 0..65535 (mode "I") for 16-bit PGM, rescaled here to 0..255.
    Raises ValueError naming the file when it is not a readable PNM file.
    """
    try:
        with Image.open(path, formats=["PPM"]) as image:
            if image.mode.startswith("I"):
                values = np.asarray(image, np.float64) * (255.0 / 65535.0)
                return np.clip(np.rint(values), 0, 255).astype(np.uint8)[..., np.newaxis]
            array = np.asarray(image.convert("L" if image.mode in ("1", "L") else "RGB"), np.uint8)
    except (OSError, ValueError, SyntaxError) as error:  # Pillow's errors for unreadable or corrupt files
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(f"Cannot read image {path} as PBM/PGM/PPM: {message}") from None
    return array[..., np.newaxis] if array.ndim == 2 else array


def _convert_channels(image: np.ndarray, channels: int) -> np.ndarray:
    """uint8 [H, W, c] with c in 1..4 -> [H, W, channels]: alpha dropped, luma or repetition."""
    if image.shape[-1] in (2, 4):
        image = image[..., :-1]  # drop alpha
    if image.shape[-1] == channels:
        return image
    if channels == 3:
        return np.repeat(image, 3, axis=-1)
    luma = image.astype(np.float32) @ np.array([0.2989, 0.5870, 0.1140], np.float32)
    return np.clip(np.rint(luma), 0, 255).astype(np.uint8)[..., np.newaxis]


def _read_with_pillow(path: str) -> np.ndarray | None:
    """uint8 [H, W, 1 or 3] by Pillow, or None when Pillow cannot read the file either."""
    try:
        with Image.open(path) as image:
            image = image.convert("L" if image.mode in ("1", "L", "I;16", "I", "F") else "RGB")
            array = np.asarray(image, np.uint8)
    except (OSError, ValueError, SyntaxError):  # Pillow's errors for unreadable or corrupt files
        return None
    return array[..., np.newaxis] if array.ndim == 2 else array


def read_image(path: str | os.PathLike, channels: int) -> np.ndarray:
    """Decodes one image file to uint8 [H, W, channels] at its own size.

    Raises ValueError naming the file when it cannot be read or decoded.
    """
    path = str(path)
    if channels not in (1, 3):
        raise ValueError(f"image_channels must be 1 or 3, got {channels}.")
    extension = os.path.splitext(path)[1].lower()
    try:
        if extension in PNM_EXTENSIONS:
            image = _read_pnm(path)
        else:
            encoded = tf.io.read_file(path)
            # channels=0 keeps the file's own channels; expand_animations=False: a GIF's first frame.
            image = tf.io.decode_image(encoded, channels=0, dtype=tf.uint8, expand_animations=False).numpy()
    except (tf.errors.OpError, OSError) as error:
        # TensorFlow's decoders miss some valid files (1-bit and palette BMPs); Pillow reads them.
        image = _read_with_pillow(path)
        if image is None:
            message = getattr(error, "message", str(error)).splitlines()[0]
            raise ValueError(f"Cannot read image {path}: {message}") from None
    if image.ndim != 3 or image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"Cannot read image {path}: decoded shape {image.shape} is not [H, W, C].")
    return _convert_channels(image, channels)


def resize_images(images: Sequence[np.ndarray], size: int) -> np.ndarray:
    """Resizes uint8 images of any sizes to one uint8 array [N, size, size, C].

    Bilinear with antialiasing (no aliasing when shrinking 640x480 photos to 64x64); aspect
    ratios are not kept. Images of equal size are resized together, in chunks.
    """
    if not images:
        raise ValueError("resize_images got no images.")
    channels = images[0].shape[-1]
    out = np.empty((len(images), size, size, channels), np.uint8)
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for index, image in enumerate(images):
        by_shape.setdefault(image.shape, []).append(index)
    for shape, indices in by_shape.items():
        if shape[:2] == (size, size):
            out[indices] = np.stack([images[i] for i in indices])
            continue
        for start in range(0, len(indices), _RESIZE_CHUNK):
            chunk = indices[start : start + _RESIZE_CHUNK]
            stacked = tf.constant(np.stack([images[i] for i in chunk]))
            resized = tf.image.resize(
                tf.cast(stacked, tf.float32), [size, size], method="bilinear", antialias=True
            )
            out[chunk] = tf.cast(tf.clip_by_value(tf.round(resized), 0.0, 255.0), tf.uint8).numpy()
    return out


def load_images(paths: Sequence[str | os.PathLike], size: int, channels: int) -> np.ndarray:
    """Reads and resizes files into uint8 [N, size, size, channels]; files are read one at a time."""
    if size <= 0:
        raise ValueError(f"image_size must be positive, got {size}.")
    decoded: list[np.ndarray] = []
    out: list[np.ndarray] = []
    for path in paths:
        decoded.append(read_image(path, channels))
        # Resize in chunks as we go, so full-size decoded images never pile up in memory.
        if len(decoded) == _RESIZE_CHUNK:
            out.append(resize_images(decoded, size))
            decoded = []
    if decoded:
        out.append(resize_images(decoded, size))
    if not out:
        return np.zeros((0, size, size, channels), np.uint8)
    return np.concatenate(out)


# ----------------------------------------------------------------------------- grouped images


def is_image_file(path: Path) -> bool:
    """A visible file with one of ``IMAGE_EXTENSIONS`` (any case)."""
    return path.is_file() and not path.name.startswith(".") and path.suffix.lower() in IMAGE_EXTENSIONS


def load_image_folder(path: str, image_size: int, channels: int, flag: str) -> np.ndarray:
    """All images under ``path`` (recursive, sorted by path) as uint8 [N, S, S, channels],
    resized (stretched) to S x S. Raises ValueError naming ``flag`` when there are none."""
    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"{flag} {path} is not a folder of images.")
    files = sorted(str(p) for p in root.rglob("*") if is_image_file(p))
    if not files:
        raise ValueError(f"{flag} {path} holds no images ({', '.join(IMAGE_EXTENSIONS)}).")
    return load_images(files, image_size, channels)

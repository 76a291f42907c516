"""Image files written by the tests in every format the library reads (abc_tf.data.folders.image_files):
PNG and JPEG through TensorFlow, BMP, PGM and PPM by hand from their format descriptions."""

from __future__ import annotations

import os
import struct

import numpy as np
import tensorflow as tf


def write_png(path: str, image: np.ndarray) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tf.io.write_file(path, tf.io.encode_png(image))


def write_jpeg(path: str, image: np.ndarray) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tf.io.write_file(path, tf.io.encode_jpeg(image, quality=100))


def write_bmp(path: str, image: np.ndarray) -> None:
    """24-bit uncompressed BMP (rows bottom-up, BGR, padded to 4 bytes)."""
    height, width, _ = image.shape
    row = width * 3
    padding = (4 - row % 4) % 4
    raster = b"".join(image[y, :, ::-1].tobytes() + b"\0" * padding for y in range(height - 1, -1, -1))
    header = struct.pack("<2sIHHI", b"BM", 54 + len(raster), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, len(raster), 2835, 2835, 0, 0)
    with open(path, "wb") as handle:
        handle.write(header + info + raster)


def write_pgm(path: str, image: np.ndarray, maxval: int = 255, ascii_: bool = False) -> None:
    """Gray [H, W] as binary P5 (16-bit big-endian when maxval > 255) or ASCII P2."""
    height, width = image.shape
    with open(path, "wb") as handle:
        if ascii_:
            handle.write(f"P2\n# a comment\n{width} {height}\n{maxval}\n".encode())
            handle.write(" ".join(str(v) for v in image.ravel()).encode() + b"\n")
        else:
            handle.write(f"P5\n{width} {height}\n{maxval}\n".encode())
            dtype = ">u2" if maxval > 255 else np.uint8
            handle.write(image.astype(dtype).tobytes())


def write_ppm(path: str, image: np.ndarray, maxval: int = 255, ascii_: bool = False) -> None:
    """RGB [H, W, 3] as binary P6 (16-bit big-endian when maxval > 255) or ASCII P3."""
    height, width, _ = image.shape
    with open(path, "wb") as handle:
        handle.write(f"P{3 if ascii_ else 6}\n{width} {height}\n# a comment\n{maxval}\n".encode())
        if ascii_:
            handle.write("\n".join(" ".join(str(v) for v in row.ravel()) for row in image).encode() + b"\n")
        else:
            handle.write(image.astype(">u2" if maxval > 255 else np.uint8).tobytes())

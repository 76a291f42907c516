"""Image files (abc_tf.data.folders.image_files): every format decodes to the same pixels, unreadable
files name themselves, resizing keeps content without aliasing, folders are read recursively."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from abc_tf.data.folders import image_files
from image_helpers import write_bmp, write_pgm, write_png, write_ppm


def test_read_image_formats_agree(tmp_path):
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, size=(5, 7, 3), dtype=np.uint8)
    gray = rng.integers(0, 256, size=(5, 7), dtype=np.uint8)
    write_png(str(tmp_path / "a.png"), rgb)
    write_bmp(str(tmp_path / "a.bmp"), rgb)
    write_pgm(str(tmp_path / "g.pgm"), gray)
    write_pgm(str(tmp_path / "g2.pgm"), gray, ascii_=True)
    write_pgm(str(tmp_path / "g16.pgm"), gray.astype(np.int64) * 257, maxval=65535)
    np.testing.assert_array_equal(image_files.read_image(tmp_path / "a.png", 3), rgb)
    np.testing.assert_array_equal(image_files.read_image(tmp_path / "a.bmp", 3), rgb)
    for name in ("g.pgm", "g2.pgm", "g16.pgm"):
        np.testing.assert_array_equal(image_files.read_image(tmp_path / name, 1)[..., 0], gray)
    # PPM: binary, ASCII, 16 bit; a maxval of 15 is scaled to 0..255.
    write_ppm(str(tmp_path / "c.ppm"), rgb)
    write_ppm(str(tmp_path / "c3.ppm"), rgb, ascii_=True)
    write_ppm(str(tmp_path / "c16.ppm"), rgb.astype(np.int64) * 257, maxval=65535)
    for name in ("c.ppm", "c3.ppm", "c16.ppm"):
        np.testing.assert_array_equal(image_files.read_image(tmp_path / name, 3), rgb)
    write_pgm(str(tmp_path / "g15.pnm"), gray // 17, maxval=15)
    np.testing.assert_array_equal(image_files.read_image(tmp_path / "g15.pnm", 1)[..., 0], gray // 17 * 17)
    # PBM (1 = black) in a .pnm file.
    (tmp_path / "b.pnm").write_bytes(b"P1\n3 2\n1 0 1\n0 1 0\n")
    np.testing.assert_array_equal(
        image_files.read_image(tmp_path / "b.pnm", 1)[..., 0], [[0, 255, 0], [255, 0, 255]]
    )
    # Channel conversion: gray -> RGB repeats, RGB -> gray is luma.
    np.testing.assert_array_equal(
        image_files.read_image(tmp_path / "g.pgm", 3), np.repeat(gray[..., None], 3, axis=-1)
    )
    luma = image_files.read_image(tmp_path / "a.png", 1)[..., 0].astype(float)
    expected = rgb.astype(float) @ np.array([0.2989, 0.5870, 0.1140])
    assert np.max(np.abs(luma - expected)) <= 0.5 + 1e-6


def test_unreadable_image_names_the_file(tmp_path):
    (tmp_path / "bad.png").write_bytes(b"this is not a png")
    (tmp_path / "bad.pgm").write_bytes(b"P5\n10 10\n255\n" + b"\0" * 5)  # truncated raster
    (tmp_path / "png.ppm").write_bytes(tf.io.encode_png(np.zeros((2, 2, 3), np.uint8)).numpy())  # not a PNM
    (tmp_path / "header.pgm").write_bytes(b"P5\n10 ten\n255\n")
    for name in ("bad.png", "bad.pgm", "png.ppm", "header.pgm"):
        with pytest.raises(ValueError, match=name):
            image_files.read_image(tmp_path / name, 3)


def test_resize_keeps_content_and_shrinks_without_aliasing():
    stripes = np.zeros((64, 64, 1), np.uint8)
    stripes[:, ::2] = 255  # one-pixel stripes alias badly when subsampled
    out = image_files.resize_images([stripes], 16)
    assert out.shape == (1, 16, 16, 1)
    # Antialiasing averages the stripes to mid gray (the filter's border columns differ a little).
    assert np.all(np.abs(out[:, :, 1:-1].astype(int) - 128) <= 2)
    assert np.all(np.abs(out.astype(int) - 128) <= 12)


def test_image_folder_is_read_recursively_and_sorted(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    for index, path in enumerate(["x.png", "a/y.jpg", "a/b/z.png"]):
        tf.io.write_file(
            str(tmp_path / path), tf.io.encode_png(tf.fill([10 + index, 12, 3], tf.constant(50, tf.uint8)))
        )
    (tmp_path / ".hidden.png").write_bytes(b"not read")
    (tmp_path / "notes.txt").write_text("not an image")
    images = image_files.load_image_folder(str(tmp_path), 8, 3, "--data.real_data_path")
    assert images.shape == (3, 8, 8, 3) and np.all(images == 50)
    with pytest.raises(ValueError, match="--data.real_data_path .*nowhere is not a folder"):
        image_files.load_image_folder(str(tmp_path / "nowhere"), 8, 3, "--data.real_data_path")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="--data.background_data_path .*empty holds no images"):
        image_files.load_image_folder(str(tmp_path / "empty"), 8, 3, "--data.background_data_path")


def test_a_valid_one_bit_bmp_is_read(tmp_path):
    from PIL import Image

    pattern = (np.indices((6, 8)).sum(0) % 2 * 255).astype(np.uint8)
    Image.fromarray(pattern).convert("1").save(tmp_path / "one_bit.bmp")
    image = image_files.read_image(tmp_path / "one_bit.bmp", 3)
    assert image.shape == (6, 8, 3)
    np.testing.assert_array_equal(image[..., 0], pattern)

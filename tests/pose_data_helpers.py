"""Pose data written by the tests: KeypointNet tfrecords from hand-made views and modelview
matrices, Pascal3D+-style test lists, and small sizes of the built-in procedural pose data."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from abc_tf.data.pose import procedural as pose_procedural
from abc_tf.geometry import euler_to_matrix

SMALL = pose_procedural.ProceduralSizes(
    train_instances=3,
    views_per_instance=6,
    real_train_images=4,
    real_views_per_instance=2,
    test_instances=2,
    test_images=4,
    dictionary_images=4,
    background_images=3,
)


def png(rgba: np.ndarray) -> bytes:
    return tf.io.encode_png(tf.constant(rgba)).numpy()


# The authors' object axes x, y, z (z up) as columns in ShapeNet coordinates (y up, front +x):
# x -> x, y -> -z, z -> y. Written out here, not taken from abc_tf.data.pose.keypointnet, so that the tests
# check the module's constant instead of repeating it.
AUTHORS_AXES_IN_SHAPENET = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


def modelview_for(euler: np.ndarray) -> np.ndarray:
    """16 floats, row-major, whose rotation block gives the authors' rotation of ``euler``."""
    matrix = np.eye(4)
    matrix[:3, :3] = euler_to_matrix(euler) @ AUTHORS_AXES_IN_SHAPENET.T
    matrix[:3, 3] = (0.1, -0.2, -30.0)  # the camera distance; translation plays no part
    return matrix.reshape(16).astype(np.float32)


def render_view(box: tuple[int, int, int, int], size: int = 32) -> np.ndarray:
    """RGBA [size, size, 4]: opaque inside box (top, bottom, left, right; half-open), left half red,
    right half blue; junk colours under alpha 0 outside."""
    top, bottom, left, right = box
    image = np.zeros((size, size, 4), np.uint8)
    image[..., :3] = 77  # must not leak into the crop (alpha 0)
    middle = (left + right) // 2
    image[top:bottom, left:middle] = (255, 0, 0, 255)
    image[top:bottom, middle:right] = (0, 0, 255, 255)
    return image


def write_record(path: str, views: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> None:
    """views: (img0, euler0, img1, euler1) per example."""
    with tf.io.TFRecordWriter(path) as writer:
        for img0, euler0, img1, euler1 in views:
            feature = {
                "img0": tf.train.Feature(bytes_list=tf.train.BytesList(value=[png(img0)])),
                "img1": tf.train.Feature(bytes_list=tf.train.BytesList(value=[png(img1)])),
                "mv0": tf.train.Feature(float_list=tf.train.FloatList(value=modelview_for(euler0))),
                "mv1": tf.train.Feature(float_list=tf.train.FloatList(value=modelview_for(euler1))),
                "mvi0": tf.train.Feature(float_list=tf.train.FloatList(value=np.zeros(16))),  # unused
                "mvi1": tf.train.Feature(float_list=tf.train.FloatList(value=np.zeros(16))),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


def write_split_folder(tmp_path) -> None:
    """Three one-example instances m1, m2, m3 (azimuths 0 and 1): m2 the test split, m3 dev."""
    view = render_view((4, 20, 4, 20))
    for name in ("m1", "m2", "m3"):
        write_record(
            str(tmp_path / f"{name}.tfrecord"),
            [(view, np.array([0.0, 0.1, 0.0]), view, np.array([1.0, 0.1, 0.0]))],
        )
    (tmp_path / "test.txt").write_text("m2\n")
    (tmp_path / "dev.txt").write_text("m3\n")


def write_list_case(tmp_path):
    """Two JPEGs and a list naming a box in each; returns the list's path."""
    image = np.zeros((40, 64, 3), np.uint8)
    image[10:30, 20:50] = (0, 220, 0)  # the object: rows 10..29, columns 20..49 (0-based)
    tf.io.write_file(str(tmp_path / "2008_000001.jpg"), tf.io.encode_jpeg(tf.constant(image), quality=100))
    other = np.full((30, 30, 3), 200, np.uint8)
    tf.io.write_file(str(tmp_path / "2008_000002.jpg"), tf.io.encode_jpeg(tf.constant(other), quality=100))
    list_path = tmp_path / "car_test.txt"
    # 1-based inclusive boxes: left 21 top 11 right 50 bottom 30 is exactly the green block.
    list_path.write_text(
        "# image left top right bottom azimuth elevation tilt\n"
        "2008_000001.jpg 21 11 50 30 30 10 5\n\n2008_000002.jpg 1 1 30 30 -90.5 0 0\n"
    )
    return list_path

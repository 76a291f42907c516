"""Pose data (abc_tf.data.pose, abc_tf.data.render.pose), titration schedule and S5 models."""

from __future__ import annotations

import dataclasses
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import models
from abc_tf import callbacks, schedules
from abc_tf.config import ExperimentConfig, get_preset
from abc_tf.data import pose
from abc_tf.data.render import pose as render
from abc_tf.geometry import euler_to_matrix, matrix_to_euler

SMALL = pose.ProceduralSizes(
    train_instances=3, views_per_instance=6, real_train_images=4, real_views_per_instance=2, test_instances=2,
    test_images=4, dictionary_images=4, background_images=3,
)


def config(**overrides) -> ExperimentConfig:
    base = ExperimentConfig(
        data="pose", data_source="procedural", image_size=16, set_size=4, pairs_per_step=2, steps=100,
        double_augmentation=True, real_fraction=0.5, titration_interval=10, similarity="cosine", temperature=0.1,
    )
    return base.replace(**overrides)


# ----------------------------------------------------------------------------- KeypointNet tfrecords


def png(rgba: np.ndarray) -> bytes:
    return tf.io.encode_png(tf.constant(rgba)).numpy()


# The authors' object axes x, y, z (z up) as columns in ShapeNet coordinates (y up, front +x):
# x -> x, y -> -z, z -> y. Written out here, not taken from abc_tf.data.pose, so that the tests
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


def test_keypointnet_record_round_trips_to_crop_and_rotation(tmp_path):
    euler0, euler1 = np.array([0.7, 0.3, 0.0]), np.array([4.0, 0.1, 0.0])
    img0, img1 = render_view((5, 13, 8, 16)), render_view((2, 30, 10, 26))  # 8 x 8 (no resize) and 28 x 16
    write_record(str(tmp_path / "abc123.tfrecord"), [(img0, euler0, img1, euler1)])
    images, euler, instances, names = pose.read_keypointnet([str(tmp_path / "abc123.tfrecord")], 8, 0.5)
    assert images.shape == (2, 8, 8, 4) and images.dtype == np.uint8
    assert names == ["abc123"] and instances.tolist() == [0, 0]
    np.testing.assert_allclose(euler, np.stack([euler0, euler1]), atol=1e-5)
    np.testing.assert_allclose(euler_to_matrix(euler), euler_to_matrix(np.stack([euler0, euler1])), atol=1e-5)
    # The tight crop fills the frame: opaque everywhere, red on the left half, blue on the right
    # (exactly for the 8 x 8 box; the resized box mixes the two middle columns).
    assert np.all(images[..., 3] == 255)
    np.testing.assert_array_equal(images[0, :, :4, :3], np.broadcast_to([255, 0, 0], (8, 4, 3)))
    np.testing.assert_array_equal(images[0, :, 4:, :3], np.broadcast_to([0, 0, 255], (8, 4, 3)))
    np.testing.assert_array_equal(images[1, :, :3, :3], np.broadcast_to([255, 0, 0], (8, 3, 3)))
    np.testing.assert_array_equal(images[1, :, 5:, :3], np.broadcast_to([0, 0, 255], (8, 3, 3)))


def test_rotation_from_hand_written_modelviews():
    # KeypointNet's format: p_camera = M p_object, M = reshape(mv, [4, 4]); the camera looks
    # along its -z axis with y up, so the rows of M's rotation block are the camera's x (right),
    # y (up) and z (toward the camera) axes in ShapeNet object coordinates (y up). Expected
    # angles are those of the authors' convention: azimuth 0 sees the object from its -y side
    # (ShapeNet +z), azimuth grows counter-clockwise seen from above, elevation > 0 looks down.
    e = 0.3
    cases = [
        # Camera on ShapeNet +z, level: azimuth 0, elevation 0.
        ([[1, 0, 0], [0, 1, 0], [0, 0, 1]], [0.0, 0.0, 0.0]),
        # Raised by e: the camera's z axis (0, sin e, cos e), its up axis (0, cos e, -sin e).
        ([[1, 0, 0], [0, np.cos(e), -np.sin(e)], [0, np.sin(e), np.cos(e)]], [0.0, e, 0.0]),
        # Camera on ShapeNet +x (the authors' +x: a quarter turn counter-clockwise), level.
        ([[0, 0, -1], [0, 1, 0], [1, 0, 0]], [np.pi / 2, 0.0, 0.0]),
        # On the +x side and raised by e: z axis (cos e, sin e, 0), up axis (-sin e, cos e, 0).
        ([[0, 0, -1], [-np.sin(e), np.cos(e), 0], [np.cos(e), np.sin(e), 0]], [np.pi / 2, e, 0.0]),
    ]
    for block, expected in cases:
        modelview = np.eye(4)
        modelview[:3, :3] = block
        modelview[:3, 3] = (0.0, 0.0, -2.5)  # the camera distance plays no part
        rotation = pose.rotation_from_modelview(modelview.reshape(16))
        np.testing.assert_allclose(matrix_to_euler(rotation), expected, atol=1e-9)
        np.testing.assert_allclose(rotation, euler_to_matrix(np.array(expected)), atol=1e-9)


def test_rotation_from_modelview_orthonormalises_and_turns_y_up_to_z_up():
    euler = np.array([[1.0, 0.4, 0.05], [5.5, 1.2, -0.1]])
    modelviews = np.stack([modelview_for(e) for e in euler]).astype(np.float64)
    modelviews[:, :11] *= 2.0  # a uniform scale in the rotation block (and junk in row 3)
    rotation = pose.rotation_from_modelview(modelviews)
    np.testing.assert_allclose(rotation, euler_to_matrix(euler), atol=1e-6)
    # ShapeNet's up (+y) is the authors' up (+z): elevation reads the modelview's y column.
    np.testing.assert_allclose(matrix_to_euler(rotation)[:, 1], euler[:, 1], atol=1e-6)


def test_elevation_filter_and_grouping_by_instance(tmp_path):
    low, high = np.array([1.0, 0.3, 0.0]), np.array([2.0, 0.8, 0.0])
    view = render_view((4, 20, 4, 20))
    write_record(str(tmp_path / "car_b.tfrecord"), [(view, low, view, high)])
    write_record(str(tmp_path / "car_a.tfrecord"), [(view, high, view, high), (view, low, view, low)])
    files = pose.keypointnet_files(str(tmp_path), "train")
    assert [os.path.basename(f) for f in files] == ["car_a.tfrecord", "car_b.tfrecord"]
    _, euler, instances, names = pose.read_keypointnet(files, 8, 0.5)  # cars: 0.5 rad
    assert names == ["car_a", "car_b"] and instances.tolist() == [0, 0, 1]
    assert np.all(euler[:, 1] <= 0.5)
    _, euler, instances, _ = pose.read_keypointnet(files, 8, 1.3)  # chairs: 1.3 rad keep everything
    assert len(euler) == 6 and instances.tolist() == [0, 0, 0, 0, 1, 1]
    assert pose.max_elevation(config(pose_category="car")) == 0.5
    assert pose.max_elevation(config(pose_category="chair")) == 1.3
    assert pose.max_elevation(config(max_elevation=0.2)) == 0.2


def test_keypointnet_splits_follow_test_txt(tmp_path):
    view = render_view((4, 20, 4, 20))
    for name in ("m1", "m2", "m3"):
        write_record(str(tmp_path / f"{name}.tfrecord"), [(view, np.array([0.0, 0.1, 0.0]), view, np.array([1.0, 0.1, 0.0]))])
    (tmp_path / "test.txt").write_text("m2\n")
    (tmp_path / "dev.txt").write_text("m3\n")
    assert [os.path.basename(f) for f in pose.keypointnet_files(str(tmp_path), "train")] == ["m1.tfrecord"]
    assert [os.path.basename(f) for f in pose.keypointnet_files(str(tmp_path), "test")] == ["m2.tfrecord"]
    cfg = config(data_source="keypointnet", data_path=str(tmp_path), real_fraction=0.0)
    images, rotations, euler = pose.labelled_images(cfg, "test", "synthetic")
    assert images.shape == (2, 16, 16, 3) and rotations.shape == (2, 3, 3)
    np.testing.assert_allclose(euler[:, 0], [0.0, 1.0], atol=1e-5)
    with pytest.raises(ValueError, match="neither a .tfrecord file nor a folder"):
        pose.keypointnet_files(str(tmp_path / "missing"), "train")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no .tfrecord files"):
        pose.keypointnet_files(str(tmp_path / "empty"), "train")


# ----------------------------------------------------------------------------- Pascal3D+ lists and real folders


def test_pascal3d_list_gives_crops_and_angles(tmp_path):
    image = np.zeros((40, 64, 3), np.uint8)
    image[10:30, 20:50] = (0, 220, 0)  # the object: rows 10..29, columns 20..49 (0-based)
    tf.io.write_file(str(tmp_path / "2008_000001.jpg"), tf.io.encode_jpeg(tf.constant(image), quality=100))
    other = np.full((30, 30, 3), 200, np.uint8)
    tf.io.write_file(str(tmp_path / "2008_000002.jpg"), tf.io.encode_jpeg(tf.constant(other), quality=100))
    list_path = tmp_path / "car_test.txt"
    # 1-based inclusive boxes: left 21 top 11 right 50 bottom 30 is exactly the green block.
    list_path.write_text("# image left top right bottom azimuth elevation tilt\n"
                         "2008_000001.jpg 21 11 50 30 30 10 5\n\n2008_000002.jpg 1 1 30 30 -90.5 0 0\n")
    images, rotations, euler = pose.read_pose_list(str(list_path), None, 16)
    assert images.shape == (2, 16, 16, 3)
    green = images[0].astype(int)
    # Every pixel of the crop, edges included, is the green block up to JPEG error; a box one
    # pixel off would pull a black row or column into the edge pixels (green well below 170).
    assert np.all(green[..., 1] > 170) and np.all(green[..., [0, 2]] < 60)
    assert np.all(np.abs(images[1].astype(int) - 200) < 4)
    np.testing.assert_allclose(euler[0], np.deg2rad([30.0, 10.0, -5.0]))  # Pascal3D+ tilt flips sign
    np.testing.assert_allclose(rotations, euler_to_matrix(euler))
    cfg = config(data_source="keypointnet", data_path=str(tmp_path), real_fraction=0.0, pose_test_list=str(list_path))
    images2, _, euler2 = pose.labelled_images(cfg, "test", "real")
    np.testing.assert_array_equal(images2, images)
    np.testing.assert_allclose(euler2, euler)


def test_pascal3d_list_errors_name_the_line(tmp_path):
    list_path = tmp_path / "bad.txt"
    list_path.write_text("missing.jpg 1 1 5 5 0 0 0\n")
    with pytest.raises(ValueError, match="line 1.*does not exist"):
        pose.read_pose_list(str(list_path), None, 8)
    list_path.write_text("a.jpg 1 1 5\n")
    with pytest.raises(ValueError, match="line 1: expected"):
        pose.read_pose_list(str(list_path), None, 8)


def test_real_folder_is_read_recursively(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    for index, path in enumerate(["x.png", "a/y.jpg", "a/b/z.png"]):
        tf.io.write_file(str(tmp_path / path), tf.io.encode_png(tf.fill([10 + index, 12, 3], tf.constant(50, tf.uint8))))
    images = pose.load_real_folder(str(tmp_path), 8)
    assert images.shape == (3, 8, 8, 3)
    with pytest.raises(ValueError, match="real_data_path"):
        pose.load_real_folder(str(tmp_path / "nowhere"), 8)


# ----------------------------------------------------------------------------- renderer


def test_projected_boxes_of_a_box_and_a_cylinder():
    parts = render._Parts()
    parts.box((0.0, 0.0, 0.0), (2.0, 0.5, 0.25), (1, 0, 0))
    box = render.stack_instances([parts.build()])
    parts = render._Parts()
    parts.cylinder((0.0, 0.0, 0.0), 2, 0.5, 0.3, (1, 0, 0))  # along z: half length 0.5, radius 0.3
    cylinder = render.stack_instances([parts.build()])
    side = euler_to_matrix(np.array([[0.0, 0.0, 0.0]]))  # camera on -y: image x = object x, up = z
    np.testing.assert_allclose(render.projected_boxes(box, side)[0], [-2.0, 2.0, -0.25, 0.25], atol=1e-9)
    np.testing.assert_allclose(render.projected_boxes(cylinder, side)[0], [-0.3, 0.3, -0.5, 0.5], atol=1e-9)
    front = euler_to_matrix(np.array([[np.pi / 2, 0.0, 0.0]]))  # camera on +x
    np.testing.assert_allclose(render.projected_boxes(box, front)[0], [-0.5, 0.5, -0.25, 0.25], atol=1e-9)
    top = euler_to_matrix(np.array([[0.0, np.pi / 2, 0.0]]))  # looking down: a disc
    np.testing.assert_allclose(render.projected_boxes(cylinder, top)[0], [-0.3, 0.3, -0.3, 0.3], atol=1e-9)


def test_render_follows_the_rotation_convention():
    """A red box at x < 0 and a blue box at x > 0: seen from -y (azimuth 0) red is on the left,
    from +y (azimuth pi) on the right; a cylinder seen from above fills pi/4 of its box."""
    parts = render._Parts()
    parts.box((-1.0, 0.0, 0.0), (1.0, 0.5, 0.5), (1.0, 0.0, 0.0))
    parts.box((1.0, 0.0, 0.0), (1.0, 0.5, 0.5), (0.0, 0.0, 1.0))
    two = parts.build()
    cyl_parts = render._Parts()
    cyl_parts.cylinder((0.0, 0.0, 0.0), 2, 0.5, 1.0, (0.0, 1.0, 0.0))
    objects = render.stack_instances([two, two, cyl_parts.build()])
    euler = np.array([[0.0, 0.0, 0.0], [np.pi, 0.0, 0.0], [0.0, np.pi / 2, 0.0]])
    rgb, alpha, rotations = render.render(objects, euler, 16, render.synthetic_lighting(3))
    np.testing.assert_allclose(rotations, euler_to_matrix(euler))
    assert np.all(alpha[:2] == 1.0)  # the tight box is filled by the two boxes
    left, right = rgb[:, :, :8].mean(axis=(1, 2)), rgb[:, :, 8:].mean(axis=(1, 2))
    assert left[0, 0] > 0.2 and left[0, 2] == 0 and right[0, 2] > 0.2 and right[0, 0] == 0
    assert left[1, 2] > 0.2 and left[1, 0] == 0 and right[1, 0] > 0.2 and right[1, 2] == 0
    assert abs(alpha[2].mean() - np.pi / 4) < 0.03
    assert alpha[2][8, 8] == 1.0 and alpha[2][0, 0] == 0.0


def test_procedural_instances_are_deterministic_and_pools_disjoint():
    first = render.make_instance("car", "train", 3)
    again = render.make_instance("car", "train", 3)
    np.testing.assert_array_equal(first.size, again.size)
    assert not np.allclose(first.size[0], render.make_instance("car", "test", 3).size[0])
    euler = render.sample_viewpoints(np.random.default_rng(0), 500, 0.5)
    assert euler[:, 1].min() >= 0.0 and euler[:, 1].max() <= 0.5 and np.all(euler[:, 2] == 0)
    with pytest.raises(ValueError, match="pose category"):
        render.make_instance("boat", "train", 0)


def test_labelled_images_procedural(monkeypatch):
    monkeypatch.setattr(pose, "PROCEDURAL", SMALL)
    cfg = config()
    images, rotations, euler = pose.labelled_images(cfg, "test", "real", 4, seed=1)
    assert images.shape == (4, 16, 16, 3) and images.dtype == np.uint8
    np.testing.assert_allclose(rotations, euler_to_matrix(euler))
    assert np.all(euler[:, 1] <= 0.5 + 1e-9)
    again, _, euler_again = pose.labelled_images(cfg, "test", "real", 4, seed=1)
    np.testing.assert_array_equal(images, again)
    np.testing.assert_array_equal(euler, euler_again)
    synthetic, _, _ = pose.labelled_images(cfg, "train", "synthetic", seed=0)
    assert synthetic.shape == (SMALL.dictionary_images, 16, 16, 3)
    with pytest.raises(ValueError, match="domain"):
        pose.labelled_images(cfg, "test", "photo")


# ----------------------------------------------------------------------------- batches and titration


def toy_banks(instances: int = 5, views: int = 6, real: int = 7, size: int = 16) -> pose.PoseBanks:
    """Renders whose pixels encode (instance, view); euler = (view, instance, 0); real images
    a constant 250, backgrounds a constant 40."""
    rows = instances * views
    synthetic = np.zeros((rows, size, size, 4), np.uint8)
    synthetic[..., 0] = np.repeat(np.arange(instances), views)[:, None, None] * 10
    synthetic[..., 3] = 255
    euler = np.stack([np.tile(np.arange(views), instances), np.repeat(np.arange(instances), views), np.zeros(rows)], 1)
    return pose.PoseBanks(
        synthetic, euler.astype(np.float32), np.repeat(np.arange(instances), views).astype(np.int32),
        [f"i{k}" for k in range(instances)], np.full((real, size, size, 3), 250, np.uint8),
        np.full((3, size, size, 3), 40, np.uint8),
    )


def test_backgrounds_are_painted_from_their_own_pool_not_from_the_real_images():
    banks = toy_banks()
    banks.synthetic[..., :] = 0  # fully transparent renders: every pixel is background
    cfg = config(set_size=6, real_fraction=0.5, titration_interval=0, crop_amplitude=0.0, augmentation_amplitude=0.0)
    batch = next(iter(pose.dataset_from_banks(banks, cfg, seed=0, start_step=50)))
    # Set A holds renders only: painted from the background pool (40), never from the real
    # images (250) that set B draws.
    assert np.all(batch["set_a"].numpy() == 40) and np.all(batch["set_a_view2"].numpy() == 40)
    set_b, real_b = batch["set_b"].numpy(), batch["real_b"].numpy()
    assert real_b.any() and not real_b.all()
    assert np.all(set_b[real_b] == 250) and np.all(set_b[~real_b] == 40)


def test_background_source_flag_and_builtin_default(tmp_path, monkeypatch):
    monkeypatch.setattr(pose, "PROCEDURAL", SMALL)
    builtin = pose.load_backgrounds(config())
    assert builtin.shape == (SMALL.background_images, 16, 16, 3) and builtin.dtype == np.uint8
    assert builtin.std() > 10  # cluttered scenes, not a flat colour
    banks = pose.load_banks(config())
    np.testing.assert_array_equal(banks.backgrounds, builtin)
    (tmp_path / "scenes" / "a").mkdir(parents=True)
    tf.io.write_file(str(tmp_path / "scenes" / "a" / "forest.png"), tf.io.encode_png(np.full((20, 30, 3), 90, np.uint8)))
    banks = pose.load_banks(config(background_data_path=str(tmp_path / "scenes")))
    assert banks.backgrounds.shape == (1, 16, 16, 3) and np.all(banks.backgrounds == 90)
    assert len(banks.real) == SMALL.real_train_images  # the real images of set B are unchanged
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="--background_data_path .*empty holds no images"):
        pose.load_banks(config(background_data_path=str(tmp_path / "empty")))


def test_set_a_holds_one_instance_and_distinct_views():
    banks = toy_banks()
    cfg = config(set_size=6, pairs_per_step=3)
    indices_of = pose.step_indices(banks, cfg, seed=0)
    seen = set()
    for step in range(20):
        chosen = indices_of(tf.constant(step, tf.int64))
        index_a = chosen["index_a"].numpy()
        instance = banks.instances[index_a]
        assert np.all(instance == instance[:, :1])  # one instance per set A
        assert all(len(set(row)) == 6 for row in index_a)  # distinct views
        seen.update(instance[:, 0].tolist())
        assert chosen["index_b"].numpy().shape == (3, 6)
        assert all(len(set(row)) == 6 for row in chosen["index_b"].numpy())
    assert seen == set(range(5))
    with pytest.raises(ValueError, match="set_size"):
        pose.step_indices(banks, config(set_size=7), seed=0)
    pose.step_indices(banks, config(set_size=7, sample_with_replacement=True), seed=0)


def test_batches_have_the_documented_keys_and_labels():
    banks = toy_banks()
    cfg = config(set_size=6, pairs_per_step=2)
    batch = next(iter(pose.dataset_from_banks(banks, cfg, seed=3, start_step=5)))
    assert set(batch) == {"set_a", "set_a_view2", "set_b", "set_b_view2", "labels_a", "real_b"}
    for key in ("set_a", "set_a_view2", "set_b", "set_b_view2"):
        assert batch[key].shape == (2, 6, 16, 16, 3) and batch[key].dtype == tf.uint8
    assert not np.array_equal(batch["set_a"].numpy(), batch["set_a_view2"].numpy())  # two augmentations
    chosen = pose.step_indices(banks, cfg, seed=3)(tf.constant(5, tf.int64))
    np.testing.assert_array_equal(batch["labels_a"].numpy(), banks.euler[chosen["index_a"].numpy()])
    np.testing.assert_array_equal(batch["real_b"].numpy(), chosen["real_b"].numpy())
    single = next(iter(pose.dataset_from_banks(banks, cfg.replace(double_augmentation=False), seed=3)))
    assert "set_a_view2" not in single


def test_titration_schedule_values():
    # The paper: 40k steps, stairs every 4k up to 10%: 0, 1/9, ..., 9/9 of the target.
    assert schedules.real_fraction(0, 0.1, 4000, 40000) == 0.0
    assert schedules.real_fraction(3999, 0.1, 4000, 40000) == 0.0
    assert schedules.real_fraction(4000, 0.1, 4000, 40000) == pytest.approx(0.1 / 9)
    assert schedules.real_fraction(20000, 0.1, 4000, 40000) == pytest.approx(0.5 / 9)
    assert schedules.real_fraction(36000, 0.1, 4000, 40000) == pytest.approx(0.1)
    assert schedules.real_fraction(39999, 0.1, 4000, 40000) == pytest.approx(0.1)
    assert schedules.real_fraction(0, 0.1, 0, 40000) == 0.1  # no titration
    steps = tf.constant([0, 4000, 36000, 50000], tf.int64)
    np.testing.assert_allclose(schedules.real_fraction(steps, 0.1, 4000, 40000).numpy(), [0, 0.1 / 9, 0.1, 0.1], rtol=1e-6)


def test_real_fraction_in_set_b_follows_the_schedule():
    banks = toy_banks(instances=4, views=8)
    cfg = config(set_size=8, pairs_per_step=256, real_fraction=0.6, titration_interval=10, steps=40)
    indices_of = pose.step_indices(banks, cfg, seed=1)
    for step in (0, 9, 10, 25, 39):
        real_b = indices_of(tf.constant(step, tf.int64))["real_b"].numpy()
        expected = schedules.real_fraction(step, 0.6, 10, 40)
        assert real_b.mean() == pytest.approx(expected, abs=0.03)
        counts = real_b.sum(axis=1)
        assert set(counts.tolist()) <= {int(np.floor(expected * 8)), int(np.ceil(expected * 8))}
    # The batch shows it: real images (constant 250) are the first slots of set B.
    cfg = config(set_size=8, pairs_per_step=4, real_fraction=1.0, titration_interval=0,
                 crop_amplitude=0.0, augmentation_amplitude=0.0, double_augmentation=False)
    batch = next(iter(pose.dataset_from_banks(banks, cfg, seed=1)))
    assert np.all(batch["real_b"].numpy()) and np.all(batch["set_b"].numpy() == 250)


def test_resumed_dataset_continues_the_schedule():
    banks = toy_banks()
    cfg = config(set_size=4, pairs_per_step=64, real_fraction=1.0, titration_interval=10, steps=40,
                 crop_amplitude=0.0, augmentation_amplitude=0.0, double_augmentation=False)
    first = next(iter(pose.dataset_from_banks(banks, cfg, seed=0, start_step=0)))
    resumed = next(iter(pose.dataset_from_banks(banks, cfg, seed=0, start_step=35)))
    assert first["real_b"].numpy().mean() == 0.0
    assert resumed["real_b"].numpy().mean() == 1.0


def test_titration_logger_writes_the_fraction():
    logger = pose.TitrationLogger(0.1, 4000, 40000)
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam")
    model.optimizer.iterations.assign(8000)
    logger.set_model(model)
    logs: dict = {}
    logger.on_epoch_end(0, logs)
    assert logs["real_fraction"] == pytest.approx(0.1 / 9)  # step 7999: the first stair


def test_bad_settings_raise_value_errors_naming_the_flag():
    for overrides, flag in [
        ({"pose_category": "boat"}, "pose_category"),
        ({"real_fraction": 1.5}, "real_fraction"),
        ({"titration_interval": 100}, "titration_interval"),
        ({"crop_amplitude": 1.0}, "crop_amplitude"),
        ({"augmentations": "hue:0.1"}, "augmentations"),
        ({"data_source": "keypointnet"}, "data_path"),
        ({"data_source": "keypointnet", "data_path": "x"}, "real_data_path"),
        ({"data_source": "h5"}, "data_source"),
    ]:
        with pytest.raises(ValueError, match=flag):
            pose.check_config(config(**overrides))


def test_presets():
    car, chair = get_preset("pose_lookup_car"), get_preset("pose_lookup_chair")
    for preset in (car, chair):
        preset.validate()
        pose.check_config(preset)
        assert (preset.similarity, preset.temperature, preset.learning_rate) == ("cosine", 0.1, 1e-4)
        assert (preset.lr_halving_steps, preset.steps, preset.pairs_per_step, preset.set_size) == (10000, 40000, 4, 32)
        assert preset.double_augmentation and preset.model == "s5" and preset.image_size == 128
        assert (preset.real_fraction, preset.titration_interval, preset.crop_amplitude) == (0.1, 4000, 0.1)
    assert pose.max_elevation(car) == 0.5 and pose.max_elevation(chair) == 1.3
    quick = get_preset("pose_quick")
    pose.check_config(quick)
    assert quick.model in models.names()


# ----------------------------------------------------------------------------- models


def resnet50v2_to_conv4_parameters() -> int:
    """Parameters of ResNet50V2 up to conv4_block6_out, by hand (He et al. 2016, identity
    mappings; keras.applications layout): the stem convolution has a bias and no batch norm;
    each block is batch norm + ReLU on its input (pre-activation), 1x1 and 3x3 convolutions
    without biases, each followed by batch norm, a final 1x1 convolution with a bias, and a 1x1
    projection shortcut with a bias in a stage's first block. Batch norm: 4 per channel."""
    def block(c_in: int, mid: int, shortcut: bool) -> int:
        out = 4 * mid
        total = 4 * c_in + c_in * mid + 4 * mid + 9 * mid * mid + 4 * mid + (mid * out + out)
        return total + (c_in * out + out if shortcut else 0)

    def stage(c_in: int, mid: int, blocks: int) -> int:
        return block(c_in, mid, True) + sum(block(4 * mid, mid, False) for _ in range(blocks - 1))

    stem = 7 * 7 * 3 * 64 + 64
    return stem + stage(64, 64, 3) + stage(256, 128, 4) + stage(512, 256, 6)


def test_s5_is_resnet50v2_to_conv4_with_the_s5_head():
    assert resnet50v2_to_conv4_parameters() == 8_573_440
    encoder = models.build("s5", embedding_dim=64, input_shape=(128, 128, 3))
    assert encoder.output_shape == (None, 64)
    backbone = keras.Model(encoder.input, encoder.get_layer("backbone").output)
    # Supplement S8.5 and the ICLR text: 16,384-d features at 128 px (output stride 32).
    assert backbone.output_shape == (None, 4, 4, 1024)
    assert backbone.count_params() == resnet50v2_to_conv4_parameters()
    head = (3 * 3 * 1024 * 256 + 256) + (256 * 128 + 128) + (128 * 64 + 64)
    assert encoder.count_params() == resnet50v2_to_conv4_parameters() + head
    assert encoder.get_layer("hidden").activation.__name__ == "tanh"
    # Pre-activation blocks: the features are a sum, not a ReLU output.
    assert encoder.get_layer("conv4_block6_out").__class__.__name__ == "Add"
    out = encoder(np.random.default_rng(0).uniform(size=(2, 128, 128, 3)).astype(np.float32))
    assert out.shape == (2, 64)
    # [0, 1] images reach ResNet50V2 in its own range [-1, 1].
    preprocess = keras.Model(encoder.input, encoder.get_layer("resnet_preprocess").output)
    pixels = np.broadcast_to(np.array([0.0, 0.5, 1.0], np.float32), (1, 128, 128, 3))
    np.testing.assert_allclose(preprocess(pixels)[0, 0, 0], [-1.0, 0.0, 1.0])
    assert models.build("s5", input_shape=(65, 65, 3)).get_layer("backbone").output.shape[1:] == (3, 3, 1024)
    with pytest.raises(ValueError, match="at least 65"):
        models.build("s5", input_shape=(64, 64, 3))


def test_s5_weights_failure_is_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="Cannot load ResNet50V2 weights"):
        models.build("s5", input_shape=(65, 65, 3), weights=str(tmp_path / "missing.weights.h5"))
    # Offline, weights="imagenet" fails inside Keras' download; the message says what to do.
    from keras.src.applications import resnet

    def no_network(*args, **kwargs):
        raise Exception("URL fetch failure on https://storage.googleapis.com/...: None -- [Errno -3] no network")

    monkeypatch.setattr(resnet.file_utils, "get_file", no_network)
    with pytest.raises(ValueError, match="Cannot load ResNet50V2 weights 'imagenet' .*internet needed"):
        models.build("s5", input_shape=(65, 65, 3), weights="imagenet")


def test_s5_small_has_the_s5_head_and_a_backbone_layer():
    encoder = models.build("s5_small", embedding_dim=16, input_shape=(32, 32, 3))
    assert encoder.output_shape == (None, 16)
    assert encoder.get_layer("backbone").output.shape[1:] == (3, 3, 128)
    head = (3 * 3 * 128 * 256 + 256) + (256 * 128 + 128) + (128 * 16 + 16)
    trunk = sum(3 * 3 * i * o + o + 4 * o for i, o in [(3, 32), (32, 32), (32, 64), (64, 64), (64, 128)])
    assert encoder.count_params() == trunk + head


def test_training_passes_the_start_step_and_logs_the_titration(tmp_path, monkeypatch):
    from abc_tf.runs import export, training

    monkeypatch.setattr(pose, "PROCEDURAL", SMALL)
    # The pose SavedModel export renders a 1800-image dictionary; not what this test is about.
    monkeypatch.setattr(export, "export_run", lambda *args, **kwargs: None)
    cfg = config(model="s5_small", image_size=32, set_size=4, pairs_per_step=1, steps=4, log_every=2,
                 titration_interval=2, real_fraction=0.5, embedding_dim=8, double_augmentation=False,
                 crop_amplitude=0.0, augmentation_amplitude=0.0)  # light graphs: a fast test
    seen_starts = []
    original = pose.make_dataset

    def spy(config, seed, start_step=0):
        seen_starts.append(start_step)
        return original(config, seed, start_step)

    monkeypatch.setattr(pose, "FAMILY", dataclasses.replace(pose.FAMILY, make_dataset=spy))
    result = training.train(cfg, str(tmp_path / "run"), verbose=0)
    assert result.history["real_fraction"] == [0.0, 0.5]  # last steps 1 and 3: stairs 0 and 1 of 1
    assert seen_starts == [0]

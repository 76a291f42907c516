"""Pose conventions, geodesic errors, lookup and the spherical-regression head (SPEC.md sections 2, 5)."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import models
from abc_tf import data, geometry
from abc_tf.runs import training
from abc_tf.config import ExperimentConfig
from abc_tf import lookup
from abc_tf.evaluation import pose_accuracy
from abc_tf.runs.run_dir import embed, load_run, network_file
from models import pose_head

RNG = np.random.default_rng(7)


def random_euler(count, max_elevation=1.5):
    return np.stack(
        [RNG.uniform(0, 2 * np.pi, count), RNG.uniform(-max_elevation, max_elevation, count), RNG.uniform(-np.pi, np.pi, count)],
        axis=-1,
    )


def rot_x(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def rot_y(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rot_z(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


# ----------------------------------------------------------------------------- conventions


def test_euler_matrix_euler_round_trip_and_tf_twin():
    euler = random_euler(500)
    rotations = geometry.euler_to_matrix(euler)
    assert rotations.shape == (500, 3, 3)
    np.testing.assert_allclose(rotations @ np.swapaxes(rotations, 1, 2), np.broadcast_to(np.eye(3), (500, 3, 3)), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(rotations), 1.0, atol=1e-12)
    np.testing.assert_allclose(geometry.matrix_to_euler(rotations), euler, atol=1e-9)
    np.testing.assert_allclose(geometry.euler_to_matrix_tf(tf.constant(euler)).numpy(), rotations, atol=1e-12)
    # Batch shapes pass through.
    assert geometry.euler_to_matrix(euler.reshape(5, 100, 3)).shape == (5, 100, 3, 3)


def test_matrix_is_the_authors_product_of_elementary_rotations():
    a, e, t = 0.3, 0.2, -0.4
    want = rot_z(-t) @ rot_x(e - np.pi / 2) @ rot_z(-a)
    np.testing.assert_allclose(geometry.euler_to_matrix([a, e, t]), want, atol=1e-12)


def test_zero_pose_looks_along_world_y_with_z_up():
    rotation = geometry.euler_to_matrix([0.0, 0.0, 0.0])
    np.testing.assert_allclose(rotation @ [0, 0, 1], [0, 1, 0], atol=1e-12)  # world up -> image up
    np.testing.assert_allclose(rotation @ [0, 1, 0], [0, 0, -1], atol=1e-12)  # away from camera -> -z


def pascal3d_toolbox_projection(point, azimuth_deg, elevation_deg, theta_deg, distance=5.0, focal=1.0):
    """Pascal3D+ project_3d.m step by step (before its pixel offset and y flip): 2-D point, y up."""
    a, e, theta = np.deg2rad([azimuth_deg, elevation_deg, theta_deg])
    center = distance * np.array([np.cos(e) * np.sin(a), -np.cos(e) * np.cos(a), np.sin(e)])
    a, e = -a, -(np.pi / 2 - e)
    rotation = rot_x(e) @ rot_z(a)
    projection = np.diag([focal, focal, -1.0]) @ np.hstack([rotation, -(rotation @ center)[:, None]])
    x = projection @ np.append(point, 1.0)
    x = x[:2] / x[2]
    return np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]]) @ x


def project_with_matrix(point, rotation, center, focal=1.0):
    camera = rotation @ (np.asarray(point) - center)
    return focal * camera[:2] / -camera[2]


@pytest.mark.parametrize("azimuth, elevation, theta", [(0, 0, 0), (90, 0, 0), (30, 20, 15), (250, 45, -40), (180, -10, 170)])
def test_pascal3d_conversion_reproduces_the_toolbox_projection(azimuth, elevation, theta):
    rotation = geometry.pascal3d_to_matrix(azimuth, elevation, theta)
    a, e = np.deg2rad([azimuth, elevation])
    center = 5.0 * np.array([np.cos(e) * np.sin(a), -np.cos(e) * np.cos(a), np.sin(e)])
    # The camera's optical axis (-z) points from the camera centre to the origin.
    np.testing.assert_allclose(rotation.T @ [0, 0, -1], -center / 5.0, atol=1e-12)
    for point in RNG.normal(0, 0.5, (5, 3)):
        np.testing.assert_allclose(
            project_with_matrix(point, rotation, center), pascal3d_toolbox_projection(point, azimuth, elevation, theta), atol=1e-9
        )


def test_pascal3d_worked_examples():
    # Azimuth 90: the camera sits on world +x looking back at the origin, z up; world +y is to
    # the image's right, world +z up.
    rotation = geometry.pascal3d_to_matrix(90, 0, 0)
    np.testing.assert_allclose(rotation @ [0, 1, 0], [1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(rotation @ [0, 0, 1], [0, 1, 0], atol=1e-12)
    # theta = 90 turns the image counter-clockwise (y up): image right becomes image up.
    rotation = geometry.pascal3d_to_matrix(90, 0, 90)
    np.testing.assert_allclose(rotation @ [0, 1, 0], [0, 1, 0], atol=1e-12)
    # Same azimuth and elevation, opposite tilt in the authors' convention.
    np.testing.assert_allclose(geometry.pascal3d_to_euler(90, 10, 30), np.deg2rad([90, 10, -30]))
    np.testing.assert_allclose(geometry.euler_to_pascal3d(geometry.pascal3d_to_euler(250, -5, 12)), [250, -5, 12])
    # The conventions differ by the tilt-dependent factor Rz(theta + t) = Rz(2 theta) for t = theta.
    authors_same_numbers = geometry.euler_to_matrix(np.deg2rad([40, 20, 25]))
    np.testing.assert_allclose(geometry.pascal3d_to_matrix(40, 20, 25), rot_z(np.deg2rad(50)) @ authors_same_numbers, atol=1e-12)


# ----------------------------------------------------------------------------- errors


def test_geodesic_error_known_angles():
    identity = np.eye(3)
    assert geometry.geodesic_error(identity, identity) == 0.0
    for rot in (rot_x, rot_y, rot_z):
        np.testing.assert_allclose(geometry.geodesic_error(identity, rot(np.pi / 2)), 90.0, atol=1e-9)
        np.testing.assert_allclose(geometry.geodesic_error(identity, rot(np.pi)), 180.0, atol=1e-9)
        np.testing.assert_allclose(geometry.geodesic_error(rot(0.1), rot(0.1 + np.deg2rad(30))), 30.0, atol=1e-9)
    # An azimuth change of d degrees is a rotation by d degrees (no sqrt(2) factor).
    base = random_euler(20)
    shifted = base + [np.deg2rad(25), 0, 0]
    np.testing.assert_allclose(geometry.geodesic_error(geometry.euler_to_matrix(base), geometry.euler_to_matrix(shifted)), 25.0, atol=1e-9)


def test_geodesic_error_equals_the_arccos_formula_and_is_symmetric():
    first, second = geometry.euler_to_matrix(random_euler(300)), geometry.euler_to_matrix(random_euler(300))
    trace = np.trace(np.swapaxes(first, 1, 2) @ second, axis1=1, axis2=2)
    want = np.rad2deg(np.arccos(np.clip((trace - 1) / 2, -1, 1)))
    np.testing.assert_allclose(geometry.geodesic_error(first, second), want, atol=1e-6)
    np.testing.assert_allclose(geometry.geodesic_error(second, first), want, atol=1e-6)
    assert np.all(geometry.geodesic_error(first, first) == 0)


def test_flip_invariance_and_metrics():
    errors = np.array([10.0, 20.0, 170.0, 40.0])
    np.testing.assert_allclose(pose_accuracy.flip_invariant(errors), [10, 20, 10, 40])
    metrics = pose_accuracy.pose_metrics(errors, thresholds_deg=(30, 15))
    assert metrics == {"median_error_deg": 30.0, "acc_at_30": 0.5, "acc_at_15": 0.25}
    flipped = pose_accuracy.pose_metrics(pose_accuracy.flip_invariant(errors))
    assert flipped["median_error_deg"] == 15.0 and flipped["acc_at_30"] == 0.75
    with pytest.raises(ValueError, match="at least one error"):
        pose_accuracy.pose_metrics([])


# ----------------------------------------------------------------------------- lookup


def test_lookup_on_a_dictionary_that_contains_the_queries_has_zero_error():
    euler = random_euler(200)
    embeddings = RNG.normal(size=(200, 16))
    rotations = geometry.euler_to_matrix(euler)
    result = pose_accuracy.lookup_evaluation(embeddings[:50], rotations[:50], embeddings, rotations, dictionary_size=200, repeats=3)
    summary = result.summary()
    assert summary["median_error_deg"] == {"mean": 0.0, "std": 0.0, "sem": 0.0}
    assert summary["acc_at_30"]["mean"] == 1.0 and summary["flip_acc_at_30"]["mean"] == 1.0
    assert result.per_dictionary["median_error_deg"].shape == (3,)


def test_lookup_draws_seeded_random_dictionaries():
    rotations = geometry.euler_to_matrix(random_euler(300))
    embeddings = RNG.normal(size=(300, 8))
    queries = RNG.normal(size=(40, 8))
    run = lambda seed: pose_accuracy.lookup_evaluation(
        queries, rotations[:40], embeddings, rotations, dictionary_size=100, repeats=6, seed=seed
    ).per_dictionary["median_error_deg"]
    np.testing.assert_array_equal(run(1), run(1))
    assert len(np.unique(run(1))) > 1  # the dictionaries differ
    with pytest.raises(ValueError, match="dictionary_size must lie in 1..300"):
        pose_accuracy.lookup_evaluation(queries, rotations[:40], embeddings, rotations, dictionary_size=301)


def test_nearest_neighbour_ranks_by_the_training_similarity():
    keys = np.array([[1.0, 0.0], [10.0, 1.0]])
    query = np.array([[2.0, 0.2]])
    # Cosine prefers the second key's direction; squared distance prefers the first key.
    assert lookup.nearest_neighbours(query, keys, "cosine")[0][0] == 1
    assert lookup.nearest_neighbours(query, keys, "l2sq")[0][0] == 0
    index, score = lookup.nearest_neighbours(query, keys, "l1")
    assert index[0] == 0 and np.isclose(score[0], -1.2)


def test_backbone_features_come_from_the_last_feature_map():
    encoder = models.build("s4", embedding_dim=8, input_shape=(16, 16, 3))
    backbone = pose_accuracy.backbone_model(encoder)
    # 16 -> 14 -> 12 -> 5 -> 3 -> 1: conv5 gives 1 x 1 x 32.
    assert backbone.output_shape == (None, 32)
    images = RNG.uniform(size=(2, 16, 16, 3)).astype(np.float32)
    trunk = keras.Model(encoder.input, encoder.get_layer("conv5").output)
    np.testing.assert_allclose(backbone(images).numpy(), trunk(images).numpy().reshape(2, -1), rtol=1e-6)


# ----------------------------------------------------------------------------- spherical regression


def test_head_matches_table():
    head = models.build("spherical_regression", embedding_dim=64)
    per_angle = (64 * 128 + 128) + (128 * 2 + 2) + (128 * 4 + 4)
    assert sum(int(np.prod(w.shape)) for w in head.trainable_weights) == 3 * per_angle == 27_282
    outputs = head(RNG.normal(size=(5, 64)).astype(np.float32))
    assert outputs["magnitude"].shape == (5, 3, 2) and outputs["quadrant_logits"].shape == (5, 3, 4)
    # Embeddings are L2-normalised first: the scale of an embedding does not matter.
    x = RNG.normal(size=(3, 64)).astype(np.float32)
    np.testing.assert_allclose(head(7.0 * x)["magnitude"].numpy(), head(x)["magnitude"].numpy(), atol=1e-6)


def test_spherical_exponential_is_unit_norm_with_finite_gradients():
    logits = tf.constant([[0.0, 0.0], [3.0, -2.0], [200.0, -200.0], [-1e4, 1e4]])
    with tf.GradientTape() as tape:
        tape.watch(logits)
        values = pose_head.SphericalExponential()(logits)
        total = tf.reduce_sum(values)
    np.testing.assert_allclose(tf.norm(values, axis=-1).numpy(), 1.0, atol=1e-6)
    assert np.all(values.numpy() >= 0)
    np.testing.assert_allclose(values.numpy()[0], [np.sqrt(0.5)] * 2, atol=1e-7)
    assert np.all(np.isfinite(tape.gradient(total, logits).numpy()))


def ideal_outputs(angles):
    """Head outputs that encode ``angles`` [B, 3] exactly."""
    magnitude = np.stack([np.abs(np.sin(angles)), np.abs(np.cos(angles))], axis=-1)
    quadrant = pose_head.quadrant_labels(angles).numpy()
    return {"magnitude": tf.constant(magnitude, tf.float32), "quadrant_logits": tf.constant(20.0 * np.eye(4)[quadrant], tf.float32)}


def test_decoding_recovers_angles_in_all_four_quadrants():
    angles = np.deg2rad([[30.0, 120.0, -150.0], [-60.0, 10.0, 179.0], [95.0, -95.0, -5.0]])
    np.testing.assert_array_equal(pose_head.quadrant_labels(angles[0]).numpy(), [0, 1, 3])
    np.testing.assert_array_equal(pose_head.quadrant_labels(angles[1]).numpy(), [2, 0, 1])
    np.testing.assert_allclose(pose_head.decode_angles(ideal_outputs(angles)).numpy(), angles, atol=1e-6)
    # The loss of exact outputs is only the (small) residual cross entropy of the 4 logits.
    assert float(pose_head.spherical_regression_loss(angles, ideal_outputs(angles))) < 1e-6
    wrong = ideal_outputs(angles + 1.0)
    assert float(pose_head.spherical_regression_loss(angles, wrong)) > 1.0


def test_head_loss_trains_the_head_alone():
    keras.utils.set_random_seed(0)
    head = models.build("spherical_regression", embedding_dim=4)
    angles = RNG.uniform(-np.pi, np.pi, (256, 3)).astype(np.float32)
    # Embeddings that carry the angles (cos and sin of two of them).
    features = np.concatenate([np.cos(angles[:, :2]), np.sin(angles[:, :2])], axis=1).astype(np.float32)
    optimizer = keras.optimizers.Adam(1e-2)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = pose_head.spherical_regression_loss(angles, head(features, training=True))
        optimizer.apply(tape.gradient(loss, head.trainable_variables), head.trainable_variables)
        return loss

    losses = [float(step()) for _ in range(60)]
    assert losses[-1] < 0.5 * losses[0]


# ----------------------------------------------------------------------------- runs


TOY_POSE = ExperimentConfig(
    name="toy_pose", data="pose", model="s4", embedding_dim=8, set_size=8, pairs_per_step=2, similarity="cosine",
    temperature=0.1, learning_rate=1e-3, steps=10, log_every=10, seed=1, regression_weight=1.0,
)


@pytest.fixture
def toy_pose_family(monkeypatch):
    monkeypatch.setitem(data.DATA_FAMILIES, "pose", "toy_pose_family")


def test_regression_presets_hold_table_2_settings():
    from abc_tf.config import PRESETS

    for category in ("car", "chair"):
        joint, alone = PRESETS[f"pose_regression_{category}"], PRESETS[f"pose_regression_only_{category}"]
        for preset in (joint, alone):
            preset.validate()
            assert (preset.temperature, preset.learning_rate, preset.lr_halving_steps, preset.steps) == (0.05, 1e-4, 20000, 60000)
            assert preset.regression_weight == 1.0 and preset.pose_category == category
        assert joint.abc_weight == 1.0 and joint.real_fraction == 0.02
        assert alone.abc_weight == 0.0 and alone.real_fraction == 0.0
    quick = PRESETS["pose_regression_quick"]
    assert quick.replace(name="pose_quick", temperature=0.1, real_fraction=0.1, regression_weight=0.0) == PRESETS["pose_quick"]


def test_regression_needs_pose_data_and_something_to_train():
    with pytest.raises(ValueError, match="regression_weight=1.0: not read by data family 'mnist'"):
        data.check_config(ExperimentConfig(data="mnist", data_source="procedural", regression_weight=1.0))
    with pytest.raises(ValueError, match="both 0"):
        TOY_POSE.replace(regression_weight=0.0, abc_weight=0.0).validate()
    with pytest.raises(ValueError, match="abc_weight must be a finite number >= 0"):
        TOY_POSE.replace(abc_weight=-1.0).validate()


def test_a_regression_run_saves_its_head_and_evaluates(tmp_path, toy_pose_family):
    run_dir = str(tmp_path / "run")
    result = training.train(TOY_POSE.replace(abc_weight=0.5), run_dir, verbose=0)
    assert "head_loss" in result.history and np.all(np.isfinite(result.history["head_loss"]))
    run = load_run(run_dir)
    images = data.get_family("pose").pose_views(run.config, "test", "real", 5)[0]
    np.testing.assert_allclose(
        run.network("head")(embed(run.encoder, images))["magnitude"].numpy(),
        result.networks["head"](embed(result.encoder, images))["magnitude"].numpy(), rtol=1e-5, atol=1e-6,
    )
    saved = tf.saved_model.load(os.path.join(run_dir, "saved_model"))
    assert {"embed", "lookup_pose", "regress_pose", "regress_pose_uint8"} <= set(saved.signatures)

    settings = pose_accuracy.PoseEvalSettings(dictionary_size=30, repeats=4, pool_size=60, query_domains=("real", "synthetic"))
    results = pose_accuracy.evaluate_pose_run(run_dir, settings)
    assert json.load(open(os.path.join(run_dir, pose_accuracy.POSE_METRICS_FILE)))["settings"]["pool_size"] == 60
    rows = results["domains"]["real"]["rows"]
    assert list(rows) == [pose_accuracy.ROW_UNTRAINED, pose_accuracy.ROW_BACKBONE, pose_accuracy.ROW_LOOKUP, pose_accuracy.ROW_REGRESSION]
    assert results["embedding_dims"][pose_accuracy.ROW_BACKBONE] == 32
    for name in (pose_accuracy.ROW_UNTRAINED, pose_accuracy.ROW_BACKBONE, pose_accuracy.ROW_LOOKUP):
        assert 0 <= rows[name]["median_error_deg"]["mean"] <= 180
        assert rows[name]["flip_median_error_deg"]["mean"] <= rows[name]["median_error_deg"]["mean"]
    assert 0 <= rows[pose_accuracy.ROW_REGRESSION]["acc_at_30"] <= 1
    assert "| trained encoder (lookup) |" in pose_accuracy.format_table(results, "synthetic")


def test_an_empty_head_file_gives_one_line_naming_it(tmp_path):
    # What a kill while exporting the head leaves: a finished encoder beside a 0-byte head.keras.
    (tmp_path / "config.json").write_text(TOY_POSE.to_json())
    models.build("s4", embedding_dim=8, input_shape=(16, 16, 3)).save(network_file(str(tmp_path), "encoder"))
    head_path = tmp_path / "head.keras"
    head_path.write_bytes(b"")
    with pytest.raises(ValueError) as error:
        load_run(str(tmp_path)).network("head")
    assert str(error.value).startswith(f"{head_path} is empty") and "\n" not in str(error.value)


def test_pose_evaluation_refuses_other_runs(tmp_path):
    with pytest.raises(ValueError, match="is not a finished training run"):
        pose_accuracy.evaluate_pose_run(str(tmp_path))

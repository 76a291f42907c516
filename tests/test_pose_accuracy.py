"""Pose evaluation (abc_tf.evaluation.tasks.pose_accuracy, docs/PAPERS.md section 5): error metrics, lookup in
seeded random dictionaries by tiles, backbone features, and a regression run evaluated. The
conventions and errors: tests/test_geometry.py; the head: tests/test_pose_head.py."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import models
from abc_tf.runs import experiments
from abc_tf import data, geometry, losses, lookup
from abc_tf.evaluation.tasks import pose_accuracy
from abc_tf.runs import training
from abc_tf.runs.run_dir import embed, load_run
from rotation_helpers import random_euler


# ----------------------------------------------------------------------------- metrics


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
    rng = np.random.default_rng(0)
    euler = random_euler(rng, 200)
    embeddings = rng.normal(size=(200, 16))
    rotations = geometry.euler_to_matrix(euler)
    result = pose_accuracy.lookup_evaluation(
        embeddings[:50], rotations[:50], embeddings, rotations, dictionary_size=200, repeats=3
    )
    summary = result.summary()
    assert summary["median_error_deg"] == {"mean": 0.0, "std": 0.0, "sem": 0.0}
    assert summary["acc_at_30"]["mean"] == 1.0 and summary["flip_acc_at_30"]["mean"] == 1.0
    assert result.per_dictionary["median_error_deg"].shape == (3,)


def test_lookup_draws_seeded_random_dictionaries():
    rng = np.random.default_rng(1)
    rotations = geometry.euler_to_matrix(random_euler(rng, 300))
    embeddings = rng.normal(size=(300, 8))
    queries = rng.normal(size=(40, 8))

    def run(seed):
        return pose_accuracy.lookup_evaluation(
            queries, rotations[:40], embeddings, rotations, dictionary_size=100, repeats=6, seed=seed
        ).per_dictionary["median_error_deg"]

    np.testing.assert_array_equal(run(1), run(1))
    assert len(np.unique(run(1))) > 1  # the dictionaries differ
    with pytest.raises(ValueError, match="dictionary_size must lie in 1..300"):
        pose_accuracy.lookup_evaluation(queries, rotations[:40], embeddings, rotations, dictionary_size=301)


def test_tiled_lookup_evaluation_matches_one_matrix_for_all_queries(monkeypatch):
    monkeypatch.setattr(lookup, "QUERIES_PER_TILE", 7)  # 5 query chunks by 4 key blocks of 250 // 7 = 35
    rng = np.random.default_rng(4)
    queries, pool = rng.normal(size=(30, 8)), rng.normal(size=(120, 8))
    query_rotations = geometry.euler_to_matrix(rng.uniform(-1, 1, size=(30, 3)))
    pool_rotations = geometry.euler_to_matrix(rng.uniform(-1, 1, size=(120, 3)))
    chunked = pose_accuracy.lookup_evaluation(
        queries,
        query_rotations,
        pool,
        pool_rotations,
        dictionary_size=50,
        repeats=4,
        seed=3,
        max_elements=250,
    )
    # Reference: the whole [Q, P] matrix at once, dictionaries drawn by the same seeded generator.
    scores = losses.pairwise_similarity(
        tf.constant(queries, tf.float32), tf.constant(pool, tf.float32), "cosine"
    ).numpy()
    rng = np.random.default_rng(3)
    for repeat in range(4):
        members = rng.choice(120, size=50, replace=False)  # the unchunked code, as it was
        neighbour = members[np.argmax(scores[:, members], axis=1)]
        expected = pose_accuracy.error_metrics(pool_rotations[neighbour], query_rotations)
        for name, value in expected.items():
            assert chunked.per_dictionary[name][repeat] == pytest.approx(value)


def test_backbone_features_come_from_the_last_feature_map():
    encoder = models.build("s4", embedding_dim=8, input_shape=(16, 16, 3))
    backbone = pose_accuracy.backbone_model(encoder)
    # 16 -> 14 -> 12 -> 5 -> 3 -> 1: conv5 gives 1 x 1 x 32.
    assert backbone.output_shape == (None, 32)
    images = np.random.default_rng(2).uniform(size=(2, 16, 16, 3)).astype(np.float32)
    trunk = keras.Model(encoder.input, encoder.get_layer("conv5").output)
    np.testing.assert_allclose(
        backbone(images).numpy(), trunk(images).numpy().reshape(2, -1), rtol=1e-6
    )  # the same layers: equal


# ----------------------------------------------------------------------------- runs


TOY_POSE = experiments.config_for(
    name="toy_pose",
    data="pose",
    encoder="s4",
    embedding_dim=8,
    set_size=8,
    pairs_per_step=2,
    similarity="cosine",
    temperature=0.1,
    learning_rate=1e-3,
    steps=10,
    log_every=10,
    seed=1,
    regression_weight=1.0,
)


@pytest.fixture
def toy_pose_family(monkeypatch):
    monkeypatch.setitem(data.DATA_FAMILIES, "pose", "toy_pose_family:FAMILY")


@pytest.mark.slow
@pytest.mark.saved_model
def test_a_regression_run_saves_its_head_and_evaluates(tmp_path, toy_pose_family):
    run_dir = str(tmp_path / "run")
    result = training.train(TOY_POSE.replace(abc_weight=0.5), run_dir, verbose=0)
    assert "head_loss" in result.history and np.all(np.isfinite(result.history["head_loss"]))
    run = load_run(run_dir)
    images = data.get_family("pose").pose_views(run.config, "test", "real", 5)[0]
    # The reloaded networks run the same eager kernels on the same weights: equal.
    np.testing.assert_allclose(
        run.network("head")(embed(run.encoder, images))["magnitude"].numpy(),
        result.networks["head"](embed(result.encoder, images))["magnitude"].numpy(),
        rtol=1e-5,
        atol=1e-6,
    )
    saved = tf.saved_model.load(os.path.join(run_dir, "saved_model"))
    assert {"embed", "lookup_pose", "regress_pose", "regress_pose_uint8"} <= set(saved.signatures)

    settings = pose_accuracy.PoseEvalSettings(
        dictionary_size=30, repeats=4, pool_size=60, query_domains=("real", "synthetic")
    )
    results = pose_accuracy.evaluate_pose_run(run_dir, settings)
    assert (
        json.load(open(os.path.join(run_dir, pose_accuracy.POSE_METRICS_FILE)))["settings"]["pool_size"] == 60
    )
    rows = results["domains"]["real"]["rows"]
    assert list(rows) == [
        pose_accuracy.ROW_UNTRAINED,
        pose_accuracy.ROW_BACKBONE,
        pose_accuracy.ROW_LOOKUP,
        pose_accuracy.ROW_REGRESSION,
    ]
    assert results["embedding_dims"][pose_accuracy.ROW_BACKBONE] == 32
    for name in (pose_accuracy.ROW_UNTRAINED, pose_accuracy.ROW_BACKBONE, pose_accuracy.ROW_LOOKUP):
        assert 0 <= rows[name]["median_error_deg"]["mean"] <= 180
        assert rows[name]["flip_median_error_deg"]["mean"] <= rows[name]["median_error_deg"]["mean"]
    assert 0 <= rows[pose_accuracy.ROW_REGRESSION]["acc_at_30"] <= 1
    assert "| trained encoder (lookup) |" in pose_accuracy.format_table(results, "synthetic")


def test_pose_evaluation_refuses_other_runs(tmp_path):
    with pytest.raises(ValueError, match="is not a finished training run"):
        pose_accuracy.evaluate_pose_run(str(tmp_path))


@pytest.mark.slow
def test_the_pretrained_resnet_row_reads_a_weights_file_and_refuses_a_missing_one(tmp_path, toy_pose_family):
    # The paper's ImageNet-ResNet row (Table 1): its weights cannot be downloaded here, so a
    # file of ResNet50V2 notop weights (random ones, in the format Keras' ImageNet file has)
    # stands in; the row embeds with exactly those weights.
    run_dir = str(tmp_path / "run")
    training.train(TOY_POSE.replace(steps=2, log_every=2, regression_weight=0.0), run_dir, verbose=0)
    weights = str(tmp_path / "resnet50v2_notop.weights.h5")
    keras.applications.ResNet50V2(include_top=False, weights=None, input_shape=(128, 128, 3)).save_weights(
        weights
    )
    settings = pose_accuracy.PoseEvalSettings(
        dictionary_size=6, repeats=2, pool_size=6, num_queries=3, baselines=False, pretrained_backbone=weights
    )
    results = pose_accuracy.evaluate_pose_run(run_dir, settings, write=False)
    assert list(results["domains"]["real"]["rows"]) == [
        pose_accuracy.ROW_PRETRAINED,
        pose_accuracy.ROW_LOOKUP,
    ]
    # The toy's 16 px images are resized to 128: conv4 of ResNet50V2 (stride 32: V2 strides in a
    # stage's last block) is 4 x 4 x 1024.
    assert results["embedding_dims"][pose_accuracy.ROW_PRETRAINED] == 4 * 4 * 1024
    network = pose_accuracy.pretrained_backbone_model(weights, (16, 16, 3))
    reference = keras.applications.ResNet50V2(include_top=False, weights=weights, input_shape=(128, 128, 3))
    np.testing.assert_array_equal(
        network.get_layer("s5_backbone").get_layer("conv1_conv").get_weights()[0],
        reference.get_layer("conv1_conv").get_weights()[0],
    )
    missing = pose_accuracy.PoseEvalSettings(pretrained_backbone=str(tmp_path / "missing.weights.h5"))
    with pytest.raises(
        ValueError,
        match=r"Cannot load ResNet50V2 weights .*missing\.weights\.h5.*--encoder.backbone_weights=PATH",
    ):
        pose_accuracy.evaluate_pose_run(run_dir, missing, write=False)

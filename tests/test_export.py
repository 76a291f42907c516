"""Pose SavedModel export: load in a fresh process without project code, same outputs as Keras."""

import concurrent.futures
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

import models
from abc_tf import geometry, losses
from abc_tf.runs import export
from abc_tf.runs.run_dir import embed
from models import pose_head
from tolerance_helpers import rounding_rtol

pytestmark = [pytest.mark.saved_model, pytest.mark.slow]  # every test here reads an exported SavedModel

IMAGE_SHAPE = (16, 16, 3)

# Runs in a fresh interpreter that cannot import the project: only TensorFlow reads the model.
LOAD_AND_RUN = textwrap.dedent(
    """
    import importlib.abc, sys

    class NoProject(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("abc_tf", "models"):
                raise ImportError(f"{name} must not be needed to serve the SavedModel")

    sys.meta_path.insert(0, NoProject())
    import numpy as np
    import tensorflow as tf

    model_dir, inputs_path, outputs_path = sys.argv[1:]
    inputs = np.load(inputs_path)
    loaded = tf.saved_model.load(model_dir)
    outputs = {}
    for endpoint in ("embed", "lookup_pose", "regress_pose"):
        for suffix, images in (("", inputs["float"]), ("_uint8", inputs["uint8"])):
            # Through the Serving signature: named input, dict of named outputs.
            result = loaded.signatures[endpoint + suffix](images=tf.constant(images))
            for key, value in result.items():
                outputs[f"{endpoint}{suffix}/{key}"] = value.numpy()
    np.savez(outputs_path, **outputs)
    """
)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A small encoder + head exported with a 40-image dictionary; (path, encoder, head, dictionary)."""
    keras.utils.set_random_seed(3)
    encoder = models.build("s4", embedding_dim=8, input_shape=IMAGE_SHAPE)
    head = models.build("spherical_regression", embedding_dim=8)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (40, *IMAGE_SHAPE), dtype=np.uint8)
    euler = np.stack([rng.uniform(0, 2 * np.pi, 40), rng.uniform(-0.5, 0.5, 40), rng.uniform(-1, 1, 40)], -1)
    path = str(tmp_path_factory.mktemp("export") / "pose_model")
    export.export_pose(encoder, path, embed(encoder, images), euler, "cosine", head=head)
    return path, encoder, head, images, euler


def test_saved_model_in_a_fresh_process_matches_keras(exported, tmp_path):
    path, encoder, head, images, euler = exported
    queries = images[:6]
    np.savez(tmp_path / "inputs.npz", uint8=queries, float=(queries / 255.0).astype(np.float32))
    script = tmp_path / "load.py"
    script.write_text(LOAD_AND_RUN)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ""}
    subprocess.run(
        [sys.executable, str(script), path, str(tmp_path / "inputs.npz"), str(tmp_path / "outputs.npz")],
        check=True,
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        timeout=300,
    )
    served = dict(np.load(tmp_path / "outputs.npz"))

    embeddings = embed(encoder, queries)
    angles = pose_head.decode_angles(head(embeddings)).numpy()
    # The served graph may fuse and reorder S4's sums (on 16 x 16 x 3: conv fan-ins 27 + 4 x 288,
    # the dense 32 and 128, about 1,400 float32 roundings of terms of size ~1); the head normalises
    # the embedding and its (|sin|, |cos|), so an angle moves by as much (and a rotation, a product
    # of three sines and cosines, by 3 times that).
    tolerance = rounding_rtol(1400 + 100)
    for suffix in ("", "_uint8"):
        np.testing.assert_allclose(
            served[f"embed{suffix}/embeddings"], embeddings, rtol=tolerance, atol=tolerance
        )
        # The queries are dictionary entries 0..5: lookup finds each itself, with its pose.
        np.testing.assert_array_equal(served[f"lookup_pose{suffix}/neighbour_index"], np.arange(6))
        # The cosine of an embedding with itself: 1 - O(tolerance^2), and 8-d norms and a dot product
        # rounding: rounding_rtol(20) = 5e-6.
        np.testing.assert_allclose(served[f"lookup_pose{suffix}/similarity"], 1.0, atol=1e-5)
        # The dictionary's own angles, rounded once to float32 (|angle| < 2 pi: 4e-7).
        np.testing.assert_allclose(served[f"lookup_pose{suffix}/euler"], euler[:6], atol=1e-6)
        errors = geometry.geodesic_error(
            served[f"lookup_pose{suffix}/rotation"], geometry.euler_to_matrix(euler[:6])
        )
        assert np.all(errors < 1e-3)
        np.testing.assert_allclose(served[f"regress_pose{suffix}/euler"], angles, atol=tolerance)
        np.testing.assert_allclose(
            served[f"regress_pose{suffix}/rotation"], geometry.euler_to_matrix(angles), atol=3 * tolerance
        )


def test_signatures_have_named_inputs_and_outputs(exported):
    loaded = tf.saved_model.load(exported[0])
    assert set(loaded.signatures) == {
        "serving_default",
        "embed",
        "embed_uint8",
        "lookup_pose",
        "lookup_pose_uint8",
        "regress_pose",
        "regress_pose_uint8",
    }
    lookup = loaded.signatures["lookup_pose_uint8"]
    assert list(lookup.structured_input_signature[1]) == ["images"]
    assert lookup.structured_input_signature[1]["images"].dtype == tf.uint8
    assert set(lookup.structured_outputs) == {"rotation", "euler", "neighbour_index", "similarity"}
    assert set(loaded.signatures["regress_pose"].structured_outputs) == {"euler", "rotation"}


def test_bad_images_get_clear_errors(exported):
    loaded = tf.saved_model.load(exported[0])
    image = np.zeros(IMAGE_SHAPE, np.float32)
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"lookup_pose: images must have shape \[batch, 16, 16, 3\]"
    ):
        loaded.lookup_pose(image)  # no batch axis
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"regress_pose_uint8: images must have shape \[batch, 16, 16, 3\]",
    ):
        loaded.regress_pose_uint8(np.zeros((2, 32, 32, 3), np.uint8))
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match="float images must lie in \\[0, 1\\]; pass 0..255 pixels as uint8 to embed_uint8",
    ):
        loaded.embed(np.full((1, *IMAGE_SHAPE), 200.0, np.float32))


def test_inputs_of_the_wrong_dtype_or_range_are_refused_naming_the_right_endpoint(exported):
    path, encoder, _, images, _ = exported
    loaded = tf.saved_model.load(path)
    floats = images[:3] / 255.0  # NumPy float64 in [0, 1]: a cast to uint8 would make them all black
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match="lookup_pose_uint8 takes uint8 pixels 0..255, got dtype float64; call lookup_pose",
    ):
        loaded.lookup_pose_uint8(floats)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match="embed_uint8 takes uint8 pixels 0..255, got dtype float32; call embed",
    ):
        loaded.embed_uint8(floats.astype(np.float32))
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match="embed takes float images in \\[0, 1\\], got dtype uint8; call embed_uint8",
    ):
        loaded.embed(images[:3])
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="lookup_pose_uint8: integer pixels must lie in 0..255"
    ):
        loaded.lookup_pose_uint8(images[:3].astype(np.int32) + 200)  # 455 would wrap around to 199
    # Accepted: integer pixels in range, float64 images in [0, 1]; both give the uint8 answers.
    want = loaded.lookup_pose_uint8(images[:3])["neighbour_index"].numpy()
    np.testing.assert_array_equal(
        loaded.lookup_pose_uint8(images[:3].astype(np.int64))["neighbour_index"], want
    )
    np.testing.assert_array_equal(loaded.lookup_pose(floats)["neighbour_index"], want)


def test_an_empty_batch_gives_empty_outputs_of_the_right_shapes(exported):
    loaded = tf.saved_model.load(exported[0])
    for endpoint, images in (
        ("", np.zeros((0, *IMAGE_SHAPE), np.float32)),
        ("_uint8", np.zeros((0, *IMAGE_SHAPE), np.uint8)),
    ):
        assert loaded.__getattribute__("embed" + endpoint)(images)["embeddings"].shape == (0, 8)
        lookup = loaded.__getattribute__("lookup_pose" + endpoint)(images)
        assert {key: tuple(value.shape) for key, value in lookup.items()} == {
            "rotation": (0, 3, 3),
            "euler": (0, 3),
            "neighbour_index": (0,),
            "similarity": (0,),
        }
        assert loaded.__getattribute__("regress_pose" + endpoint)(images)["rotation"].shape == (0, 3, 3)


def test_concurrent_callers_of_one_loaded_model_get_the_answers_of_one_caller(exported):
    loaded = tf.saved_model.load(exported[0])
    rng = np.random.default_rng(1)
    batches = [rng.integers(0, 256, (size, *IMAGE_SHAPE), dtype=np.uint8) for size in (1, 5, 32, 7) * 4]
    alone = [loaded.lookup_pose_uint8(batch) for batch in batches]
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(loaded.lookup_pose_uint8, batches))
    for one, many in zip(alone, together):
        np.testing.assert_array_equal(many["neighbour_index"], one["neighbour_index"])
        np.testing.assert_allclose(
            many["similarity"], one["similarity"], rtol=1e-5, atol=1e-6
        )  # one graph, one input: equal


def test_export_refuses_inconsistent_dictionaries(tmp_path):
    encoder = models.build("s4", embedding_dim=8, input_shape=IMAGE_SHAPE)
    with pytest.raises(ValueError, match=r"dictionary_euler must be \[N, 3\] = \[5, 3\]"):
        export.export_pose(encoder, str(tmp_path / "m"), np.zeros((5, 8)), np.zeros((4, 3)), "cosine")
    with pytest.raises(ValueError, match="have 4 dims; the encoder gives 8"):
        export.export_pose(encoder, str(tmp_path / "m"), np.zeros((5, 4)), np.zeros((5, 3)), "cosine")
    with pytest.raises(ValueError, match="Unknown similarity"):
        export.export_pose(encoder, str(tmp_path / "m"), np.zeros((5, 8)), np.zeros((5, 3)), "dot")


def test_lookup_pose_answers_with_the_pose_of_the_most_similar_key(tmp_path):
    # The encoder only flattens its [1, 1, 8] "images", so the queries are the embeddings. The
    # tiling itself (every similarity, chunks and tiles): tests/test_lookup.py.
    encoder = keras.Sequential([keras.Input((1, 1, 8)), keras.layers.Flatten()])
    rng = np.random.default_rng(5)
    keys = rng.normal(size=(37, 8)).astype(np.float32)
    euler = rng.uniform(-1, 1, size=(37, 3))
    path = str(tmp_path / "model")
    # Cosine: the export stores the keys normalised. 16 similarities at a time: several tiles.
    export.export_pose(encoder, path, keys, euler, "cosine", max_scores=16)
    loaded = tf.saved_model.load(path)
    for batch in (1, 5, 20):
        queries = rng.random((batch, 8), dtype=np.float32)
        scores = losses.pairwise_similarity(tf.constant(queries), tf.constant(keys), "cosine").numpy()
        want = np.argmax(scores, axis=1)
        got = loaded.lookup_pose(queries.reshape(batch, 1, 1, 8))
        np.testing.assert_array_equal(got["neighbour_index"], want)
        # Cosines of 8-d vectors normalised by two ops: about 20 roundings of |s| <= 1, 5e-6.
        np.testing.assert_allclose(got["similarity"], scores[np.arange(batch), want], rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(got["euler"], euler[want].astype(np.float32))
        np.testing.assert_array_equal(
            got["rotation"], geometry.euler_to_matrix(euler[want]).astype(np.float32)
        )

"""SavedModel export, loadable with ``tf.saved_model.load`` alone: no project code needed.

Signatures take any batch size and preprocess inside. Endpoints take float32 images in [0, 1] (plain name)
or uint8 pixels 0..255 (``_uint8`` suffix). Each is a TensorFlow Serving signature: input ``images``, outputs:

- ``embed``: ``[B, H, W, C]`` -> ``{"embeddings": [B, D]}``.
- ``lookup_pose``, for pose runs (:func:`export_pose`), with the dictionary baked in: ``[B, H, W, C]`` ->
  ``{"rotation": [B, 3, 3], "euler": [B, 3], "neighbour_index": [B] int64, "similarity": [B]}``.
- ``regress_pose``, for pose runs with a spherical-regression head:
  ``[B, H, W, C]`` -> ``{"euler": [B, 3], "rotation": [B, 3, 3]}``, each angle in (-pi, pi].

Euler angles are azimuth, elevation, tilt in radians. Rotations are camera rotations in the authors'
convention ``Rz(-t) Rx(e - pi/2) Rz(-a)`` (abc_tf.geometry). The graph checks its inputs, so the checks hold
for any client (:func:`checked_images`). An empty batch gives empty outputs.
"""

from __future__ import annotations

from typing import Callable

import keras
import numpy as np
import tensorflow as tf

from abc_tf import data, geometry, losses
from abc_tf.config import ExperimentConfig
from abc_tf.lookup import MAX_SCORES, QUERIES_PER_TILE, nearest_keys
from abc_tf.methods.base import to_float_images
from abc_tf.runs.run_dir import embed
from models import pose_head

# suffix -> the input dtypes the endpoint takes; the first is its Serving signature's.
_INPUT_TYPES = {"": (tf.float32, tf.float16, tf.float64), "_uint8": (tf.uint8, tf.int32, tf.int64)}
# Traced only to refuse them with a message naming the endpoint that takes them.
_REFUSED_TYPES = {"": (tf.uint8, tf.int32, tf.int64), "_uint8": (tf.float32, tf.float16, tf.float64)}


def checked_images(images: tf.Tensor, image_shape: tuple[int, int, int], endpoint: str) -> tf.Tensor:
    """Asserts images are ``[batch, H, W, C]``, and in [0, 1] if float; returns float32 images.

    The exported input specs leave the rank open, so a wrong shape fails here, naming the expected
    shape, not deep inside a convolution.
    """
    height, width, channels = image_shape
    expected = f"[batch, {height}, {width}, {channels}]"
    shape = tf.shape(images, out_type=tf.int32)
    rank_ok = tf.equal(tf.size(shape), 4)
    dims_ok = tf.cond(
        rank_ok,
        lambda: tf.reduce_all(tf.equal(shape[1:], tf.constant(image_shape, tf.int32))),
        lambda: tf.constant(False),
    )
    checks = [
        tf.debugging.Assert(
            dims_ok,
            [
                f"{endpoint}: images must have shape {expected} (add a batch axis for one image); got shape",
                shape,
            ],
        )
    ]
    if images.dtype.is_integer and images.dtype != tf.uint8:
        # Casting to uint8 would wrap 256 around to 0.
        in_range = tf.logical_and(tf.reduce_all(images >= 0), tf.reduce_all(images <= 255))
        checks.append(tf.debugging.Assert(in_range, [f"{endpoint}: integer pixels must lie in 0..255"]))
        images = tf.cast(images, tf.uint8)
    elif images.dtype != tf.uint8:
        images = tf.cast(images, tf.float32)
        # Catches 0..255 pixels passed as floats, which would silently give wrong poses.
        in_range = tf.logical_and(tf.reduce_all(images >= 0.0), tf.reduce_all(images <= 1.0))
        checks.append(
            tf.debugging.Assert(
                in_range,
                [
                    f"{endpoint}: float images must lie in [0, 1]; "
                    f"pass 0..255 pixels as uint8 to {endpoint}_uint8"
                ],
            )
        )
    with tf.control_dependencies(checks):
        images = tf.identity(images)
    # A call with a concrete wrong shape is shape-checked when the graph is instantiated, before
    # the assertions run; the cond hides the shape so that the assertion's message is the error.
    images = tf.cond(dims_ok, lambda: images, lambda: tf.zeros([0, *image_shape], images.dtype))
    return to_float_images(tf.ensure_shape(images, (None, *image_shape)))


def _add_endpoints(
    archive: keras.export.ExportArchive,
    name: str,
    image_shape: tuple[int, int, int],
    body: Callable[[tf.Tensor], dict[str, tf.Tensor]],
) -> None:
    """Adds ``name`` (float input) and ``name_uint8``, each running ``body(float_images)``.

    Each is also traced for the other common dtypes, so a NumPy array of the wrong dtype reaches a check
    naming the right endpoint instead of being cast (float [0, 1] values cast to uint8 are all 0).
    """
    for suffix, dtypes in _INPUT_TYPES.items():
        endpoint = name + suffix
        other = name + ("_uint8" if suffix == "" else "")
        wanted = "float images in [0, 1]" if suffix == "" else "uint8 pixels 0..255"

        @tf.function
        def serve(images, endpoint=endpoint, other=other, wanted=wanted, accepted=dtypes):
            if images.dtype not in accepted:
                refuse = tf.debugging.Assert(
                    False,
                    [
                        f"{endpoint} takes {wanted}, got dtype {images.dtype.name}; "
                        f"call {other} for these images"
                    ],
                )
                with tf.control_dependencies([refuse]):
                    return {"refused": tf.zeros([0])}
            float_images = checked_images(images, image_shape, endpoint)
            # The networks cannot run on an empty batch (reshapes of size 0 fail): run one blank
            # image instead and return none of it.
            count = tf.shape(float_images)[0]
            padded = tf.cond(count > 0, lambda: float_images, lambda: tf.zeros([1, *image_shape], tf.float32))
            return {key: value[:count] for key, value in body(padded).items()}

        for dtype in dtypes + _REFUSED_TYPES[suffix]:  # the first trace is the Serving signature
            serve.get_concrete_function(tf.TensorSpec(None, dtype, name="images"))
        archive.add_endpoint(name=endpoint, fn=serve)


def _encoder_archive(encoder: keras.Model) -> keras.export.ExportArchive:
    """An archive tracking ``encoder`` with the ``embed`` endpoints."""
    image_shape = tuple(encoder.input_shape[1:])
    archive = keras.export.ExportArchive()
    archive.track(encoder)
    _add_endpoints(
        archive,
        "embed",
        image_shape,
        lambda images: {"embeddings": tf.cast(encoder(images, training=False), tf.float32)},
    )
    return archive


def export_encoder(encoder: keras.Model, path: str) -> None:
    """Writes ``encoder`` as a SavedModel at ``path`` with the ``embed`` signatures."""
    _encoder_archive(encoder).write_out(path, verbose=False)


def export_pose(
    encoder: keras.Model,
    path: str,
    dictionary_embeddings: np.ndarray,
    dictionary_euler: np.ndarray,
    similarity: str,
    head: keras.Model | None = None,
    max_scores: int | None = None,
) -> None:
    """Writes a pose SavedModel at ``path``: ``embed``, ``lookup_pose`` and, with a head, ``regress_pose``.

    The dictionary is ``dictionary_embeddings`` [N, D] of images of known ``dictionary_euler`` [N, 3];
    the neighbour maximises the training ``similarity``. ``head``: an optional spherical-regression head.
    """
    dictionary_embeddings = np.asarray(dictionary_embeddings, np.float32)
    dictionary_euler = np.asarray(dictionary_euler, np.float64)
    if dictionary_embeddings.ndim != 2 or dictionary_embeddings.shape[0] == 0:
        raise ValueError(
            f"dictionary_embeddings must be [N, D] with N > 0, got shape {dictionary_embeddings.shape}."
        )
    if dictionary_euler.shape != (dictionary_embeddings.shape[0], 3):
        raise ValueError(
            f"dictionary_euler must be [N, 3] = [{dictionary_embeddings.shape[0]}, 3], "
            f"got {dictionary_euler.shape}."
        )
    losses.pairwise_similarity(tf.zeros([1, 1]), tf.zeros([1, 1]), similarity)  # raises on an unknown name
    embedding_dim = int(encoder.output_shape[-1])
    if dictionary_embeddings.shape[1] != embedding_dim:
        raise ValueError(
            f"dictionary_embeddings have {dictionary_embeddings.shape[1]} dims; "
            f"the encoder gives {embedding_dim}."
        )

    # Variables, not graph constants: they are saved beside the graph, which a protobuf caps at
    # 2 GB (about 7 million keys of d=64). Cosine keys are stored L2-normalised, so that a call
    # does not normalise every key again.
    if similarity == "cosine":
        dictionary_embeddings = tf.math.l2_normalize(dictionary_embeddings, axis=-1).numpy()
    keys = tf.Variable(dictionary_embeddings, trainable=False, name="dictionary_embeddings")
    euler = tf.Variable(dictionary_euler.astype(np.float32), trainable=False, name="dictionary_euler")
    rotations = tf.Variable(
        geometry.euler_to_matrix(dictionary_euler).astype(np.float32),
        trainable=False,
        name="dictionary_rotations",
    )
    max_scores = MAX_SCORES if max_scores is None else max_scores

    def embed_images(images: tf.Tensor) -> tf.Tensor:
        return tf.cast(encoder(images, training=False), tf.float32)

    def lookup(images: tf.Tensor) -> dict[str, tf.Tensor]:
        index, best = nearest_keys(embed_images(images), keys, similarity, max_scores, QUERIES_PER_TILE)
        return {
            "rotation": tf.gather(rotations, index),
            "euler": tf.gather(euler, index),
            "neighbour_index": index,
            "similarity": best,
        }

    image_shape = tuple(encoder.input_shape[1:])
    archive = _encoder_archive(encoder)
    _add_endpoints(archive, "lookup_pose", image_shape, lookup)
    if head is not None:
        archive.track(head)

        def regress(images: tf.Tensor) -> dict[str, tf.Tensor]:
            angles = pose_head.decode_angles(head(embed_images(images), training=False))
            return {"euler": angles, "rotation": geometry.euler_to_matrix_tf(angles)}

        _add_endpoints(archive, "regress_pose", image_shape, regress)
    archive.write_out(path, verbose=False)


def export_run(
    config: ExperimentConfig,
    networks: dict[str, keras.Model],
    path: str,
    dictionary_size: int = 1800,
    seed: int | None = None,
) -> None:
    """The SavedModel of a run at ``path``, with ``embed`` from ``networks["encoder"]``.

    With images of known pose it adds ``lookup_pose`` over ``dictionary_size`` synthetic training renders,
    and ``regress_pose`` when the run has a ``head``.
    """
    family = data.get_family(config.data.family)
    encoder = networks["encoder"]
    if family.pose_views is None:
        export_encoder(encoder, path)
        return
    images, _, euler = family.pose_views(
        config, "train", "synthetic", dictionary_size, seed=config.trainer.seed if seed is None else seed
    )
    export_pose(
        encoder, path, embed(encoder, images), euler, config.embedding_similarity, head=networks.get("head")
    )

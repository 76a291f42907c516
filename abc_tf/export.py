"""SavedModel export, loadable with ``tf.saved_model.load`` alone (no project code needed).

Signatures take images of any batch size; preprocessing (uint8 -> [0, 1]) is inside:
- ``embed``: float32 images in [0, 1] ``[B, H, W, C]`` -> ``{"embeddings": [B, D]}``;
- ``embed_uint8``: uint8 images ``[B, H, W, C]`` -> ``{"embeddings": [B, D]}``.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from abc_tf.model import to_float_images


def export_encoder(encoder: keras.Model, path: str) -> None:
    """Writes ``encoder`` as a SavedModel at ``path`` with the signatures above."""
    image_shape = tuple(encoder.input_shape[1:])
    archive = keras.export.ExportArchive()
    archive.track(encoder)
    archive.add_endpoint(
        name="embed",
        fn=lambda images: {"embeddings": encoder(to_float_images(images), training=False)},
        input_signature=[tf.TensorSpec((None, *image_shape), tf.float32, name="images")],
    )
    archive.add_endpoint(
        name="embed_uint8",
        fn=lambda images: {"embeddings": encoder(to_float_images(images), training=False)},
        input_signature=[tf.TensorSpec((None, *image_shape), tf.uint8, name="images")],
    )
    archive.write_out(path, verbose=False)

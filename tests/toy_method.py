"""A toy method with two networks and two optimizers, for tests of the method interface only.

The encoder learns the ABC loss with the compiled optimizer; a decoder learns, with its own
optimizer, to reconstruct a 4x-pooled image from the encoder's (stopped) embedding. Nothing
in the trainer, the checkpoints or evaluate.py knows this method: tests register it in
``abc_tf.methods.METHODS`` under ``"two_network"``, as a user would register their own.
"""

from __future__ import annotations

import dataclasses

import keras
import tensorflow as tf

from abc_tf import losses, optimizers
from abc_tf.config import MethodConfig, field
from abc_tf.methods.base import Method, MethodModel, Update, build_encoder, loss_scaled, to_float_images

POOL = 4


@dataclasses.dataclass(frozen=True)
class TwoNetworkConfig(MethodConfig):
    """The toy method's own config (``--method.<field>`` on train.py's command line)."""

    similarity: str = field("l2sq", "Similarity of the encoder's ABC loss.")
    temperature: float = field(1.0, "Temperature of the encoder's ABC loss.")
    decoder_learning_rate: float = field(1e-3, "Adam learning rate of the decoder's own optimizer.")


class TwoNetworkModel(MethodModel):
    def __init__(
        self,
        encoder: keras.Model,
        decoder: keras.Model,
        similarity: str,
        temperature: float,
        decoder_learning_rate: float = 1e-3,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.encoder, self.decoder = encoder, decoder
        self.similarity, self.temperature = similarity, temperature
        self.decoder_optimizer = loss_scaled(
            optimizers.adam(decoder_learning_rate)
        )  # as compile's under mixed_float16
        self.track(("loss", "abc_loss", "reconstruction_loss"))
        self.built = True

    def networks(self) -> dict[str, keras.Model]:
        return {"encoder": self.encoder, "decoder": self.decoder}

    def optimizers(self) -> list[keras.optimizers.Optimizer]:
        return [self.optimizer, self.decoder_optimizer]

    def optimizer_variables(self, optimizer) -> list:
        network = self.encoder if optimizer is self.optimizer else self.decoder
        return network.trainable_variables

    def updates(self) -> list[Update]:
        return [
            Update(
                self._encoder_terms, self.optimizer, lambda: self.encoder.trainable_variables, loss="abc_loss"
            ),
            Update(
                self._decoder_terms,
                self.decoder_optimizer,
                lambda: self.decoder.trainable_variables,
                loss="reconstruction_loss",
            ),
        ]

    def _encoder_terms(self, batch, step, training, earlier):
        set_a, set_b = to_float_images(batch["set_a"]), to_float_images(batch["set_b"])
        pairs, size = tf.shape(set_a)[0], tf.shape(set_a)[1]
        flat_a = tf.reshape(set_a, tf.concat([[-1], tf.shape(set_a)[2:]], 0))
        flat_b = tf.reshape(set_b, tf.concat([[-1], tf.shape(set_b)[2:]], 0))
        embedded_a = tf.cast(self.encoder(flat_a, training=training), tf.float32)
        embedded_b = tf.cast(self.encoder(flat_b, training=training), tf.float32)
        abc, _ = losses.abc_loss(
            tf.reshape(embedded_a, [pairs, size, -1]),
            tf.reshape(embedded_b, [pairs, size, -1]),
            self.similarity,
            self.temperature,
        )
        # The decoder's update reads the embeddings from before the encoder's update.
        return {"abc_loss": abc, "embedded_a": tf.stop_gradient(embedded_a), "flat_a": flat_a}

    def _decoder_terms(self, batch, step, training, earlier):
        flat_a = earlier["flat_a"]
        target = tf.reshape(
            tf.nn.avg_pool2d(flat_a, POOL, POOL, "VALID"), [tf.shape(flat_a)[0], -1]
        )  # float32
        reconstruction = tf.cast(self.decoder(earlier["embedded_a"], training=training), tf.float32)
        rec = tf.reduce_mean(tf.square(reconstruction - target))
        return {"reconstruction_loss": rec, "loss": earlier["abc_loss"] + rec}


def build(config, image_shape) -> TwoNetworkModel:
    encoder = build_encoder(config, image_shape)
    height, width, channels = image_shape
    outputs = (height // POOL) * (width // POOL) * channels
    decoder = keras.Sequential(
        [
            keras.Input((config.encoder.embedding_dim,)),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(outputs),
        ],
        name="decoder",
    )
    model = TwoNetworkModel(
        encoder,
        decoder,
        config.method.similarity,
        config.method.temperature,
        config.method.decoder_learning_rate,
    )
    model.compile_for(config.trainer, optimizers.run_adam(config.trainer))
    return model


TWO_NETWORK = Method(name="two_network", config=TwoNetworkConfig, build=build)

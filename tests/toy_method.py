"""A toy method with two networks and two optimizers, for tests of the method interface only.

The encoder learns the ABC loss with the compiled optimizer; a decoder learns, with its own
optimizer, to reconstruct a 4x-pooled image from the encoder's (stopped) embedding. Nothing
in the trainer, the checkpoints or evaluate.py knows this method: tests register it in
``abc_tf.methods.METHODS`` under ``"two_network"``, as a user would register their own.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from abc_tf import losses
from abc_tf.methods.base import Method, MethodModel, adam, build_encoder, loss_scaled, to_float_images

POOL = 4


class TwoNetworkModel(MethodModel):
    def __init__(self, encoder: keras.Model, decoder: keras.Model, similarity: str, temperature: float, **kwargs):
        super().__init__(**kwargs)
        self.encoder, self.decoder = encoder, decoder
        self.similarity, self.temperature = similarity, temperature
        self.decoder_optimizer = loss_scaled(keras.optimizers.Adam(1e-3))  # as compile's under mixed_float16
        self.trackers = {name: keras.metrics.Mean(name=name) for name in ("loss", "abc_loss", "reconstruction_loss")}
        self.built = True

    @property
    def metrics(self):
        return list(self.trackers.values())

    def networks(self) -> dict[str, keras.Model]:
        return {"encoder": self.encoder, "decoder": self.decoder}

    def optimizers(self) -> list[keras.optimizers.Optimizer]:
        return [self.optimizer, self.decoder_optimizer]

    def optimizer_variables(self, optimizer) -> list:
        network = self.encoder if optimizer is self.optimizer else self.decoder
        return network.trainable_variables

    def train_step(self, batch):
        set_a, set_b = to_float_images(batch["set_a"]), to_float_images(batch["set_b"])
        pairs, size = tf.shape(set_a)[0], tf.shape(set_a)[1]
        flat_a = tf.reshape(set_a, tf.concat([[-1], tf.shape(set_a)[2:]], 0))
        flat_b = tf.reshape(set_b, tf.concat([[-1], tf.shape(set_b)[2:]], 0))
        target = tf.reshape(tf.nn.avg_pool2d(flat_a, POOL, POOL, "VALID"), [tf.shape(flat_a)[0], -1])  # float32
        with tf.GradientTape(persistent=True) as tape:
            embedded_a = tf.cast(self.encoder(flat_a, training=True), tf.float32)
            embedded_b = tf.cast(self.encoder(flat_b, training=True), tf.float32)
            abc, _ = losses.abc_loss(
                tf.reshape(embedded_a, [pairs, size, -1]), tf.reshape(embedded_b, [pairs, size, -1]),
                self.similarity, self.temperature,
            )
            reconstruction = tf.cast(self.decoder(tf.stop_gradient(embedded_a), training=True), tf.float32)
            rec = tf.reduce_mean(tf.square(reconstruction - target))
            # Each optimizer's loss, the mean over the replicas, loss-scaled under mixed_float16.
            scaled = [optimizer.scale_loss(self.replica_mean(loss)) for optimizer, loss in zip(self.optimizers(), (abc, rec))]
        for optimizer, loss in zip(self.optimizers(), scaled):
            variables = self.optimizer_variables(optimizer)
            optimizer.apply(tape.gradient(loss, variables), variables)
        values = {"loss": abc + rec, "abc_loss": abc, "reconstruction_loss": rec}
        for name, value in values.items():
            self.trackers[name].update_state(value)
        return self.logs({name: tracker.result() for name, tracker in self.trackers.items()})


def build(config, image_shape) -> TwoNetworkModel:
    encoder = build_encoder(config, image_shape)
    height, width, channels = image_shape
    outputs = (height // POOL) * (width // POOL) * channels
    decoder = keras.Sequential(
        [keras.Input((config.embedding_dim,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(outputs)],
        name="decoder",
    )
    model = TwoNetworkModel(encoder, decoder, config.similarity, config.temperature)
    model.compile(optimizer=adam(config), jit_compile=config.jit_compile, steps_per_execution=config.steps_per_execution)
    return model


TWO_NETWORK = Method(name="two_network", build=build)

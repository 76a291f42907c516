"""The lab's method: each set's images close together, the two sets' means apart. It trains on
"sets" batches (abc_tf.data.family.BATCH_IMAGES), which every grouped family streams."""

import tensorflow as tf

from abc_tf import optimizers
from abc_tf.examples.lab import PRESETS, LabConfig
from abc_tf.methods.base import Method, MethodModel, build_encoder, to_float_images


class LabModel(MethodModel):
    def __init__(self, encoder, epsilon, **kwargs):
        super().__init__(**kwargs)
        self.encoder, self.epsilon = encoder, epsilon
        self.track(("loss", "within", "between"))  # logged to TensorBoard, "loss" first

    def networks(self):
        return {"encoder": self.encoder}  # kept as encoder.keras; every evaluator embeds with it

    def embed(self, sets, training):  # uint8 [P, N, H, W, C] -> float32 [P, N, D]
        shape = tf.shape(sets)
        images = tf.reshape(to_float_images(sets), tf.concat([[-1], shape[2:]], 0))
        embedded = tf.cast(self.encoder(images, training=training), tf.float32)
        return tf.reshape(embedded, [shape[0], shape[1], -1])

    def compute_terms(self, batch, step, training):
        z_a, z_b = self.embed(batch["set_a"], training), self.embed(batch["set_b"], training)
        within = tf.reduce_sum(tf.math.reduce_variance(z_a, 1) + tf.math.reduce_variance(z_b, 1), -1)
        between = tf.reduce_sum(tf.square(tf.reduce_mean(z_a, 1) - tf.reduce_mean(z_b, 1)), -1)
        # One term per pair of sets, averaged to the float32 scalar the contract asks for: two
        # replicas then train as one device.
        loss = tf.reduce_mean((within + self.epsilon) / (within + between + self.epsilon))
        return {"loss": loss, "within": tf.reduce_mean(within), "between": tf.reduce_mean(between)}


def build(config, image_shape):
    # models.build(architecture, input_shape=image_shape, embedding_dim=...) is what build_encoder calls.
    model = LabModel(build_encoder(config, image_shape), config.method.epsilon)
    model.compile_for(config.trainer, optimizers.run_adam(config.trainer))
    return model


METHOD = Method(
    name="lab",
    config=LabConfig,
    build=build,
    presets=PRESETS,
    # A few steps on built-in data: what abc_tf check and the test suite train.
    smallest_run=PRESETS["mnist_lab"].replace(
        name="lab_smoke", source="procedural", steps=4, log_every=2, set_size=8, pairs_per_step=2
    ),
    quick_run=PRESETS["mnist_lab"],
    supervision="which images show one digit: the sets",
)

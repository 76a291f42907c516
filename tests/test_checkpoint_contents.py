"""abc_tf.runs.checkpoint_contents: a model with two networks and two optimizers saves and resumes
whole, once it says which variables each optimizer updates."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from abc_tf.runs import checkpoint_contents, checkpoint_files, checkpoints


class TwoNetworks(keras.Model):
    """A GAN-shaped model: two networks, each updated by its own Adam (the discriminator's on a
    decaying learning rate, twice per step), following the rules of abc_tf.runs.checkpoint_contents."""

    def __init__(self, seed: int, build: bool = True):
        super().__init__()
        keras.utils.set_random_seed(seed)
        self.generator = keras.Sequential(
            [keras.Input((4,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(4)]
        )
        self.discriminator = keras.Sequential(
            [keras.Input((4,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)]
        )
        self.g_optimizer = keras.optimizers.Adam(1e-2)
        self.d_optimizer = keras.optimizers.Adam(keras.optimizers.schedules.ExponentialDecay(1e-2, 3, 0.5))
        self.compile(optimizer=self.g_optimizer)  # the one applied once per step: it counts the steps
        if build:
            checkpoint_contents.build_optimizers(self)  # as abc_tf.methods.base.MethodModel does at fit

    def optimizer_variables(self, optimizer):
        return (self.generator if optimizer is self.g_optimizer else self.discriminator).trainable_variables

    def call(self, x):
        return self.discriminator(self.generator(x))

    def train_step(self, real):
        for _ in range(2):
            with tf.GradientTape() as tape:
                fake = self.generator(real * 0.5)
                d_loss = tf.reduce_mean((self.discriminator(real) - 1) ** 2 + self.discriminator(fake) ** 2)
            variables = self.discriminator.trainable_variables
            self.d_optimizer.apply(tape.gradient(d_loss, variables), variables)
        with tf.GradientTape() as tape:
            g_loss = tf.reduce_mean((self.discriminator(self.generator(real * 0.5)) - 1) ** 2)
        variables = self.generator.trainable_variables
        self.g_optimizer.apply(tape.gradient(g_loss, variables), variables)
        return {"loss": g_loss}


def full_state(model: TwoNetworks) -> list[np.ndarray]:
    variables = (
        model.generator.weights
        + model.discriminator.weights
        + model.g_optimizer.variables
        + model.d_optimizer.variables
    )
    return [keras.ops.convert_to_numpy(v) for v in variables]


@pytest.mark.slow
def test_a_model_with_two_networks_and_two_optimizers_resumes_as_if_never_stopped(tmp_path):
    data = np.random.default_rng(0).normal(size=(40, 4)).astype("float32")
    uninterrupted = TwoNetworks(seed=0)
    uninterrupted.fit(data, batch_size=8, shuffle=False, verbose=0)

    first = TwoNetworks(seed=0)
    first.fit(data[:24], batch_size=8, shuffle=False, verbose=0)
    checkpoints.save(first, str(tmp_path), step=3, keep=2)
    names = [
        name for name, _ in tf.train.list_variables(checkpoint_files.list_checkpoints(str(tmp_path))[-1][1])
    ]
    assert any(name.startswith("optimizers/d_optimizer/") for name in names)
    assert any(name.startswith("optimizers/g_optimizer/") for name in names)

    resumed = TwoNetworks(seed=1)  # other initial weights: all of them must come from the checkpoint
    assert checkpoints.restore(resumed, str(tmp_path)) == 3
    for mine, theirs in zip(full_state(resumed), full_state(first)):
        np.testing.assert_array_equal(mine, theirs)
    assert int(resumed.d_optimizer.iterations.numpy()) == 6  # two discriminator updates per step
    resumed.fit(data[24:], batch_size=8, shuffle=False, verbose=0)

    assert (
        int(resumed.g_optimizer.iterations.numpy()) == 5 and int(resumed.d_optimizer.iterations.numpy()) == 10
    )
    assert float(resumed.d_optimizer.learning_rate.numpy()) == float(
        uninterrupted.d_optimizer.learning_rate.numpy()
    )
    for mine, theirs in zip(full_state(resumed), full_state(uninterrupted)):
        np.testing.assert_array_equal(mine, theirs)


class TwoNetworksWithoutOwners(TwoNetworks):
    optimizer_variables = None


def test_a_model_with_two_optimizers_must_say_which_variables_each_updates(tmp_path):
    model = TwoNetworks(seed=0)
    model.fit(np.ones((8, 4), "float32"), batch_size=8, verbose=0)
    checkpoints.save(model, str(tmp_path), step=1, keep=2)
    with pytest.raises(
        ValueError, match="has 2 optimizers \\(d_optimizer, g_optimizer\\) and no optimizer_variables"
    ):
        checkpoints.restore(TwoNetworksWithoutOwners(seed=1, build=False), str(tmp_path))


def test_optimizer_state_that_does_not_fit_is_refused_not_left_half_restored(tmp_path):
    model = TwoNetworks(seed=0)
    model.fit(np.ones((8, 4), "float32"), batch_size=8, verbose=0)
    checkpoints.save(model, str(tmp_path), step=1, keep=2)
    # Built as Keras's fit builds compile's optimizer, on every trainable variable: more slots
    # than the checkpoint holds.
    fresh = TwoNetworks(seed=1, build=False)
    fresh.g_optimizer.build(fresh.trainable_variables)
    fresh.d_optimizer.build(fresh.discriminator.trainable_variables)
    with pytest.raises(ValueError, match="ckpt-1 does not fit the model .*optimizer_variables"):
        checkpoints.restore(fresh, str(tmp_path))
    # Fewer: the discriminator's optimizer built on nothing, its slots in the checkpoint would have
    # nowhere to go.
    fresh = TwoNetworks(seed=1, build=False)
    fresh.g_optimizer.build(fresh.generator.trainable_variables)
    fresh.d_optimizer.build([])
    with pytest.raises(ValueError, match="ckpt-1 does not fit the model"):
        checkpoints.restore(fresh, str(tmp_path))

"""AbcModel: training lowers the loss on grouped data, save/load round trip, heads, compilation."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import models
import toy_family
from abc_tf import losses
from abc_tf.methods.abc.model import AbcModel

SET_SIZE = 12


pytestmark = pytest.mark.slow


def grouped_batches(pairs: int, seed: int, views: bool = False, labels: bool = False) -> tf.data.Dataset:
    return toy_family.batches(pairs, SET_SIZE, seed, views=views, labels=labels)


def compiled_model(**kwargs) -> AbcModel:
    keras.utils.set_random_seed(0)
    # tau 0.1: the untrained S4 embeddings of the toy images are tightly bunched, and a
    # length scale near their spread lets the loss fall within a few dozen steps.
    model = AbcModel(models.build("s4"), similarity="l2sq", temperature=0.1, **kwargs)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    return model


def test_training_lowers_the_loss_on_grouped_data():
    model = compiled_model()
    dataset = grouped_batches(pairs=2, seed=0)
    history = model.fit(dataset, epochs=4, steps_per_epoch=10, verbose=0).history
    assert set(history) == {"loss", "abc_loss", "cycle_accuracy"}
    # Chance level is 2 ln(12) = 4.97 with cycle accuracy 1/12.
    assert history["loss"][0] > history["loss"][-1] + 0.5
    assert history["cycle_accuracy"][-1] > history["cycle_accuracy"][0]
    evaluation = model.evaluate(dataset, steps=3, return_dict=True, verbose=0)
    assert evaluation["loss"] < 2 * np.log(SET_SIZE)


def test_one_encoder_call_embeds_every_set():
    calls = []
    encoder = models.build("s4")
    original_call = encoder.call

    def counting_call(*args, **kwargs):
        calls.append(args[0].shape)
        return original_call(*args, **kwargs)

    encoder.call = counting_call
    model = AbcModel(encoder)
    batch = next(iter(grouped_batches(pairs=3, seed=3, views=True)))
    embedded = model.embed_sets(batch)
    assert len(calls) == 1 and calls[0][0] == 4 * 3 * SET_SIZE
    assert {key: tuple(value.shape) for key, value in embedded.items()} == {
        key: (3, SET_SIZE, 8) for key in ("set_a", "set_b", "set_a_view2", "set_b_view2")
    }


def test_uint8_and_float_images_embed_the_same():
    model = AbcModel(models.build("s4"))
    images = np.random.default_rng(4).integers(0, 256, size=(5, 28, 28, 1)).astype(np.uint8)
    # k / 255 divided in float32, or in float64 and rounded to float32, is one float32 (a byte's
    # repeating binary expansion never sits on a rounding tie): the same inputs, so equal outputs.
    np.testing.assert_allclose(
        model(tf.constant(images)).numpy(),
        model(tf.constant(images / 255.0, tf.float32)).numpy(),
        rtol=1e-5,
        atol=1e-6,
    )


def test_double_augmentation_and_compiled_execution():
    model = AbcModel(models.build("s4"))
    model.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=True, steps_per_execution=3)
    history = model.fit(
        grouped_batches(pairs=2, seed=5, views=True), epochs=1, steps_per_epoch=6, verbose=0
    ).history
    assert np.isfinite(history["loss"][0])
    assert int(model.optimizer.iterations.numpy()) == 6


def test_head_is_trained_jointly_and_logged():
    head = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16)])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model = compiled_model(head=head, head_loss=loss_fn, head_weight=0.5)
    history = model.fit(
        grouped_batches(pairs=2, seed=7, labels=True), epochs=2, steps_per_epoch=8, verbose=0
    ).history
    assert set(history) == {"loss", "abc_loss", "cycle_accuracy", "head_loss"}
    assert history["head_loss"][-1] < history["head_loss"][0]
    # Running means over 8 steps of losses of one sign, kept apart and summed after: about 30
    # float32 roundings, rounding_rtol(30) = 7e-6.
    np.testing.assert_allclose(
        history["loss"][0], history["abc_loss"][0] + 0.5 * history["head_loss"][0], rtol=1e-4
    )


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="Unknown similarity 'dot'"):
        AbcModel(models.build("s4"), similarity="dot")
    with pytest.raises(ValueError, match="Unknown loss_type"):
        AbcModel(models.build("s4"), loss_type="triplet")
    with pytest.raises(ValueError, match="head but no head_loss"):
        AbcModel(models.build("s4"), head=keras.layers.Dense(2))


def test_abc_on_an_augmentation_baseline_batch_takes_the_second_view_as_set_b():
    model = AbcModel(models.build("s4"))
    batch = next(iter(grouped_batches(pairs=2, seed=5, views=True)))
    baseline = {"set_a": batch["set_a"], "set_a_view2": batch["set_a_view2"]}
    embedded = model.embed_sets(baseline)
    expected, _ = losses.abc_loss(embedded["set_a"], embedded["set_a_view2"])
    # The same embeddings through the same loss: equal.
    np.testing.assert_allclose(
        model.compute_terms(baseline, 0, training=False)["abc_loss"].numpy(), expected.numpy(), rtol=1e-5
    )

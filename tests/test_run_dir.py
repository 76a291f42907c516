"""A run directory as evaluators read it (abc_tf.runs.run_dir): ``load_run`` and its errors,
``TrainedRun.network`` on demand, ``embed`` in batches, and the ``seed_<k>`` runs of ``--seeds N``."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from abc_tf.runs import experiments
from abc_tf.runs.run_dir import embed, load_run, network_file, seed_run_dirs, traced_call
from tolerance_helpers import rounding_rtol

CONFIG = experiments.config_for(name="small", data="mnist", source="procedural", embedding_dim=4)


def small_encoder(input_shape=(6, 6, 1)) -> keras.Model:
    return keras.Sequential([keras.Input(input_shape), keras.layers.Flatten(), keras.layers.Dense(4)])


def write_run(run_dir, encoder: keras.Model | None = None) -> keras.Model:
    """config.json and encoder.keras, as a finished run leaves them."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(CONFIG.to_json())
    encoder = encoder or small_encoder()
    encoder.save(network_file(str(run_dir), "encoder"))
    return encoder


def test_load_run_reads_the_config_and_the_encoder_and_other_networks_on_demand(tmp_path):
    encoder = write_run(tmp_path / "run")
    run = load_run(str(tmp_path / "run"))
    assert run.run_dir == str(tmp_path / "run") and run.config == CONFIG
    images = np.random.default_rng(0).uniform(size=(3, 6, 6, 1)).astype(np.float32)
    np.testing.assert_allclose(
        run.encoder(images).numpy(), encoder(images).numpy(), rtol=1e-6
    )  # the same weights and ops: equal
    assert run.network("head") is None  # the run has no head
    head = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    head.save(network_file(str(tmp_path / "run"), "head"))
    np.testing.assert_allclose(
        run.network("head")(np.ones((1, 4))).numpy(), head(np.ones((1, 4))).numpy(), rtol=1e-6
    )  # equal
    # --config replaces run_dir/config.json.
    other = tmp_path / "other.json"
    other.write_text(CONFIG.replace(seed=7).to_json())
    assert load_run(str(tmp_path / "run"), str(other)).config.trainer.seed == 7


def test_load_run_errors_name_the_missing_or_damaged_file(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(
        ValueError, match=f"{run_dir} is not a finished training run: {run_dir / 'config.json'} is missing"
    ):
        load_run(str(run_dir))
    (run_dir / "config.json").write_text(CONFIG.to_json())
    with pytest.raises(
        ValueError, match=f"{run_dir} is not a finished training run: {run_dir / 'encoder.keras'} is missing"
    ):
        load_run(str(run_dir))
    (run_dir / "encoder.keras").write_bytes(b"PK\x03\x04 not a whole archive")
    with pytest.raises(ValueError) as error:
        load_run(str(run_dir))
    assert str(error.value).startswith(f"{run_dir / 'encoder.keras'} cannot be read (") and "\n" not in str(
        error.value
    )
    (run_dir / "config.json").write_text('{"name": "shapes3d", "steps": 6')  # cut off by a full disk
    with pytest.raises(ValueError, match="is not a readable run config"):
        load_run(str(run_dir))


def test_an_empty_head_file_gives_one_line_naming_it(tmp_path):
    # What a kill while exporting the head leaves: a finished encoder beside a 0-byte head.keras.
    write_run(tmp_path)
    head_path = tmp_path / "head.keras"
    head_path.write_bytes(b"")
    with pytest.raises(ValueError) as error:
        load_run(str(tmp_path)).network("head")
    assert str(error.value).startswith(f"{head_path} is empty") and "\n" not in str(error.value)


def test_seed_run_dirs_are_the_seed_folders_with_a_config_in_seed_order(tmp_path):
    assert seed_run_dirs(str(tmp_path / "missing")) == []
    for k in (10, 2, 0):
        (tmp_path / f"seed_{k}").mkdir()
        (tmp_path / f"seed_{k}" / "config.json").write_text("{}")
    (tmp_path / "seed_3").mkdir()  # no config.json: not a run
    (tmp_path / "seed_x").mkdir()
    (tmp_path / "seed_x" / "config.json").write_text("{}")
    (tmp_path / "seed_4").write_text("a file")
    assert seed_run_dirs(str(tmp_path)) == [str(tmp_path / f"seed_{k}") for k in (0, 2, 10)]


def test_embed_takes_uint8_or_float_images_in_batches_and_dict_outputs():
    encoder = small_encoder()
    images = np.random.default_rng(1).integers(0, 256, (7, 6, 6, 1), dtype=np.uint8)
    whole = encoder(images.astype(np.float32) / 255.0).numpy()
    # Another batch size takes another matmul path: the 36 products of pixels in [0, 1] summed in
    # another order (and x / 255 rounded once more from float64), within rounding_rtol(37) of the
    # kernel's |weights| summed.
    tolerance = rounding_rtol(36 + 1) * np.abs(encoder.get_weights()[0]).sum(axis=0).max()
    for batch_size in (1, 3, 256):
        embedded = embed(encoder, images, batch_size=batch_size)
        assert embedded.dtype == np.float32 and embedded.shape == (7, 4)
        np.testing.assert_allclose(embedded, whole, rtol=0, atol=tolerance)
    np.testing.assert_allclose(embed(encoder, images / 255.0), whole, rtol=0, atol=tolerance)
    # Any callable on float images in [0, 1] (a SavedModel signature); dict outputs stay dicts.
    outputs = embed(
        lambda batch: {"mean": np.asarray(batch).mean(axis=(1, 2, 3)), "first": batch[:, 0, 0]}, images, 3
    )
    assert (
        set(outputs) == {"mean", "first"}
        and outputs["mean"].shape == (7,)
        and outputs["first"].shape == (7, 1)
    )
    # A float32 mean of 36 values of one sign against float64: rounding_rtol(36 + 2) = 9e-6.
    np.testing.assert_allclose(outputs["mean"], images.mean(axis=(1, 2, 3)) / 255.0, rtol=1e-5)
    for bad in (np.zeros((0, 6, 6, 1)), np.zeros((6, 6, 1))):
        with pytest.raises(ValueError, match="Expected a non-empty batch of images \\[N, H, W, C\\]"):
            embed(encoder, bad)


def test_embed_calls_a_keras_model_through_one_traced_function_equal_to_its_eager_call():
    inputs = keras.Input((8, 8, 3))
    features = keras.layers.Conv2D(4, 3, activation="relu")(inputs)
    features = keras.layers.BatchNormalization()(features)
    outputs = {"code": keras.layers.Dense(2)(keras.layers.Flatten()(features))}
    encoder = keras.Model(inputs, outputs)
    images = np.random.default_rng(2).integers(0, 256, (10, 8, 8, 3), dtype=np.uint8)
    eager = encoder(images.astype(np.float32) / 255.0, training=False)["code"].numpy()
    # Grappler may fuse the convolution, bias and ReLU in the graph: the same products summed in
    # another order, well within 1e-5 of the largest |code|.
    tolerance = 1e-5 * max(1.0, float(np.abs(eager).max()))
    for batch_size in (3, 4, 10):
        np.testing.assert_allclose(
            embed(encoder, images, batch_size=batch_size)["code"], eager, rtol=0, atol=tolerance
        )
    traced = traced_call(encoder)
    assert traced is traced_call(encoder)  # one function per model, kept between calls
    assert traced.experimental_get_tracing_count() <= 2  # batch sizes generalise after one retrace

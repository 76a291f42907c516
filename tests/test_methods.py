"""abc_tf.methods: the registry, the shared encoder builder, and a method the trainer does not
know (tests/toy_method.py: two networks, two optimizers) trained, killed, resumed and
evaluated through the same code as ABC."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import time

import keras
import numpy as np
import pytest

import models
from abc_tf import methods
from abc_tf.methods.base import build_encoder
from abc_tf.runs import checkpoints, training
from process_helpers import run_code, start_code
from toy_family import CONFIG

TOY = CONFIG.replace(method="two_network")


@pytest.fixture(autouse=True)
def registered(monkeypatch, toy_family):
    monkeypatch.setitem(methods.METHODS, "two_network", "toy_method:TWO_NETWORK")


def test_unknown_methods_are_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"Unknown method 'gan'; choose one of: abc, (\w+, )*contrastive, "):
        training.check_config(TOY.replace(method="gan"))
    assert methods.get_method("abc").batch_format == "sets"


def test_abc_with_the_augmentation_baseline_says_so():
    from abc_tf.config import get_preset

    abc = methods.get_method("abc")
    assert abc.label_for(get_preset("mnist")) == "abc" and abc.supervision_for(get_preset("mnist")).startswith("set membership")
    baseline = get_preset("mnist_abc_augmentation")
    assert abc.label_for(baseline) == "abc (augmentation baseline)"
    assert abc.supervision_for(baseline).startswith("none beyond the augmentations")


def test_contrastive_needs_two_views():
    with pytest.raises(ValueError, match="--method=contrastive trains on two views"):
        training.check_config(TOY.replace(method="contrastive"))
    training.check_config(TOY.replace(method="contrastive", double_augmentation=True))


def test_build_encoder_passes_weights_only_to_declared_builders_and_keeps_their_errors(monkeypatch):
    def broken(embedding_dim, input_shape, weights=None):
        raise TypeError("a bug inside the builder")

    def pretrained(embedding_dim, input_shape, weights=None):
        model = models.build("s4", embedding_dim=embedding_dim, input_shape=input_shape)
        model.weights_given = weights
        return model

    monkeypatch.setitem(models.registry._BUILDERS, "broken", broken)
    monkeypatch.setitem(models.registry._BUILDERS, "pretrained", pretrained)
    monkeypatch.setattr(models.registry, "_PRETRAINED", models.registry._PRETRAINED | {"broken", "pretrained"})
    shape = (28, 28, 1)
    # A TypeError raised by a builder is a bug and surfaces as one, with or without weights.
    for weights in ("", "imagenet"):
        with pytest.raises(TypeError, match="a bug inside the builder"):
            build_encoder(TOY.replace(model="broken", backbone_weights=weights), shape)
    assert build_encoder(TOY.replace(model="pretrained", backbone_weights="w.h5"), shape).weights_given == "w.h5"
    # Models without a declared backbone refuse the flag before building anything.
    with pytest.raises(ValueError, match="--backbone_weights: model 's4' has no pretrained backbone \\(.*s5"):
        build_encoder(TOY.replace(backbone_weights="imagenet"), shape)
    assert models.takes_pretrained_weights("s5") and not models.takes_pretrained_weights("s5_small")


def test_keras_keeps_the_private_hook_that_method_models_override():
    # MethodModel._maybe_symbolic_build skips Keras's reduction of a dict batch across
    # MultiWorkerMirroredStrategy replicas (keras-team/keras#20329); written for Keras 3.10-3.15.
    # If Keras renames the hook, this fails instead of multi-worker training silently breaking.
    assert hasattr(keras.Model, "_maybe_symbolic_build")


def test_a_two_network_method_trains_and_keeps_both_networks(tmp_path):
    run_dir = str(tmp_path / "run")
    result = training.train(TOY, run_dir, verbose=0)
    assert result.final_step == 40 and set(result.networks) == {"encoder", "decoder"}
    assert {"loss", "abc_loss", "reconstruction_loss"} <= set(result.history)
    assert result.history["reconstruction_loss"][-1] < result.history["reconstruction_loss"][0]
    for name in ("encoder", "decoder"):
        assert os.path.isfile(os.path.join(run_dir, f"{name}.keras"))
    # Both optimizers are in the checkpoint, at the same step.
    model = training.build_model(TOY)
    assert checkpoints.restore(model, run_dir) == 40
    assert int(model.decoder_optimizer.iterations.numpy()) == 40
    for restored, trained in zip(model.decoder.get_weights(), result.networks["decoder"].get_weights()):
        np.testing.assert_allclose(restored, trained)


KILLABLE_RUN = textwrap.dedent(
    """
    import sys
    from abc_tf import data, methods
    from abc_tf.config import ExperimentConfig
    from abc_tf.runs import training
    data.DATA_FAMILIES["toy"] = "toy_family"
    methods.METHODS["two_network"] = "toy_method:TWO_NETWORK"
    training.train(ExperimentConfig.from_json(open(sys.argv[1]).read()), sys.argv[2], verbose=0)
    """
)


def test_a_killed_two_network_run_resumes_at_the_same_step(tmp_path):
    config = TOY.replace(steps=400, log_every=20)
    config_path = tmp_path / "config.json"
    config_path.write_text(config.to_json())
    run_dir = tmp_path / "run"
    process = start_code(KILLABLE_RUN, str(config_path), str(run_dir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None and len(checkpoints.list_checkpoints(str(run_dir))) < 2:
        time.sleep(0.05)
    assert process.poll() is None, process.stdout.read().decode()[-2000:]
    process.send_signal(signal.SIGKILL)
    process.wait()
    killed_at = checkpoints.list_checkpoints(str(run_dir))[-1][0]
    assert 0 < killed_at < 400

    model = training.build_model(config)
    assert checkpoints.restore(model, str(run_dir)) == killed_at
    assert int(model.decoder_optimizer.iterations.numpy()) == killed_at
    result = training.train(config, str(run_dir), verbose=0)
    assert result.final_step == 400 and len(result.history["loss"]) * 20 == 400 - killed_at


def test_any_method_s_run_is_evaluated_by_evaluate_py_with_its_family_s_evaluator(tmp_path):
    config = TOY.replace(data="shapes3d", model="s3", embedding_dim=4, set_size=8, pairs_per_step=1, steps=4,
                         log_every=2, inactive_factors="wall_hue")
    run_dir = str(tmp_path / "run")
    training.train(config, run_dir, verbose=0)
    # evaluate.py as a user runs it, in a process where the method is registered as a user would.
    script = textwrap.dedent("""
        import sys
        from absl import app
        from abc_tf import methods
        methods.METHODS["two_network"] = "toy_method:TWO_NETWORK"
        import evaluate
        app.run(evaluate.main)
    """)
    flags = [f"--run_dir={run_dir}", "--num_images=48", "--mine_steps=10", "--mine_batch_size=16",
             "--mine_eval_samples=256", "--probe_epochs=0", "--disentanglement=none"]
    completed = run_code(script, *flags)
    assert completed.returncode == 0, completed.stderr[-2000:]
    metrics = json.load(open(os.path.join(run_dir, "metrics.json")))
    assert metrics["inactive"] == ["wall_hue"] and len(metrics["mine"]) == 6
    assert metrics["config"]["method"] == "two_network"

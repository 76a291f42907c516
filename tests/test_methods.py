"""abc_tf.methods: the registry, the shared encoder builder, and a method the trainer does not
know (tests/toy_method.py: two networks, two optimizers) trained, killed, resumed and
evaluated through the same code as ABC; and every method found, on its package's smallest run
(tests/method_helpers.py): evaluated with its family's task and its own measures, and ready for
GPUs, checked on the CPU: its step compiled with XLA, trained under mixed_float16 with every
loss scaled, and trained on two replicas as on one device. The evaluation and the replicas are
the contract's checks (abc_tf.evaluation.contract), which ``abc_tf check`` runs on a plug-in."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap

import keras
import numpy as np
import pytest

import models
from abc_tf import methods
from abc_tf.cli import curves
from abc_tf.runs import checks
from abc_tf.runs import experiments
from abc_tf.data.pose import procedural as pose_procedural
from abc_tf.methods.base import build_encoder
from abc_tf.evaluation import contract
from abc_tf.evaluation.contract import MIRRORED_RTOL, fit_losses
from abc_tf.runs import checkpoints, precision, training
from method_helpers import tiny_configs
from evaluate_helpers import evaluate_each
from pose_data_helpers import SMALL
from process_helpers import start_code, wait_for_marker
from toy_family import CONFIG
from toy_method import TwoNetworkConfig

TOY = CONFIG.replace(method=TwoNetworkConfig(name="two_network", temperature=CONFIG.method.temperature))
# Every method found (abc_tf/methods/<name>/ and installed plug-ins), and the toy one.
READY_METHODS = (*sorted(methods.METHODS), "two_network")


pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def registered(monkeypatch, toy_family):
    monkeypatch.setitem(methods.METHODS, "two_network", "toy_method:TWO_NETWORK")
    # LORD's tiny run reads the built-in pose bank: rendered at its test size, not a real run's 4,000 views.
    monkeypatch.setattr(pose_procedural, "PROCEDURAL", SMALL)


def test_unknown_methods_are_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"Unknown method 'gan'; choose one of: abc, (\w+, )*contrastive, "):
        checks.check_config(experiments.choose(TOY, method="gan"))
    assert experiments.method_config_class("abc").batch_format == "sets"


def test_abc_with_the_augmentation_baseline_says_so():
    from abc_tf.runs.experiments import get_preset

    abc = methods.get_method("abc")
    assert abc.label_for(get_preset("mnist")) == "abc" and abc.supervision_for(
        get_preset("mnist")
    ).startswith("set membership")
    baseline = get_preset("mnist_abc_augmentation")
    assert abc.label_for(baseline) == "abc (augmentation baseline)"
    assert abc.supervision_for(baseline).startswith("none beyond the augmentations")


def test_contrastive_needs_two_views():
    with pytest.raises(ValueError, match="--method=contrastive trains on two views"):
        checks.check_config(experiments.choose(TOY, method="contrastive"))
    checks.check_config(experiments.choose(TOY, method="contrastive", double_augmentation=True))


def test_build_encoder_passes_weights_only_to_declared_builders_and_keeps_their_errors(monkeypatch):
    def broken(embedding_dim, input_shape, weights=None):
        raise TypeError("a bug inside the builder")

    def pretrained(embedding_dim, input_shape, weights=None):
        model = models.build("s4", embedding_dim=embedding_dim, input_shape=input_shape)
        model.weights_given = weights
        return model

    monkeypatch.setitem(models.architectures._BUILDERS, "broken", broken)
    monkeypatch.setitem(models.architectures._BUILDERS, "pretrained", pretrained)
    monkeypatch.setattr(
        models.architectures, "_PRETRAINED", models.architectures._PRETRAINED | {"broken", "pretrained"}
    )
    shape = (28, 28, 1)
    # A TypeError raised by a builder is a bug and surfaces as one, with or without weights.
    for weights in ("", "imagenet"):
        with pytest.raises(TypeError, match="a bug inside the builder"):
            build_encoder(experiments.choose(TOY, encoder="broken", backbone_weights=weights), shape)
    assert (
        build_encoder(
            experiments.choose(TOY, encoder="pretrained", backbone_weights="w.h5"), shape
        ).weights_given
        == "w.h5"
    )
    # Models without a declared backbone refuse the flag before building anything.
    with pytest.raises(
        ValueError, match="--encoder.backbone_weights: model 's4' has no pretrained backbone \\(.*s5"
    ):
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


# After its second checkpoint (training.train's own callbacks run before those it is given), the
# run writes the marker file sys.argv[3] and waits to be killed (process_helpers.hold).
KILLABLE_RUN = textwrap.dedent(
    """
    import sys
    import keras
    from abc_tf import data, methods
    from abc_tf.runs import config_files, training
    from process_helpers import hold
    data.DATA_FAMILIES["toy"] = "toy_family:FAMILY"
    methods.METHODS["two_network"] = "toy_method:TWO_NETWORK"
    ready = keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: epoch == 1 and hold(sys.argv[3]))
    config = config_files.from_json(open(sys.argv[1]).read())
    training.train(config, sys.argv[2], verbose=0, callbacks=[ready])
    """
)


def test_a_killed_two_network_run_resumes_at_the_same_step(tmp_path):
    config = TOY.replace(steps=80, log_every=20)
    config_path = tmp_path / "config.json"
    config_path.write_text(config.to_json())
    run_dir, marker = tmp_path / "run", tmp_path / "second_checkpoint"
    process = start_code(
        KILLABLE_RUN,
        str(config_path),
        str(run_dir),
        str(marker),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    wait_for_marker(process, marker)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    assert [step for step, _ in checkpoints.list_checkpoints(str(run_dir))] == [20, 40]
    killed_at = 40

    model = training.build_model(config)
    assert checkpoints.restore(model, str(run_dir)) == killed_at
    assert int(model.decoder_optimizer.iterations.numpy()) == killed_at
    result = training.train(config, str(run_dir), verbose=0)
    assert result.final_step == 80 and len(result.history["loss"]) * 20 == 80 - killed_at


def test_any_method_s_run_is_evaluated_by_evaluate_py_with_its_family_s_evaluator(tmp_path):
    config = experiments.choose(
        TOY,
        data="shapes3d",
        encoder="s3",
        embedding_dim=4,
        set_size=8,
        pairs_per_step=1,
        steps=4,
        log_every=2,
        inactive_factors="wall_hue",
    )
    run_dir = str(tmp_path / "run")
    training.train(config, run_dir, verbose=0)
    # evaluate.py's command line, with the method registered as a user would (the fixture
    # ``registered``): the run, then its learning curve (each checkpoint, steps 2 and 4, rebuilt
    # from the method's model and evaluated alike).
    flags = [
        f"--run_dir={run_dir}",
        "--num_images=48",
        "--mine_steps=10",
        "--mine_batch_size=16",
        "--mine_eval_samples=256",
        "--probe_epochs=0",
        "--disentanglement=none",
    ]
    curve_dir = str(tmp_path / "curve")
    evaluated = evaluate_each([(tmp_path, flags)])[0]
    curve_code = curves.command(
        ["curves.py", *flags, "--checkpoints=all", f"--output_dir={curve_dir}", "--probe_epochs=1"]
    )
    assert evaluated["code"] == 0, evaluated["stderr"][-2000:]
    metrics = json.load(open(os.path.join(run_dir, "metrics.json")))
    assert metrics["inactive"] == ["wall_hue"] and len(metrics["mine"]) == 6
    assert metrics["config"]["method"]["name"] == "two_network"
    assert curve_code == 0
    curve = json.load(open(os.path.join(curve_dir, "curve.json")))
    assert curve["steps"] == [2, 4] and len(curve["measures"]["probe shape"]) == 2
    for step in (2, 4):
        step_metrics = json.load(open(os.path.join(curve_dir, "checkpoints", f"step_{step}", "metrics.json")))
        assert step_metrics["config"]["method"]["name"] == "two_network" and len(step_metrics["mine"]) == 6
    assert os.path.isfile(os.path.join(curve_dir, "curve.png"))


# ----------------------------------------------------------------------------- GPU readiness, on the CPU
# No GPU with TensorFlow is at hand to run the suite: these show that every method's step runs
# as GPUs and TPUs run it (compiled by XLA; in float16 with loss scaling; over replicas).


@pytest.fixture(scope="module")
def configs() -> dict:
    return tiny_configs()


def test_the_readiness_tests_cover_every_method(configs):
    assert set(configs) == set(methods.METHODS) | {"two_network"}


def test_a_method_package_without_a_smallest_run_is_named(tmp_path, monkeypatch):
    package = tmp_path / "no_smoke_method"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text(
        "from abc_tf.methods.abc import AbcConfig\n"
        "from abc_tf.methods.base import Method\n"
        "METHOD = Method(name='no_smoke', config=AbcConfig, build=None)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(methods.METHODS, "no_smoke", ("no_smoke_method.model:METHOD", "no_smoke_method"))
    with pytest.raises(ValueError, match="The method 'no_smoke' declares no smallest_run"):
        experiments.smoke_configs()


@pytest.mark.parametrize("name", READY_METHODS)
def test_each_method_s_step_compiles_with_xla_and_trains(configs, name):
    # Inside the step: no op without an XLA kernel (the data pipeline's NumPy draws stay outside it).
    model, losses = fit_losses(configs[name].replace(jit_compile=True), steps=2)
    assert model.jit_compile is True
    assert len(losses) == 2 and np.all(np.isfinite(losses)), losses


@pytest.mark.parametrize("name", READY_METHODS)
def test_each_method_trains_under_mixed_float16_with_every_loss_scaled(configs, name, monkeypatch):
    monkeypatch.setattr(precision, "this_host", lambda: precision.Host(gpu=True))  # what a GPU gets
    scaled_by = []
    scale_loss = keras.optimizers.LossScaleOptimizer.scale_loss

    def recorded(optimizer, loss):
        scaled_by.append(optimizer)
        return scale_loss(optimizer, loss)

    monkeypatch.setattr(keras.optimizers.LossScaleOptimizer, "scale_loss", recorded)
    # Run op by op: the same float16 ops and loss scaling as the traced step, without the
    # seconds a trace costs (the compiled step is the XLA test's above).
    model, losses = fit_losses(configs[name].replace(mixed_precision=True), steps=2, eagerly=True)
    assert model.networks()["encoder"].dtype_policy.name == "mixed_float16"
    # Every optimizer scales its loss (float16 gradients would underflow unscaled).
    for optimizer in model.optimizers():
        assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        assert any(optimizer is seen for seen in scaled_by), optimizer.name
    assert len(losses) == 2 and np.all(np.isfinite(losses)), losses


@pytest.mark.parametrize("name", READY_METHODS)
def test_each_method_s_smoke_run_is_evaluated_by_evaluate_py(configs, name, tmp_path, monkeypatch):
    # The contract's check (abc_tf check): the run a user trains, then evaluate's measures on it,
    # its family's task and the method's own (a few images of each set, enough to run every
    # measure; evaluate.py's command line on a method's run: the toy method's test above). The
    # Elastic-InfoGAN digit classifier is cached under HOME: a temporary one here.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr("abc_tf.evaluation.tasks.digit_clusters.DEFAULT_CACHE", str(tmp_path / "cache"))
    contract.evaluated(name, str(tmp_path), configs[name])
    metrics = json.load(open(os.path.join(tmp_path, "evaluated", "metrics.json")))
    # The method's own measures ran and were kept (a method without any has none).
    assert ("method" in metrics) == bool(methods.get_method(name).measures), sorted(metrics)


@pytest.mark.parametrize("name", READY_METHODS)
def test_each_method_trains_on_two_replicas_as_on_one_device(configs, name, tmp_path, two_replicas):
    # The two logical CPU devices of tests/conftest.py. One device runs the step eagerly: only
    # the replicas' step is traced (seconds a method).
    mirrored = two_replicas
    assert mirrored.num_replicas_in_sync == 2
    one, two = contract.two_replicas(name, str(tmp_path), configs[name], mirrored)  # the contract's check
    assert two == pytest.approx(one, rel=MIRRORED_RTOL)
    # The replicas split the batch each method reads (its batch format's), and a batch they cannot
    # split is refused naming its flag, before the model is built.
    field = configs[name].batch.global_batch_field
    assert (
        field
        == {"sets": "pairs_per_step", "pairs": "pairs_per_step", "images": "batch_size"}[
            configs[name].method.batch_format
        ]
    )
    with pytest.raises(ValueError, match=rf"^--batch.{field}=3 must be a multiple of the 2 replicas"):
        training.prepare(
            configs[name].replace(**{field: 3}), str(tmp_path / "odd"), strategy=mirrored, verbose=0
        )

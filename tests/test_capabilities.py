"""What a method's own measures need of a data family (``Method.measures_need``, the family's
declared ``CAPABILITIES``): train.py says before training which of evaluate.py's measures a run
will not get and why, and evaluate.py skips them, saying so, and writes everything else."""

from __future__ import annotations

import json

import numpy as np
import pytest

from abc_tf import data, methods
from abc_tf.data.family import CAPABILITIES, missing_capabilities
from abc_tf.evaluation.tasks.evaluation_settings import EvaluationSettings
from abc_tf.evaluation.tasks.run_evaluation import evaluate_run
from abc_tf.runs import checks
from abc_tf.runs import experiments, training
from abc_tf.runs.run_dir import TrainedRun

VAE_ON_TOY = "vae's own measures need class_labelled_images (training and test images with class labels), "
VAE_ON_TOY += "which data family 'toy' does not give"


def vae_on_toy():
    return experiments.choose(experiments.get_preset("mnist_vae_quick"), data="toy")


def test_every_declared_need_is_a_capability_and_families_are_read_by_it():
    for name in methods.METHODS:
        assert set(methods.get_method(name).measures_need) <= set(CAPABILITIES), name
    mnist = data.get_family("mnist")
    assert missing_capabilities(mnist, ("class_labelled_images", "known_factors")) == []
    assert missing_capabilities(data.get_family("shapes3d"), ("class_labelled_images",)) == [
        "class_labelled_images (training and test images with class labels)"
    ]
    with pytest.raises(ValueError, match="Unknown capabilities \\['labels'\\]"):
        missing_capabilities(mnist, ("labels",))


def test_the_measures_a_run_will_not_get_are_named_with_the_capability(toy_family):
    assert checks.measures_skipped(vae_on_toy()) == {"method": VAE_ON_TOY}
    assert checks.measures_skipped(experiments.get_preset("mnist_vae_quick")) == {}
    assert (
        checks.measures_skipped(experiments.get_preset("shapes3d_demo")) == {}
    )  # ABC has no measures of its own


def test_check_only_says_which_measures_evaluate_will_skip(toy_family, train_in_process):
    code, err, out = train_in_process("--experiment=mnist_vae_quick", "--data=toy", "--check_only")
    assert code == 0, err
    assert f"evaluate.py will skip the method measures: {VAE_ON_TOY}." in out.splitlines()


def test_evaluate_skips_the_measures_that_cannot_apply_and_writes_the_rest(toy_family, tmp_path, capsys):
    config = vae_on_toy()
    encoder = training.untrained_encoder(config)
    settings = EvaluationSettings(disentanglement="none")
    metrics = evaluate_run(TrainedRun(str(tmp_path), config, encoder), str(tmp_path / "eval"), settings)
    assert metrics["skipped"] == {"method": VAE_ON_TOY} and "method" not in metrics
    assert np.isfinite(metrics["position_1nn"])  # the family's own task ran
    assert json.loads((tmp_path / "eval" / "metrics.json").read_text())["skipped"] == {"method": VAE_ON_TOY}
    assert f"skipped: method measures: {VAE_ON_TOY}." in capsys.readouterr().out

"""train.py: flags map onto the config, and bad flags fail with a clear message before any work."""

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from abc_tf import config as config_lib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_train(*args, cwd):
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "train.py"), *args],
        capture_output=True, text=True, cwd=cwd, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )


@pytest.mark.parametrize(
    "flag,message",
    [
        ("--experiment=shapes4d", "Unknown experiment 'shapes4d'; known experiments:"),
        ("--set_size=0", "set_size must be a positive integer, got 0"),
        ("--embedding_dim=-3", "embedding_dim must be a positive integer, got -3"),
        ("--steps=0", "steps must be a positive integer"),
        ("--similarity=dot", "Unknown similarity 'dot'; choose one of l2sq, l2, l1, linf, cosine"),
        ("--temperature=0", "temperature must be a positive finite number"),
        ("--learning_rate=-1e-3", "learning_rate must be a positive finite number"),
        ("--seeds=0", "--seeds must be a positive integer"),
        ("--keep_checkpoints=0", "keep_checkpoints must be a positive integer, got 0"),
        ("--strategy=gpu", "Unknown strategy 'gpu'; choose one of default, mirrored, multi_worker, tpu"),
        ("--data=faces", "Unknown data family 'faces'; choose one of:"),
        ("--model=s9", "Unknown model 's9'; known models:"),
        ("--backbone_weights=imagenet", "--backbone_weights: model 's3' has no pretrained backbone"),
        ("--strategy=multi_worker", "--strategy=multi_worker needs the TF_CONFIG environment variable"),
        ("--strategy=tpu", "--strategy=tpu found no TPU to connect to"),
    ],
)
def test_bad_flags_fail_before_any_work(tmp_path, flag, message):
    result = run_train(flag, f"--output_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "run").exists()


def test_every_config_field_is_a_flag():
    result = subprocess.run([sys.executable, os.path.join(ROOT, "train.py"), "--helpfull"], capture_output=True, text=True)
    for field in dataclasses.fields(config_lib.ExperimentConfig):
        if field.name != "name":
            assert f"--{field.name}" in result.stdout or f"--[no]{field.name}" in result.stdout


def test_config_json_round_trip_and_unknown_fields():
    config = config_lib.get_preset("shapes3d").replace(seed=4, temperature=0.5)
    assert config_lib.ExperimentConfig.from_json(config.to_json()) == config
    values = json.loads(config.to_json())
    values["colour"] = "red"
    with pytest.raises(ValueError, match="unknown fields \\['colour'\\]"):
        config_lib.ExperimentConfig.from_json(json.dumps(values))


def test_presets_hold_the_paper_settings():
    shapes = config_lib.get_preset("shapes3d")
    assert (shapes.model, shapes.embedding_dim, shapes.set_size, shapes.similarity) == ("s3", 64, 32, "l2sq")
    assert (shapes.temperature, shapes.learning_rate, shapes.steps) == (1.0, 3e-5, 2000)
    mnist = config_lib.get_preset("mnist")
    assert (mnist.model, mnist.embedding_dim, mnist.set_size, mnist.similarity) == ("s4", 8, 64, "l2sq")
    assert (mnist.temperature, mnist.learning_rate, mnist.steps) == (1.0, 1e-4, 500)
    for preset in config_lib.PRESETS.values():
        preset.validate()


def test_length_scale():
    assert config_lib.length_scale("l2sq", 0.25) == 0.5
    assert config_lib.length_scale("l2", 0.25) == 0.25
    # Unsquared distances, like l2: the evaluation noise sigma is tau, not 1.
    assert config_lib.length_scale("l1", 0.25) == 0.25
    assert config_lib.length_scale("linf", 0.25) == 0.25
    assert config_lib.ExperimentConfig(similarity="l1", temperature=0.3).length_scale == 0.3
    assert config_lib.length_scale("cosine", 0.1) == 1.0

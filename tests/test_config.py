"""The experiment config (abc_tf.config): JSON round trip, validation naming the field, the
presets against the paper's settings, and the loss's length scale."""

import json
import re

import pytest

from abc_tf import config as config_lib
from abc_tf import data


def test_config_json_round_trip_and_unknown_fields():
    config = experiments.get_preset("shapes3d").replace(seed=4, temperature=0.5)
    assert config_lib.experiments.from_json(config.to_json()) == config
    values = json.loads(config.to_json())
    values["colour"] = "red"
    with pytest.raises(ValueError, match="unknown fields \\['colour'\\]"):
        config_lib.experiments.from_json(json.dumps(values))


def test_presets_hold_the_paper_settings():
    shapes = experiments.get_preset("shapes3d")
    assert (shapes.model, shapes.embedding_dim, shapes.set_size, shapes.similarity) == ("s3", 64, 32, "l2sq")
    assert (shapes.temperature, shapes.learning_rate, shapes.steps) == (1.0, 3e-5, 2000)
    mnist = experiments.get_preset("mnist")
    assert (mnist.model, mnist.embedding_dim, mnist.set_size, mnist.similarity) == ("s4", 8, 64, "l2sq")
    assert (mnist.temperature, mnist.learning_rate, mnist.steps) == (1.0, 1e-4, 500)
    for preset in experiments.presets().values():
        preset.validate()


def test_length_scale():
    assert config_lib.length_scale("l2sq", 0.25) == 0.5
    assert config_lib.length_scale("l2", 0.25) == 0.25
    # Unsquared distances, like l2: the evaluation noise sigma is tau, not 1.
    assert config_lib.length_scale("l1", 0.25) == 0.25
    assert config_lib.length_scale("linf", 0.25) == 0.25
    assert experiments.config_for(similarity="l1", temperature=0.3).length_scale == 0.3
    assert config_lib.length_scale("cosine", 0.1) == 1.0


def test_regression_presets_hold_table_2_settings():
    for category in ("car", "chair"):
        joint, alone = experiments.presets()[f"pose_regression_{category}"], experiments.presets()[f"pose_regression_only_{category}"]
        for preset in (joint, alone):
            preset.validate()
            assert (preset.method.temperature, preset.trainer.learning_rate, preset.trainer.lr_halving_steps, preset.trainer.steps) == (0.05, 1e-4, 20000, 60000)
            assert preset.method.regression_weight == 1.0 and preset.data.pose_category == category
        assert joint.method.abc_weight == 1.0 and joint.data.real_fraction == 0.02
        assert alone.method.abc_weight == 0.0 and alone.data.real_fraction == 0.0
    quick = experiments.presets()["pose_regression_quick"]
    assert quick.replace(name="pose_quick", temperature=0.1, real_fraction=0.1, regression_weight=0.0) == experiments.presets()["pose_quick"]


def test_regression_needs_pose_data_and_something_to_train():
    with pytest.raises(ValueError, match="regression_weight=1.0: not read by data family 'mnist'"):
        data.check_config(experiments.config_for(data="mnist", data_source="procedural", regression_weight=1.0))
    pose = experiments.config_for(data="pose", similarity="cosine", temperature=0.1, regression_weight=1.0)
    pose.validate()
    with pytest.raises(ValueError, match="both 0"):
        pose.replace(regression_weight=0.0, abc_weight=0.0).validate()
    with pytest.raises(ValueError, match="abc_weight must be a finite number >= 0"):
        pose.replace(abc_weight=-1.0).validate()


def test_validate_names_the_field_and_read_config_names_the_file(tmp_path):
    config = experiments.config_for()
    config.validate()
    for overrides, message in (
        ({"set_size": 0}, "set_size must be a positive integer, got 0"),
        ({"temperature": float("inf")}, "temperature must be a positive finite number, got inf"),
        ({"lr_halving_steps": -1}, "lr_halving_steps must be >= 0, got -1"),
        ({"similarity": "dot"}, "Unknown similarity 'dot'"),
        ({"data_path": str(tmp_path / "missing")}, f"--data.path={tmp_path / 'missing'} does not exist"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            config.replace(**overrides).validate()
    path = tmp_path / "config.json"
    with pytest.raises(ValueError, match="does not exist: pass a run directory written by train.py"):
        config_lib.read_config(str(path))
    path.write_text(config.to_json())
    assert config_lib.read_config(str(path)) == config
    path.write_text(config.to_json()[:-10])
    with pytest.raises(ValueError, match=re.escape(f"{path} is not a readable run config (")):
        config_lib.read_config(str(path))
    # Runs written before the method registry named the method "loss".
    values = json.loads(config.to_json())
    values["loss"] = values.pop("method")
    assert config_lib.experiments.from_json(json.dumps(values)) == config
    with pytest.raises(ValueError, match="Unknown experiment 'shapes4d'; known experiments:"):
        experiments.get_preset("shapes4d")

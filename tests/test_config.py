"""A run's config in parts (abc_tf.config): each field in one part, replace by field name,
JSON round trip, validation naming the flag, the loss's length scale; and ABC's presets
(abc_tf/methods/abc/__init__.py) against the paper's settings."""

import dataclasses
import json
import re
from typing import ClassVar

import pytest

from abc_tf import config as config_lib
from abc_tf.runs import experiments
from abc_tf.runs import config_files
from abc_tf.config import EncoderConfig, ExperimentConfig, ImageBatch, MethodConfig, SetBatch, TrainerConfig
from abc_tf.data.mnist import MnistConfig
from abc_tf.methods.abc import AbcConfig


def test_a_field_declared_by_two_parts_is_refused():
    @dataclasses.dataclass(frozen=True)
    class Clashing(AbcConfig):
        steps: int = config_lib.field(3, "A method field named like the trainer's.")

    with pytest.raises(TypeError, match="field 'steps' is declared by both the trainer and the method part"):
        ExperimentConfig(
            name="x",
            trainer=TrainerConfig(),
            data=MnistConfig(family="mnist"),
            batch=SetBatch(),
            method=Clashing(name="abc"),
            encoder=EncoderConfig(),
        )


def test_the_batch_and_model_parts_follow_the_method():
    with pytest.raises(
        ValueError, match="method 'abc' trains on 'sets' batches; the config's batch part is ImageBatch"
    ):
        ExperimentConfig(
            name="x",
            trainer=TrainerConfig(),
            data=MnistConfig(family="mnist"),
            batch=ImageBatch(),
            method=AbcConfig(name="abc"),
            encoder=EncoderConfig(),
        )
    with pytest.raises(ValueError, match="method 'abc' needs encoder part"):
        ExperimentConfig(
            name="x",
            trainer=TrainerConfig(),
            data=MnistConfig(family="mnist"),
            batch=SetBatch(),
            method=AbcConfig(name="abc"),
        )


def test_replace_routes_each_field_to_its_part_and_names_the_parts_fields():
    config = experiments.get_preset("mnist")
    changed = config.replace(steps=7, temperature=0.5, set_size=16, holdout_digit="none", embedding_dim=4)
    assert (changed.trainer.steps, changed.method.temperature, changed.batch.set_size) == (7, 0.5, 16)
    assert (changed.data.holdout_digit, changed.encoder.embedding_dim) == ("none", 4)
    assert changed.replace(trainer=config.trainer, name="again").trainer == config.trainer
    with pytest.raises(
        ValueError,
        match=r"This config has no field 'batch_size' \(data family 'mnist', method 'abc'\)\. "
        r"Its fields: trainer: steps, .*; batch: set_size, pairs_per_step",
    ):
        config.replace(batch_size=8)
    with pytest.raises(ValueError, match="chooses another config class: use abc_tf.runs.experiments.choose"):
        config.replace(family="pose")
    assert config.flat()["method.temperature"] == 1.0 and "trainer.steps" in config.flat()


def test_config_json_round_trip_and_unknown_fields():
    config = experiments.get_preset("shapes3d").replace(seed=4, temperature=0.5)
    assert config_files.from_json(config.to_json()) == config
    values = json.loads(config.to_json())
    values["method"]["colour"] = "red"
    with pytest.raises(
        ValueError, match=r"the method part has unknown fields \['colour'\]; AbcConfig's fields: name, "
    ):
        config_files.from_json(json.dumps(values))
    values = json.loads(config.to_json())
    values["optimizer"] = {}
    with pytest.raises(ValueError, match=r"unknown parts \['optimizer'\]"):
        config_files.from_json(json.dumps(values))


def test_validate_names_the_flag_and_read_config_names_the_file(tmp_path):
    config = experiments.config_for()
    config.validate()
    for overrides, message in (
        ({"set_size": 0}, "--batch.set_size must be at least 2 (a set or group of one image teaches nothing"),
        ({"set_size": 1}, "--batch.set_size must be at least 2"),
        ({"steps": "10"}, "trainer.steps is '10', not an integer"),
        ({"mixed_precision": 1}, "trainer.mixed_precision is 1, not true or false"),
        ({"temperature": True}, "method.temperature is True, not a number"),
        ({"temperature": float("inf")}, "--method.temperature must be positive, got inf"),
        ({"lr_halving_steps": -1}, "--trainer.lr_halving_steps must be >= 0, got -1"),
        ({"lr_drop_step": -1}, "--trainer.lr_drop_step must be >= 0, got -1"),
        ({"lr_drop_factor": 0.0}, "--trainer.lr_drop_factor must be positive, got 0.0"),
        ({"strategy": "cloud"}, "Unknown --trainer.strategy='cloud'"),
        ({"similarity": "dot"}, "Unknown --method.similarity='dot'"),
        ({"embedding_dim": 0}, "--encoder.embedding_dim must be positive, got 0"),
        ({"path": str(tmp_path / "missing")}, f"--data.path={tmp_path / 'missing'} does not exist"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            config.replace(**overrides).validate()
    path = tmp_path / "config.json"
    with pytest.raises(ValueError, match="does not exist: pass a run directory written by train.py"):
        config_files.read_config(str(path))
    path.write_text(config.to_json())
    assert config_files.read_config(str(path)) == config
    path.write_text(config.to_json()[:-10])
    with pytest.raises(ValueError, match=re.escape(f"{path} is not a readable run config (")):
        config_files.read_config(str(path))
    with pytest.raises(ValueError, match="Unknown experiment 'shapes4d'; known experiments:"):
        experiments.get_preset("shapes4d")


CONFIG_JSON_EDITS = [  # (an edit of a run's config.json, what read_config says of it)
    (lambda values: values["trainer"].update(steps="ten"), "(trainer.steps is 'ten', not an integer)."),
    (
        lambda values: values["encoder"].update(embedding_dim="8"),
        "(encoder.embedding_dim is '8', not an integer).",
    ),
    (lambda values: values["method"].update(temperature=None), "(method.temperature is None, not a number)."),
    (lambda values: values["data"].update(inactive_factors=3), "(data.inactive_factors is 3, not a string)."),
    (
        lambda values: values.update(trainer=[1, 2]),
        "(its trainer part is a JSON list, not an object of fields).",
    ),
    (
        lambda values: values.update(optimizer={}),
        "(unknown parts ['optimizer']; a config has name and the parts",
    ),
    (
        lambda values: values["method"].pop("name"),
        "(its method part needs a name and its data part a family (strings)).",
    ),
]


@pytest.mark.parametrize("edit,message", CONFIG_JSON_EDITS, ids=[message for _, message in CONFIG_JSON_EDITS])
def test_a_config_json_of_wrong_types_names_the_file_and_the_field(tmp_path, edit, message):
    values = json.loads(experiments.get_preset("shapes3d_demo").to_json())
    edit(values)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(values))
    with pytest.raises(ValueError, match=re.escape(f"{path} is not a readable run config {message}")):
        config_files.read_config(str(path))


def test_a_config_json_that_is_not_an_object_names_the_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("[1, 2]")
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"{path} is not a readable run config (it holds a JSON list, not an "
            "object of the parts trainer, encoder, data, batch, method)."
        ),
    ):
        config_files.read_config(str(path))


def test_length_scale():
    assert config_lib.length_scale("l2sq", 0.25) == 0.5
    assert config_lib.length_scale("l2", 0.25) == 0.25
    # Unsquared distances, like l2: the evaluation noise sigma is tau, not 1.
    assert config_lib.length_scale("l1", 0.25) == 0.25
    assert config_lib.length_scale("linf", 0.25) == 0.25
    assert experiments.config_for(similarity="l1", temperature=0.3).method.length_scale() == 0.3
    assert config_lib.length_scale("cosine", 0.1) == 1.0


# ABC's presets (abc_tf/methods/abc/__init__.py): docs/PAPERS.md section 3.
def test_abc_presets_hold_the_paper_settings():
    shapes = experiments.get_preset("shapes3d")
    assert (shapes.encoder.architecture, shapes.encoder.embedding_dim, shapes.batch.set_size) == (
        "s3",
        64,
        32,
    )
    assert (shapes.method.similarity, shapes.method.temperature) == ("l2sq", 1.0)
    assert (shapes.trainer.learning_rate, shapes.trainer.steps, shapes.data.inactive_factors) == (
        3e-5,
        2000,
        "wall_hue",
    )
    mnist = experiments.get_preset("mnist")
    assert (mnist.encoder.architecture, mnist.encoder.embedding_dim, mnist.batch.set_size) == ("s4", 8, 64)
    assert (
        mnist.method.similarity,
        mnist.method.temperature,
        mnist.trainer.learning_rate,
        mnist.trainer.steps,
    ) == ("l2sq", 1.0, 1e-4, 500)
    yaleb = experiments.get_preset("yaleb_illumination")
    assert (yaleb.encoder.architecture, yaleb.method.similarity, yaleb.trainer.learning_rate) == (
        "s6",
        "l2",
        3e-4,
    )
    assert (yaleb.batch.set_size, yaleb.batch.double_augmentation, yaleb.data.inactive_factors) == (
        64,
        True,
        "person,pose",
    )
    pose = experiments.get_preset("pose_lookup_car")
    assert (
        pose.encoder.architecture,
        pose.data.image_size,
        pose.batch.pairs_per_step,
        pose.method.similarity,
    ) == ("s5", 128, 4, "cosine")
    assert (
        pose.method.temperature,
        pose.trainer.learning_rate,
        pose.trainer.lr_halving_steps,
        pose.trainer.steps,
    ) == (0.1, 1e-4, 10000, 40000)
    for preset in experiments.presets().values():
        preset.validate()


def test_regression_presets_hold_table_2_settings():
    for category in ("car", "chair"):
        joint = experiments.get_preset(f"pose_regression_{category}")
        alone = experiments.get_preset(f"pose_regression_only_{category}")
        for preset in (joint, alone):
            preset.validate()
            assert (
                preset.method.temperature,
                preset.trainer.learning_rate,
                preset.trainer.lr_halving_steps,
                preset.trainer.steps,
            ) == (0.05, 1e-4, 20000, 60000)
            assert preset.method.regression_weight == 1.0 and preset.data.pose_category == category
        assert joint.method.abc_weight == 1.0 and joint.data.real_fraction == 0.02
        assert alone.method.abc_weight == 0.0 and alone.data.real_fraction == 0.0
    quick = experiments.get_preset("pose_regression_quick")
    assert quick.replace(name="pose_quick", temperature=0.1, real_fraction=0.1, regression_weight=0.0) == (
        experiments.get_preset("pose_quick")
    )


def test_regression_needs_pose_data_and_something_to_train():
    from abc_tf import methods  # loads the method's module (TensorFlow)

    with pytest.raises(
        ValueError,
        match="--method.regression_weight=1.0: the spherical-regression head trains on set A's "
        "pose labels, and data family 'mnist' has none",
    ):
        methods.check_config(experiments.config_for(data="mnist", regression_weight=1.0))
    pose = experiments.config_for(data="pose", similarity="cosine", temperature=0.1, regression_weight=1.0)
    pose.validate()
    methods.check_config(pose)
    with pytest.raises(ValueError, match="both 0"):
        pose.replace(regression_weight=0.0, abc_weight=0.0).validate()
    with pytest.raises(ValueError, match="--method.abc_weight must be a finite number >= 0"):
        pose.replace(abc_weight=-1.0).validate()


@pytest.mark.parametrize("old", ["trains_encoder", "has_model_part"])
def test_a_method_config_with_an_old_name_of_has_encoder_part_is_refused(old):
    with pytest.raises(TypeError, match=f"sets {old}, now named has_encoder_part"):
        type("OldStyle", (MethodConfig,), {"__annotations__": {old: ClassVar[bool]}, old: False})

"""abc_tf.data.pose.config_checks: what a pose config reads, and pose settings that cannot work refused
naming the flag."""

from __future__ import annotations

import os

import pytest

from abc_tf.data.pose import config_checks
from test_pose import config


def test_max_elevation_follows_the_category_or_the_flag():
    assert config_checks.max_elevation(config(pose_category="car")) == 0.5
    assert config_checks.max_elevation(config(pose_category="chair")) == 1.3
    assert config_checks.max_elevation(config(max_elevation=0.2)) == 0.2


def test_bad_settings_raise_value_errors_naming_the_flag():
    for overrides, flag in [
        ({"pose_category": "boat"}, "--data.pose_category"),
        ({"real_fraction": 1.5}, "--data.real_fraction"),
        ({"titration_interval": 100}, "--data.titration_interval"),
        ({"crop_amplitude": 1.0}, "--data.crop_amplitude"),
        ({"augmentations": "hue:0.1"}, "--data.augmentations"),
        ({"source": "keypointnet"}, "needs --data.path"),
        ({"source": "keypointnet", "path": os.path.dirname(__file__)}, "--data.real_data_path"),
        ({"source": "keypointnet", "path": "x"}, "--data.path=x does not exist"),
        (
            {"source": "h5"},
            "--data.source='h5' is not a source of data family 'pose'; choose one of auto, procedural, "
            "keypointnet.",
        ),
        (
            {"real_data_path": os.path.dirname(__file__)},
            "--data.real_data_path is read with KeypointNet renders only",
        ),
        ({"paint_backgrounds": False, "background_data_path": "x"}, "--data.paint_backgrounds"),
    ]:
        with pytest.raises(ValueError, match=flag):
            config_checks.check_config(config(**overrides))

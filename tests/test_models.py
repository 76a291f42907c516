"""The architecture registry (models/architectures.py, the ``models`` package): every table builds by
name, and unknown or twice-registered names are clear errors. Each table against docs/PAPERS.md
section 2: tests/test_conv.py, test_heads.py, test_pose_head.py, test_pose_encoders.py,
test_pmp_networks.py."""

import keras
import pytest

import models
from models import architectures


def test_every_table_is_registered_and_pretrained_backbones_are_declared():
    assert {"s3", "s4", "s5", "s5_small", "s6", "spherical_regression", "mine", "probe"} <= set(
        models.names()
    )
    assert models.names() == sorted(models.names())
    assert [name for name in models.names() if models.takes_pretrained_weights(name)] == ["s5"]


def test_register_refuses_a_name_twice_and_build_passes_the_arguments(monkeypatch):
    monkeypatch.setattr(architectures, "_BUILDERS", dict(architectures._BUILDERS))
    monkeypatch.setattr(architectures, "_PRETRAINED", set(architectures._PRETRAINED))

    @architectures.register("tiny", pretrained=True)
    def tiny(units: int = 2, weights=None):
        return keras.Sequential([keras.Input((3,)), keras.layers.Dense(units)])

    assert models.build("tiny", units=5).output_shape == (None, 5)
    assert models.takes_pretrained_weights("tiny") and "tiny" in models.names()
    with pytest.raises(ValueError, match="Model 'tiny' registered twice"):
        architectures.register("tiny")(tiny)


def test_unknown_model_is_a_clear_error():
    with pytest.raises(ValueError, match="Unknown model 'resnet9'; known models: "):
        models.build("resnet9")

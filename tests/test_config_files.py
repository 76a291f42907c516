"""abc_tf.runs.config_files: config.json of both layouts read back, the flat one on files copied
from runs written before configs had parts (tests/fixtures/flat_configs)."""

import json
import pathlib

import pytest

from abc_tf.runs import config_files

FLAT_CONFIGS = sorted((pathlib.Path(__file__).parent / "fixtures" / "flat_configs").glob("*.json"))


@pytest.mark.parametrize("path", FLAT_CONFIGS, ids=[path.stem for path in FLAT_CONFIGS])
def test_a_flat_config_json_loads_into_parts(path):
    flat = json.loads(path.read_text())
    config = config_files.read_config(str(path))
    assert (config.name, config.data.family, config.method.name) == (
        flat["name"],
        flat["data"],
        flat["method"],
    )
    renamed = {config_files.RENAMED_FLAT_FIELDS.get(name, name): value for name, value in flat.items()}
    renamed["latent_dim"] = flat["embedding_dim"]  # the VAE's latent size was embedding_dim
    for part in config.parts().values():
        defaults = type(part)()
        for name in part.field_names():
            # A field added after the flat layout (lr_drop_step) reads as its default.
            expected = {"family": flat["data"], "name": flat["method"]}.get(
                name, renamed.get(name, getattr(defaults, name))
            )
            assert getattr(part, name) == expected, name
    # Written again, it is in parts, and reads back the same.
    assert config_files.from_json(config.to_json()) == config and "trainer" in json.loads(config.to_json())


def test_the_oldest_flat_layout_named_the_method_loss():
    flat = json.loads((FLAT_CONFIGS[0].parent / "shapes3d_demo.json").read_text())
    expected = config_files.from_dict(flat)
    flat["loss"] = flat.pop("method")
    assert config_files.from_dict(flat) == expected

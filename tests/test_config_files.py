"""abc_tf.runs.config_files: config.json of both layouts read back, the flat one on files copied
from runs written before configs had parts (tests/fixtures/flat_configs), the parts on files
written before the encoder part was renamed from "model" (tests/fixtures/model_part_configs)."""

import json
import pathlib

import pytest

from abc_tf.config import PART_NAMES
from abc_tf.runs import config_files, config_history, experiments

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
            assert getattr(part, name) == as_read(defaults, name, expected), name
    # Written again, it is in parts, and reads back the same.
    assert config_files.from_json(config.to_json()) == config and "trainer" in json.loads(config.to_json())


def test_the_oldest_flat_layout_named_the_method_loss():
    flat = json.loads((FLAT_CONFIGS[0].parent / "shapes3d_demo.json").read_text())
    expected = config_files.from_dict(flat)
    flat["loss"] = flat.pop("method")
    assert config_files.from_dict(flat) == expected


def as_read(defaults, name: str, value):
    """``value`` of field ``name`` as the part holds it once read (a bool jit_compile as its word)."""
    return getattr(defaults.replace(**{name: value}), name)


# Run directories written before the encoder part was renamed: config.json of parts, written as
# train.py wrote it then (the part under "model"), for an encoder, no encoder and a pose preset.
MODEL_PART_CONFIGS = sorted(
    (pathlib.Path(__file__).parent / "fixtures" / "model_part_configs").glob("*.json")
)


@pytest.mark.parametrize("path", MODEL_PART_CONFIGS, ids=[path.stem for path in MODEL_PART_CONFIGS])
def test_a_config_json_with_the_model_part_loads_it_as_the_encoder_part(path):
    old = json.loads(path.read_text())
    assert "model" in old and "encoder" not in old
    config = config_files.read_config(str(path))
    assert (config.name, config.data.family, config.method.name) == (
        old["name"],
        old["data"]["family"],
        old["method"]["name"],
    )
    parts = {**old, "encoder": old["model"]}
    for part_name in PART_NAMES:
        part = getattr(config, part_name)
        if parts[part_name] is None:
            assert part is None, part_name
            continue
        defaults = type(part)()
        for name in part.field_names():  # a field added since reads as its default
            expected = parts[part_name].get(name, getattr(defaults, name))
            assert getattr(part, name) == as_read(defaults, name, expected), name
    # Written again, it has the new name, and reads back the same.
    written = json.loads(config.to_json())
    assert (
        "encoder" in written and "model" not in written and config_files.from_json(config.to_json()) == config
    )


def test_an_old_run_directory_resumes_with_its_config_unchanged(tmp_path):
    """A rerun compares its config with config.json's: the old part name is no change."""
    path = MODEL_PART_CONFIGS[0].parent / "shapes3d_demo.json"
    (tmp_path / "config.json").write_text(path.read_text())
    config_history.check_is_run_dir(str(tmp_path))
    # The file was written when --trainer.jit_compile was a bool, false by default.
    preset = experiments.get_preset("shapes3d_demo").replace(jit_compile="false")
    assert config_history.config_changes(str(tmp_path), preset) == {}
    changed = preset.replace(embedding_dim=8)
    assert config_history.config_changes(str(tmp_path), changed) == {"encoder.embedding_dim": (64, 8)}


def test_a_config_json_with_both_names_of_the_encoder_part_is_refused(tmp_path):
    values = json.loads((MODEL_PART_CONFIGS[0].parent / "shapes3d_demo.json").read_text())
    values["encoder"] = values["model"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(values))
    with pytest.raises(ValueError) as error:
        config_files.read_config(str(path))
    assert str(error.value) == (
        f"{path} is not a readable run config (it holds both 'model' and 'encoder', the old and new "
        "names of the encoder part; keep 'encoder')."
    )

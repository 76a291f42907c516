"""config.json read back: the run-directory mark, the layouts train.py has written, and the
config they give.

A config.json holds a config's parts (``ExperimentConfig.to_dict``) and a mark saying a run wrote
it. Runs written before parts existed have every field at the top, and runs written before the
encoder part was renamed hold it as ``"model"``: both still load, so old run directories evaluate
and resume (tests/fixtures/, read by tests/test_config_files.py and tests/test_train.py).
"""

from __future__ import annotations

import json
import os
from typing import Any

from abc_tf.config import BATCH_CONFIGS, PART_NAMES, EncoderConfig, ExperimentConfig, TrainerConfig
from abc_tf.runs.experiments import data_config_class, method_config_class


# The mark train.py writes into every config.json: a folder whose config.json has it is a run
# directory, never a user's folder that happens to hold a config.json of another tool.
RUN_FORMAT_KEY, RUN_FORMAT = "format", "abc_tf run 1"
# What the flat layout (runs written before configs had parts) always held.
_FLAT_LAYOUT_KEYS = {"steps", "learning_rate", "seed"}
# Parts renamed since configs had parts: {old name: new name}. A config.json written before holds
# the old name, read as the new one.
RENAMED_PARTS = {"model": "encoder"}


def is_run_config(values: Any) -> bool:
    """Whether the JSON ``values`` of a config.json is a run's: it carries :data:`RUN_FORMAT`, or
    it is a config that train.py wrote before the mark (parts with a trainer, or the flat layout)."""
    if not isinstance(values, dict):
        return False
    if values.get(RUN_FORMAT_KEY) == RUN_FORMAT:
        return True
    return isinstance(values.get("trainer"), dict) or _FLAT_LAYOUT_KEYS <= set(values)


def to_run_json(config: ExperimentConfig) -> dict[str, Any]:
    """config.json's content: the config's parts and the run-directory mark."""
    return {**config.to_dict(), RUN_FORMAT_KEY: RUN_FORMAT}


def from_dict(values: dict[str, Any]) -> ExperimentConfig:
    """The config of a config.json: the parts written since parts exist (the encoder part once
    named ``"model"``), or the flat layout written before (every field at the top, the method once
    named ``"loss"``)."""
    if not isinstance(values, dict):
        raise ValueError(
            f"it holds a JSON {type(values).__name__}, not an object of the parts {', '.join(PART_NAMES)}"
        )
    values = {key: value for key, value in values.items() if key != RUN_FORMAT_KEY}
    if "trainer" not in values:
        return from_flat(values)
    values = with_renamed_parts(values)
    unknown = sorted(set(values) - {"name", *PART_NAMES})
    if unknown:
        raise ValueError(f"unknown parts {unknown}; a config has name and the parts {', '.join(PART_NAMES)}")
    for part_name in PART_NAMES:
        if values.get(part_name) is not None and not isinstance(values[part_name], dict):
            raise ValueError(
                f"its {part_name} part is a JSON {type(values[part_name]).__name__}, not an object of fields"
            )
    if not isinstance((values.get("method") or {}).get("name"), str) or not isinstance(
        (values.get("data") or {}).get("family"), str
    ):
        raise ValueError("its method part needs a name and its data part a family (strings)")
    method_class = method_config_class(values["method"]["name"])
    parts = {
        "trainer": TrainerConfig,
        "data": data_config_class(values["data"]["family"]),
        "batch": BATCH_CONFIGS[method_class.batch_format],
        "method": method_class,
        "encoder": EncoderConfig,
    }
    built = {}
    for part_name, cls in parts.items():
        given = values.get(part_name)
        if given is None:
            built[part_name] = None
            continue
        stray = sorted(set(given) - set(cls.field_names()))
        if stray:
            raise ValueError(
                f"the {part_name} part has unknown fields {stray}; {cls.__name__}'s fields: "
                f"{', '.join(cls.field_names())}"
            )
        built[part_name] = cls(**given)
        built[part_name].check_types()
    return ExperimentConfig(name=values.get("name", "custom"), **built)


def with_renamed_parts(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (a config.json of parts) with each part of :data:`RENAMED_PARTS` under its new
    name; ValueError when a file holds a part under both names."""
    for old, new in RENAMED_PARTS.items():
        if old not in values:
            continue
        if new in values:
            raise ValueError(
                f"it holds both {old!r} and {new!r}, the old and new names of the {new} part; keep {new!r}"
            )
        values = {new if key == old else key: value for key, value in values.items()}
    return values


# The flat layout's fields whose names changed when they moved into a part.
RENAMED_FLAT_FIELDS = {
    "data_source": "source",
    "data_path": "path",
    "model": "architecture",
    "pmp_warmup": "warmup",
    "pmp_distance_weight": "distance_weight",
    "pmp_sparsity_weight": "sparsity_weight",
    "pmp_consistency_weight": "consistency_weight",
    "pmp_usage_weight": "usage_weight",
    "infogan_prior": "prior",
    "infogan_contrastive_weight": "contrastive_weight",
    "infogan_noise_dim": "noise_dim",
    "infogan_ntxent_temperature": "ntxent_temperature",
    "infogan_elastic_field": "elastic_field",
}


def from_flat(values: dict[str, Any]) -> ExperimentConfig:
    """A config from the flat config.json of runs written before configs had parts. Each part
    takes the fields it owns; a flat field no part of this family and method owns was never
    read by the run, and is dropped. The VAE's latent size was ``embedding_dim``."""
    values = dict(values)
    if "loss" in values:  # runs written before the method registry named the method "loss"
        values["method"] = values.pop("loss")
    renamed = {RENAMED_FLAT_FIELDS.get(name, name): value for name, value in values.items()}
    method_class = method_config_class(renamed.get("method", "abc"))
    if not method_class.has_encoder_part and "latent_dim" in method_class.field_names():
        renamed["latent_dim"] = renamed.get("embedding_dim", 4)
    renamed["family"], renamed["name"] = renamed.get("data", "shapes3d"), renamed.get("method", "abc")
    classes = {
        "trainer": TrainerConfig,
        "data": data_config_class(renamed["family"]),
        "batch": BATCH_CONFIGS[method_class.batch_format],
        "method": method_class,
        "encoder": EncoderConfig if method_class.has_encoder_part else None,
    }
    parts = {
        part_name: None
        if cls is None
        else cls(**{name: renamed[name] for name in cls.field_names() if name in renamed})
        for part_name, cls in classes.items()
    }
    for part in parts.values():
        if part is not None:
            part.check_types()
    return ExperimentConfig(name=values.get("name", "custom"), **parts)


def read_config(path: str) -> ExperimentConfig:
    """The config stored at ``path`` (a run's config.json); a ValueError naming the file when it
    is missing or damaged."""
    if not os.path.isfile(path):
        raise ValueError(f"{path} does not exist: pass a run directory written by train.py.")
    try:
        with open(path, encoding="utf-8") as handle:
            return from_dict(json.load(handle))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, TypeError, ValueError, KeyError) as error:
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(f"{path} is not a readable run config ({message}).") from None


def from_json(text: str) -> ExperimentConfig:
    """The config of a config.json's text (see :func:`from_dict`)."""
    return from_dict(json.loads(text))

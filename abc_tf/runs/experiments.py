"""Experiments: the presets, a config's classes chosen by name, and config.json read back.

A preset is declared by the method it trains (``Method.presets``) or by a data family
(``DataFamily.presets``: a user's family with runs of its own). A method's or family's config
class is its declaration's ``config``. Reading a declaration loads its package, TensorFlow
included.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from abc_tf import data, methods, registry
from abc_tf.config import (
    BATCH_CONFIGS,
    PART_NAMES,
    SELECTORS,
    DataConfig,
    EncoderConfig,
    ExperimentConfig,
    MethodConfig,
    Part,
    TrainerConfig,
)


def _found(found: dict) -> list[str]:
    """The names of a registry's entries found as packages (not those a test added by hand)."""
    return [
        name for name, entry in found.items() if not isinstance(entry, str) and registry.Entry(*entry).package
    ]


def presets() -> dict[str, ExperimentConfig]:
    """Every preset by name: those of every method found as a package, and of every data family
    found as one that declares some (a user's family with its own runs of a method)."""
    declared = [methods.get_method(name) for name in _found(methods.METHODS)]
    declared += [data.get_family(name) for name in _found(data.DATA_FAMILIES)]
    found: dict[str, ExperimentConfig] = {}
    for declaration in declared:
        for name, preset in declaration.presets.items():
            if name in found:
                raise ValueError(f"The preset {name!r} of {declaration.name!r} is declared twice.")
            found[name] = preset
    return found


def smoke_configs() -> dict[str, ExperimentConfig]:
    """{method: its smallest run} for every method found as a package; ValueError naming a
    method without one (the contract checks train each)."""
    found = {}
    for name in _found(methods.METHODS):
        smallest = methods.get_method(name).smallest_run
        if smallest is None:
            raise ValueError(
                f"The method {name!r} declares no smallest_run (the smallest run it trains, for the contract "
                'checks); see docs/ARCHITECTURE.md, "Adding a method".'
            )
        found[name] = smallest
    return found


def quick_presets() -> dict[str, ExperimentConfig]:
    """{method: its quick_run}: the run a user tries first, on which benchmarks measure each
    method's step (the smallest run where it declares none)."""
    found = {}
    for name in _found(methods.METHODS):
        method = methods.get_method(name)
        found[name] = method.quick_run or method.smallest_run
    return found


def get_preset(name: str) -> ExperimentConfig:
    known = presets()
    if name not in known:
        raise ValueError(f"Unknown experiment {name!r}; known experiments: {', '.join(sorted(known))}.")
    return known[name]


def data_config_class(family: str) -> type[DataConfig]:
    return data.get_family(family).config


def method_config_class(method: str) -> type[MethodConfig]:
    return methods.get_method(method).config


def _carried(cls: type[Part], old: Part | None, **fixed: Any) -> Part:
    """A ``cls`` with the values of ``old``'s fields of the same name, ``fixed`` set."""
    values = (
        {}
        if old is None
        else {name: getattr(old, name) for name in old.field_names() if name in cls.field_names()}
    )
    return cls(**{**values, **fixed})


def choose(
    config: ExperimentConfig,
    data: str | None = None,
    method: str | None = None,
    model: str | None = None,
    **fields: Any,
) -> ExperimentConfig:
    """``config`` with another data family, method or encoder architecture, then ``fields``
    replaced by name. Another family starts from its own defaults (nothing of the old family's
    data part is carried over) and the run is named ``<preset>_on_<family>``. Another method's
    class keeps the fields it shares with the old one (a temperature) and takes its defaults for
    the rest; a method on another batch format gets that format's batch part, and a method
    without an encoder drops the ``model`` part."""
    name = config.name
    data_part = config.data
    if data not in (None, config.data.family):
        data_part, name = data_config_class(data)(family=data), f"{config.name}_on_{data}"
    method_class = method_config_class(method) if method is not None else type(config.method)
    method_part = (
        config.method
        if method in (None, config.method.name)
        else _carried(method_class, config.method, name=method)
    )
    batch_class = BATCH_CONFIGS[method_class.batch_format]
    batch_part = config.batch if type(config.batch) is batch_class else _carried(batch_class, config.batch)
    model_part = None
    if method_class.has_model_part:
        model_part = config.model or EncoderConfig()
        if model is not None:
            model_part = model_part.replace(architecture=model)
    elif model is not None:
        raise ValueError(
            f"--model={model}: method {method_part.name!r} has no encoder to choose "
            "(its networks are its own)."
        )
    return ExperimentConfig(
        name=name,
        trainer=config.trainer,
        data=data_part,
        batch=batch_part,
        method=method_part,
        model=model_part,
    ).replace(**fields)


# The mark train.py writes into every config.json: a folder whose config.json has it is a run
# directory, never a user's folder that happens to hold a config.json of another tool.
RUN_FORMAT_KEY, RUN_FORMAT = "format", "abc_tf run 1"
# What the flat layout (runs written before configs had parts) always held.
_FLAT_LAYOUT_KEYS = {"steps", "learning_rate", "seed"}


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
    """The config of a config.json: the parts written since parts exist, or the flat layout
    written before (every field at the top, the method once named ``"loss"``)."""
    if not isinstance(values, dict):
        raise ValueError(
            f"it holds a JSON {type(values).__name__}, not an object of the parts {', '.join(PART_NAMES)}"
        )
    values = {key: value for key, value in values.items() if key != RUN_FORMAT_KEY}
    if "trainer" not in values:
        return from_flat(values)
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
        "model": EncoderConfig,
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
    if not method_class.has_model_part and "latent_dim" in method_class.field_names():
        renamed["latent_dim"] = renamed.get("embedding_dim", 4)
    renamed["family"], renamed["name"] = renamed.get("data", "shapes3d"), renamed.get("method", "abc")
    classes = {
        "trainer": TrainerConfig,
        "data": data_config_class(renamed["family"]),
        "batch": BATCH_CONFIGS[method_class.batch_format],
        "method": method_class,
        "model": EncoderConfig if method_class.has_model_part else None,
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


def override(config: ExperimentConfig, dotted: dict[str, Any]) -> ExperimentConfig:
    """``config`` with ``{"<part>.<field>": value}`` applied; ValueError naming the part's
    fields for a field it does not have."""
    by_part: dict[str, dict[str, Any]] = {}
    parts = config.parts()
    for key, value in dotted.items():
        part_name, _, name = key.partition(".")
        if part_name not in parts:
            raise ValueError(f"--{key}: this run has no {part_name} part; its parts: {', '.join(parts)}.")
        if name not in parts[part_name].field_names() or name == SELECTORS.get(part_name):
            raise ValueError(unknown_field_message(config, part_name, name))
        by_part.setdefault(part_name, {})[name] = value
    return dataclasses.replace(
        config, **{part: parts[part].replace(**values) for part, values in by_part.items()}
    )


def settable_fields(part: type[Part], part_name: str) -> tuple[str, ...]:
    """The fields of a part class that ``--<part>.<field>`` sets (its selector is a flag of its own)."""
    return tuple(name for name in part.field_names() if name != SELECTORS.get(part_name))


def unknown_field_message(config: ExperimentConfig, part_name: str, name: str) -> str:
    owner = {"data": f"data family {config.data.family!r}", "method": f"method {config.method.name!r}"}.get(
        part_name, f"the {part_name} part"
    )
    part = config.parts()[part_name]
    return (
        f"--{part_name}.{name}: {owner} ({type(part).__name__}) has no field {name!r}; its fields: "
        f"{', '.join(settable_fields(type(part), part_name))}."
    )


def config_for(
    data: str = "shapes3d", method: str = "abc", model: str | None = None, name: str = "custom", **fields: Any
) -> ExperimentConfig:
    """A config of the classes' defaults for data family ``data`` and ``method`` (and encoder
    ``model``), with ``fields`` replaced by name: a run in Python without a preset."""
    method_class = method_config_class(method)
    config = ExperimentConfig(
        name=name,
        trainer=TrainerConfig(),
        data=data_config_class(data)(family=data),
        batch=BATCH_CONFIGS[method_class.batch_format](),
        method=method_class(name=method),
        model=EncoderConfig() if method_class.has_model_part else None,
    )
    return choose(config, model=model).replace(**fields)


def from_json(text: str) -> ExperimentConfig:
    """The config of a config.json's text (see :func:`from_dict`)."""
    return from_dict(json.loads(text))

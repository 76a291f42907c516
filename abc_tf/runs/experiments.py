"""Experiments: the presets, a config's classes chosen by name, and a config changed by name
(another family, method or encoder; dotted fields). config.json is read by
abc_tf.runs.config_files.

A preset is declared by the package of the method it trains or of a data family (a user's
family with runs of its own), as plain data: ``PRESETS`` in the package's ``__init__.py``, which
its declaration's ``presets`` is. Finding a preset reads those modules alone; a method's or
family's config class is its declaration's ``config``, which loads its package, TensorFlow
included.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

from abc_tf import data, methods, registry
from abc_tf.config import (
    BATCH_CONFIGS,
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


def _packages() -> dict[str, str]:
    """{package: kind} of every method and family found as a package."""
    return {
        registry.Entry(*found[name]).package: kind
        for found, kind in ((methods.METHODS, "method"), (data.DATA_FAMILIES, "data family"))
        for name in _found(found)
    }


def presets() -> dict[str, ExperimentConfig]:
    """Every preset by name, read from each package's ``PRESETS`` (no TensorFlow loads). A
    package that fails to import is named in one warning line, and the listing goes on."""
    found, broken = registry.package_presets(_packages())
    for message in broken.values():
        warnings.warn(message, stacklevel=2)
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
                f"checks); see {registry.GUIDE['method']}."
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
    """Preset ``name``; ValueError naming the known ones, and the packages that could not be read."""
    known, broken = registry.package_presets(_packages())
    if name not in known:
        unread = "".join(f"{message} " for message in broken.values())  # the likelier cause, first
        listed = ", ".join(sorted(known))
        raise ValueError(f"Unknown experiment {name!r}; {unread}known experiments: {listed}.")
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
    encoder: str | None = None,
    **fields: Any,
) -> ExperimentConfig:
    """``config`` with another data family, method or encoder architecture, then ``fields``
    replaced by name. Another family starts from its own defaults (nothing of the old family's
    data part is carried over) and the run is named ``<preset>_on_<family>``. Another method's
    class keeps the fields it shares with the old one (a temperature) and takes its defaults for
    the rest, and the run is named ``<preset>_with_<method>``; a method on another batch format
    gets that format's batch part, and a method without an encoder drops the ``encoder`` part."""
    name = config.name
    data_part = config.data
    if data not in (None, config.data.family):
        data_part, name = data_config_class(data)(family=data), f"{config.name}_on_{data}"
    method_class = method_config_class(method) if method is not None else type(config.method)
    method_part = config.method
    if method not in (None, config.method.name):
        method_part, name = _carried(method_class, config.method, name=method), f"{name}_with_{method}"
    batch_class = BATCH_CONFIGS[method_class.batch_format]
    batch_part = config.batch if type(config.batch) is batch_class else _carried(batch_class, config.batch)
    encoder_part = None
    if method_class.has_encoder_part:
        encoder_part = config.encoder or EncoderConfig()
        if encoder is not None:
            encoder_part = encoder_part.replace(architecture=encoder)
    elif encoder is not None:
        raise ValueError(
            f"--encoder={encoder}: method {method_part.name!r} has no encoder to choose "
            "(its networks are its own)."
        )
    return ExperimentConfig(
        name=name,
        trainer=config.trainer,
        data=data_part,
        batch=batch_part,
        method=method_part,
        encoder=encoder_part,
    ).replace(**fields)


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
    data: str = "shapes3d",
    method: str = "abc",
    encoder: str | None = None,
    name: str = "custom",
    **fields: Any,
) -> ExperimentConfig:
    """A config of the classes' defaults for data family ``data`` and ``method`` (and encoder architecture
    ``encoder``), with ``fields`` replaced by name: a run in Python without a preset."""
    method_class = method_config_class(method)
    config = ExperimentConfig(
        name=name,
        trainer=TrainerConfig(),
        data=data_config_class(data)(family=data),
        batch=BATCH_CONFIGS[method_class.batch_format](),
        method=method_class(name=method),
        encoder=EncoderConfig() if method_class.has_encoder_part else None,
    )
    return choose(config, encoder=encoder).replace(**fields)

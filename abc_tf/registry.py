"""Name -> declaration registries (data families, methods) whose modules load on first use."""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Iterable


def load(reference: str, default_attribute: str = "") -> Any:
    """What ``reference`` names, its module imported now: ``"module:ATTRIBUTE"``, or ``"module"``
    for its ``default_attribute``."""
    module_name, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module_name), attribute or default_attribute)


def resolve(registry: dict[str, str], name: str, kind: str, declaration_type: str, default_attribute: str) -> Any:
    """The declaration registered as ``name``: ``registry[name]`` is ``"module"`` (its
    ``default_attribute``) or ``"module:ATTRIBUTE"``. ValueError naming the known names.

    ``declaration_type`` ("module:CLASS", the type every declaration must be) is named the same
    way and loaded with the first declaration, so importing a registry imports none of the
    modules it names: ``train.py --help`` answers without TensorFlow.
    """
    if name not in registry:
        raise ValueError(f"Unknown {kind} {name!r}; choose one of: {', '.join(sorted(registry))}.")
    declared = load(registry[name], default_attribute)
    if not isinstance(declared, load(declaration_type)) or declared.name != name:
        raise TypeError(f"{registry[name]} does not declare the {kind} {name!r}.")
    return declared


def unused_fields(declarations: Iterable[Any], chosen: Any, fields: Iterable[str]) -> list[str]:
    """The names among ``fields`` that only declarations other than ``chosen`` read (each
    declaration has ``fields``, the config fields only some of them read): given for
    ``chosen``, they would do nothing."""
    only_some = {field for declared in declarations for field in declared.fields}
    return [field for field in fields if field in only_some and field not in chosen.fields]


def refuse_stray_fields(declarations: Iterable[Any], chosen: Any, config: Any, what: str) -> None:
    """ValueError naming the :func:`unused_fields` of ``config`` that differ from their defaults:
    set for ``chosen`` (``what``, e.g. "data family 'mnist'"), they would do nothing."""
    defaults = type(config)()
    names = [field.name for field in dataclasses.fields(config)]
    stray = [name for name in unused_fields(declarations, chosen, names) if getattr(config, name) != getattr(defaults, name)]
    if stray:
        listed = ", ".join(f"{name}={getattr(config, name)!r}" for name in stray)
        raise ValueError(f"{listed}: not read by {what}; leave it at its default.")

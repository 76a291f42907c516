"""Name -> declaration registries (data families, methods) whose modules load on first use."""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple


def load(reference: str, default_attribute: str = "") -> Any:
    """What ``reference`` names, its module imported now: ``"module:ATTRIBUTE"``, or ``"module"``
    for its ``default_attribute``."""
    module_name, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module_name), attribute or default_attribute)


class Entry(NamedTuple):
    """A registry entry: where the declaration and its config class are, each ``"module:NAME"``
    (``"module"`` alone: the module's default attribute). The config class's module imports no
    TensorFlow, so ``train.py`` builds its flags from it without loading the declaration."""

    declaration: str
    config: str


def resolve(registry: dict[str, Entry], name: str, kind: str, declaration_type: str, default_attribute: str) -> Any:
    """The declaration registered as ``name`` (its :class:`Entry`'s ``declaration``); ValueError
    naming the known names.

    ``declaration_type`` ("module:CLASS", the type every declaration must be) is named the same
    way and loaded with the first declaration, so importing a registry imports none of the
    modules it names: ``train.py --help`` answers without TensorFlow.
    """
    entry = _entry(registry, name, kind)
    declared = load(entry.declaration, default_attribute)
    if not isinstance(declared, load(declaration_type)) or declared.name != name:
        raise TypeError(f"{entry.declaration} does not declare the {kind} {name!r}.")
    return declared


def config_class(registry: dict[str, Entry], name: str, kind: str, base: type) -> type:
    """The config class registered with ``name`` (a subclass of ``base``)."""
    reference = _entry(registry, name, kind).config
    cls = load(reference)
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise TypeError(f"{reference} is not a {base.__name__} (the config class of {kind} {name!r}).")
    return cls


def _entry(registry: dict[str, Entry], name: str, kind: str) -> Entry:
    if name not in registry:
        raise ValueError(f"Unknown {kind} {name!r}; choose one of: {', '.join(sorted(registry))}.")
    return Entry(*registry[name])

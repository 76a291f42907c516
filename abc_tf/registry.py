"""Name -> declaration registries (data families, methods) whose modules load on first use."""

from __future__ import annotations

import importlib
from typing import Any


def resolve(registry: dict[str, str], name: str, kind: str, declaration_type: type, default_attribute: str) -> Any:
    """The declaration registered as ``name``: ``registry[name]`` is ``"module"`` (its
    ``default_attribute``) or ``"module:ATTRIBUTE"``. ValueError naming the known names."""
    if name not in registry:
        raise ValueError(f"Unknown {kind} {name!r}; choose one of: {', '.join(sorted(registry))}.")
    module_name, _, attribute = registry[name].partition(":")
    declared = getattr(importlib.import_module(module_name), attribute or default_attribute)
    if not isinstance(declared, declaration_type) or declared.name != name:
        raise TypeError(f"{registry[name]} does not declare the {kind} {name!r}.")
    return declared

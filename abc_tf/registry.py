"""Name -> declaration registries (data families, methods), found by convention: a package
under ``abc_tf/methods/`` or ``abc_tf/data/``, or a package that an installed distribution names
under an entry point group (``abc_tf.methods``, ``abc_tf.data``). Modules load on first use."""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
from typing import Any, Iterable, NamedTuple


def load(reference: str, default_attribute: str = "") -> Any:
    """What ``reference`` names, its module imported now: ``"module:ATTRIBUTE"``, or ``"module"``
    for its ``default_attribute``."""
    module_name, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module_name), attribute or default_attribute)


class Entry(NamedTuple):
    """A registry entry: ``declaration``, the ``"module:NAME"`` of the declaration (a method's
    ``Method``, a family's ``DataFamily``), which holds everything else: its config class, its
    presets and its code. ``package``: the package it was found as; "" for an entry a test adds
    by hand (a plain ``"module:NAME"`` string is one too)."""

    declaration: str
    package: str = ""


def discover(package: str, path: Iterable[str], group: str, declaration: str, kind: str) -> dict[str, Entry]:
    """{name: entry} of every package found: the subpackages of ``package`` (its ``path``), each
    named as its folder, and the packages named by the installed distributions' entry points of
    ``group`` (``name = module``), each named as its entry point. ``declaration`` is the
    ``"module:NAME"`` inside each package that declares it. Nothing is imported here: listing the
    names costs a folder scan and the distributions' metadata."""
    found = {info.name: f"{package}.{info.name}" for info in pkgutil.iter_modules(list(path)) if info.ispkg}
    for point in importlib.metadata.entry_points(group=group):
        where = (
            f"entry point {point.name!r} = {point.value!r} "
            f"of the distribution {point.dist.name if point.dist else '?'}"
        )
        if point.attr:
            raise ValueError(
                f"The {where} names {point.value!r}; a {kind} entry point names its package (no ':')."
            )
        if point.name in found:
            raise ValueError(
                f"The {where} is also the name of the {kind} in {found[point.name]}; rename the entry point."
            )
        found[point.name] = point.module
    module, _, attribute = declaration.partition(":")
    return {name: Entry(f"{where}.{module}:{attribute}", where) for name, where in sorted(found.items())}


# The classes a package declares itself with.
DECLARATION_TYPES = ("Method", "DataFamily")
# The section of docs/ARCHITECTURE.md that lists what a package of each kind declares.
GUIDE = {
    "method": 'docs/ARCHITECTURE.md, "Adding a method"',
    "data family": 'docs/ARCHITECTURE.md, "Adding a data family"',
}


class ContractError(ValueError):
    """A method or family package that misses part of its contract or declares another name:
    one line naming the package, what is wrong and where the contract is written."""


def _guide(kind: str) -> str:
    return f"see {GUIDE.get(kind, 'docs/ARCHITECTURE.md')}"


def load_declared(reference: str, kind: str, what: str, package: str = "") -> Any:
    """:func:`load`, with a :class:`ContractError` when the module or its attribute is missing
    (``what``: the attribute's role, e.g. "its Method declaration"; ``package``: the package the
    reference is part of, named in the message)."""
    module_name, _, attribute = reference.partition(":")
    package = package or module_name
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is None or not (module_name + ".").startswith(error.name + "."):
            raise  # a module the package itself imports is missing: its own traceback says which
        raise ContractError(
            f"The {kind} package {package} has no module {module_name} ({what}); {_guide(kind)}."
        ) from None
    except TypeError as error:
        # A declaration built with a field it does not have, or without one it needs: a package
        # written for another version of the contract (make_dataset= instead of streams=).
        if not any(f"{name}.__init__()" in str(error) for name in DECLARATION_TYPES):
            raise
        raise ContractError(
            f"The {kind} package {package}: {module_name}: {error}; {_guide(kind)}."
        ) from None
    if not hasattr(module, attribute):
        raise ContractError(
            f"The {kind} package {package}: {module_name} declares no {attribute} ({what}); {_guide(kind)}."
        )
    return getattr(module, attribute)


def resolve(registry: dict[str, Entry | str], name: str, kind: str, declaration_type: str) -> Any:
    """The declaration registered as ``name``; ValueError naming the known names,
    :class:`ContractError` for a package that declares none, another type or another name.

    ``declaration_type`` ("module:CLASS", the type every declaration must be) is named the same
    way and loaded with the first declaration, so importing a registry imports none of the
    modules it names.
    """
    entry = _entry(registry, name, kind)
    cls = load(declaration_type)
    reference = entry.declaration
    declared = load_declared(reference, kind, f"its {cls.__name__} declaration", entry.package)
    if not isinstance(declared, cls):
        raise ContractError(
            f"{reference} is a {type(declared).__name__}, not a {declaration_type}; {_guide(kind)}."
        )
    if declared.name != name:
        raise ContractError(
            f"{reference} declares the {kind} {declared.name!r}, but the package is found as {name!r} (its "
            f"folder or entry point name); make the two the same ({_guide(kind)})."
        )
    return declared


def _entry(registry: dict[str, Entry | str], name: str, kind: str) -> Entry:
    if name not in registry:
        raise ValueError(f"Unknown {kind} {name!r}; choose one of: {', '.join(sorted(registry))}.")
    value = registry[name]
    return Entry(value) if isinstance(value, str) else Entry(*value)

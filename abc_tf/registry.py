"""Name -> declaration registries (data families, methods), found by convention: a package
under ``abc_tf/methods/`` or ``abc_tf/data/``, or a package that an installed distribution names
under an entry point group (``abc_tf.methods``, ``abc_tf.data``). Modules load on first use."""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import os
import pkgutil
import traceback
import warnings
from typing import Any, Iterable, Iterator, NamedTuple


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
        # A bad entry point is skipped with one line: it breaks no other name.
        if point.attr:
            warnings.warn(
                f"The {where} names {point.value!r}; a {kind} entry point names a package (no ':')."
            )
        elif point.name in found:
            warnings.warn(f"The {where} is also the name of the {kind} in {found[point.name]}; rename it.")
        else:
            found[point.name] = point.module
    module, _, attribute = declaration.partition(":")
    return {name: Entry(f"{where}.{module}:{attribute}", where) for name, where in sorted(found.items())}


# The module of the installed package that shows the contract of each kind by example.
GUIDE = {"method": "abc_tf.examples.lab", "data family": "abc_tf.examples.squares"}


class ContractError(ValueError):
    """A method or family package that misses part of its contract or declares another name:
    one line naming the package, what is wrong and where the contract is written."""


@contextlib.contextmanager
def untraced() -> Iterator[None]:
    """A ContractError that a step's trace raised comes out as itself, not inside TensorFlow's
    "in user code" text (an error raised again by the trace keeps the first one as its context)."""
    try:
        yield
    except Exception as error:
        cause = error
        while cause is not None and not isinstance(cause, ContractError):
            cause = cause.__context__
        if cause is None:
            raise
        raise cause from None


def _guide(kind: str) -> str:
    return f"see {GUIDE.get(kind, 'abc_tf.examples')}"


def where(error: BaseException) -> str:
    """ "FILE:LINE: " of the innermost frame of ``error``'s traceback outside this package's own
    code (the user's line that raised it), or "" when every frame is the package's."""
    skipped = (
        os.path.dirname(os.path.abspath(__file__)) + os.sep,
        os.path.dirname(os.__file__) + os.sep,
        "<",
    )
    frames = [
        frame for frame in traceback.extract_tb(error.__traceback__) if not frame.filename.startswith(skipped)
    ]
    return f"{frames[-1].filename}:{frames[-1].lineno}: " if frames else ""


def import_failure(error: Exception, package: str, kind: str) -> ContractError:
    """One line for a package that raised ``error`` while it was imported: where, and what."""
    first = (str(error).strip().splitlines() or [""])[0]
    return ContractError(
        f"{where(error)}the {kind} package {package} failed to import: {type(error).__name__}: {first} "
        f"({_guide(kind)})."
    )


def package_presets(packages: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """({name: preset}, {package: why it could not be read}) of ``packages`` ({package: kind}).
    A package keeps its presets as plain data, ``PRESETS`` in its ``__init__.py``, so reading
    them imports that module alone, no TensorFlow, and a broken package loses only its own names."""
    found: dict[str, Any] = {}
    broken: dict[str, str] = {}
    for package, kind in sorted(packages.items()):
        try:
            declared = getattr(_imported(package, kind, "its presets", package), "PRESETS", {})
        except ContractError as error:
            broken[package] = str(error)
            continue
        for name, preset in declared.items():
            if name in found:
                raise ContractError(f"The preset {name!r} of {package} is declared twice; rename one.")
            found[name] = preset
    return found, broken


def _imported(module_name: str, kind: str, what: str, package: str) -> Any:
    """Module ``module_name`` of ``package``, imported; ContractError in one line when it fails."""
    try:
        return importlib.import_module(module_name)
    except ContractError:
        raise
    except Exception as error:  # noqa: BLE001 - the user's code raised it: one line naming where
        missing = error.name if isinstance(error, ModuleNotFoundError) else None
        if missing and package == missing:
            message = f"The {kind} package {package} is not installed (a typo in an entry point?)."
            raise ContractError(message) from None
        if missing and (module_name + ".").startswith(missing + "."):
            raise ContractError(
                f"The {kind} package {package} has no module {module_name} ({what}); {_guide(kind)}."
            ) from None
        raise import_failure(error, package, kind) from None


def load_declared(reference: str, kind: str, what: str, package: str = "") -> Any:
    """:func:`load`, with a :class:`ContractError` when the module or its attribute is missing
    (``what``: the attribute's role, e.g. "its Method declaration"; ``package``: the package the
    reference is part of, named in the message)."""
    module_name, _, attribute = reference.partition(":")
    package = package or module_name
    module = _imported(module_name, kind, what, package)
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
    unlisted = set(getattr(declared, "presets", None) or ()) - set(package_presets({entry.package: kind})[0])
    if entry.package and unlisted:
        raise ContractError(
            f"{reference} declares the presets {', '.join(sorted(unlisted))}, which are not in "
            f"{entry.package}'s PRESETS (its __init__.py, where presets are found); {_guide(kind)}."
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

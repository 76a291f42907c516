"""Name -> declaration registries (abc_tf.registry): modules load on first use, a wrong or
misnamed declaration is refused, and fields only other declarations read are found and refused."""

from __future__ import annotations

import dataclasses
import json
import sys

import pytest

from abc_tf import registry


@dataclasses.dataclass(frozen=True)
class Declared:
    name: str
    fields: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Settings:
    size: int = 1
    colour: str = ""
    speed: float = 0.0


# This module stands in for the modules a registry names.
PLAIN = Declared("plain", ("colour",))
FAST = Declared("fast", ("speed", "colour"))
MISNAMED = Declared("other")
NOT_A_DECLARATION = "plain"
REGISTRY = {
    "plain": __name__,
    "fast": f"{__name__}:FAST",
    "misnamed": f"{__name__}:MISNAMED",
    "wrong_type": f"{__name__}:NOT_A_DECLARATION",
    "missing": "no_such_module_anywhere",
}


def resolve(name: str):
    return registry.resolve(REGISTRY, name, "thing", f"{__name__}:Declared", "PLAIN")


def test_resolve_imports_the_named_module_and_takes_its_declaration():
    assert resolve("plain") is PLAIN  # "module": its default attribute
    assert resolve("fast") is FAST  # "module:ATTRIBUTE"
    assert sys.modules[__name__].FAST is FAST


def test_load_takes_the_named_attribute_or_the_default_one():
    assert registry.load(f"{__name__}:Declared") is Declared
    assert registry.load(__name__, "FAST") is FAST
    assert registry.load("json:dumps") is json.dumps


def test_resolve_refuses_unknown_names_and_wrong_declarations():
    with pytest.raises(ValueError, match="Unknown thing 'slow'; choose one of: fast, misnamed, missing, plain, wrong_type."):
        resolve("slow")
    with pytest.raises(TypeError, match=f"{__name__}:MISNAMED does not declare the thing 'misnamed'"):
        resolve("misnamed")
    with pytest.raises(TypeError, match="does not declare the thing 'wrong_type'"):
        resolve("wrong_type")
    with pytest.raises(ModuleNotFoundError):
        resolve("missing")


def test_unused_fields_are_those_only_other_declarations_read():
    declarations = [PLAIN, FAST]
    assert registry.unused_fields(declarations, PLAIN, ["size", "colour", "speed"]) == ["speed"]
    assert registry.unused_fields(declarations, FAST, ["size", "colour", "speed"]) == []
    assert registry.unused_fields(declarations, Declared("bare"), ["speed", "size", "colour"]) == ["speed", "colour"]


def test_stray_fields_are_refused_only_when_set_away_from_their_defaults():
    declarations = [PLAIN, FAST]
    registry.refuse_stray_fields(declarations, PLAIN, Settings(size=5, colour="red"), "thing 'plain'")
    registry.refuse_stray_fields(declarations, PLAIN, Settings(speed=0.0), "thing 'plain'")  # the default: fine
    with pytest.raises(ValueError, match="^speed=2.5: not read by thing 'plain'; leave it at its default.$"):
        registry.refuse_stray_fields(declarations, PLAIN, Settings(speed=2.5), "thing 'plain'")
    with pytest.raises(ValueError, match="^colour='red', speed=1.0: not read by thing 'bare'"):
        registry.refuse_stray_fields(declarations, Declared("bare"), Settings(colour="red", speed=1.0), "thing 'bare'")

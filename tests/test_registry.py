"""Name -> declaration registries (abc_tf.registry): an entry names a declaration and its config
class, modules load on first use, a wrong or misnamed declaration or config class is refused, and
a config class loads without its declaration (so it holds the only fields a name accepts)."""

from __future__ import annotations

import dataclasses
import json
import sys

import pytest

from abc_tf import registry


@dataclasses.dataclass(frozen=True)
class Declared:
    name: str


@dataclasses.dataclass(frozen=True)
class Settings:
    size: int = 1


@dataclasses.dataclass(frozen=True)
class PlainSettings(Settings):
    colour: str = ""


@dataclasses.dataclass(frozen=True)
class FastSettings(Settings):
    colour: str = ""
    speed: float = 0.0


# This module stands in for the modules a registry names.
PLAIN = Declared("plain")
FAST = Declared("fast")
MISNAMED = Declared("other")
NOT_A_DECLARATION = "plain"
REGISTRY = {
    "plain": registry.Entry(__name__, f"{__name__}:PlainSettings"),
    "fast": registry.Entry(f"{__name__}:FAST", f"{__name__}:FastSettings"),
    "misnamed": registry.Entry(f"{__name__}:MISNAMED", f"{__name__}:Settings"),
    "wrong_type": registry.Entry(f"{__name__}:NOT_A_DECLARATION", f"{__name__}:NOT_A_DECLARATION"),
    "not_settings": registry.Entry(__name__, f"{__name__}:Declared"),
    "missing": registry.Entry("no_such_module_anywhere", f"{__name__}:PlainSettings"),
    # Registered as a plain pair, as tests register their own entries (tests/conftest.py).
    "pair": (f"{__name__}:FAST", f"{__name__}:FastSettings"),
}


def resolve(name: str):
    return registry.resolve(REGISTRY, name, "thing", f"{__name__}:Declared", "PLAIN")


def config_class(name: str) -> type:
    return registry.config_class(REGISTRY, name, "thing", Settings)


def test_an_entry_names_the_declaration_and_its_config_class():
    entry = registry.Entry("module", "module:Config")
    assert entry.declaration == "module" and entry.config == "module:Config"
    assert entry == ("module", "module:Config", "") and registry.Entry(*("a", "a:B")) == registry.Entry(
        "a", "a:B"
    )


def test_resolve_imports_the_named_module_and_takes_its_declaration():
    assert resolve("plain") is PLAIN  # "module": its default attribute
    assert resolve("fast") is FAST  # "module:ATTRIBUTE"
    assert sys.modules[__name__].FAST is FAST


def test_resolve_takes_entries_registered_as_plain_pairs():
    with pytest.raises(
        registry.ContractError,
        match=f"{__name__}:FAST declares the thing 'fast', but the package is found as 'pair'",
    ):
        resolve("pair")  # the pair's declaration is read: FAST is named "fast", not "pair"
    assert config_class("pair") is FastSettings


def test_load_takes_the_named_attribute_or_the_default_one():
    assert registry.load(f"{__name__}:Declared") is Declared
    assert registry.load(__name__, "FAST") is FAST
    assert registry.load("json:dumps") is json.dumps


def test_resolve_refuses_unknown_names_and_wrong_declarations():
    known = "fast, misnamed, missing, not_settings, pair, plain, wrong_type"
    with pytest.raises(ValueError, match=f"^Unknown thing 'slow'; choose one of: {known}.$"):
        resolve("slow")
    # A plug-in's mistakes are one line each: the package, what is wrong, and the docs' section.
    with pytest.raises(
        registry.ContractError,
        match=f"^{__name__}:MISNAMED declares the thing '[a-z_]+', but the "
        "package is found as 'misnamed' \\(its folder or entry point name\\); make the two the same",
    ):
        resolve("misnamed")
    with pytest.raises(registry.ContractError, match=f"^{__name__}:NOT_A_DECLARATION is a [A-Za-z]+, not a "):
        resolve("wrong_type")
    with pytest.raises(
        registry.ContractError,
        match="^The thing package no_such_module_anywhere has no module no_such_module_anywhere "
        "\\(its Declared declaration\\); see docs/ARCHITECTURE.md.$",
    ):
        resolve("missing")
    with pytest.raises(
        registry.ContractError,
        match=f"^The thing package {__name__}: {__name__} declares no ABSENT \\(its Declared declaration\\)",
    ):
        registry.resolve(
            {"absent": registry.Entry(f"{__name__}:ABSENT", "")},
            "absent",
            "thing",
            f"{__name__}:Declared",
            "",
        )
    assert all("\n" not in str(error) for error in [registry.ContractError("one line")])


def test_config_class_is_loaded_without_the_declaration_and_holds_the_names_fields():
    assert config_class("plain") is PlainSettings and config_class("fast") is FastSettings
    # The config class of an entry loads without importing its declaration's module (train.py
    # builds its flags from config classes without loading TensorFlow).
    assert config_class("missing") is PlainSettings and "no_such_module_anywhere" not in sys.modules
    # A field only another entry's config class declares cannot be set on this one.
    assert dataclasses.replace(config_class("fast")(), speed=2.5).speed == 2.5
    with pytest.raises(TypeError, match="speed"):
        dataclasses.replace(config_class("plain")(), speed=2.5)
    assert [f.name for f in dataclasses.fields(config_class("plain"))] == ["size", "colour"]


def test_config_class_refuses_unknown_names_and_classes_of_another_base():
    with pytest.raises(ValueError, match="^Unknown thing 'slow'; choose one of: "):
        config_class("slow")
    with pytest.raises(
        registry.ContractError,
        match=f"^{__name__}:Declared is not a Settings \\(the config class of thing 'not_settings'\\); see ",
    ):
        config_class("not_settings")
    with pytest.raises(
        registry.ContractError,
        match=f"^{__name__}:NOT_A_DECLARATION is not a Settings \\(the config class of thing 'wrong_type'\\)",
    ):
        config_class("wrong_type")
    with pytest.raises(registry.ContractError, match="is not a Settings"):
        registry.config_class({"pair": ("m", f"{__name__}:Declared")}, "pair", "thing", Settings)

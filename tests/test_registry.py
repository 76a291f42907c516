"""Name -> declaration registries (abc_tf.registry): an entry names a declaration, modules load
on first use, and a wrong, missing or misnamed declaration is refused in one line naming the
package, what is wrong and the docs' section."""

from __future__ import annotations

import dataclasses
import json
import sys

import pytest

from abc_tf import registry


@dataclasses.dataclass(frozen=True)
class Declared:
    name: str


# This module stands in for the modules a registry names.
PLAIN = Declared("plain")
FAST = Declared("fast")
MISNAMED = Declared("other")
NOT_A_DECLARATION = "plain"
REGISTRY = {
    "plain": registry.Entry(f"{__name__}:PLAIN"),
    "fast": registry.Entry(f"{__name__}:FAST", "a_package"),
    "misnamed": registry.Entry(f"{__name__}:MISNAMED"),
    "wrong_type": registry.Entry(f"{__name__}:NOT_A_DECLARATION"),
    "missing": registry.Entry("no_such_module_anywhere:PLAIN"),
    "absent": registry.Entry(f"{__name__}:ABSENT"),
    # Registered as a plain string, as tests register their own entries (tests/conftest.py).
    "string": f"{__name__}:FAST",
}


def resolve(name: str):
    return registry.resolve(REGISTRY, name, "thing", f"{__name__}:Declared")


def test_an_entry_names_the_declaration_and_the_package_it_was_found_as():
    entry = registry.Entry("module:NAME", "package")
    assert entry.declaration == "module:NAME" and entry.package == "package"
    assert registry.Entry("module:NAME") == ("module:NAME", "")


def test_resolve_imports_the_named_module_and_takes_its_declaration():
    assert resolve("plain") is PLAIN and resolve("fast") is FAST
    assert sys.modules[__name__].FAST is FAST


def test_resolve_takes_entries_registered_as_plain_strings():
    with pytest.raises(
        registry.ContractError,
        match=f"{__name__}:FAST declares the thing 'fast', but the package is found as 'string'",
    ):
        resolve("string")  # the string's declaration is read: FAST is named "fast", not "string"


def test_load_takes_the_named_attribute_or_the_default_one():
    assert registry.load(f"{__name__}:Declared") is Declared
    assert registry.load(__name__, "FAST") is FAST
    assert registry.load("json:dumps") is json.dumps


def test_resolve_refuses_unknown_names_and_wrong_declarations():
    known = "absent, fast, misnamed, missing, plain, string, wrong_type"
    with pytest.raises(ValueError, match=f"^Unknown thing 'slow'; choose one of: {known}.$"):
        resolve("slow")
    # A plug-in's mistakes are one line each: the package, what is wrong, and the docs' section.
    with pytest.raises(
        registry.ContractError,
        match=f"^{__name__}:MISNAMED declares the thing 'other', but the "
        "package is found as 'misnamed' \\(its folder or entry point name\\); make the two the same",
    ):
        resolve("misnamed")
    with pytest.raises(registry.ContractError, match=f"^{__name__}:NOT_A_DECLARATION is a str, not a "):
        resolve("wrong_type")
    with pytest.raises(
        registry.ContractError,
        match=r"^The thing package no_such_module_anywhere is not installed \(a typo in an entry point\?\).$",
    ):
        resolve("missing")
    with pytest.raises(
        registry.ContractError,
        match=f"^The thing package {__name__}: {__name__} declares no ABSENT \\(its Declared declaration\\)",
    ):
        resolve("absent")


def test_a_declaration_built_for_another_version_of_the_contract_is_one_line(tmp_path, monkeypatch):
    package = tmp_path / "old_family"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "family.py").write_text(
        "from abc_tf.data.family import DataFamily\n"
        "FAMILY = DataFamily(name='old', image_shape=None, make_dataset=None)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        registry.ContractError,
        match=f"^{package / 'family.py'}:2: the data family package old_family failed to import: "
        r"TypeError: DataFamily.__init__\(\) got an unexpected keyword argument 'make_dataset' "
        r"\(see abc_tf.examples.squares\).$",
    ):
        registry.resolve(
            {"old": registry.Entry("old_family.family:FAMILY", "old_family")},
            "old",
            "data family",
            "abc_tf.data.family:DataFamily",
        )

"""``abc_tf check`` (abc_tf.cli.check): its refusals, answered before TensorFlow loads, and its
one line per failed check. The checks themselves, on a built-in method and on plug-ins:
tests/test_contract.py."""

from __future__ import annotations

import pytest

from abc_tf import cli, command_line
from abc_tf.cli import check


@pytest.fixture
def abc_tf_check(monkeypatch, capsys):
    """``abc_tf check FLAGS...`` in this process: (exit status, stdout, stderr)."""
    monkeypatch.setattr(command_line, "INVOCATION", command_line.INVOCATION)  # cli.main sets it

    def run(*flags: str) -> tuple[int, str, str]:
        code = cli.main(["abc_tf", "check", *flags])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def test_an_unknown_method_is_one_line_naming_the_known_ones(abc_tf_check):
    code, out, err = abc_tf_check("--method=nope")
    assert code == 2 and out == ""
    assert err.startswith("abc_tf check: error: Unknown method 'nope'; choose one of: abc, ")
    assert err.count("\n") == 1 and "vae" in err


def test_without_a_name_every_family_and_method_is_one_line(abc_tf_check, monkeypatch):
    from abc_tf import data, methods, registry

    monkeypatch.setattr(
        data, "DATA_FAMILIES", {name: data.DATA_FAMILIES[name] for name in ("folders", "squares")}
    )
    broken = registry.Entry("abc_nowhere.model:METHOD", "abc_nowhere")  # an entry point's typo
    monkeypatch.setattr(methods, "METHODS", {**methods.METHODS, "zz_typo": broken})
    code, out, _ = abc_tf_check()
    lines = out.splitlines()
    assert code == 1 and lines[:2] == [
        "SKIP --data=folders: no built-in data (a run names its files: --data.path)",
        "PASS --data=squares: the labelled sample: 4096 distinct images, labels position, background",
    ]
    assert "PASS --method=lab: smallest run lab_smoke" in lines and lines[-2:] == [
        "FAIL --method=zz_typo: The method package abc_nowhere is not installed (a typo in an entry point?).",
        "abc_tf check --method=NAME trains a method's smallest run; 1 failed.",
    ]


def test_a_used_work_folder_is_refused(abc_tf_check, tmp_path):
    (tmp_path / "old.log").write_text("")
    code, _, err = abc_tf_check("--method=vae", f"--work_dir={tmp_path}")
    assert (code, err) == (
        2,
        f"abc_tf check: error: --work_dir={tmp_path} is not empty; name a new or empty folder.\n",
    )


def test_a_failure_is_one_line_and_a_bug_is_named_by_its_type():
    assert check.one_line(AssertionError("trained 2 of its 4 steps.\nmore"), "w/trains.log") == (
        "trained 2 of its 4 steps. (log: w/trains.log)"
    )
    assert check.one_line(KeyError("encoder"), "w/trains.log") == "KeyError: 'encoder' (log: w/trains.log)"
    assert check.one_line(AssertionError(), "w/x.log") == "AssertionError (log: w/x.log)"


def test_the_checks_are_the_contract_s():
    from abc_tf.evaluation import contract

    assert all(callable(getattr(contract, name)) for name in check.CHECKS)

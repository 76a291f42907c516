"""The ``abc_tf`` command (abc_tf.cli): its usage, an unknown command, and each command reached by
its name, in this process and as ``python -m abc_tf`` (the installed form: tests/test_install.py)."""

from __future__ import annotations

import sys

import pytest

from abc_tf import cli, command_line
from process_helpers import run_code


def test_usage_lists_the_commands(capsys):
    assert cli.main(["abc_tf", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: abc_tf <command> [flags]") and all(
        f"  {name} " in out for name in cli.COMMANDS
    )
    assert cli.main(["abc_tf"]) == 2
    assert capsys.readouterr().err.startswith("usage: abc_tf <command> [flags]")


def test_an_unknown_command_is_one_line(capsys):
    assert cli.main(["abc_tf", "fit"]) == 2
    assert capsys.readouterr().err == (
        "abc_tf: error: unknown command 'fit'; commands: train, evaluate, curves, compare, grid, check, "
        "flags (abc_tf --help).\n"
    )


def test_a_command_speaks_in_the_user_s_words(capsys, monkeypatch):
    monkeypatch.setattr(command_line, "INVOCATION", "script")
    assert (command_line.program("train"), command_line.command("evaluate")) == (
        "train.py",
        "python evaluate.py",
    )
    assert cli.main(["abc_tf", "grid", "--experiment=shapes3d_demo", "--measure=metrics.json:a"]) == 2
    assert capsys.readouterr().err.startswith("abc_tf grid: error: --vary: name at least one field to vary")
    assert (command_line.program("train"), command_line.command("evaluate")) == (
        "abc_tf train",
        "abc_tf evaluate",
    )


@pytest.mark.parametrize("name", ["train", "evaluate", "grid", "check"])
def test_the_encoder_part_s_old_flag_names_are_one_line_naming_the_new_ones(name, capsys, monkeypatch):
    """``--model`` and ``--model.<field>``, the encoder part's flags before the rename, exit 2
    with one line before the command does anything; a command other than train names train's."""
    monkeypatch.setattr(command_line, "INVOCATION", command_line.INVOCATION)  # cli.main sets it
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # train's command line sets it
    assert cli.main(["abc_tf", name, "--trainer.steps=3", "--model.embedding_dim=8"]) == 2
    captured = capsys.readouterr()
    renamed = "--model.embedding_dim was renamed --encoder.embedding_dim"
    assert (captured.out, captured.err) == (
        "",
        f"abc_tf {name}: error: {renamed}"
        + (
            "; write --encoder.embedding_dim=8.\n"
            if name == "train"
            else f", a flag of abc_tf train, not of abc_tf {name}.\n"
        ),
    )
    assert cli.main(["abc_tf", name, "--model=s4", "--help"]) == 2
    assert capsys.readouterr().err.startswith(f"abc_tf {name}: error: --model was renamed --encoder")


@pytest.mark.slow
def test_python_m_abc_tf_runs_a_command():
    done = run_code(
        "import sys, runpy; sys.argv = ['abc_tf', 'train', '--trainer.steps=x']; "
        "runpy.run_module('abc_tf', run_name='__main__')"
    )
    assert done.returncode == 2 and done.stderr.strip().endswith(
        "abc_tf train: error: --trainer.steps=x is not an integer."
    )

"""abc_tf.command_line: absl's flag-parsing errors, as absl words them, in the project's words."""

from __future__ import annotations

import warnings

import pytest
from absl import flags

from abc_tf import command_line


def parse_error(*arguments: str) -> str:
    """absl's own message for ``arguments`` on flags of each type."""
    values = flags.FlagValues()
    flags.DEFINE_integer("trainer.steps", None, "", flag_values=values)
    flags.DEFINE_float("trainer.learning_rate", None, "", flag_values=values)
    flags.DEFINE_boolean("trainer.jit_compile", None, "", flag_values=values)
    with pytest.raises(flags.Error) as error:
        values(["train.py", *arguments])
    return str(error.value)


@pytest.mark.parametrize("argument,message", [
    ("--trainer.steps=ten", "--trainer.steps=ten is not an integer."),
    ("--trainer.steps=1e3", "--trainer.steps=1e3 is not an integer; write it in digits: --trainer.steps=1000."),
    ("--trainer.steps=2.5", "--trainer.steps=2.5 is not an integer."),
    ("--trainer.learning_rate=fast", "--trainer.learning_rate=fast is not a number."),
    ("--trainer.jit_compile=garbage", "--trainer.jit_compile=garbage is not true or false; pass --trainer.jit_compile, "
                                      "--notrainer.jit_compile, --trainer.jit_compile=true or --trainer.jit_compile=false."),
    ("--trainer.step=3", "Unknown command line flag 'trainer.step'. Did you mean: trainer.steps ? (--help lists the flags)."),
    ("--trainer.steps", "Missing value for flag --trainer.steps (--help lists the flags)."),
])
def test_each_absl_error_becomes_one_line_naming_the_flag(argument, message):
    assert command_line.describe_flag_error(parse_error(argument)) == message


def test_the_packages_warnings_are_one_line_and_others_keep_their_place(monkeypatch):
    monkeypatch.setattr(warnings, "formatwarning", warnings.formatwarning)
    command_line.plain_warnings("train.py")
    ours = warnings.formatwarning("Checkpoint ckpt-10 is skipped", UserWarning, command_line.__file__, 12)
    assert ours == "train.py: warning: Checkpoint ckpt-10 is skipped\n"
    theirs = warnings.formatwarning("deprecated", DeprecationWarning, "/usr/lib/python3/keras/ops.py", 7, line="x = 1")
    assert theirs.startswith("/usr/lib/python3/keras/ops.py:7: DeprecationWarning: deprecated")

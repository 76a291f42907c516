"""``abc_tf flags`` (abc_tf.cli.flags): the flags page's Markdown, whole (docs/FLAGS.md:
tests/test_flags_page.py) or for one method's or data family's package, a plug-in's too."""

from __future__ import annotations

import pytest

from abc_tf import cli, command_line
from abc_tf.cli import flags


@pytest.fixture
def abc_tf_flags(monkeypatch, capsys):
    """``abc_tf flags FLAGS...`` in this process: (exit status, stdout, stderr)."""
    monkeypatch.setattr(command_line, "INVOCATION", command_line.INVOCATION)  # cli.main sets it

    def run(*arguments: str) -> tuple[int, str, str]:
        code = cli.main(["abc_tf", "flags", *arguments])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def test_a_method_s_section_lists_its_flags_and_presets(abc_tf_flags):
    code, out, err = abc_tf_flags("--method=abc")
    assert (code, err) == (0, "")
    assert (
        out.startswith("### `--method=abc` (trains on sets)\n")
        and "| `--method.temperature` | `1.0` |" in out
    )
    assert "Its presets:" in out and "| `shapes3d_demo` | shapes3d | abc | s3 |" in out
    # The same section as the whole page's.
    assert "\n".join(flags.method_section("abc")) in flags.page()


def test_a_family_s_section_and_a_method_s_together(abc_tf_flags):
    code, out, _ = abc_tf_flags("--method=vae", "--data=mnist")
    assert code == 0 and out.index("`--method=vae`") < out.index("### `--data=mnist`")
    assert "`--data.holdout_digit`" in out and "`--method.latent_dim`" in out


def test_an_unknown_name_is_one_line(abc_tf_flags):
    code, out, err = abc_tf_flags("--data=nope")
    assert (code, out) == (2, "")
    assert (
        err.startswith("abc_tf flags: error: Unknown data family 'nope'; choose one of: ")
        and err.count("\n") == 1
    )


def test_a_table_cell_keeps_its_pipes_and_lines_inside():
    assert flags.cell("a|b\nc") == "a\\|b c"
    assert [flags.default_value(value) for value in (True, "", 3)] == ["true", '`""`', "`3`"]

"""Writes docs/FLAGS.md from the configs themselves: every preset with what it trains, and every
field of every part (trainer, batch, model, each data family's, each method's) with its default
and its help text, so the page cannot drift from the code. ``tests/test_flags_page.py`` fails
when the committed page differs from what this writes.

  python -m scripts.flags_page            # rewrite docs/FLAGS.md
  python -m scripts.flags_page --check    # exit 1 when docs/FLAGS.md is out of date
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from abc_tf import config as config_lib
from abc_tf import data, methods
from abc_tf.runs import experiments

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "FLAGS.md")


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _default(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"`{value}`" if value != "" else '`""`'


def _fields(part: type[config_lib.Part], part_name: str) -> list[str]:
    rows = ["| flag | class default | meaning |", "|---|---|---|"]
    for field in dataclasses.fields(part):
        if field.name == config_lib.SELECTORS.get(part_name):
            continue
        rows.append(
            f"| `--{part_name}.{field.name}` | {_default(field.default)} | {_cell(field.metadata['help'])} |"
        )
    return rows


def _first_line(cls: type) -> str:
    return (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""


def page() -> str:
    """The page's Markdown."""
    lines = [
        "# Presets and flags",
        "",
        "Written by `python -m scripts.flags_page` from the config classes (`abc_tf/config.py`, each data",
        "family's and method's package, its `CONFIG`); do not edit by hand. "
        "`python train.py --experiment=X --help`",
        "lists the same flags for one preset. A flag left out keeps the preset's value; the presets' own",
        "values and the papers' sources for them are in the method packages "
        "(`abc_tf/methods/<name>/__init__.py`).",
        "",
        "## Presets",
        "",
        "| `--experiment` | data | method | model | steps | batch |",
        "|---|---|---|---|---|---|",
    ]
    for name, preset in sorted(experiments.presets().items()):
        model = preset.model.architecture if preset.model else "its own"
        batch = ", ".join(f"{field}={getattr(preset.batch, field)}" for field in preset.batch.field_names())
        lines.append(
            f"| `{name}` | {preset.data.family} | {preset.method.name} | {model} "
            f"| {preset.trainer.steps:,} | {_cell(batch)} |"
        )
    lines += ["", "## Every run", "", f"### trainer ({_first_line(config_lib.TrainerConfig)})", ""]
    lines += _fields(config_lib.TrainerConfig, "trainer")
    for batch_class in config_lib.BATCH_CONFIGS.values():
        lines += ["", f"### batch, `{batch_class.format}` ({_first_line(batch_class)})", ""]
        lines += _fields(batch_class, "batch")
    lines += ["", f"### model ({_first_line(config_lib.EncoderConfig)})", ""]
    lines += _fields(config_lib.EncoderConfig, "model")
    lines += ["", "## Data families (`--data`)", ""]
    for family in sorted(data.DATA_FAMILIES):
        lines += (
            [f"### `--data={family}`", ""] + _fields(experiments.data_config_class(family), "data") + [""]
        )
    lines += ["## Methods (`--method`)", ""]
    for method in sorted(methods.METHODS):
        cls = experiments.method_config_class(method)
        what = f"trains on {cls.batch_format}" + (
            "" if cls.has_model_part else "; its networks are its own (no `--model`)"
        )
        lines += [f"### `--method={method}` ({what})", ""] + _fields(cls, "method") + [""]
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/FLAGS.md is out of date")
    arguments = parser.parse_args()
    text = page()
    if arguments.check:
        with open(PAGE, encoding="utf-8") as handle:
            current = handle.read()
        if current != text:
            print("docs/FLAGS.md is out of date: run python -m scripts.flags_page", file=sys.stderr)
            sys.exit(1)
        return
    with open(PAGE, "w", encoding="utf-8") as handle:
        handle.write(text)
    print(f"Wrote {PAGE}")


if __name__ == "__main__":
    main()

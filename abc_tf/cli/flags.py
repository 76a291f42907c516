"""Prints the flags page in Markdown, from the config classes themselves: every preset with what
it trains, and every field of every part with its default and its help text, so the page
cannot drift from the code. docs/FLAGS.md is this page (``python -m scripts.flags_page``).

  abc_tf flags                          # the whole page: every method and data family installed
  abc_tf flags --method=my_method       # one method's section: its --method.* flags, its presets
  abc_tf flags --data=my_family         # one data family's section: its --data.* flags, its presets

A plug-in's author writes its package's page with ``--method`` or ``--data`` (both may be given).
Exit status 2 with one line for an unknown method or family.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings

from absl import flags

from abc_tf import command_line
from abc_tf import config as config_lib
from abc_tf import data, methods, registry
from abc_tf.runs import experiments

FLAGS = flags.FlagValues()
flags.DEFINE_string("method", None, "Print this method's section only (a --method value).", flag_values=FLAGS)
flags.DEFINE_string(
    "data", None, "Print this data family's section only (a --data value).", flag_values=FLAGS
)


def cell(text: str) -> str:
    """``text`` as one Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def default_value(value) -> str:
    """A field's default as the page writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"`{value}`" if value != "" else '`""`'


def fields_table(part: type[config_lib.Part], part_name: str) -> list[str]:
    """The table of ``part``'s fields: flag, class default, meaning (its selector left out)."""
    rows = ["| flag | class default | meaning |", "|---|---|---|"]
    for field in dataclasses.fields(part):
        if field.name == config_lib.SELECTORS.get(part_name):
            continue
        meaning = cell(field.metadata["help"])
        rows.append(f"| `--{part_name}.{field.name}` | {default_value(field.default)} | {meaning} |")
    return rows


def first_line(cls: type) -> str:
    return (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""


def presets_table(presets: dict[str, config_lib.ExperimentConfig]) -> list[str]:
    """The table of ``presets``: what each trains, for how long, on which batches."""
    lines = ["| `--experiment` | data | method | encoder | steps | batch |", "|---|---|---|---|---|---|"]
    for name, preset in sorted(presets.items()):
        encoder = preset.encoder.architecture if preset.encoder else "its own"
        batch = ", ".join(f"{field}={getattr(preset.batch, field)}" for field in preset.batch.field_names())
        lines.append(
            f"| `{name}` | {preset.data.family} | {preset.method.name} | {encoder} "
            f"| {preset.trainer.steps:,} | {cell(batch)} |"
        )
    return lines


def data_section(family: str) -> list[str]:
    """The section of data family ``family``: its ``--data.*`` flags."""
    return [f"### `--data={family}`", ""] + fields_table(experiments.data_config_class(family), "data")


def method_section(method: str) -> list[str]:
    """The section of method ``method``: the batches it trains on and its ``--method.*`` flags."""
    cls = experiments.method_config_class(method)
    what = f"trains on {cls.batch_format}" + (
        "" if cls.has_encoder_part else "; its networks are its own (no `--encoder`)"
    )
    return [f"### `--method={method}` ({what})", ""] + fields_table(cls, "method")


def page() -> str:
    """The whole page's Markdown (docs/FLAGS.md)."""
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
        *presets_table(experiments.presets()),
    ]
    lines += ["", "## Every run", "", f"### trainer ({first_line(config_lib.TrainerConfig)})", ""]
    lines += fields_table(config_lib.TrainerConfig, "trainer")
    for batch_class in config_lib.BATCH_CONFIGS.values():
        lines += ["", f"### batch, `{batch_class.format}` ({first_line(batch_class)})", ""]
        lines += fields_table(batch_class, "batch")
    lines += ["", f"### encoder ({first_line(config_lib.EncoderConfig)})", ""]
    lines += fields_table(config_lib.EncoderConfig, "encoder")
    lines += ["", "## Data families (`--data`)", ""]
    lines += [line for family in sorted(data.DATA_FAMILIES) for line in _listed(data_section, family)]
    lines += ["## Methods (`--method`)", ""]
    lines += [line for method in sorted(methods.METHODS) for line in _listed(method_section, method)]
    return "\n".join(lines).rstrip() + "\n"


def _listed(section, name: str) -> list[str]:
    """``section(name)``, or nothing and one warning for a package that cannot be loaded: a broken
    plug-in costs its own section, and the listing goes on."""
    try:
        return section(name) + [""]
    except registry.ContractError as error:
        warnings.warn(str(error), stacklevel=2)
        return []


def declaration_page(method: str | None = None, family: str | None = None) -> str:
    """The sections of ``method`` and of data family ``family`` (either may be None), each with
    the presets its declaration adds: a plug-in package's page. ValueError naming the known ones."""
    lines: list[str] = []
    for declaration, section in (
        (methods.get_method(method) if method else None, method_section),
        (data.get_family(family) if family else None, data_section),
    ):
        if declaration is None:
            continue
        lines += section(declaration.name) + [""]
        if declaration.presets:
            lines += ["Its presets:", "", *presets_table(declaration.presets), ""]
    return "\n".join(lines).rstrip() + "\n"


def main(rest: list[str]) -> int:
    """Prints the page, or the sections the flags name: 0, or 2 with one line for a bad name."""
    try:
        if len(rest) > 1:
            raise ValueError(f"unexpected arguments: {' '.join(rest[1:])} (flags are written --name=value).")
        command_line.quiet_tensorflow_start()  # a declaration loads its package, TensorFlow with it
        with warnings.catch_warnings():
            warnings.simplefilter("once", UserWarning)  # a broken package: its presets', its section's
            text = declaration_page(FLAGS.method, FLAGS.data) if FLAGS.method or FLAGS.data else page()
    except ValueError as error:
        print(f"{command_line.program('flags')}: error: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


def command(argv: list[str]) -> int:
    """The command line ``argv``: :func:`main`'s exit status, or 2 for a flag absl refuses.
    The flags are reset afterwards."""
    return command_line.run_program(command_line.program("flags"), __doc__, FLAGS, argv, main)

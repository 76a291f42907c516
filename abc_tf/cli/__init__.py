"""The ``abc_tf`` command that ``pip install`` puts on the PATH: ``abc_tf <command> [flags]``.

  abc_tf train --experiment=shapes3d_demo --output_dir=runs/demo
  abc_tf evaluate --run_dir=runs/demo
  abc_tf compare --runs=runs/demo,runs/other --output_dir=runs/comparison
  abc_tf grid --experiment=pose_quick --vary=trainer.learning_rate=3e-4,1e-3 --measure=...
  abc_tf check --method=my_method

``python -m abc_tf <command>`` is the same, and so are ``train.py``, ``evaluate.py``,
``curves.py``, ``compare.py`` and ``grid.py`` in a checkout of the repository. Paths
(``runs/<experiment>`` by default) are relative to the current folder. ``abc_tf <command>
--help`` lists the command's flags.
"""

from __future__ import annotations

import importlib
import sys

from abc_tf import command_line

# Each command's module has ``command(argv) -> exit status``; loaded only when chosen.
COMMANDS = {
    "train": ("abc_tf.cli.train", "train a preset of any method and data family into a run directory"),
    "evaluate": ("abc_tf.cli.evaluate", "measure what a trained run learned, into metrics.json and figures"),
    "curves": ("abc_tf.cli.curves", "evaluate a run's checkpoints: each measure against the training step"),
    "compare": ("abc_tf.cli.compare", "compare runs of any methods side by side on one labelled sample"),
    "grid": ("abc_tf.cli.grid", "tune a preset: train and evaluate every point of a grid, pick the best"),
    "check": (
        "abc_tf.cli.check",
        "check a method (a plug-in's too) against the contract the built-in ones pass",
    ),
    "flags": (
        "abc_tf.cli.flags",
        "print the flags page in Markdown, or one method's or data family's section",
    ),
}


def usage() -> str:
    listed = "\n".join(f"  {name:9s} {summary}" for name, (_, summary) in COMMANDS.items())
    return (
        f"usage: abc_tf <command> [flags]\n\nCommands:\n{listed}\n\nabc_tf <command> --help lists its flags."
    )


def main(argv: list[str] | None = None) -> int:
    """Runs ``abc_tf <command> ...`` (``argv``, default ``sys.argv``): the command's exit status."""
    argv = list(sys.argv if argv is None else argv)
    if len(argv) < 2:
        print(usage(), file=sys.stderr)
        return 2
    if argv[1] in command_line.HELP_FLAGS:
        print(usage())
        return 0
    name = argv[1]
    if name not in COMMANDS:
        print(
            f"abc_tf: error: unknown command {name!r}; commands: {', '.join(COMMANDS)} (abc_tf --help).",
            file=sys.stderr,
        )
        return 2
    command_line.INVOCATION = "abc_tf"
    command_line.plain_warnings(f"abc_tf {name}")  # before the registries look for plug-ins
    module = importlib.import_module(COMMANDS[name][0])
    return module.command([f"abc_tf {name}", *argv[2:]])

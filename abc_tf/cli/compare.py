"""Compares trained runs of any methods side by side, on one labelled sample.

  abc_tf compare --runs=runs/abc,runs/pmp --untrained --output_dir=runs/comparison

(``python compare.py ...`` in a checkout is the same command.) Each of ``--runs`` is one row: a
run directory, or a folder of ``seed_<k>`` runs (its seeds aggregated to mean and std).
``DIR+DIR+...`` is one row of several runs, e.g. one per class split. ``DIR@NETWORK`` embeds with
the run's saved network NETWORK instead of its encoder, e.g. a VITAE's appearance.
``--untrained`` adds a row for the untrained encoder of the first run's config.
Every row is measured on the first run's labelled sample: MINE and probes per factor (noise at
the method's length scale, or 0.1 x the spread of a code without one), 1-NN accuracy and k-means
NMI, the disentanglement scores and each method's own measures (abc_tf.evaluation.comparison).
The tables go to comparison.md, comparison.json and comparison.png in ``--output_dir``, and are
printed. No TensorBoard logs are written.
"""

from __future__ import annotations

import sys

from absl import app, flags

from abc_tf import command_line
from abc_tf.cli import measure_flags

FLAGS = flags.FlagValues()
flags.DEFINE_list(
    "runs",
    None,
    "The rows, separated by commas: run directories of any methods (a folder of seed_<k> runs is one row, "
    "and so is DIR+DIR+...; DIR@NETWORK embeds with the run's network NETWORK).",
    flag_values=FLAGS,
)
flags.DEFINE_boolean(
    "untrained", False, "Add a row for the untrained encoder of the first run's config.", flag_values=FLAGS
)
flags.DEFINE_string(
    "output_dir", None, "Where comparison.md, comparison.json and comparison.png go.", flag_values=FLAGS
)
measure_flags.define(FLAGS, per_run=False)


def main(argv: list[str]) -> None:
    """Compares the rows the parsed flags name; exit status 2 with one line for a bad setting."""
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
    command_line.quiet_tensorflow_start()  # the first screen is the project's own
    try:
        if not FLAGS.runs:
            raise ValueError("Pass --runs=DIR,DIR,... (the run directories to compare).")
        if not (FLAGS.output_dir or "").strip():
            raise ValueError("Pass --output_dir (where comparison.md, .json and .png go).")
        settings = measure_flags.comparison_settings(FLAGS)  # checked before any run is evaluated
        from abc_tf.evaluation import comparison, comparison_report, progress
        from abc_tf.runs.run_dir import check_writable

        check_writable(FLAGS.output_dir, "--output_dir")
        with progress.reported():  # progress lines, then the files written
            result = comparison.compare(FLAGS.runs, FLAGS.output_dir, settings, untrained=FLAGS.untrained)
            print(comparison_report.markdown(result))
    except ValueError as error:
        print(f"{command_line.program('compare')}: error: {error}", file=sys.stderr)
        sys.exit(2)


def command(argv: list[str]) -> int:
    """The command line ``argv`` (``argv[0]`` the program): parses it into :data:`FLAGS`, compares,
    and returns the exit status: 0, or 2 with one ``error:`` line for a bad flag or setting.
    The flags are reset afterwards, so one process may call it again."""
    return command_line.run_program(command_line.program("compare"), __doc__, FLAGS, argv, main)

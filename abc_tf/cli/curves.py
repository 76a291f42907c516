"""Learning curves: evaluates a run's checkpoints and draws each measure against the step.

  abc_tf curves --run_dir=runs/pmp --checkpoints=all --mine_steps=0
  abc_tf curves --run_dir=runs/vae --checkpoints=2000,5000 "--curve_reference=test ELBO=-169"

(``python curves.py ...`` in a checkout is the same command.) ``--checkpoints`` chooses them:
all, last, or steps separated by commas; train with a larger --trainer.keep_checkpoints to keep
more. Each is evaluated as ``abc_tf evaluate`` evaluates a run, into
``<output_dir>/checkpoints/step_<S>/``. The curve goes to curve.json and curve.png, with each
``--curve_reference`` as a dashed line (abc_tf.evaluation.learning_curves). A run still training
can be read: its listed checkpoints are complete. For seeds, pass one ``seed_<k>`` folder.
No TensorBoard logs are written.
"""

from __future__ import annotations

import os
import sys

from absl import app, flags

from abc_tf import command_line
from abc_tf.cli import measure_flags

FLAGS = flags.FlagValues()
flags.DEFINE_string(
    "run_dir",
    None,
    "Run directory written by train.py, of one run (for seeds, one seed_<k>).",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "checkpoints",
    None,
    "The checkpoints to evaluate: all, last, or steps separated by commas.",
    flag_values=FLAGS,
)
flags.DEFINE_multi_string(
    "curve_reference",
    [],
    "A paper's value drawn as a dashed line, MEASURE=VALUE (e.g. 'NMI (code vs digit)=0.889'; repeat the "
    "flag for several); MEASURE is a name of curve.json's measures.",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "output_dir",
    None,
    "Where the checkpoints' measures and the curve go (default: the run directory).",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "config", None, "config.json of the run (default: run_dir/config.json).", flag_values=FLAGS
)
flags.DEFINE_string(
    "network",
    "encoder",
    "The run's saved network to embed with: encoder, or another the method keeps "
    "(e.g. a VITAE's appearance).",
    flag_values=FLAGS,
)
measure_flags.define(FLAGS)


def main(argv: list[str]) -> None:
    """Evaluates the checkpoints the parsed flags name; exit status 2 with one line for a bad setting."""
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
    command_line.quiet_tensorflow_start()  # the first screen is the project's own
    try:
        measure_flags.check_folders_named(FLAGS, ("output_dir", "run_dir"))
        if not FLAGS.run_dir:
            raise ValueError("Pass --run_dir (a train.py run directory).")
        if not FLAGS.checkpoints:
            raise ValueError("Pass --checkpoints: all, last, or steps separated by commas.")
        from abc_tf.evaluation import learning_curves, progress
        from abc_tf.evaluation.tasks.checkpoint_curves import evaluate_checkpoints
        from abc_tf.runs.run_dir import check_writable, seed_run_dirs

        if not os.path.isdir(FLAGS.run_dir):
            raise ValueError(f"--run_dir={FLAGS.run_dir} is not a directory.")
        if seed_run_dirs(FLAGS.run_dir):
            raise ValueError(
                f"--run_dir={FLAGS.run_dir} holds seed_<k> runs; a curve is of one run: "
                "pass one seed_<k> folder."
            )
        settings = measure_flags.evaluation_settings(FLAGS)  # checked before any checkpoint is evaluated
        references = learning_curves.parse_references(FLAGS.curve_reference)
        out_dir = FLAGS.output_dir or FLAGS.run_dir
        check_writable(
            out_dir,
            "--output_dir" if FLAGS.output_dir else "--run_dir",
            advice=""
            if FLAGS.output_dir
            else "the curve goes beside the run unless --output_dir names another folder",
        )
        with progress.reported():  # progress lines, then the files written
            evaluate_checkpoints(
                FLAGS.run_dir,
                out_dir,
                settings,
                FLAGS.checkpoints,
                references,
                network=FLAGS.network,
                config_path=FLAGS.config,
            )
    except ValueError as error:
        print(f"{command_line.program('curves')}: error: {error}", file=sys.stderr)
        sys.exit(2)


def command(argv: list[str]) -> int:
    """The command line ``argv`` (``argv[0]`` the program): parses it into :data:`FLAGS`, evaluates
    the checkpoints, and returns the exit status: 0, or 2 with one ``error:`` line for a bad flag or
    setting. The flags are reset afterwards, so one process may call it again."""
    return command_line.run_program(command_line.program("curves"), __doc__, FLAGS, argv, main)

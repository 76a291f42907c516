"""Evaluates one trained run into metrics.json and figures: the task its data family declares.

  abc_tf evaluate --run_dir=runs/shapes3d            # one run, or the seed_<k> runs inside
  abc_tf evaluate --saved_model=DIR/saved_model --config=DIR/config.json --output_dir=OUT

(``python evaluate.py ...`` in a checkout is the same command.) ``abc_tf curves`` evaluates a
run's checkpoints; ``abc_tf compare`` puts runs side by side.

A run still training is refused. A folder of ``seed_<k>`` runs is evaluated seed by seed; the
seeds' mean, std and values go to ``<output_dir>/metrics.json``. What is measured depends on the
family (abc_tf.evaluation.tasks.family_tasks): factors (MINE, probes, disentanglement scores),
digit style, labels, or pose lookup. MINE's defaults are the paper's; lower --mine_steps and
--mine_eval_samples for a quick look. Each stage prints its progress, and the last lines list the
files written. The measures also go to TensorBoard, ``<output_dir>/logs/evaluation``.
"""

from __future__ import annotations

import os
import sys

from absl import app, flags

from abc_tf import command_line
from abc_tf.cli import measure_flags

# evaluate's own flags, apart from absl's global ones, which train.py defines with some of the
# same names: so a test can run both in one process.
FLAGS = flags.FlagValues()

flags.DEFINE_string(
    "run_dir",
    None,
    "Run directory written by train.py (config.json, encoder.keras), or a folder of seed_<k> runs.",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "saved_model",
    None,
    "Evaluate this exported SavedModel instead of run_dir's encoder.keras (needs --config or a config.json "
    "beside it).",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "config",
    None,
    "config.json of the run (default: run_dir/config.json, or the one beside --saved_model).",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "output_dir",
    None,
    "Where metrics.json and the figures go (default: the run directory).",
    flag_values=FLAGS,
)
flags.DEFINE_integer(
    "seeds", 0, "Evaluate at most this many seed_<k> runs of run_dir (0: all found).", flag_values=FLAGS
)
flags.DEFINE_string(
    "network",
    "encoder",
    "The run's saved network to embed with: encoder (every method's representation) "
    "or another the method keeps (e.g. a VITAE's appearance or perspective).",
    flag_values=FLAGS,
)
flags.DEFINE_boolean(
    "untrained",
    False,
    "Also evaluate the untrained encoder of the config (same seed) into <output_dir>/untrained.",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "pose_export_dir",
    None,
    "Pose: also write the SavedModel with lookup_pose (and regress_pose) here.",
    flag_values=FLAGS,
)
measure_flags.define(FLAGS)


def run_of_flags(run_dir: str | None):
    """The run --run_dir (or ``run_dir``, one of its seeds) or --saved_model names, embedding
    with --network; (run, whether it has the method's own networks)."""
    from abc_tf import data
    from abc_tf.runs.config_files import read_config
    from abc_tf.evaluation.tasks import factor_isolation
    from abc_tf.runs.run_dir import TrainedRun, load_run, network_file

    if FLAGS.saved_model:
        run_dir = os.path.dirname(os.path.normpath(FLAGS.saved_model))
        config = read_config(FLAGS.config or os.path.join(run_dir, "config.json"))
        if data.get_family(config.data.family).known_factors is None:
            raise ValueError(
                "--saved_model is supported for data with known factors (shapes3d); "
                f"{config.data.family} runs need --run_dir."
            )
        return TrainedRun(run_dir, config, factor_isolation.saved_model_encoder(FLAGS.saved_model)), False
    if FLAGS.network != "encoder" and not os.path.isfile(network_file(run_dir, FLAGS.network)):
        raise ValueError(
            f"--network={FLAGS.network}: {run_dir} has no {FLAGS.network}.keras."
        )  # before reading the run
    return load_run(run_dir, FLAGS.config).embedding_with(FLAGS.network), True


def main(argv: list[str]) -> None:
    """Evaluates what the parsed flags name; exit status 2 with one line for a bad setting."""
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
    command_line.quiet_tensorflow_start()  # the first screen is the project's own
    try:
        measure_flags.check_folders_named(FLAGS, ("output_dir", "run_dir"))
        if not FLAGS.run_dir and not FLAGS.saved_model:
            raise ValueError("Pass --run_dir (a train.py run directory) or --saved_model.")
        if FLAGS.seeds < 0:
            raise ValueError(f"--seeds must be >= 0, got {FLAGS.seeds}.")
        if FLAGS.saved_model and not os.path.isfile(os.path.join(FLAGS.saved_model, "saved_model.pb")):
            raise ValueError(
                f"--saved_model={FLAGS.saved_model} is not a SavedModel folder (no saved_model.pb)."
            )
        if FLAGS.run_dir and not FLAGS.saved_model and not os.path.isdir(FLAGS.run_dir):
            raise ValueError(f"--run_dir={FLAGS.run_dir} is not a directory.")
        # Every setting checked before any run is evaluated.
        settings = measure_flags.evaluation_settings(
            FLAGS, untrained=FLAGS.untrained, pose_export_dir=FLAGS.pose_export_dir
        )
        from abc_tf.evaluation import progress
        from abc_tf.evaluation.tasks.run_evaluation import evaluate_run
        from abc_tf.evaluation.tasks.seeds import evaluate_seeds
        from abc_tf.runs.run_dir import check_writable, seed_run_dirs

        out_dir = FLAGS.output_dir or FLAGS.run_dir or os.path.dirname(os.path.normpath(FLAGS.saved_model))
        check_writable(
            out_dir,
            "--output_dir"
            if FLAGS.output_dir
            else "--run_dir"
            if FLAGS.run_dir
            else "--saved_model's folder",
            advice=""
            if FLAGS.output_dir
            else "the measures go beside the run unless --output_dir names another folder",
        )
        seed_dirs = seed_run_dirs(FLAGS.run_dir) if FLAGS.run_dir and not FLAGS.saved_model else []
        with progress.reported():  # progress lines, then the files written: the last lines
            if seed_dirs:
                seed_dirs = seed_dirs[: FLAGS.seeds or None]
                runs = [run_of_flags(seed_dir)[0] for seed_dir in seed_dirs]
                out_dirs = [
                    os.path.join(out_dir, os.path.basename(seed_dir)) if FLAGS.output_dir else seed_dir
                    for seed_dir in seed_dirs
                ]
                result = evaluate_seeds(runs, out_dirs, out_dir, settings)
                if "condition" in result:  # factor isolation's summary; other tasks' are in metrics.json
                    _print_summary(result)
            else:
                run, own_networks = run_of_flags(FLAGS.run_dir)
                _print_summary(evaluate_run(run, out_dir, settings, method_measures=own_networks))
    except ValueError as error:
        print(f"{command_line.program('evaluate')}: error: {error}", file=sys.stderr)
        sys.exit(2)


def _print_summary(result: dict) -> None:
    for key in ("mine", "histogram"):
        if key in result:
            values = result[key]
            text = ", ".join(
                f"{name} {value['mean']:.3f}+-{value['std']:.3f}"
                if isinstance(value, dict)
                else f"{name} {value:.3f}"
                for name, value in values.items()
            )
            print(f"  {key} MI (nats): {text}")
    probe = result.get("probe") or result.get("probe_accuracy")
    if probe:
        text = ", ".join(
            f"{name} {value.get('accuracy', value.get('mean')):.3f}" for name, value in probe.items()
        )
        print(f"  probe accuracy: {text}")
    scores = result.get("disentanglement")
    if scores:
        scores = scores.get("scores", scores)  # one run's, or the seeds' {key: {mean, std, values}}
        text = ", ".join(
            f"{key} {value['mean'] if isinstance(value, dict) else value:.3f}"
            for key, value in scores.items()
        )
        print(f"  disentanglement: {text}")
    if (
        isinstance(result.get("trained"), dict) and "true_style_r2" in result["trained"]
    ):  # MNIST, procedural digits
        from abc_tf.evaluation.tasks import mnist_style

        print(mnist_style.true_style_summary(result))


def command(argv: list[str]) -> int:
    """The command line ``argv`` (``argv[0]`` the program): parses it into :data:`FLAGS`,
    evaluates, and returns the exit status: 0, or 2 with one ``error:`` line for a bad flag or
    setting. The flags are reset afterwards, so one process may call it again."""
    return command_line.run_program(command_line.program("evaluate"), __doc__, FLAGS, argv, main)

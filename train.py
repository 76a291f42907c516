"""Trains an ABC experiment.

  python train.py --experiment=shapes3d --output_dir=runs/shapes3d [--<config field>=VALUE ...]

Every field of ``abc_tf.config.ExperimentConfig`` is a flag; a flag left out keeps the
preset's value. ``--seeds N`` trains N seeds (seed, seed+1, ...) into ``output_dir/seed_<k>``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import typing

from absl import app, flags, logging

from abc_tf import config as config_lib
from abc_tf import data, methods

FLAGS = flags.FLAGS

flags.DEFINE_string("experiment", "shapes3d_demo", f"Preset: one of {', '.join(sorted(config_lib.PRESETS))}.")
flags.DEFINE_string("output_dir", None, "Run directory (default: runs/<experiment>).")
flags.DEFINE_integer("seeds", 1, "Number of seeds to train, one run directory each.")
flags.DEFINE_list(
    "allow_config_change", [],
    "Fields that may differ from the run directory's config.json when resuming from its newest checkpoint, "
    "e.g. learning_rate after a NaN stop (recorded in config_history.json). A raised --steps needs no mention.",
)

_FLAG_DEFINERS = {str: flags.DEFINE_string, int: flags.DEFINE_integer, float: flags.DEFINE_float, bool: flags.DEFINE_boolean}
_FIELD_TYPES = typing.get_type_hints(config_lib.ExperimentConfig)
for _field in dataclasses.fields(config_lib.ExperimentConfig):
    if _field.name != "name":
        _FLAG_DEFINERS[_FIELD_TYPES[_field.name]](_field.name, None, _field.metadata["help"] + " (default: the preset's)")


def resolve_config() -> config_lib.ExperimentConfig:
    """The preset with every flag given on the command line applied, validated."""
    preset = config_lib.get_preset(FLAGS.experiment)
    overrides = {
        f.name: FLAGS[f.name].value
        for f in dataclasses.fields(config_lib.ExperimentConfig)
        if f.name != "name" and FLAGS[f.name].present
    }
    resolved = preset.replace(**overrides)
    resolved.validate()
    for unused, user in ((data.unused_fields(resolved.data, overrides), f"data family {resolved.data}"),
                         (methods.unused_fields(resolved.method, overrides), f"method {resolved.method}")):
        if unused:
            raise ValueError(
                f"{', '.join('--' + name for name in unused)} does not apply to --experiment={FLAGS.experiment} "
                f"({user}); remove it."
            )
    return resolved


def main(argv: list[str]) -> None:
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
    if not FLAGS["verbosity"].present:
        # TensorFlow's INFO lines (SavedModel tracing) bury the training progress.
        logging.set_verbosity(logging.WARNING)
    try:
        if FLAGS.seeds <= 0:
            raise ValueError(f"--seeds must be a positive integer, got {FLAGS.seeds}.")
        base = resolve_config()
        output_dir = FLAGS.output_dir or os.path.join("runs", FLAGS.experiment)
        runs = [(base, output_dir)] if FLAGS.seeds == 1 else [
            (base.replace(seed=base.seed + k), os.path.join(output_dir, f"seed_{k}")) for k in range(FLAGS.seeds)
        ]
        # Imported here so that --help and flag errors answer without loading TensorFlow.
        from abc_tf.runs import checkpoints
        from abc_tf.runs import config_history, preemption, training, training_logs
        from abc_tf.callbacks import evaluation_callbacks

        for run_config, run_dir in runs:
            # The settings, the model and the run directory first: the callbacks read the family's
            # labelled data, which can take a while.
            training.check_config(run_config)
            training.check_model(run_config)
            config_history.check_run_dir(run_config, run_dir, FLAGS.allow_config_change)
            run_callbacks = evaluation_callbacks(run_config, run_dir)
            try:
                result = training.train(
                    run_config, run_dir, callbacks=run_callbacks, allow_changes=FLAGS.allow_config_change
                )
            except preemption.RunPreempted as stop:  # SIGTERM or Ctrl-C, at the end of a step
                _stop(str(stop), preemption.SIGNALS[stop.signal_number])
            except KeyboardInterrupt:  # a second Ctrl-C, or one outside the training steps
                _stop(_interrupted_message(run_dir), 130)
            except training_logs.NonFiniteLossError as error:
                _stop(f"{error}\n{_nan_advice(error, run_config, run_dir)}", 1)
            except (training_logs.RunStopped, checkpoints.CheckpointError) as error:
                _stop(str(error), 1)
            _print_summary(result, _isolation_summary(run_callbacks, run_config, result))
    except ValueError as error:
        _stop(str(error), 2)


def _stop(message: str, code: int) -> None:
    print(f"train.py: error: {message}", file=sys.stderr)
    sys.exit(code)


def _command(replace: dict[str, str]) -> str:
    """This command line with the flags in ``replace`` set to new values."""
    kept = [arg for arg in sys.argv[1:] if arg.split("=")[0].lstrip("-") not in replace]
    return " ".join(["python train.py", *kept, *(f"--{name}={value}" for name, value in replace.items())])


def _nan_advice(error, config, run_dir: str) -> str:
    """A command that works after a NaN stop: the run directory holds a checkpoint or none."""
    learning_rate = f"{config.learning_rate / 10:g}"
    if error.checkpoint_step is None:
        return (
            "Start over with a lower learning rate (a run directory without a checkpoint takes new settings):\n"
            f"  {_command({'learning_rate': learning_rate})}"
        )
    allowed = sorted(set(FLAGS.allow_config_change) | {"learning_rate"})
    return (
        f"Continue from step {error.checkpoint_step} with a lower learning rate:\n"
        f"  {_command({'learning_rate': learning_rate, 'allow_config_change': ','.join(allowed)})}\n"
        f"or start over in a new --output_dir (or after removing {run_dir})."
    )


def _interrupted_message(run_dir: str) -> str:
    from abc_tf.runs import checkpoints

    saved = checkpoints.list_checkpoints(run_dir)
    if not saved:
        return f"Interrupted before the first checkpoint; {run_dir} holds no trained state. Run the same command to start again."
    return (
        f"Interrupted; {run_dir} keeps its checkpoint at step {saved[-1][0]}. "
        "Run the same command again to resume from it."
    )


def _isolation_summary(callbacks, config, result) -> str | None:
    """The per-factor table of the run's last isolation measurement (or of its labelled images),
    also written into the run directory."""
    from abc_tf import run_summary
    from abc_tf.callbacks import FactorIsolationCallback

    for callback in callbacks:
        if isinstance(callback, FactorIsolationCallback) and callback.history:
            summary = run_summary.factor_summary(
                callback.history[-1], callback.names, callback.inactive,
                callback.num_classes or [len(set(column)) for column in callback.factors.T],
                callback.history[-1]["sigma"], len(callback.images),
            )
            break
    else:
        summary = run_summary.summary_from_data(config, result.encoder, result.final_step, config.eval_images, config.seed)
    if summary is None:
        return None
    run_summary.write(result.run_dir, summary)
    return run_summary.format_table(summary)


def _print_summary(result, isolation: str | None = None) -> None:
    history = result.history
    final = {key: values[-1] for key, values in history.items() if values}
    print(f"\nRun finished: {result.run_dir}")
    if final:
        print("  final " + ", ".join(f"{key} {value:.4g}" for key, value in sorted(final.items())))
    else:
        print(f"  all {result.final_step} steps were trained already; the exports were written again")
    outputs = [
        ("config", "config.json"),
        ("TensorBoard logs", "logs"),
        ("checkpoints", "checkpoints"),
        ("encoder (Keras)", "encoder.keras"),
        ("SavedModel", "saved_model"),
    ]
    if isolation:
        outputs.append(("isolation table", "isolation_summary.json"))
        outputs.append(("isolation figure", "isolation_summary.png"))
    for label, name in outputs:
        print(f"  {label:17s} {os.path.join(result.run_dir, name)}")
    if isolation:
        print("\n" + isolation)
    print("\nNext:")
    print(f"  tensorboard --logdir {os.path.join(result.run_dir, 'logs')}")
    print(f"  python evaluate.py --run_dir={result.run_dir}     # full measures (the paper's MINE), figures")
    print(f"  {_command({'steps': '<more>'})}     # extend this run")


if __name__ == "__main__":
    app.run(main)

"""Trains a preset of any method and data family.

  abc_tf train --experiment=shapes3d --output_dir=runs/shapes3d [--<part>.<field>=VALUE ...]

(``python train.py ...`` in a checkout of the repository is the same command.)

A run's config has parts (``abc_tf.config``): trainer, data, batch, method and, for methods
that train a chosen encoder, its encoder. ``--data``, ``--method`` and ``--encoder`` choose the family,
method and encoder architecture (the preset's by default); every field of the chosen parts is
a flag ``--<part>.<field>`` (``--trainer.steps=100``, ``--method.temperature=0.5``), and a flag
left out keeps the preset's value. A field the chosen family or method does not have is an
error (exit 2) that lists the part's fields. ``--seeds N`` trains N seeds (seed, seed+1, ...)
into ``output_dir/seed_<k>``.
"""

from __future__ import annotations

import os
import re
import sys
import typing

from absl import app, flags, logging

from abc_tf import config as config_lib
from abc_tf import command_line
from abc_tf.runs import experiments, parallel_runs

FLAGS = flags.FLAGS

_EXPERIMENT_HELP = "Preset (abc_tf train --help, without --experiment, lists them)."
flags.DEFINE_string("experiment", "shapes3d_demo", _EXPERIMENT_HELP)
flags.DEFINE_string("data", None, "Data family (a key of abc_tf.data.DATA_FAMILIES; default: the preset's).")
flags.DEFINE_string(
    "method", None, "Training method (a key of abc_tf.methods.METHODS; default: the preset's)."
)
flags.DEFINE_string(
    "encoder",
    None,
    "Encoder architecture (a key of the models registry; default: the preset's), for methods that train one.",
)
flags.DEFINE_string(
    "output_dir",
    None,
    "Run directory (default: runs/<the run's name>: the preset, and "
    "_on_<family> with another --data), relative to the current folder.",
)
flags.DEFINE_integer("seeds", 1, "Number of seeds to train, one run directory each.")
flags.DEFINE_integer(
    "parallel",
    0,
    "With --seeds: runs at once, each its own process (0: as many as the cores, at most the seeds).",
)
flags.DEFINE_integer(
    "cpus_per_run",
    0,
    "With --seeds: TensorFlow threads of each run (0: the cores divided among those at once).",
)
flags.DEFINE_boolean(
    "check_only",
    False,
    "Make every check a run makes before its first step (the flags, the config, the data's paths, the "
    "run directory, the model's build, its first step's trace, the labelled sample) and exit: 0 with "
    "one line, or 2 with the error. Nothing is written.",
)
flags.DEFINE_list(
    "allow_config_change",
    [],
    "Fields (<part>.<field>) that may differ from the run directory's config.json when resuming from its "
    "newest checkpoint, e.g. trainer.learning_rate after a NaN stop (recorded in config_history.json). "
    "A raised --trainer.steps needs no mention.",
)

_FLAG_DEFINERS = {
    str: flags.DEFINE_string,
    int: flags.DEFINE_integer,
    float: flags.DEFINE_float,
    bool: flags.DEFINE_boolean,
}
_CHOOSERS = ("experiment", *config_lib.SELECTORS)
_DOTTED = re.compile(r"^--(?:no)?(" + "|".join(config_lib.PART_NAMES) + r")\.([^=]*)")


def _given(argv: list[str], name: str) -> str | None:
    """The value of ``--name`` on ``argv`` (``--name=V`` or ``--name V``; the last one wins)."""
    value = None
    for index, arg in enumerate(argv):
        if arg.startswith(f"--{name}="):
            value = arg.split("=", 1)[1]
        elif arg == f"--{name}" and index + 1 < len(argv):
            value = argv[index + 1]
    return value


def chosen_config(argv: list[str]) -> config_lib.ExperimentConfig:
    """The preset of ``--experiment`` with the family, method and encoder of ``--data``,
    ``--method`` and ``--encoder`` on ``argv``: the config whose parts' fields are the flags."""
    chosen = {name: _given(argv, name) for name in _CHOOSERS}
    if chosen["data"] or chosen["method"]:
        command_line.quiet_tensorflow_start()  # another family's or method's declaration loads TensorFlow
    base = experiments.get_preset(chosen.pop("experiment") or FLAGS["experiment"].default)
    return experiments.choose(base, **chosen)


def parse_flags(argv: list[str]) -> list[str]:
    """Defines ``--<part>.<field>`` for the fields of the parts ``argv`` chooses, then parses
    ``argv`` (absl's ``flags_parser``). A dotted flag the chosen parts do not have exits 2
    naming the part's fields, before absl would call it unknown; a renamed flag (``--model``)
    exits 2 naming its new name."""
    renamed = command_line.renamed_flag_error(argv)
    if renamed is not None:
        _stop(renamed, 2)
    for name in [name for name in FLAGS if "." in name]:
        delattr(FLAGS, name)
    try:
        config = chosen_config(argv)
        for arg in argv[1:]:
            match = _DOTTED.match(arg)
            if not match:
                continue
            part_name, name = match.groups()
            if part_name not in config.parts():
                raise ValueError(
                    f"--{part_name}.{name}: method {config.method.name!r} has no {part_name} part "
                    f"(its networks are its own); this run's parts: {', '.join(config.parts())}."
                )
            if name not in experiments.settable_fields(type(config.parts()[part_name]), part_name):
                raise ValueError(experiments.unknown_field_message(config, part_name, name))
    except ValueError as error:
        _stop(str(error), 2)
    for part_name, part in config.parts().items():
        types = typing.get_type_hints(type(part))
        for field in experiments.settable_fields(type(part), part_name):
            help_text = type(part).__dataclass_fields__[field].metadata["help"]
            _FLAG_DEFINERS[types[field]](f"{part_name}.{field}", None, f"{help_text} (default: the preset's)")
    try:
        return FLAGS(argv)
    except flags.Error as error:  # a value of the wrong type, an unknown flag: the project's one line, exit 2
        _stop(command_line.describe_flag_error(str(error)), 2)


def _say_skipped_measures(config: config_lib.ExperimentConfig) -> None:
    """One line per measure of evaluate.py this run will not get, and why, before training."""
    from abc_tf.runs import checks

    for name, reason in checks.measures_skipped(config).items():
        print(f"{command_line.program('evaluate')} will skip the {name} measures: {reason}.", flush=True)


def resolve_config() -> config_lib.ExperimentConfig:
    """The preset with the choices and every flag given on the command line applied, validated."""
    config = experiments.choose(
        experiments.get_preset(FLAGS.experiment), data=FLAGS.data, method=FLAGS.method, encoder=FLAGS.encoder
    )
    overrides = {name: FLAGS[name].value for name in FLAGS if "." in name and FLAGS[name].present}
    resolved = experiments.override(config, overrides)
    resolved.validate()
    return resolved


def main(argv: list[str]) -> None:
    if len(argv) > 1:
        _stop(f"unexpected arguments: {' '.join(argv[1:])} (flags are written --name=value).", 2)
    command_line.quiet_tensorflow_start()  # the first screen is the project's own
    if not FLAGS["verbosity"].present:
        # TensorFlow's INFO lines (SavedModel tracing) bury the training progress.
        logging.set_verbosity(logging.WARNING)
    try:
        if FLAGS.seeds <= 0:
            raise ValueError(f"--seeds must be a positive integer, got {FLAGS.seeds}.")
        if FLAGS["output_dir"].present and not FLAGS.output_dir.strip():
            raise ValueError(
                "--output_dir is empty (an unset shell variable?); name the run directory, or leave the "
                "flag out for runs/<experiment>."
            )
        base = resolve_config()
        output_dir = FLAGS.output_dir or os.path.join("runs", base.name)
        runs = (
            [(base, output_dir)]
            if FLAGS.seeds == 1
            else [
                (base.replace(seed=base.trainer.seed + k), os.path.join(output_dir, f"seed_{k}"))
                for k in range(FLAGS.seeds)
            ]
        )
        sweep = (
            parallel_runs.pool(FLAGS.parallel, FLAGS.cpus_per_run, len(runs), print)
            if len(runs) > 1
            else None
        )
        # Imported here so that --help and flag errors answer without loading TensorFlow.
        from abc_tf.runs import checkpoints, checks
        from abc_tf.runs import preemption, training, training_logs
        from abc_tf.evaluation.callbacks import evaluation_callbacks

        if FLAGS.check_only:  # every check a run makes before its first step: its labelled sample too
            for run_config, run_dir in runs:
                prepared = training.prepare(
                    run_config, run_dir, allow_changes=FLAGS.allow_config_change, verbose=0
                )
                training.check_step(prepared)
                evaluation_callbacks(run_config, run_dir)
            print(
                f"{command_line.program('train')}: checked: {base.name} "
                f"({base.method.name} on {base.data.family}, "
                f"{checks.data_description(base)}) can train into {output_dir}"
                f"{f' ({FLAGS.seeds} seeds)' if FLAGS.seeds > 1 else ''}."
            )
            _say_skipped_measures(base)
            return
        _say_skipped_measures(base)
        if sweep and (sweep.at_once > 1 or sweep.threads):
            _side_by_side(sweep, runs)
            return
        for run_config, run_dir in runs:
            # The settings, the run directory and the model first, once: the callbacks read the
            # family's labelled data, which can take a while.
            prepared = training.prepare(run_config, run_dir, allow_changes=FLAGS.allow_config_change)
            run_callbacks = evaluation_callbacks(run_config, run_dir)
            try:
                result = training.train_prepared(prepared, callbacks=run_callbacks)
            except preemption.RunPreempted as stop:  # SIGTERM or Ctrl-C, at the end of a step
                _stop(str(stop), preemption.SIGNALS[stop.signal_number])
            except KeyboardInterrupt:  # a second Ctrl-C, or one outside the training steps
                _stop(_interrupted_message(run_dir), 130)
            except training_logs.NonFiniteLossError as error:
                _stop(f"{error}\n{_nan_advice(error, run_config, run_dir)}", 1)
            except (training_logs.RunStopped, checkpoints.CheckpointError) as error:
                _stop(str(error), 1)
            _print_summary(result, run_config, _isolation_summary(run_callbacks, run_config, result))
    except ValueError as error:
        _stop(str(error), 2)


def _side_by_side(sweep, runs) -> None:
    """Trains ``runs`` (config, run directory) as ``train --seeds=1`` children of ``sweep``, each
    with its output in ``<run>/train.log``; a stop or a failure ends train.py as the run's would."""
    skip = {"seeds", "output_dir", "parallel", "cpus_per_run", "trainer.seed"}
    given, kept = sys.argv[1:], []
    for index, arg in enumerate(given):
        name = arg.split("=", 1)[0].lstrip("-")
        follows = index and given[index - 1].lstrip("-") in skip and not given[index - 1].count("=")
        if name not in skip and not follows:  # "--name value" drops the value too
            kept.append(arg)
    jobs = [
        parallel_runs.Job(
            run_dir,
            (
                (
                    "training",
                    (
                        "train",
                        *kept,
                        f"--trainer.seed={config.trainer.seed}",
                        "--seeds=1",
                        f"--output_dir={run_dir}",
                    ),
                    os.path.join(run_dir, "train.log"),
                ),
            ),
        )
        for config, run_dir in runs
    ]
    print(f"[train] {len(jobs)} runs, {sweep.where}; each run's output: <run>/train.log", flush=True)
    try:
        sweep.run(jobs, lambda line: print(line, flush=True), "train")
    except parallel_runs.SweepStopped as stop:
        _stop(str(stop), stop.exit_status)
    except RuntimeError as error:
        _stop(str(error), 1)
    for _, run_dir in runs:
        print(f"Run finished: {run_dir}")


def _stop(message: str, code: int) -> None:
    print(f"{command_line.program('train')}: error: {message}", file=sys.stderr)
    sys.exit(code)


def _command(replace: dict[str, str]) -> str:
    """This command line with the flags in ``replace`` set to new values."""
    kept = [arg for arg in sys.argv[1:] if arg.split("=")[0].lstrip("-") not in replace]
    return " ".join(
        [command_line.command("train"), *kept, *(f"--{name}={value}" for name, value in replace.items())]
    )


def _nan_advice(error, config, run_dir: str) -> str:
    """A command that works after a NaN stop: the run directory holds a checkpoint or none."""
    learning_rate = f"{config.trainer.learning_rate / 10:g}"
    if error.checkpoint_step is None:
        return (
            "Start over with a lower learning rate "
            "(a run directory without a checkpoint takes new settings):\n"
            f"  {_command({'trainer.learning_rate': learning_rate})}"
        )
    allowed = sorted(set(FLAGS.allow_config_change) | {"trainer.learning_rate"})
    return (
        f"Continue from step {error.checkpoint_step} with a lower learning rate:\n"
        f"  {_command({'trainer.learning_rate': learning_rate, 'allow_config_change': ','.join(allowed)})}\n"
        f"or start over in a new --output_dir (or after removing {run_dir})."
    )


def _interrupted_message(run_dir: str) -> str:
    from abc_tf.runs import checkpoints

    saved = checkpoints.list_checkpoints(run_dir)
    if not saved:
        return (
            f"Interrupted before the first checkpoint; {run_dir} holds no trained state. "
            "Run the same command to start again."
        )
    return (
        f"Interrupted; {run_dir} keeps its checkpoint at step {saved[-1][0]}. "
        "Run the same command again to resume from it."
    )


def _isolation_summary(callbacks, config, result) -> str | None:
    """The per-factor table of the run's last isolation measurement (or of its labelled images),
    also written into the run directory."""
    from abc_tf.evaluation import run_summary
    from abc_tf.evaluation.callbacks import FactorIsolationCallback

    for callback in callbacks:
        if isinstance(callback, FactorIsolationCallback) and callback.history:
            summary = run_summary.factor_summary(
                callback.history[-1],
                callback.names,
                callback.inactive,
                callback.num_classes or [len(set(column)) for column in callback.factors.T],
                callback.history[-1]["sigma"],
                len(callback.images),
            )
            break
    else:
        summary = run_summary.summary_from_data(
            config, result.encoder, result.final_step, config.trainer.eval_images, config.trainer.seed
        )
    if summary is None:
        return None
    run_summary.write(result.run_dir, summary)
    return run_summary.format_table(summary)


def _print_summary(result, config, isolation: str | None = None) -> None:
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
    from abc_tf import data

    if data.get_family(config.data.family).evaluation_task:  # else evaluate has nothing to run
        print(f"  {command_line.command('evaluate')} --run_dir={result.run_dir}     # full measures, figures")
    print(f"  {_command({'trainer.steps': '<more>'})}     # extend this run")


def command(argv: list[str]) -> int:
    """The command line ``argv`` (``argv[0]`` the program) run in this process: its exit status.
    ``--help`` prints this module's text and the chosen preset's flags."""
    command_line.plain_warnings(command_line.program("train"))
    command_line.quiet_python_start()
    sys.argv = list(argv)  # the advice after a stop repeats the command line
    try:
        if any(argument in command_line.HELP_FLAGS for argument in argv[1:]):
            FLAGS["experiment"].help = _EXPERIMENT_HELP
            if _given(argv, "experiment") is None:  # the listing reads every package's presets
                FLAGS["experiment"].help = f"Preset: one of {', '.join(sorted(experiments.presets()))}."
            parse_flags([argument for argument in argv if argument not in command_line.HELP_FLAGS])
            flag_help = FLAGS.get_help() if "--helpfull" in argv else FLAGS.module_help(__name__)
            print(f"{__doc__}\nFlags:\n{flag_help}")
            return 0
        app.run(main, argv=list(argv), flags_parser=parse_flags)
    except SystemExit as stop:
        return command_line.exit_status(stop)
    return 0

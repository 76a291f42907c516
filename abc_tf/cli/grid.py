"""A grid search: trains every combination of the varied settings of a preset with train.py,
evaluates each with evaluate.py, and picks the best by one measure (abc_tf.evaluation.grid_search).

  abc_tf grid --experiment=pose_ml_vae_quick \\
    --vary=trainer.learning_rate=3e-4,1e-3,3e-3 --vary=method.style_dim=8,16 \\
    --holdout_flags="--data.validation_instances=10" \\
    --evaluate_flags="--pose_query_split=validation --pose_query_domains=synthetic --disentanglement=none" \\
    --measure="pose_metrics.json:domains/synthetic/rows/trained encoder (lookup)/median_error_deg/mean" \\
    --goal=min --output_dir=runs/grid/ml_vae

Runs train side by side into ``output_dir/<point>`` (``--parallel`` at once, each with
``--cpus_per_run`` threads), or on a Ray cluster (``--ray_address``). After a kill, the same command
resumes the cut-off runs and skips finished ones. It writes grid.json, grid.md and grid.png into
``output_dir``. It prints the table and the train.py command that measures the pick: the fixed
settings and the pick's, no hold-out, ``--pick_seeds`` seeds, into ``output_dir/pick``.
``--confirm_within=D`` trains the points within D of the best at ``--confirm_seeds`` more seeds
before picking. ``python grid.py ...`` in a checkout is the same.
"""

from __future__ import annotations

import shlex
import sys

from absl import flags

from abc_tf import command_line

FLAGS = flags.FlagValues()
flags.DEFINE_string(
    "experiment", None, "The preset every point starts from (train.py --experiment).", flag_values=FLAGS
)
flags.DEFINE_multi_string(
    "vary",
    [],
    "A field and its values, part.field=VALUE,VALUE,... (repeat the flag for more "
    "fields; every combination is a point).",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "train_flags",
    "",
    "Further train.py flags of every point (the fixed settings), as one string.",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "holdout_flags",
    "",
    "train.py flags of the search's runs only (the validation hold-out, e.g. "
    "--data.validation_instances=10), left out of the pick's command.",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "evaluate_flags",
    "",
    "evaluate.py flags of every evaluation, as one string (what to measure on).",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "measure",
    None,
    "FILE.json:KEY/KEY/...: the value of the evaluation's JSON file that picks the point.",
    flag_values=FLAGS,
)
flags.DEFINE_enum(
    "goal",
    "min",
    ["min", "max"],
    "Pick the point with the lowest (min) or highest (max) mean.",
    flag_values=FLAGS,
)
flags.DEFINE_integer(
    "seeds", 1, "Runs per point (train.py --seeds); a point's value is their mean.", flag_values=FLAGS
)
flags.DEFINE_integer(
    "pick_seeds", 3, "Seeds of the printed command that measures the pick.", flag_values=FLAGS
)
flags.DEFINE_float(
    "confirm_within",
    0.0,
    "Train every point whose mean lies within this distance of the best (the measure's units) at "
    "--confirm_seeds more seeds before the pick is called; 0 confirms nothing.",
    flag_values=FLAGS,
)
flags.DEFINE_integer(
    "confirm_seeds", 1, "More seeds for each point --confirm_within names.", flag_values=FLAGS
)
flags.DEFINE_string(
    "output_dir", None, "The grid's folder (default: runs/grid_<experiment>).", flag_values=FLAGS
)
flags.DEFINE_integer(
    "parallel", 0, "Runs at once on this host (0: as many as its cores, at most the runs).", flag_values=FLAGS
)
flags.DEFINE_integer(
    "cpus_per_run",
    0,
    "TensorFlow threads of each run, and the CPUs it asks Ray for (0: the cores divided among the "
    "runs at once; 1 on Ray). Runs' numbers depend on it, not on --parallel.",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "ray_address",
    None,
    "Run the points as tasks on the Ray cluster there (auto, or host:port; pip install 'abc_tf[ray]'); "
    "output_dir must be on storage every host sees.",
    flag_values=FLAGS,
)


def spec_from_flags():
    from abc_tf.evaluation import grid_search as grid

    if not FLAGS.experiment:
        raise ValueError("--experiment: name the preset the grid varies.")
    if not FLAGS.measure:
        raise ValueError("--measure: name the value that picks the point, FILE.json:KEY/KEY/....")
    from abc_tf.runs import experiments

    experiments.get_preset(FLAGS.experiment)  # an unknown preset fails here, listing the known ones
    return grid.GridSpec(
        experiment=FLAGS.experiment,
        axes=tuple(grid.Axis.parse(text) for text in FLAGS.vary),
        measure=grid.Measure.parse(FLAGS.measure),
        output_dir=FLAGS.output_dir or f"runs/grid_{FLAGS.experiment}",
        goal=FLAGS.goal,
        seeds=FLAGS.seeds,
        train_flags=tuple(shlex.split(FLAGS.train_flags)),
        holdout_flags=tuple(shlex.split(FLAGS.holdout_flags)),
        evaluate_flags=tuple(shlex.split(FLAGS.evaluate_flags)),
        pick_seeds=FLAGS.pick_seeds,
        confirm_within=FLAGS.confirm_within,
        confirm_seeds=FLAGS.confirm_seeds,
    )


def main(rest: list[str]) -> int:
    """Runs the grid the parsed flags describe: 0 when done, 1 when a point's training or
    evaluation failed (its log named), 2 for a bad setting."""
    try:
        if len(rest) > 1:
            raise ValueError(f"unexpected arguments: {' '.join(rest[1:])} (flags are written --name=value).")
        from abc_tf.evaluation import grid_search as grid

        spec = spec_from_flags()
        spec.validate()
        from abc_tf.runs import parallel_runs

        runs = len(grid.points(spec.axes)) * spec.seeds
        pool = parallel_runs.pool(FLAGS.parallel, FLAGS.cpus_per_run, runs, print, FLAGS.ray_address)
        print(f"[grid] {runs} run(s): {pool.where}", flush=True)
        try:
            result = grid.run_grid(spec, pool)
        except parallel_runs.SweepStopped as stop:
            print(f"{command_line.program('grid')}: error: {stop}", file=sys.stderr)
            return stop.exit_status
        print(grid.markdown(result))
        print(f"Pick: {result['pick']['train_command']}")
        return 0
    except ValueError as error:
        print(f"{command_line.program('grid')}: error: {error}", file=sys.stderr)
        return 2
    except RuntimeError as error:
        print(f"{command_line.program('grid')}: error: {error}", file=sys.stderr)
        return 1


def command(argv: list[str]) -> int:
    """The command line ``argv``: :func:`main`'s exit status, or 2 for a flag absl refuses.
    The flags are reset afterwards."""
    return command_line.run_program(command_line.program("grid"), __doc__, FLAGS, argv, main)

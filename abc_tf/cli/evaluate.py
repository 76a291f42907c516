"""Evaluates trained encoders: factor isolation (Shapes3D), digit style (MNIST), known labels.

  abc_tf evaluate --run_dir=runs/shapes3d            # one run, or the seed_<k> runs inside
  abc_tf evaluate --saved_model=DIR/saved_model --config=DIR/config.json --output_dir=OUT

(``python evaluate.py ...`` in a checkout of the repository is the same command.)

A run directory is what train.py writes (config.json, encoder.keras); one that a train.py is
still training into is refused, naming its process (abc_tf.runs.run_lock). If it holds
``seed_<k>`` run directories (``train.py --seeds N``), each seed is evaluated into its own
folder and the seeds are aggregated into ``<output_dir>/metrics.json``: every measure as mean,
std and the seeds' values (for factor isolation per factor, with violin plots). What is
measured is the task the run's data family declares (abc_tf.evaluation.tasks):

- shapes3d: MINE mutual information and probe accuracies per factor at sigma = the loss's
  length scale (0.1 x the embeddings' spread for a method whose loss has none; histogram MI as
  well for d <= 3), optional noise sweep, PCA/bar/sweep figures
  (abc_tf.evaluation.tasks.factor_isolation), and the disentanglement scores BetaVAE, FactorVAE, MIG,
  DCI and SAP (``--disentanglement``: preset of point counts; abc_tf.evaluation.tasks.encoder_disentanglement)
  under "disentanglement" with the figure disentanglement.png;
- mnist: retrieval grid, PCA thumbnails and style measures (abc_tf.evaluation.tasks.mnist_style), and
  MIG, DCI and SAP (no image can be drawn of given style values, so BetaVAE and FactorVAE are
  listed as skipped);
- yaleb, epfl_cars, folders: probes and MINE per known label, trained against untrained
  (abc_tf.evaluation.tasks.label_information), and the retrieval grid across groups (retrieval.png,
  abc_tf.evaluation.tasks.retrieval; for folders without a labels.csv too);
- pose: median geodesic error and Acc@30 (plain and flip-invariant) of nearest-neighbour
  lookup in random dictionaries of synthetic images of known pose, for the trained encoder,
  the untrained one and its raw backbone features, plus the spherical-regression head when
  the run has one (abc_tf.evaluation.tasks.pose_accuracy); ``--pose_export_dir`` also writes the pose
  SavedModel (embed, lookup_pose, regress_pose).

MINE defaults are the paper's (20,000 steps, 256,000 samples); lower ``--mine_steps`` and
``--mine_eval_samples`` for a quick look.

While it runs, each stage prints a line when it starts and its time when it ends, and the long
computations inside it (MINE's training steps, the probes' epochs, the images the
disentanglement scores make and embed, DCI's trees, pose lookups, the VAE's likelihood) print
how far they are, the time taken and an estimate of the time left, at most every 10 seconds
(abc_tf.evaluation.progress; on a terminal one line rewritten in place). The last lines list
every file written.

The measures and figures also go into TensorBoard logs at the run's last training step,
``<output_dir>/logs/evaluation`` (abc_tf.evaluation.evaluation_logs): metrics.json's numbers as
scalars (``mine/floor_hue``, ``probe/floor_hue/accuracy``,
``disentanglement/scores/mig``, ...) and the PNG figures as images. A run evaluated
in place (no ``--output_dir``; each seed of a folder of ``seed_<k>`` runs) writes into its own
``logs``, beside its hparams, so ``tensorboard --logdir runs`` shows every run's end measures in
the HParams table next to its settings, and its figures in the Images tab. An ``--output_dir``
elsewhere (also with ``--saved_model``) gets the run's hparams in ``<output_dir>/logs`` too, a
session of its own. ``--checkpoints`` and ``--compare`` write no TensorBoard logs.

Comparing runs of any methods side by side (abc_tf.evaluation.comparison):

  abc_tf evaluate --compare=runs/abc,runs/pmp --compare_untrained --output_dir=runs/comparison

evaluates every run directory (a folder of ``seed_<k>`` runs is one row, its seeds aggregated;
``DIR+DIR+...`` one row of several runs, e.g. one per class split) on one labelled sample and
writes comparison.md, comparison.json and comparison.png.
"""

from __future__ import annotations

import os
import sys

from absl import app, flags

from abc_tf import command_line

# evaluate.py's own flags, apart from absl's global ones, which train.py defines with some of
# the same names: so a test can run both in one process (``run``).
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
flags.DEFINE_integer("num_images", 4096, "Labelled images sampled for the measures.", flag_values=FLAGS)
flags.DEFINE_integer(
    "sample_seed", 1234, "Seed of the labelled sample (the same for all runs compared).", flag_values=FLAGS
)
flags.DEFINE_float(
    "sigma",
    None,
    "Noise scale of the measures (default: the loss's length scale, sqrt(tau) for l2sq).",
    flag_values=FLAGS,
)
flags.DEFINE_integer(
    "mine_steps", 20_000, "MINE optimizer steps per network (0: skip MINE).", flag_values=FLAGS
)
flags.DEFINE_integer("mine_batch_size", 256, "MINE batch size.", flag_values=FLAGS)
flags.DEFINE_float("mine_learning_rate", 3e-4, "MINE Adam learning rate.", flag_values=FLAGS)
flags.DEFINE_integer(
    "mine_eval_samples", 256_000, "Samples averaged for the final Donsker-Varadhan value.", flag_values=FLAGS
)
flags.DEFINE_float(
    "mine_moving_average",
    0.0,
    "Rate of MINE's bias-corrected moving average (0: plain DV gradient).",
    flag_values=FLAGS,
)
flags.DEFINE_integer("probe_epochs", 30, "Epochs of each factor probe (0: skip probes).", flag_values=FLAGS)
flags.DEFINE_boolean(
    "probe_noisy_test",
    False,
    "Add the noise to the probes' test inputs too (default: training only, as in the ICLR text).",
    flag_values=FLAGS,
)
flags.DEFINE_integer(
    "num_sigmas", 0, "Points of the MI-against-noise sweep (0: none; the paper used 40).", flag_values=FLAGS
)
flags.DEFINE_enum(
    "sweep_estimator",
    "auto",
    ["auto", "mine", "histogram"],
    "Estimator of the sweep (auto: histogram for d <= 2).",
    flag_values=FLAGS,
)
flags.DEFINE_integer(
    "pose_dictionary_size", 1800, "Pose: images of known pose per lookup dictionary.", flag_values=FLAGS
)
flags.DEFINE_integer(
    "pose_repeats", 50, "Pose: random dictionaries the lookup metrics are averaged over.", flag_values=FLAGS
)
flags.DEFINE_integer(
    "pose_pool_size",
    0,
    "Pose: synthetic images of known pose the dictionaries are drawn from (0: 4 x dictionary size).",
    flag_values=FLAGS,
)
flags.DEFINE_integer(
    "pose_queries", 0, "Pose: test images per query domain (0: the data family's default).", flag_values=FLAGS
)
flags.DEFINE_list(
    "pose_query_domains",
    ["real"],
    "Pose: query domains, real and/or synthetic (held-out instances).",
    flag_values=FLAGS,
)
flags.DEFINE_enum(
    "pose_query_split",
    "test",
    ["test", "validation"],
    "Pose: the instances queried: test (held out of "
    "training) or validation (the training instances the run's --data.validation_instances held out; "
    "synthetic queries only), for tuning without the test instances.",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "pose_pretrained_backbone",
    "",
    "Pose: 'imagenet' or a ResNet50V2 notop weights file: adds the paper's ImageNet-pretrained ResNet row "
    "(no training, cosine).",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "pose_export_dir",
    None,
    "Pose: also write the SavedModel with lookup_pose (and regress_pose) here.",
    flag_values=FLAGS,
)
flags.DEFINE_integer(
    "measure_images",
    0,
    "At most this many images in each set a method's own measures read or generate "
    "(the VAEs' test ELBO and kNN, Elastic-InfoGAN's classifier, codes and 1-NN); 0: the whole sets. "
    "For checking that a run evaluates; its figures are not the paper's.",
    flag_values=FLAGS,
)
flags.DEFINE_boolean(
    "untrained",
    False,
    "Also evaluate the untrained encoder of the config (same seed) into <output_dir>/untrained.",
    flag_values=FLAGS,
)
flags.DEFINE_enum(
    "disentanglement",
    "fast",
    ["none", "fast", "full", "library"],
    "Point counts of the disentanglement scores: none (skip), fast (23,100 codes, DCI's trees on binned "
    "codes; for a CPU), full "
    "(disentanglement_lib's counts, 2,895,000 codes, DCI on 5,000), library (also DCI on 10,000, no "
    "standardising); abc_tf.evaluation.estimators.disentanglement.ScoreSettings.",
    flag_values=FLAGS,
)
flags.DEFINE_list(
    "disentanglement_scores",
    ["beta_vae", "factor_vae", "mig", "dci", "sap"],
    "Which disentanglement scores to compute (beta_vae, factor_vae, mig, dci, sap).",
    flag_values=FLAGS,
)
flags.DEFINE_list(
    "compare",
    None,
    "Run directories (any methods; a folder of seed_<k> runs is one row, and so is DIR+DIR+...) to compare "
    "side by side on one labelled sample: comparison.md/.json/.png in --output_dir.",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "network",
    "encoder",
    "The run's saved network to embed with: encoder (every method's representation) "
    "or another the method keeps (e.g. a VITAE's appearance or perspective). --compare rows: DIR@NETWORK.",
    flag_values=FLAGS,
)
flags.DEFINE_boolean(
    "compare_untrained",
    False,
    "--compare: add a row for the untrained encoder of the first run's config.",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "checkpoints",
    None,
    "Learning curve: evaluate --run_dir's checkpoints (all, last, or steps separated by "
    "commas) into <output_dir>/checkpoints/step_<S>/, and their measures against the step into curve.json "
    "and curve.png. Works on a run still training (its listed checkpoints are complete).",
    flag_values=FLAGS,
)
flags.DEFINE_multi_string(
    "curve_reference",
    [],
    "--checkpoints: a paper's value drawn as a dashed line, MEASURE=VALUE "
    "(e.g. 'NMI (code vs digit)=0.889'; repeat the flag for several); MEASURE is a name of "
    "curve.json's measures.",
    flag_values=FLAGS,
)


def settings_from_flags():
    """The :class:`abc_tf.evaluation.tasks.EvaluationSettings` of the flags, validated."""
    from abc_tf.evaluation.tasks import factor_isolation, pose_accuracy
    from abc_tf.evaluation.estimators import probes
    from abc_tf.evaluation import tasks
    from abc_tf.evaluation.estimators.mine import MineSettings

    for flag in ("mine_steps", "probe_epochs"):  # 0 skips the measure; a negative count is a slip, not a skip
        if FLAGS[flag].value < 0:
            raise ValueError(f"--{flag} must be >= 0 (0: skip), got {FLAGS[flag].value}.")
    mine = None
    if FLAGS.mine_steps > 0:
        mine = MineSettings(
            learning_rate=FLAGS.mine_learning_rate,
            batch_size=FLAGS.mine_batch_size,
            steps=FLAGS.mine_steps,
            eval_samples=FLAGS.mine_eval_samples,
            moving_average=FLAGS.mine_moving_average or None,
        )
    probe = (
        probes.ProbeSettings(epochs=FLAGS.probe_epochs, noisy_test=FLAGS.probe_noisy_test)
        if FLAGS.probe_epochs > 0
        else None
    )
    isolation = factor_isolation.IsolationSettings(
        num_images=FLAGS.num_images,
        sample_seed=FLAGS.sample_seed,
        mine=mine,
        probe=probe,
        num_sigmas=FLAGS.num_sigmas,
        sweep_estimator=FLAGS.sweep_estimator,
        sigma=FLAGS.sigma,
    )
    pose = pose_accuracy.PoseEvalSettings(
        dictionary_size=FLAGS.pose_dictionary_size,
        repeats=FLAGS.pose_repeats,
        pool_size=FLAGS.pose_pool_size,
        num_queries=FLAGS.pose_queries,
        query_domains=tuple(FLAGS.pose_query_domains),
        query_split=FLAGS.pose_query_split,
        seed=FLAGS.sample_seed,
        pretrained_backbone=FLAGS.pose_pretrained_backbone,
    )
    settings = tasks.EvaluationSettings(
        isolation=isolation,
        pose=pose,
        disentanglement=FLAGS.disentanglement,
        disentanglement_scores=tuple(FLAGS.disentanglement_scores),
        untrained=FLAGS.untrained,
        pose_export_dir=FLAGS.pose_export_dir,
        measure_images=FLAGS.measure_images,
    )
    settings.validate()
    return settings


def run_of_flags(run_dir: str | None):
    """The run --run_dir (or ``run_dir``, one of its seeds) or --saved_model names, embedding
    with --network; (run, whether it has the method's own networks)."""
    from abc_tf import data
    from abc_tf.runs.experiments import read_config
    from abc_tf.evaluation.tasks import factor_isolation
    from abc_tf.runs.run_dir import Run, load_run, network_file

    if FLAGS.saved_model:
        run_dir = os.path.dirname(os.path.normpath(FLAGS.saved_model))
        config = read_config(FLAGS.config or os.path.join(run_dir, "config.json"))
        if data.get_family(config.data.family).known_factors is None:
            raise ValueError(
                "--saved_model is supported for data with known factors (shapes3d); "
                f"{config.data.family} runs need --run_dir."
            )
        return Run(run_dir, config, factor_isolation.saved_model_encoder(FLAGS.saved_model)), False
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
        for flag in ("output_dir", "run_dir"):
            if FLAGS[flag].present and not FLAGS[flag].value.strip():
                raise ValueError(
                    f"--{flag} is empty (an unset shell variable?); name a folder, or leave the flag out."
                )
        if FLAGS.compare:
            compare_runs()
            return
        if FLAGS.compare_untrained:
            raise ValueError("--compare_untrained adds a row to --compare; pass --compare=DIR,DIR,...")
        if not FLAGS.run_dir and not FLAGS.saved_model:
            raise ValueError(
                "Pass --run_dir (a train.py run directory), --saved_model, or --compare=DIR,DIR,...."
            )
        if FLAGS.seeds < 0:
            raise ValueError(f"--seeds must be >= 0, got {FLAGS.seeds}.")
        if FLAGS.saved_model and not os.path.isfile(os.path.join(FLAGS.saved_model, "saved_model.pb")):
            raise ValueError(
                f"--saved_model={FLAGS.saved_model} is not a SavedModel folder (no saved_model.pb)."
            )
        if FLAGS.run_dir and not FLAGS.saved_model and not os.path.isdir(FLAGS.run_dir):
            raise ValueError(f"--run_dir={FLAGS.run_dir} is not a directory.")
        settings = settings_from_flags()  # every setting checked before any run is evaluated
        from abc_tf.evaluation import learning_curves, progress, tasks
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
        if FLAGS.checkpoints:
            if not FLAGS.run_dir or FLAGS.saved_model or seed_run_dirs(FLAGS.run_dir):
                raise ValueError(
                    "--checkpoints evaluates the checkpoints of one run: pass --run_dir=DIR of a single "
                    "run (for seeds, one seed_<k> folder), without --saved_model."
                )
            references = learning_curves.parse_references(FLAGS.curve_reference)
            with progress.reported():  # progress lines, then the files written
                tasks.evaluate_checkpoints(
                    FLAGS.run_dir,
                    out_dir,
                    settings,
                    FLAGS.checkpoints,
                    references,
                    network=FLAGS.network,
                    config_path=FLAGS.config,
                )
            return
        seed_dirs = seed_run_dirs(FLAGS.run_dir) if FLAGS.run_dir and not FLAGS.saved_model else []
        with progress.reported():  # progress lines, then the files written: the last lines
            if seed_dirs:
                seed_dirs = seed_dirs[: FLAGS.seeds or None]
                runs = [run_of_flags(seed_dir)[0] for seed_dir in seed_dirs]
                out_dirs = [
                    os.path.join(out_dir, os.path.basename(seed_dir)) if FLAGS.output_dir else seed_dir
                    for seed_dir in seed_dirs
                ]
                result = tasks.evaluate_seeds(runs, out_dirs, out_dir, settings)
                if "condition" in result:  # factor isolation's summary; other tasks' are in metrics.json
                    _print_summary(result)
            else:
                run, own_networks = run_of_flags(FLAGS.run_dir)
                _print_summary(tasks.evaluate_run(run, out_dir, settings, method_measures=own_networks))
    except ValueError as error:
        print(f"{command_line.program('evaluate')}: error: {error}", file=sys.stderr)
        sys.exit(2)


def compare_runs() -> None:
    """--compare: the rows side by side (abc_tf.evaluation.comparison) into --output_dir."""
    if not FLAGS.output_dir:
        raise ValueError("--compare needs --output_dir (where comparison.md, .json and .png go).")
    for flag in ("run_dir", "saved_model", "config"):
        if getattr(FLAGS, flag):
            raise ValueError(f"--compare takes its run directories itself; leave --{flag} unset.")
    if FLAGS.network != "encoder":
        raise ValueError(
            "--network chooses the network of --run_dir; a --compare row names its own as DIR@NETWORK."
        )
    settings = settings_from_flags()
    from abc_tf.evaluation import comparison, progress
    from abc_tf.runs.run_dir import check_writable

    check_writable(FLAGS.output_dir, "--output_dir")

    compared = comparison.ComparisonSettings(
        settings.isolation, settings.scores, settings.disentanglement, settings.disentanglement_scores
    )
    with progress.reported():  # progress lines, then the files written
        result = comparison.compare(
            FLAGS.compare, FLAGS.output_dir, compared, untrained=FLAGS.compare_untrained
        )
        print(comparison.markdown(result))


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

"""Evaluates trained encoders: factor isolation (Shapes3D), digit style (MNIST), known labels.

  python evaluate.py --run_dir=runs/shapes3d            # one run, or the seed_<k> runs inside
  python evaluate.py --saved_model=DIR/saved_model --config=DIR/config.json --output_dir=OUT

A run directory is what train.py writes (config.json, encoder.keras); one that a train.py is
still training into is refused, naming its process (abc_tf.runs.run_lock). If it holds
``seed_<k>`` run directories (``train.py --seeds N``), each seed is evaluated into its own
folder and the seeds are aggregated (mean, std, values per factor; violin plots) into
``<output_dir>/metrics.json``. What is measured depends on the run's data family:

- shapes3d: MINE mutual information and probe accuracies per factor at sigma = the loss's
  length scale (0.1 x the embeddings' spread for a method whose loss has none; histogram MI as
  well for d <= 3), optional noise sweep, PCA/bar/sweep figures
  (abc_tf.evaluation.factor_isolation), and the disentanglement scores BetaVAE, FactorVAE, MIG,
  DCI and SAP (``--disentanglement``: preset of point counts; abc_tf.evaluation.encoder_disentanglement)
  under "disentanglement" with the figure disentanglement.png;
- mnist: retrieval grid, PCA thumbnails and style measures (abc_tf.evaluation.mnist_style), and
  MIG, DCI and SAP (no image can be drawn of given style values, so BetaVAE and FactorVAE are
  listed as skipped);
- yaleb, epfl_cars, folders: probes and MINE per known label, trained against untrained
  (abc_tf.evaluation.label_information);
- pose: median geodesic error and Acc@30 (plain and flip-invariant) of nearest-neighbour
  lookup in random dictionaries of synthetic images of known pose, for the trained encoder,
  the untrained one and its raw backbone features, plus the spherical-regression head when
  the run has one (abc_tf.evaluation.pose_accuracy); ``--pose_export_dir`` also writes the pose
  SavedModel (embed, lookup_pose, regress_pose).

MINE defaults are the paper's (20,000 steps, 256,000 samples); lower ``--mine_steps`` and
``--mine_eval_samples`` for a quick look.

Comparing runs of any methods side by side (abc_tf.evaluation.comparison):

  python evaluate.py --compare=runs/abc,runs/pmp --compare_untrained --output_dir=runs/comparison

evaluates every run directory (a folder of ``seed_<k>`` runs is one row, its seeds aggregated;
``DIR+DIR+...`` one row of several runs, e.g. one per class split) on one labelled sample and
writes comparison.md, comparison.json and comparison.png.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

from absl import app, flags

from abc_tf import json_files  # no TensorFlow: --help stays fast

FLAGS = flags.FLAGS

flags.DEFINE_string("run_dir", None, "Run directory written by train.py (config.json, encoder.keras), or a folder of seed_<k> runs.")
flags.DEFINE_string("saved_model", None, "Evaluate this exported SavedModel instead of run_dir's encoder.keras (needs --config or a config.json beside it).")
flags.DEFINE_string("config", None, "config.json of the run (default: run_dir/config.json, or the one beside --saved_model).")
flags.DEFINE_string("output_dir", None, "Where metrics.json and the figures go (default: the run directory).")
flags.DEFINE_integer("seeds", 0, "Evaluate at most this many seed_<k> runs of run_dir (0: all found).")
flags.DEFINE_integer("num_images", 4096, "Labelled images sampled for the measures.")
flags.DEFINE_integer("sample_seed", 1234, "Seed of the labelled sample (the same for all runs compared).")
flags.DEFINE_float("sigma", None, "Noise scale of the measures (default: the loss's length scale, sqrt(tau) for l2sq).")
flags.DEFINE_integer("mine_steps", 20_000, "MINE optimizer steps per network (0: skip MINE).")
flags.DEFINE_integer("mine_batch_size", 256, "MINE batch size.")
flags.DEFINE_float("mine_learning_rate", 3e-4, "MINE Adam learning rate.")
flags.DEFINE_integer("mine_eval_samples", 256_000, "Samples averaged for the final Donsker-Varadhan value.")
flags.DEFINE_float("mine_moving_average", 0.0, "Rate of MINE's bias-corrected moving average (0: plain DV gradient).")
flags.DEFINE_integer("probe_epochs", 30, "Epochs of each factor probe (0: skip probes).")
flags.DEFINE_boolean("probe_noisy_test", False, "Add the noise to the probes' test inputs too (default: training only, as in the ICLR text).")
flags.DEFINE_integer("num_sigmas", 0, "Points of the MI-against-noise sweep (0: none; the paper used 40).")
flags.DEFINE_enum("sweep_estimator", "auto", ["auto", "mine", "histogram"], "Estimator of the sweep (auto: histogram for d <= 2).")
flags.DEFINE_integer("pose_dictionary_size", 1800, "Pose: images of known pose per lookup dictionary.")
flags.DEFINE_integer("pose_repeats", 50, "Pose: random dictionaries the lookup metrics are averaged over.")
flags.DEFINE_integer("pose_pool_size", 0, "Pose: synthetic images of known pose the dictionaries are drawn from (0: 4 x dictionary size).")
flags.DEFINE_integer("pose_queries", 0, "Pose: test images per query domain (0: the data family's default).")
flags.DEFINE_list("pose_query_domains", ["real"], "Pose: query domains, real and/or synthetic (held-out instances).")
flags.DEFINE_string("pose_export_dir", None, "Pose: also write the SavedModel with lookup_pose (and regress_pose) here.")
flags.DEFINE_boolean("untrained", False, "Also evaluate the untrained encoder of the config (same seed) into <output_dir>/untrained.")
flags.DEFINE_enum("disentanglement", "fast", ["none", "fast", "full", "library"],
                  "Point counts of the disentanglement scores: none (skip), fast (23,100 codes, for a CPU), full "
                  "(disentanglement_lib's counts, 2,895,000 codes, DCI on 5,000), library (also DCI on 10,000, no "
                  "standardising); abc_tf.evaluation.disentanglement.ScoreSettings.")
flags.DEFINE_list("disentanglement_scores", ["beta_vae", "factor_vae", "mig", "dci", "sap"],
                  "Which disentanglement scores to compute (beta_vae, factor_vae, mig, dci, sap).")
flags.DEFINE_list("compare", None, "Run directories (any methods; a folder of seed_<k> runs is one row, and so is DIR+DIR+...) to compare "
                  "side by side on one labelled sample: comparison.md/.json/.png in --output_dir.")
flags.DEFINE_string("network", "encoder", "The run's saved network to embed with: encoder (every method's representation) "
                    "or another the method keeps (e.g. a VITAE's appearance or perspective). --compare rows: DIR@NETWORK.")
flags.DEFINE_boolean("compare_untrained", False, "--compare: add a row for the untrained encoder of the first run's config.")
flags.DEFINE_string("checkpoints", None, "Learning curve: evaluate --run_dir's checkpoints (all, last, or steps separated by "
                    "commas) into <output_dir>/checkpoints/step_<S>/, and their measures against the step into curve.json "
                    "and curve.png. Works on a run still training (its listed checkpoints are complete).")
flags.DEFINE_multi_string("curve_reference", [], "--checkpoints: a paper's value drawn as a dashed line, MEASURE=VALUE "
                          "(e.g. 'NMI (code vs digit)=0.889'; repeat the flag for several); MEASURE is a name of "
                          "curve.json's measures.")


def settings_from_flags():
    from abc_tf.evaluation import factor_isolation, probes
    from abc_tf.evaluation.mine import MineSettings

    mine = None
    if FLAGS.mine_steps > 0:
        mine = MineSettings(
            learning_rate=FLAGS.mine_learning_rate,
            batch_size=FLAGS.mine_batch_size,
            steps=FLAGS.mine_steps,
            eval_samples=FLAGS.mine_eval_samples,
            moving_average=FLAGS.mine_moving_average or None,
        )
    probe = probes.ProbeSettings(epochs=FLAGS.probe_epochs, noisy_test=FLAGS.probe_noisy_test) if FLAGS.probe_epochs > 0 else None
    settings = factor_isolation.IsolationSettings(
        num_images=FLAGS.num_images, sample_seed=FLAGS.sample_seed, mine=mine, probe=probe,
        num_sigmas=FLAGS.num_sigmas, sweep_estimator=FLAGS.sweep_estimator, sigma=FLAGS.sigma,
    )
    settings.validate()
    return settings


def disentanglement_from_flags():
    """(ScoreSettings or None for --disentanglement=none, the scores to compute); ValueError on bad flags."""
    from abc_tf.evaluation import disentanglement

    settings = disentanglement.ScoreSettings.preset(FLAGS.disentanglement)
    scores = tuple(FLAGS.disentanglement_scores)
    unknown = [name for name in scores if name not in disentanglement.SCORES]
    if unknown or not scores:
        raise ValueError(f"--disentanglement_scores: unknown or no scores {unknown or list(scores)}; "
                         f"choose from {', '.join(disentanglement.SCORES)}.")
    return settings, scores


def add_disentanglement(encoder, config, out_dir: str, metrics: dict, untrained: tuple | None = None) -> None:
    """Adds the disentanglement scores to ``metrics`` (and, for ``untrained`` = (untrained
    encoder, its metrics), to those) and draws disentanglement.png, unless --disentanglement=none."""
    from abc_tf.evaluation import encoder_disentanglement

    settings, scores = disentanglement_from_flags()
    if settings is None:
        return
    series = {}
    for label, (network, target) in {"trained": (encoder, metrics), "untrained": untrained or (None, None)}.items():
        if network is not None:
            target["disentanglement"] = encoder_disentanglement.evaluate_disentanglement(
                network, config, settings, FLAGS.sample_seed, scores)
            series[label] = target["disentanglement"]["scores"]
    if series["trained"]:
        encoder_disentanglement.plot_scores(series, os.path.join(out_dir, encoder_disentanglement.FIGURE),
                                            f"disentanglement ({FLAGS.disentanglement} preset)")
        figures = metrics.setdefault("figures", [])
        if isinstance(figures, dict):  # mnist_style names its figures by what they show
            figures["disentanglement"] = os.path.join(out_dir, encoder_disentanglement.FIGURE)
        else:
            figures.append(encoder_disentanglement.FIGURE)


def _write_json(path: str, value) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    json_files.write_json(path, value, sort_keys=True)


def evaluate_factors(run, out_dir: str, settings) -> dict:
    """Factor isolation of one encoder on a family with known factors (plus the untrained one if asked)."""
    from abc_tf.evaluation import factor_isolation
    from abc_tf.runs.training import untrained_encoder

    config = run.config
    sample = factor_isolation.labelled_sample(config, settings.num_images, settings.sample_seed)
    metrics = factor_isolation.evaluate_encoder(run.encoder, config, settings, out_dir, sample)
    untrained = None
    if FLAGS.untrained:
        network = untrained_encoder(config)
        metrics["untrained"] = factor_isolation.evaluate_encoder(
            network, config, settings, os.path.join(out_dir, "untrained"), sample, title="untrained network",
        )
        untrained = (network, metrics["untrained"])
    add_disentanglement(run.encoder, config, out_dir, metrics, untrained)
    return metrics


def evaluate_digit_style(run, out_dir: str, settings) -> dict:
    """MNIST: retrieval grid, PCA thumbnails and style measures (abc_tf.evaluation.mnist_style),
    1-NN digit accuracy and k-means NMI (abc_tf.evaluation.digit_clusters)."""
    from abc_tf.evaluation import digit_clusters, mnist_style
    from abc_tf.runs.training import untrained_encoder

    metrics = mnist_style.evaluate_mnist_run(run.encoder, run.config, out_dir, probe_epochs=max(FLAGS.probe_epochs, 1))
    # Every method's representation gets the digit-cluster measures of Elastic-InfoGAN's paper
    # (1-NN accuracy, k-means NMI), so ABC, VAE and GAN rows read alike.
    metrics["digit_clusters"] = digit_clusters.representation_scores(run.encoder, run.config, settings.sample_seed)
    metrics["untrained"]["digit_clusters"] = digit_clusters.representation_scores(
        untrained_encoder(run.config), run.config, settings.sample_seed)
    add_disentanglement(run.encoder, run.config, out_dir, metrics)
    return metrics


def evaluate_labels(run, out_dir: str, settings) -> dict:
    """Probes and MINE per known label, trained against untrained (abc_tf.evaluation.label_information)."""
    from abc_tf.evaluation import label_information, probes

    result = label_information.trained_vs_untrained(
        run.config, run.encoder, label_information.load_labelled(run.config),
        label_information.LabelSettings(probe_settings=settings.probe or probes.ProbeSettings(), mine_settings=settings.mine),
    )
    return json.loads(label_information.to_json(result))


def evaluate_pose(run, out_dir: str, settings) -> dict:
    """Pose lookup and regression metrics of one run (abc_tf.evaluation.pose_accuracy), optional SavedModel."""
    from abc_tf.evaluation import pose_accuracy
    from abc_tf.runs import export

    metrics = pose_accuracy.evaluate_pose_run(run.run_dir, pose_settings_from_flags(), out_dir=out_dir, run=run)
    for domain in metrics["domains"]:
        print(f"Pose, {domain} queries ({metrics['domains'][domain]['num_queries']} images):")
        print(pose_accuracy.format_table(metrics, domain))
    if FLAGS.pose_export_dir:
        networks = {"encoder": run.encoder, "head": run.network("head")}
        export.export_run(run.config, networks, FLAGS.pose_export_dir, dictionary_size=FLAGS.pose_dictionary_size)
        print(f"Wrote the pose SavedModel to {FLAGS.pose_export_dir}")
    return metrics


# The evaluation of each data family; every evaluator takes any method's run (its encoder is
# the representation), so a new method needs no entry here and a new family one line.
EVALUATORS = {
    "shapes3d": evaluate_factors,
    "mnist": evaluate_digit_style,
    "yaleb": evaluate_labels,
    "epfl_cars": evaluate_labels,
    "folders": evaluate_labels,
    "pose": evaluate_pose,
}


def evaluate_likelihood(run, out_dir: str, settings) -> dict:
    """VAE and VITAE: test ELBO, importance-weighted log p(x), kNN digit accuracy (abc_tf.evaluation.likelihood)."""
    from abc_tf.evaluation import likelihood

    metrics = likelihood.evaluate_run(run, seed=settings.sample_seed)
    print(likelihood.summary(metrics))
    return metrics


def evaluate_digit_clusters(run, out_dir: str, settings) -> dict:
    """Elastic-InfoGAN: NMI and ENT of the code of generated digits, 1-NN and k-means NMI of the
    encoder (abc_tf.evaluation.digit_clusters)."""
    from abc_tf.evaluation import digit_clusters

    metrics = digit_clusters.evaluate_run(run, out_dir, seed=settings.sample_seed)
    print(digit_clusters.summary(metrics))
    return metrics


# Measures that only a method's own networks allow (a VAE's likelihood, a GAN's samples):
# ``(run, out_dir, settings) -> dict``, run after the family's evaluator and stored under
# metrics.json's "method" entry. One line per method that has such measures.
METHOD_EVALUATORS = {
    "vae": evaluate_likelihood,
    "u_vitae": evaluate_likelihood,
    "c_vitae": evaluate_likelihood,
    "elastic_infogan": evaluate_digit_clusters,
}


def evaluate_one(run_dir: str | None, out_dir: str, settings, run=None) -> dict:
    """Evaluates one run directory (or the --saved_model, or ``run``: a run read from one of its
    checkpoints) with its data family's evaluator."""
    from abc_tf import data
    from abc_tf.config import read_config
    from abc_tf.evaluation import factor_isolation
    from abc_tf.runs.run_dir import Run, load_run, network_file

    if run is not None:
        if FLAGS.network != "encoder":
            if run.network(FLAGS.network) is None:
                raise ValueError(f"--network={FLAGS.network}: the method of {run_dir} has no network {FLAGS.network}.")
            run = dataclasses.replace(run, encoder=run.network(FLAGS.network))
        if run.config.data not in EVALUATORS:
            raise ValueError(f"evaluate.py has no evaluation for data family {run.config.data!r} ({', '.join(EVALUATORS)}).")
        evaluator = EVALUATORS[run.config.data]
    elif FLAGS.saved_model:
        run_dir = os.path.dirname(os.path.normpath(FLAGS.saved_model))
        config = read_config(FLAGS.config or os.path.join(run_dir, "config.json"))
        if data.get_family(config.data).known_factors is None:
            raise ValueError(f"--saved_model is supported for data with known factors (shapes3d); {config.data} runs need --run_dir.")
        run = Run(run_dir, config, factor_isolation.saved_model_encoder(FLAGS.saved_model))
        evaluator = evaluate_factors
    else:
        if FLAGS.network != "encoder" and not os.path.isfile(network_file(run_dir, FLAGS.network)):
            raise ValueError(f"--network={FLAGS.network}: {run_dir} has no {FLAGS.network}.keras.")
        run = load_run(run_dir, FLAGS.config)
        if FLAGS.network != "encoder":
            run = dataclasses.replace(run, encoder=run.network(FLAGS.network))
        if run.config.data not in EVALUATORS:
            raise ValueError(f"evaluate.py has no evaluation for data family {run.config.data!r} ({', '.join(EVALUATORS)}).")
        evaluator = EVALUATORS[run.config.data]
    metrics = evaluator(run, out_dir, settings)
    if not FLAGS.saved_model and run.config.method in METHOD_EVALUATORS:
        metrics["method"] = METHOD_EVALUATORS[run.config.method](run, out_dir, settings)
    _write_json(os.path.join(out_dir, "metrics.json"), metrics)
    return metrics


def evaluate_checkpoints(run_dir: str, out_dir: str, settings) -> dict:
    """--checkpoints: each chosen checkpoint of ``run_dir`` evaluated like a finished run into
    ``out_dir/checkpoints/step_<S>``, and the learning curve of their measures (curve.json, curve.png)."""
    import time

    from abc_tf.evaluation import learning_curves
    from abc_tf.runs import checkpoint_run

    references = learning_curves.parse_references(FLAGS.curve_reference)
    steps = checkpoint_run.select_steps(run_dir, FLAGS.checkpoints)
    points = []
    for index, step in enumerate(steps, 1):
        started = time.monotonic()
        print(f"Checkpoint {index}/{len(steps)}: step {step}")
        run = checkpoint_run.load_checkpoint_run(run_dir, step, FLAGS.config)
        metrics = evaluate_one(run_dir, os.path.join(out_dir, "checkpoints", f"step_{step}"), settings, run=run)
        points.append((step, learning_curves.curve_measures(metrics)))
        print(f"  step {step} evaluated in {time.monotonic() - started:.0f} s: "
              + ", ".join(f"{name} {value:.4g}" for name, value in sorted(points[-1][1].items())))
    title = f"{os.path.basename(os.path.normpath(run_dir))}: {run.config.method} on {run.config.data}"
    curve = learning_curves.write_curve(points, out_dir, title, references)
    print(f"Wrote {os.path.join(out_dir, learning_curves.CURVE_JSON)} and {os.path.join(out_dir, learning_curves.CURVE_FIGURE)}")
    return curve


def pose_settings_from_flags():
    from abc_tf.evaluation import pose_accuracy

    settings = pose_accuracy.PoseEvalSettings(
        dictionary_size=FLAGS.pose_dictionary_size, repeats=FLAGS.pose_repeats, pool_size=FLAGS.pose_pool_size,
        num_queries=FLAGS.pose_queries, query_domains=tuple(FLAGS.pose_query_domains), seed=FLAGS.sample_seed,
    )
    settings.validate()
    return settings


def aggregate_seeds(seed_dirs: list[str], out_dir: str, settings) -> dict:
    """Evaluates every seed run and writes the aggregate metrics.json and violin plots."""
    from abc_tf.evaluation import factor_isolation, plots

    runs = []
    for seed_dir in seed_dirs:
        seed_out = os.path.join(out_dir, os.path.basename(seed_dir)) if FLAGS.output_dir else seed_dir
        print(f"Evaluating {seed_dir} -> {seed_out}")
        runs.append(evaluate_one(seed_dir, seed_out, settings))
    if not all("condition" in run for run in runs):
        # Families other than shapes3d have their own per-run outputs; nothing to aggregate here.
        return {"runs": seed_dirs}
    summary = factor_isolation.aggregate(runs)
    summary.update(condition=runs[0]["condition"], inactive=runs[0]["inactive"], runs=seed_dirs, sigma=runs[0]["sigma"])
    inactive = runs[0]["inactive"]
    for key, label in (("mine", "I(U; G) [nats]"), ("histogram", "I(U; G) [nats]"), ("probe_accuracy", "test accuracy")):
        if key in summary:
            names, table = factor_isolation.seed_table(summary, key)
            chance = [summary["chance"][n] for n in names] if key == "probe_accuracy" else None
            plots.plot_factor_distribution(
                table, names, inactive, os.path.join(out_dir, f"seeds_{key}.png"), label,
                title=f"{summary['condition']} ({len(runs)} seeds)", chance=chance,
            )
    if all("untrained" in run for run in runs):
        summary["untrained"] = factor_isolation.aggregate([run["untrained"] for run in runs])
    if "disentanglement" in summary:
        from abc_tf.evaluation import encoder_disentanglement

        series = {label: {key: value["values"] for key, value in part["disentanglement"].items()}
                  for label, part in (("trained", summary), ("untrained", summary.get("untrained", {})))
                  if "disentanglement" in part}
        encoder_disentanglement.plot_scores(series, os.path.join(out_dir, "seeds_disentanglement.png"),
                                            f"{summary['condition']} ({len(runs)} seeds)")
    _write_json(os.path.join(out_dir, "metrics.json"), summary)
    return summary


def main(argv: list[str]) -> None:
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
    try:
        if FLAGS.compare:
            compare_runs()
            return
        if FLAGS.compare_untrained:
            raise ValueError("--compare_untrained adds a row to --compare; pass --compare=DIR,DIR,...")
        if not FLAGS.run_dir and not FLAGS.saved_model:
            raise ValueError("Pass --run_dir (a train.py run directory), --saved_model, or --compare=DIR,DIR,....")
        if FLAGS.seeds < 0:
            raise ValueError(f"--seeds must be >= 0, got {FLAGS.seeds}.")
        if FLAGS.saved_model and not os.path.isfile(os.path.join(FLAGS.saved_model, "saved_model.pb")):
            raise ValueError(f"--saved_model={FLAGS.saved_model} is not a SavedModel folder (no saved_model.pb).")
        if FLAGS.run_dir and not FLAGS.saved_model and not os.path.isdir(FLAGS.run_dir):
            raise ValueError(f"--run_dir={FLAGS.run_dir} is not a directory.")
        settings = settings_from_flags()
        pose_settings_from_flags()  # checked here, so a bad pose flag stops before any run is evaluated
        disentanglement_from_flags()
        from abc_tf.runs.run_dir import seed_run_dirs

        out_dir = FLAGS.output_dir or FLAGS.run_dir or os.path.dirname(os.path.normpath(FLAGS.saved_model))
        if FLAGS.checkpoints:
            if not FLAGS.run_dir or FLAGS.saved_model or seed_run_dirs(FLAGS.run_dir):
                raise ValueError("--checkpoints evaluates the checkpoints of one run: pass --run_dir=DIR of a single "
                                 "run (for seeds, one seed_<k> folder), without --saved_model.")
            evaluate_checkpoints(FLAGS.run_dir, out_dir, settings)
            return
        seed_dirs = seed_run_dirs(FLAGS.run_dir) if FLAGS.run_dir and not FLAGS.saved_model else []
        if seed_dirs:
            if FLAGS.seeds:
                seed_dirs = seed_dirs[: FLAGS.seeds]
            result = aggregate_seeds(seed_dirs, out_dir, settings)
        else:
            result = evaluate_one(FLAGS.run_dir, out_dir, settings)
        print(f"Wrote {os.path.join(out_dir, 'metrics.json')}")
        _print_summary(result)
    except ValueError as error:
        print(f"evaluate.py: error: {error}", file=sys.stderr)
        sys.exit(2)


def compare_runs() -> None:
    """--compare: the rows side by side (abc_tf.evaluation.comparison) into --output_dir."""
    if not FLAGS.output_dir:
        raise ValueError("--compare needs --output_dir (where comparison.md, .json and .png go).")
    for flag in ("run_dir", "saved_model", "config"):
        if getattr(FLAGS, flag):
            raise ValueError(f"--compare takes its run directories itself; leave --{flag} unset.")
    if FLAGS.network != "encoder":
        raise ValueError("--network chooses the network of --run_dir; a --compare row names its own as DIR@NETWORK.")
    scores, score_names = disentanglement_from_flags()
    isolation = settings_from_flags()
    from abc_tf.evaluation import comparison

    settings = comparison.ComparisonSettings(isolation, scores, FLAGS.disentanglement, score_names)
    result = comparison.compare(FLAGS.compare, FLAGS.output_dir, settings, untrained=FLAGS.compare_untrained)
    print(comparison.markdown(result))
    print("Wrote " + ", ".join(os.path.join(FLAGS.output_dir, name) for name in comparison.FILES))


def _print_summary(result: dict) -> None:
    for key in ("mine", "histogram"):
        if key in result:
            values = result[key]
            text = ", ".join(
                f"{name} {value['mean']:.3f}+-{value['std']:.3f}" if isinstance(value, dict) else f"{name} {value:.3f}"
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
        text = ", ".join(f"{key} {value['mean'] if isinstance(value, dict) else value:.3f}" for key, value in scores.items())
        print(f"  disentanglement: {text}")
    if isinstance(result.get("trained"), dict) and "true_style_r2" in result["trained"]:  # MNIST, procedural digits
        from abc_tf.evaluation import mnist_style

        print(mnist_style.true_style_summary(result))


if __name__ == "__main__":
    app.run(main)

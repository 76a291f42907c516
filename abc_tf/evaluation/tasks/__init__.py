"""Evaluation as declared tasks: what ``evaluate.py`` runs on a run directory.

A data family names the task that evaluates a representation on its labels. That is
``DataFamily.evaluation_task``: a key of :data:`TASKS`, or the ``"module:NAME"`` of its own :class:`Task`.
A method whose networks allow extra measures names their function in ``Method.measures``
(``"module:function"``). Examples here are a VAE's test likelihood and a GAN's code clusters.
Both are ``(run, out_dir, settings) -> dict``. They read an :class:`EvaluationSettings`, never flags.
They write figures under ``out_dir`` and return what ``metrics.json`` holds.
The method's measures go under its "method" entry.
:func:`evaluate_run` also writes measures and figures to TensorBoard logs beside metrics.json.
It records every file written, for evaluate.py's closing list.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable

from abc_tf import data, json_files, methods, registry
from abc_tf.evaluation.tasks import (
    digit_clusters,
    encoder_disentanglement,
    factor_isolation,
    label_information,
    labelled_samples,
    likelihood,
    mnist_style,
    pose_accuracy,
    retrieval,
)
from abc_tf.evaluation import evaluation_logs, learning_curves, progress
from abc_tf.evaluation.estimators import plots, probes
from abc_tf.evaluation.estimators.disentanglement import SCORES, ScoreSettings
from abc_tf.evaluation.progress import stage
from abc_tf.runs import checkpoint_run, export
from abc_tf.runs.run_dir import Run
from abc_tf.runs.training import measures_skipped, untrained_encoder

METRICS_FILE = "metrics.json"
RETRIEVAL_FIGURE = "retrieval.png"


@dataclasses.dataclass(frozen=True)
class EvaluationSettings:
    """Everything a task may read.

    isolation: the labelled sample's size and seed, MINE, probes, noise scale and sweep.
    pose: the pose lookup's dictionaries and queries.
    disentanglement: the point-count preset of the disentanglement scores; "none" skips them.
    disentanglement_scores: which scores to compute.
    untrained: the factor task also measures the untrained encoder. The other tasks always do.
    pose_export_dir: the pose task also writes the SavedModel with ``lookup_pose`` here.
    measure_images: at most this many images per set that a method's own measures read; 0 means all.
      The sets are test, reference and training images, and generated images per code.
      Use it to check that every method's run evaluates, not for figures.
    """

    isolation: factor_isolation.IsolationSettings = factor_isolation.IsolationSettings()
    pose: pose_accuracy.PoseEvalSettings = pose_accuracy.PoseEvalSettings()
    disentanglement: str = "fast"
    disentanglement_scores: tuple[str, ...] = SCORES
    untrained: bool = False
    pose_export_dir: str | None = None
    measure_images: int = 0

    @property
    def sample_seed(self) -> int:
        return self.isolation.sample_seed

    @property
    def scores(self) -> ScoreSettings | None:
        """The point counts of :attr:`disentanglement`; None means no scores."""
        return ScoreSettings.preset(self.disentanglement)

    def validate(self) -> None:
        """Raises ValueError naming a setting that cannot work, before any run is evaluated."""
        self.isolation.validate()
        self.pose.validate()
        self.scores  # noqa: B018 - an unknown preset raises
        if self.measure_images < 0:
            raise ValueError(f"measure_images must be >= 0 (0: the whole sets), got {self.measure_images}.")
        unknown = [name for name in self.disentanglement_scores if name not in SCORES]
        if unknown or not self.disentanglement_scores:
            raise ValueError(
                "disentanglement_scores: unknown or no scores "
                f"{unknown or list(self.disentanglement_scores)}; choose from {', '.join(SCORES)}."
            )


def add_disentanglement(
    encoder, config, out_dir: str, metrics: dict, settings: EvaluationSettings, untrained: tuple | None = None
) -> None:
    """Adds the disentanglement scores to ``metrics`` and draws disentanglement.png.

    Does nothing when the preset is "none". ``untrained`` is (untrained encoder, its metrics);
    when given, its scores go into those metrics too.
    """
    scores = settings.scores
    if scores is None:
        return
    series = {}
    for label, (network, target) in {
        "trained": (encoder, metrics),
        "untrained": untrained or (None, None),
    }.items():
        if network is not None:
            with stage(f"disentanglement scores of the {label} encoder ({settings.disentanglement} preset)"):
                target["disentanglement"] = encoder_disentanglement.evaluate_disentanglement(
                    network, config, scores, settings.sample_seed, settings.disentanglement_scores
                )
            series[label] = target["disentanglement"]["scores"]
    if series["trained"]:
        encoder_disentanglement.plot_scores(
            series,
            os.path.join(out_dir, encoder_disentanglement.FIGURE),
            f"disentanglement ({settings.disentanglement} preset)",
        )
        figures = metrics.setdefault("figures", [])
        if isinstance(figures, dict):  # mnist_style names its figures by what they show
            figures["disentanglement"] = os.path.join(out_dir, encoder_disentanglement.FIGURE)
        else:
            figures.append(encoder_disentanglement.FIGURE)


def evaluate_factors(run: Run, out_dir: str, settings: EvaluationSettings) -> dict:
    """Factor isolation of one encoder on a family with known factors, and of the untrained one if asked."""
    config, isolation = run.config, settings.isolation
    sample = factor_isolation.labelled_sample(config, isolation.num_images, isolation.sample_seed)
    with stage(f"factor isolation of the trained encoder on {isolation.num_images} images (probes, MINE)"):
        metrics = factor_isolation.evaluate_encoder(run.encoder, config, isolation, out_dir, sample)
    untrained = None
    if settings.untrained:
        network = untrained_encoder(config)
        with stage("factor isolation of the untrained encoder"):
            metrics["untrained"] = factor_isolation.evaluate_encoder(
                network,
                config,
                isolation,
                os.path.join(out_dir, "untrained"),
                sample,
                title="untrained network",
            )
        untrained = (network, metrics["untrained"])
    add_disentanglement(run.encoder, config, out_dir, metrics, settings, untrained)
    return metrics


def evaluate_digit_style(run: Run, out_dir: str, settings: EvaluationSettings) -> dict:
    """Digits: retrieval grid, PCA thumbnails and style measures, 1-NN digit accuracy and k-means NMI.

    Source: abc_tf.evaluation.tasks.mnist_style and abc_tf.evaluation.tasks.digit_clusters.
    """
    probe_epochs = settings.isolation.probe.epochs if settings.isolation.probe is not None else 1
    with stage("digit style: retrieval grid, PCA, style probes (trained and untrained)"):
        metrics = mnist_style.evaluate_mnist_run(run.encoder, run.config, out_dir, probe_epochs=probe_epochs)
    # Every method's representation gets the digit-cluster measures of Elastic-InfoGAN's paper
    # (1-NN accuracy, k-means NMI), so ABC, VAE and GAN rows read alike.
    with stage("digit clusters (1-NN, k-means NMI)"):
        metrics["digit_clusters"] = digit_clusters.representation_scores(
            run.encoder, run.config, settings.sample_seed
        )
        metrics["untrained"]["digit_clusters"] = digit_clusters.representation_scores(
            untrained_encoder(run.config), run.config, settings.sample_seed
        )
    add_disentanglement(run.encoder, run.config, out_dir, metrics, settings)
    return metrics


def evaluate_labels(run: Run, out_dir: str, settings: EvaluationSettings) -> dict:
    """Probes and MINE per known label, trained against untrained, and a retrieval grid across groups.

    The grid (retrieval.png) needs no label. See abc_tf.evaluation.tasks.label_information.
    """
    isolation, config = settings.isolation, run.config
    grouped = label_information.load_labelled(config)
    with stage("probes and MINE per label, trained and untrained"):
        metrics = label_information.to_dict(
            label_information.trained_vs_untrained(
                config,
                run.encoder,
                grouped,
                label_information.LabelSettings(
                    probe_settings=isolation.probe or probes.ProbeSettings(), mine_settings=isolation.mine
                ),
            )
        )
    path = os.path.join(out_dir, RETRIEVAL_FIGURE)
    with stage("retrieval grid across groups"):
        metrics["retrieval"] = retrieval.group_retrieval(
            [("trained", run.encoder), ("untrained", untrained_encoder(config))],
            grouped,
            config.embedding_similarity,
            path,
            seed=settings.sample_seed,
        )
    metrics["figures"] = {"retrieval": path}
    return metrics


def evaluate_pose(run: Run, out_dir: str, settings: EvaluationSettings) -> dict:
    """Pose lookup and regression metrics of one run, and the SavedModel if asked."""
    with stage("pose lookup in random dictionaries (trained, untrained, backbone)"):
        metrics = pose_accuracy.evaluate_pose_run(run.run_dir, settings.pose, out_dir=out_dir, run=run)
    for domain in metrics["domains"]:
        print(f"Pose, {domain} queries ({metrics['domains'][domain]['num_queries']} images):")
        print(pose_accuracy.format_table(metrics, domain))
    if settings.pose_export_dir:
        networks = {"encoder": run.encoder, "head": run.network("head")}
        export.export_run(
            run.config, networks, settings.pose_export_dir, dictionary_size=settings.pose.dictionary_size
        )
        progress.wrote(settings.pose_export_dir)
        print(f"Wrote the pose SavedModel to {settings.pose_export_dir}")
    return metrics


def likelihood_measures(run: Run, out_dir: str, settings: EvaluationSettings) -> dict:
    """VAE and VITAE: test ELBO, importance-weighted log p(x) and kNN digit accuracy."""
    del out_dir
    with stage("test ELBO and importance-weighted log p(x)"):
        metrics = likelihood.evaluate_run(run, seed=settings.sample_seed, max_images=settings.measure_images)
    print(likelihood.summary(metrics))
    return metrics


def digit_cluster_measures(run: Run, out_dir: str, settings: EvaluationSettings) -> dict:
    """Elastic-InfoGAN: NMI and ENT of generated digits' code; 1-NN and k-means NMI of the encoder."""
    with stage("the code's digit clusters (NMI, ENT, 1-NN)"):
        metrics = digit_clusters.evaluate_run(
            run, out_dir, seed=settings.sample_seed, max_images=settings.measure_images
        )
    print(digit_clusters.summary(metrics))
    return metrics


Evaluate = Callable[[Run, str, EvaluationSettings], dict]


@dataclasses.dataclass(frozen=True)
class Task:
    """One data family's evaluation.

    evaluate: ``(run, out_dir, settings) -> metrics``, the whole evaluation.
    labelled_sample: ``(config, num_images, seed) -> LabelledSample or None``. The factor-isolation
    callback, the end-of-run summary and ``--compare`` measure on this sample. None: the task has
    none, and those skip the family.
    """

    evaluate: Evaluate
    labelled_sample: Callable[..., labelled_samples.LabelledSample | None] | None = None


# The task of each kind of labels a family offers (DataFamily.evaluation_task).
TASKS: dict[str, Task] = {
    "factors": Task(evaluate_factors, labelled_samples.known_factor_sample),
    "digit_style": Task(evaluate_digit_style, labelled_samples.known_factor_sample),
    "labels": Task(evaluate_labels, labelled_samples.grouped_label_sample),
    "pose": Task(evaluate_pose, labelled_samples.pose_sample),
}


def measures_of(reference: str) -> Evaluate:
    """Loads the method's own measures function that ``Method.measures`` names (``"module:function"``)."""
    function = registry.load(reference)
    if not callable(function):
        raise TypeError(f"Method.measures {reference!r} is not a function (run, out_dir, settings) -> dict.")
    return function


def declared_task(name: str) -> Task | None:
    """The task a family's ``evaluation_task`` names.

    That is a key of :data:`TASKS` or the ``"module:NAME"`` of a :class:`Task`, loaded now.
    Returns None for "" or a missing key.
    """
    if ":" not in name:
        return TASKS.get(name)
    task = registry.load(name)
    if not isinstance(task, Task):
        raise TypeError(f"evaluation_task {name!r} is not an abc_tf.evaluation.tasks.Task.")
    return task


def task_of(config) -> Task:
    """The task of ``config``'s data family; ValueError when the family declares none."""
    name = data.get_family(config.data.family).evaluation_task
    task = declared_task(name)
    if task is None:
        declared = (
            f"names the evaluation task {name!r}, which is not registered"
            if name
            else "declares no evaluation task"
        )
        raise ValueError(
            f"Data family {config.data.family!r} {declared} (abc_tf.evaluation.tasks.TASKS: "
            f'{", ".join(sorted(TASKS))}, or a "module:NAME" of its own).'
        )
    return task


def offers_labelled_sample(config) -> bool:
    """Whether ``config``'s family's task draws a labelled sample. Does not draw it."""
    task = declared_task(data.get_family(config.data.family).evaluation_task)
    return task is not None and task.labelled_sample is not None


def labelled_sample(config, num_images: int, seed: int) -> labelled_samples.LabelledSample | None:
    """The labelled sample of ``config``'s family's task, or None where it has none."""
    task = declared_task(data.get_family(config.data.family).evaluation_task)
    return (
        None
        if task is None or task.labelled_sample is None
        else task.labelled_sample(config, num_images, seed)
    )


def evaluate_run(
    run: Run,
    out_dir: str,
    settings: EvaluationSettings,
    method_measures: bool = True,
    tensorboard: bool = True,
) -> dict:
    """Runs the family's task on ``run``, writes ``out_dir/metrics.json`` and returns the metrics.

    method_measures: also run the method's own measures. Needs the method's own networks.
    tensorboard: also write the metrics and figures to ``out_dir/logs/evaluation``.
    """
    os.makedirs(out_dir, exist_ok=True)
    with progress.recording() as written:
        metrics = task_of(run.config).evaluate(run, out_dir, settings)
        measures = methods.get_method(run.config.method.name).measures
        skipped = measures_skipped(run.config)
        if method_measures and measures and "method" not in skipped:
            metrics["method"] = measures_of(measures)(run, out_dir, settings)
        if skipped:
            metrics["skipped"] = skipped
            for name, reason in skipped.items():
                print(f"skipped: {name} measures: {reason}.", flush=True)
        json_files.write_json(os.path.join(out_dir, METRICS_FILE), metrics, sort_keys=True)
        progress.wrote(os.path.join(out_dir, METRICS_FILE))
    if tensorboard:
        evaluation_logs.write(run, out_dir, metrics, [path for path in written if path.endswith(".png")])
    return metrics


def evaluate_seeds(runs: list[Run], out_dirs: list[str], out_dir: str, settings: EvaluationSettings) -> dict:
    """Evaluates each seed's run into its folder of ``out_dirs`` and aggregates into ``out_dir/metrics.json``.

    Factor isolation aggregates with its per-factor summary and violin plots (factor_isolation.aggregate).
    Other tasks store every number as {mean, std, values} at its own path (:func:`aggregate_numbers`).
    """
    results = []
    for index, (run, seed_out) in enumerate(zip(runs, out_dirs), 1):
        print(f"Seed {index}/{len(runs)}: {run.run_dir} -> {seed_out}")
        results.append(evaluate_run(run, seed_out, settings))
    run_dirs = [run.run_dir for run in runs]
    if not all("condition" in result for result in results):
        summary = {**aggregate_numbers(results), "num_runs": len(runs), "runs": run_dirs}
        json_files.write_json(os.path.join(out_dir, METRICS_FILE), summary, sort_keys=True)
        progress.wrote(os.path.join(out_dir, METRICS_FILE))
        return summary
    summary = factor_isolation.aggregate(results)
    first = results[0]
    summary.update(
        condition=first["condition"], inactive=first["inactive"], runs=run_dirs, sigma=first["sigma"]
    )
    for key, label in (
        ("mine", "I(U; G) [nats]"),
        ("histogram", "I(U; G) [nats]"),
        ("probe_accuracy", "test accuracy"),
    ):
        if key in summary:
            names, table = factor_isolation.seed_table(summary, key)
            chance = [summary["chance"][n] for n in names] if key == "probe_accuracy" else None
            plots.plot_factor_distribution(
                table,
                names,
                first["inactive"],
                os.path.join(out_dir, f"seeds_{key}.png"),
                label,
                title=f"{summary['condition']} ({len(runs)} seeds)",
                chance=chance,
            )
    if all("untrained" in result for result in results):
        summary["untrained"] = factor_isolation.aggregate([result["untrained"] for result in results])
    if "disentanglement" in summary:
        series = {
            label: {key: value["values"] for key, value in part["disentanglement"].items()}
            for label, part in (("trained", summary), ("untrained", summary.get("untrained", {})))
            if "disentanglement" in part
        }
        encoder_disentanglement.plot_scores(
            series,
            os.path.join(out_dir, "seeds_disentanglement.png"),
            f"{summary['condition']} ({len(runs)} seeds)",
        )
    json_files.write_json(os.path.join(out_dir, METRICS_FILE), summary, sort_keys=True)
    progress.wrote(os.path.join(out_dir, METRICS_FILE))
    return summary


def aggregate_numbers(results: list[dict]) -> dict:
    """The runs' metrics merged key by key.

    A number every run has becomes {mean, std, values}. A dict every run has is merged the same way.
    A text all runs share is kept. Lists and differing texts stay in the per-run files.
    """
    merged: dict = {}
    for key, first in results[0].items():
        values = [result.get(key) for result in results]
        if isinstance(first, dict) and all(isinstance(value, dict) for value in values):
            merged[key] = aggregate_numbers(values)
        elif all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in values):
            merged[key] = factor_isolation.mean_std_values(values)
        elif isinstance(first, str) and all(value == first for value in values):
            merged[key] = first
    return merged


def evaluate_checkpoints(
    run_dir: str,
    out_dir: str,
    settings: EvaluationSettings,
    steps: str,
    references: dict[str, float],
    network: str = "encoder",
    config_path: str | None = None,
) -> dict:
    """Evaluates each checkpoint that ``steps`` chooses and writes their learning curve.

    steps: "all", "last" or "S,S,...". Each checkpoint goes to ``out_dir/checkpoints/step_<S>``.
    The curve is curve.json and curve.png, with ``references`` as dashed lines.
    No TensorBoard logs: each checkpoint would be a separate session, and the curve already shows them.
    """
    chosen = checkpoint_run.select_steps(run_dir, steps)
    points = []
    for index, step in enumerate(chosen, 1):
        with stage(f"checkpoint {index}/{len(chosen)}: step {step}"):
            run = checkpoint_run.load_checkpoint_run(run_dir, step, config_path).embedding_with(network)
            metrics = evaluate_run(
                run, os.path.join(out_dir, "checkpoints", f"step_{step}"), settings, tensorboard=False
            )
            points.append((step, learning_curves.curve_measures(metrics)))
        print(
            f"  step {step}: "
            + ", ".join(f"{name} {value:.4g}" for name, value in sorted(points[-1][1].items()))
        )
    title = (
        f"{os.path.basename(os.path.normpath(run_dir))}: {run.config.method.name} on {run.config.data.family}"
    )
    return learning_curves.write_curve(points, out_dir, title, references)

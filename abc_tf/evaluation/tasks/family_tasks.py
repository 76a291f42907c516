"""The four built-in evaluation tasks, one per kind of labels a data family offers.

Factors, digit style, labels and pose: each is ``(run, out_dir, settings) -> metrics``.
Each writes its figures under ``out_dir`` and lists their file names in ``metrics["figures"]``.
The registry of these tasks is :data:`abc_tf.evaluation.tasks.task_registry.TASKS`.
"""

from __future__ import annotations

import os

from abc_tf.evaluation import progress
from abc_tf.evaluation.estimators import probes
from abc_tf.evaluation.progress import stage
from abc_tf.evaluation.tasks import (
    digit_clusters,
    encoder_disentanglement,
    factor_isolation,
    label_information,
    mnist_style,
    pose_accuracy,
    retrieval,
)
from abc_tf.evaluation.tasks.evaluation_settings import EvaluationSettings
from abc_tf.runs import export
from abc_tf.runs.run_dir import TrainedRun
from abc_tf.runs.training import untrained_encoder

RETRIEVAL_FIGURE = "retrieval.png"


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
        metrics.setdefault("figures", []).append(encoder_disentanglement.FIGURE)


def evaluate_factors(run: TrainedRun, out_dir: str, settings: EvaluationSettings) -> dict:
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


def evaluate_digit_style(run: TrainedRun, out_dir: str, settings: EvaluationSettings) -> dict:
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


def evaluate_labels(run: TrainedRun, out_dir: str, settings: EvaluationSettings) -> dict:
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
    metrics["figures"] = [RETRIEVAL_FIGURE]
    return metrics


def evaluate_pose(run: TrainedRun, out_dir: str, settings: EvaluationSettings) -> dict:
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

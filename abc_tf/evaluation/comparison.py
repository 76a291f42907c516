"""Runs of any methods side by side on one labelled sample.

``compare.py --runs=DIR,DIR,... [--untrained] --output_dir=OUT`` calls :func:`compare`.
Every row is a run directory of any method. A ``train.py --seeds N`` folder is one row, its
``seed_<k>`` runs aggregated to mean and std. ``DIR+DIR+...`` is one row of several runs, e.g. one
per class split, aggregated alike. ``DIR@NETWORK`` embeds with the run's saved network NETWORK
instead of "encoder", e.g. one of a VITAE's two latent spaces. An optional row holds the untrained
encoder of the first run's config (``abc_tf.runs.training.untrained_encoder``).

All rows are measured on the same images: the first run's config's labelled sample, drawn with
``sample_seed``. Nothing here names a method.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any, Sequence

import numpy as np

from abc_tf import data, methods
from abc_tf.config import ExperimentConfig
from abc_tf.runs.config_files import read_config
from abc_tf.evaluation.comparison_report import CLUSTER_MEASURES, write
from abc_tf.evaluation.estimators import disentanglement as dis
from abc_tf.evaluation.tasks import (
    digit_clusters,
    encoder_disentanglement,
    factor_isolation,
    labelled_samples,
)
from abc_tf.evaluation.tasks.evaluation_settings import EvaluationSettings
from abc_tf.evaluation.tasks.method_measures import measures_of
from abc_tf.evaluation.tasks.task_registry import labelled_sample, offers_labelled_sample
from abc_tf.runs.run_dir import CONFIG_FILE, ENCODER, embed, load_run, network_file, seed_run_dirs
from abc_tf.runs.training import untrained_encoder

UNTRAINED = "untrained"
METRICS_FILE = "metrics.json"  # what evaluate.py --run_dir writes into a run directory
MEASURES_DIR = "method_measures"  # figures of the method measures measured by the comparison
RUN_JOIN = "+"  # DIR+DIR: one row of several runs


@dataclasses.dataclass(frozen=True)
class ComparisonSettings:
    """What is measured for every row.

    isolation: the labelled sample (``num_images``, ``sample_seed``), MINE and probe settings
      (``None`` skips that measure); its ``sigma`` and sweep are not used (the noise follows
      the rule, per row).
    scores: point counts of the disentanglement scores (None: none); ``preset`` names them.
    score_names: which disentanglement scores.
    """

    isolation: factor_isolation.IsolationSettings = factor_isolation.IsolationSettings()
    scores: dis.ScoreSettings | None = dis.ScoreSettings.fast()
    preset: str = "fast"
    score_names: tuple[str, ...] = dis.SCORES

    def validate(self) -> None:
        self.isolation.validate()
        if self.scores is not None:
            self.scores.validate()
        unknown = [name for name in self.score_names if name not in dis.SCORES]
        if unknown or not self.score_names:
            raise ValueError(f"Unknown or no disentanglement scores {unknown or list(self.score_names)}.")


@dataclasses.dataclass(frozen=True)
class Row:
    """One row: its label, its runs (seeds; none for the untrained row) and the saved network it
    embeds with (``DIR@NETWORK``: "encoder", or e.g. a VITAE's "appearance")."""

    label: str
    run_dirs: tuple[str, ...]
    configs: tuple[ExperimentConfig, ...]
    network: str = ENCODER


def split_network(spec: str) -> tuple[str, str]:
    """``DIR@NETWORK`` -> (DIR, NETWORK); a plain ``DIR`` -> (DIR, "encoder")."""
    path, at, network = spec.rpartition("@")
    if at and network and not os.path.isdir(spec):
        return path, network
    return spec, ENCODER


def rows_of(run_dirs: Sequence[str], untrained: bool = False) -> list[Row]:
    """The rows of ``run_dirs`` (in order) and the untrained row last, after checking that every
    run is finished and that all share one data family with known factors. Reads configs only."""
    if not run_dirs:
        raise ValueError("--runs needs at least one run directory.")
    rows = []
    for spec in run_dirs:
        joined, network = split_network(spec)
        parts = [joined] if os.path.isdir(joined) else joined.split(RUN_JOIN)
        seeds = []
        for run_dir in parts:
            if not os.path.isdir(run_dir):
                raise ValueError(f"--runs: {run_dir} is not a directory.")
            seeds += seed_run_dirs(run_dir) or [run_dir]
        for seed_dir in seeds:
            for path in (os.path.join(seed_dir, CONFIG_FILE), network_file(seed_dir, ENCODER)):
                if not os.path.isfile(path):
                    raise ValueError(f"--runs: {seed_dir} is not a finished training run: {path} is missing.")
            if not os.path.isfile(network_file(seed_dir, network)):
                raise ValueError(
                    f"--runs: {spec}: the run {seed_dir} has no network {network!r} "
                    f"({network_file(seed_dir, network)} is missing)."
                )
        names = list(dict.fromkeys(os.path.basename(os.path.normpath(part)) for part in parts))
        label = RUN_JOIN.join(names) + ("" if network == ENCODER else f"@{network}")
        rows.append(
            Row(label, tuple(seeds), tuple(read_config(os.path.join(d, CONFIG_FILE)) for d in seeds), network)
        )
    labels = [row.label for row in rows]
    if len(set(labels)) < len(labels) or (untrained and UNTRAINED in labels):
        rows = [dataclasses.replace(row, label=os.path.normpath(path)) for row, path in zip(rows, run_dirs)]
    first = rows[0].configs[0]
    if not offers_labelled_sample(first):
        raise ValueError(
            f"--runs: data family {first.data.family!r} has no labelled sample to compare rows on "
            "(abc_tf.evaluation.tasks.labelled_samples)."
        )

    def images(config):  # every row embeds the first row's sample: one family, one image shape
        return (
            f"{config.data.family!r} run on "
            f"{tuple(data.get_family(config.data.family).image_shape(config))} images"
        )

    for row in rows:
        for config in row.configs:
            if images(config) != images(first):
                raise ValueError(
                    f"--runs: {row.label} is a {images(config)}, {rows[0].label} a {images(first)}; rows "
                    "are compared on one labelled sample of one data family and image shape."
                )
    return rows + [Row(UNTRAINED, (), (first,))] if untrained else rows


def _measure(
    encoder,
    config: ExperimentConfig,
    sample_config: ExperimentConfig,
    sample: labelled_samples.LabelledSample,
    settings: ComparisonSettings,
) -> dict[str, Any]:
    """The measures of one encoder (one seed of a row) on the shared sample, JSON-ready."""
    factors, names = sample.factors, list(sample.names)
    start = time.perf_counter()
    embeddings = embed(encoder, sample.images)
    sigma, rule = factor_isolation.noise_sigma(config, embeddings)
    isolation = dataclasses.replace(settings.isolation, sigma=None, num_sigmas=0)
    metrics = factor_isolation.evaluate_embeddings(
        embeddings,
        factors,
        names,
        sigma,
        isolation,
        num_classes=sample.sizes,
        seed=config.trainer.seed,
        unit=factor_isolation.measuring_unit(rule, embeddings),
    )
    metrics.update(noise_rule=rule, isolation_seconds=time.perf_counter() - start)
    metrics["nearest_neighbour"] = {
        name: digit_clusters.nearest_neighbour_accuracy(embeddings, factors[:, i], seed=0)
        for i, name in enumerate(names)
    }
    metrics["kmeans_nmi"] = {
        name: digit_clusters.kmeans_nmi(
            embeddings, factors[:, i], seed=0, clusters=len(np.unique(factors[:, i]))
        )
        for i, name in enumerate(names)
    }
    if settings.scores is not None and data.get_family(sample_config.data.family).known_factors is not None:
        metrics["disentanglement"] = encoder_disentanglement.evaluate_disentanglement(
            encoder, sample_config, settings.scores, settings.isolation.sample_seed, settings.score_names
        )
    del metrics["figures"], metrics["inactive"]
    return metrics


def method_measures(
    run_dir: str, config: ExperimentConfig, out_dir: str, settings: ComparisonSettings, log=print
) -> dict[str, float]:
    """The headline measures of the run's method (its declared ``measures``): read from the
    run's metrics.json where ``evaluate.py --run_dir`` wrote them (``"method"`` -> ``"headline"``),
    else measured now into ``out_dir`` (``method_measures.measures_of``); {} for a method without its own."""
    name = methods.get_method(config.method.name).measures
    if not name:
        return {}
    path = os.path.join(run_dir, METRICS_FILE)
    if os.path.isfile(path):
        with open(path) as handle:
            headline = json.load(handle).get("method", {}).get("headline")
        if headline is not None:
            return headline
    log(
        f"  {run_dir}: its own measures ({name.rpartition(':')[2]}) are not in its metrics.json; "
        "measuring them now"
    )
    measured = measures_of(name)(load_run(run_dir), out_dir, EvaluationSettings(isolation=settings.isolation))
    return measured.get("headline", {})


def _aggregate_measures(seeds: list[dict[str, Any]], row: dict[str, Any]) -> None:
    """Adds the cluster measures and the method's own measures of a row's runs to ``row``:
    mean, std and values of what every run has."""
    for key, _ in CLUSTER_MEASURES:
        names = list(seeds[0][key])
        row[key] = {
            name: factor_isolation.mean_std_values([seed[key][name] for seed in seeds]) for name in names
        }
    found = [seed.get("method_measures") or {} for seed in seeds]
    labels = [label for label in found[0] if all(label in f for f in found)]
    if labels:
        row["method_measures"] = {
            label: factor_isolation.mean_std_values([f[label] for f in found]) for label in labels
        }


def _describe(row: Row, sample: labelled_samples.LabelledSample) -> dict[str, Any]:
    config, method = row.configs[0], methods.get_method(row.configs[0].method.name)
    if not row.run_dirs:
        return {
            "method": f"{method.name} (untrained)",
            "steps": 0,
            "inactive": [],
            "condition": "untrained network",
            "supervision": (
                "none: the untrained encoder of the first run's config (its architecture and initial weights)"
            ),
        }
    return {
        "method": method.label_for(config) + ("" if row.network == ENCODER else f" ({row.network})"),
        "steps": config.trainer.steps,
        "supervision": method.supervision_for(config) or "(not declared)",
        "inactive": list(labelled_samples.inactive_of(config, sample)),
        "condition": labelled_samples.condition_of(config, sample),
    }


def compare(
    run_dirs: Sequence[str],
    out_dir: str,
    settings: ComparisonSettings = ComparisonSettings(),
    untrained: bool = False,
    log=print,
) -> dict[str, Any]:
    """Evaluates the rows of ``run_dirs`` and the untrained row; writes the report into ``out_dir``.

    Per row: per factor, MINE mutual information and probe accuracy at the noise of
    :data:`abc_tf.evaluation.tasks.factor_isolation.NOISE_RULE`, and 1-NN accuracy and k-means NMI
    without noise; the disentanglement scores; the method's own measures where it declares some; and
    the method, its variant and supervision, the embedding size and the steps. Writes
    ``comparison.md``, ``comparison.json`` (returned) and ``comparison.png``.
    """
    settings.validate()
    rows = rows_of(run_dirs, untrained)
    sample_config = rows[0].configs[0]
    sample = labelled_sample(sample_config, settings.isolation.num_images, settings.isolation.sample_seed)
    if sample is None:
        raise ValueError(
            f"--runs: the {sample_config.data.family!r} data of {rows[0].run_dirs[0]} has no label to "
            "compare rows on (abc_tf.evaluation.tasks.labelled_samples; folders: a labels.csv column "
            "besides the groups)."
        )
    names = list(sample.names)
    results = []
    for row in rows:
        seeds = []
        for index, (run_dir, config) in enumerate(zip(row.run_dirs or (None,), row.configs)):
            log(f"Comparing {row.label}: {run_dir or 'the untrained encoder of ' + rows[0].run_dirs[0]}")
            encoder = load_run(run_dir).network(row.network) if run_dir else untrained_encoder(config)
            measured = _measure(encoder, config, sample_config, sample, settings)
            own = (
                method_measures(
                    run_dir,
                    config,
                    os.path.join(out_dir, MEASURES_DIR, f"{row.label}_{index}"),
                    settings,
                    log,
                )
                if run_dir
                else None
            )
            seeds.append(dict(measured, run_dir=run_dir, method_measures=own))
        summary = factor_isolation.aggregate(seeds)
        summary.update(
            _describe(row, sample),
            label=row.label,
            run_dirs=list(row.run_dirs),
            embedding_dim=seeds[0]["embedding_dim"],
            noise_rule=seeds[0]["noise_rule"],
            sigma=factor_isolation.mean_std_values([seed["sigma"] for seed in seeds]),
            seeds=seeds,
        )
        _aggregate_measures(seeds, summary)
        if seeds[0].get("disentanglement", {}).get("skipped"):
            summary["disentanglement_skipped"] = seeds[0]["disentanglement"]["skipped"]
        elif settings.scores is not None and "disentanglement" not in seeds[0]:
            summary["disentanglement_skipped"] = {
                name: f"data family {sample_config.data.family!r} has no known factors, only labels"
                for name in settings.score_names
            }
        results.append(summary)
    result = {
        "caption": caption(sample_config, settings, len(sample.images)),
        "noise_rule": factor_isolation.NOISE_RULE,
        "sample": {
            "data": sample_config.data.family,
            "data_source": data.get_family(sample_config.data.family).source(sample_config)[0],
            "num_images": len(sample.images),
            "sample_seed": settings.isolation.sample_seed,
            "from": rows[0].run_dirs[0],
        },
        "factors": names,
        "disentanglement_preset": settings.preset if settings.scores is not None else "none",
        "rows": results,
    }
    write(result, out_dir)
    return result


def caption(sample_config: ExperimentConfig, settings: ComparisonSettings, num_images: int) -> str:
    """The tables' caption: the shared sample, the noise rule, the scores' settings."""
    text = (
        f"Every row is measured on one labelled sample of {num_images} {sample_config.data.family} images "
        f"(data source {data.get_family(sample_config.data.family).source(sample_config)[0]}, sample seed "
        f"{settings.isolation.sample_seed}). MINE information (nats) and probe test accuracy per factor are "
        f"measured with Gaussian noise added to the embeddings: {factor_isolation.NOISE_RULE}. 1-NN accuracy "
        "and k-means NMI per factor are measured on the embeddings as they are. Values are mean ± standard "
        "deviation over a row's runs (seeds, or the runs joined with +) where it has several; * marks the "
        "factors a run was trained to leave out (inactive)."
    )
    if settings.scores is None:
        return text + " Disentanglement scores were not computed."
    text += (
        f" Disentanglement scores (preset {settings.preset}: "
        f"{settings.scores.codes_drawn(settings.score_names):,} codes per encoder, observations drawn with "
        f"seed {settings.isolation.sample_seed} for every row): BetaVAE and FactorVAE evaluation accuracy "
        "(chance 1 / number of factors), MIG, DCI disentanglement (D), completeness (C) and informativeness "
        "(I, test accuracy), SAP."
    )
    if "factor_vae" not in settings.score_names:
        return text
    unit = (
        " x the codes' spread (RMS per-dimension standard deviation), so that codes of any overall scale are "
        "pruned alike"
        if settings.scores.factor_vae_prune_relative
        else " (the raw value, as disentanglement_lib)"
    )
    return text + (
        f" FactorVAE leaves out the code dimensions whose standard deviation is below "
        f"{settings.scores.factor_vae_prune_threshold:g}{unit}."
    )

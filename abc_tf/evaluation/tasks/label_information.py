"""Known-label information in embeddings of real or grouped images, trained against untrained.

Some families carry labels for evaluation only. ``yaleb`` has person, pose, light azimuth and elevation.
``epfl_cars`` has car and azimuth bin. ``folders`` has the group and the columns of the labels CSV.
Per label, this module measures:

- probe accuracy against chance 1/K, by ``probes.probe_accuracies`` on embeddings plus N(0, sigma^2) noise;
- mutual information I(embedding + noise; label) in nats, by ``mine.mine_mutual_information``.

Sigma is the loss's length scale (docs/PAPERS.md section 4) or a fraction of each embedding's spread.
Both the trained encoder and the untrained one of the same config and seed are measured.
No estimator lives here: this is glue between grouped data sets and the estimators.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import keras
import numpy as np

from abc_tf import data
from abc_tf.config import ExperimentConfig
from abc_tf.data.folders.family import GroupedImages
from abc_tf.evaluation.estimators import mine, noise, probes
from abc_tf.evaluation.tasks import factor_isolation
from abc_tf.runs.run_dir import embed, load_run
from abc_tf.runs.training import untrained_encoder


def load_labelled(config: ExperimentConfig, labels_csv: str | None = None) -> GroupedImages:
    """All images of ``config``'s data set with their evaluation labels, from the family's grouped images.

    ``labels_csv`` overrides the folder family's default ``data_path/labels.csv``.
    """
    grouped_images = data.get_family(config.data.family).grouped_images
    if grouped_images is None:
        raise ValueError(
            f"Data family {config.data.family!r} has no labelled image loader (yaleb, epfl_cars, folders do)."
        )
    return grouped_images(config, labels_csv)


@dataclasses.dataclass
class LabelScore:
    """One label's information in one embedding, measured at noise ``sigma`` in embedding units.

    mutual_information is in nats; None when skipped. count is the number of images with the label known.
    """

    probe_accuracy: float
    chance: float
    mutual_information: float | None
    classes: int
    count: int
    sigma: float


@dataclasses.dataclass(frozen=True)
class LabelSettings:
    """What :func:`trained_vs_untrained` measures, and at which noise.

    Attributes:
      names: the labels to measure. Default: all of ``grouped.labels``.
      probe_settings, mine_settings: as :func:`label_information` takes them. mine_settings None skips MI.
      sigma: noise scale in embedding units. Default: the config's length scale, the scale the loss
        works at (docs/PAPERS.md section 4). That is tau for l2 and sqrt(tau) for l2sq.
      relative_sigma: instead, noise of this fraction of each embedding's spread (``noise.spread``).
        Untrained embeddings are often far smaller than the length scale, so at sigma = tau they hold nothing.
        Noise scaled to each embedding compares what the two keep, whatever their scale.
        The embeddings are divided by their spread before measuring, since probes and MINE train poorly
        on inputs of scale 1e-3. The reported ``sigma`` is in the original units.
    """

    names: Sequence[str] | None = None
    probe_settings: probes.ProbeSettings = probes.ProbeSettings()
    mine_settings: mine.MineSettings | None = mine.MineSettings()
    sigma: float | None = None
    relative_sigma: float | None = None

    def validate(self) -> None:
        if self.sigma is not None and self.relative_sigma is not None:
            raise ValueError("Give sigma or relative_sigma, not both.")


def label_information(
    embeddings: np.ndarray,
    grouped: GroupedImages,
    sigma: float,
    names: Sequence[str] | None = None,
    probe_settings: probes.ProbeSettings = probes.ProbeSettings(),
    mine_settings: mine.MineSettings | None = mine.MineSettings(),
    seed: int = 0,
) -> dict[str, LabelScore]:
    """Probe accuracy and MINE MI of every label in ``names``; default all of ``grouped.labels``.

    embeddings: [N, D] for the N rows of ``grouped``. Rows whose label is unknown (-1) are left out of
    that label's measurement. Labels with fewer than 2 known classes are skipped. Labels known on every
    row share one probe fit and one MINE run; the others get their own.
    ``mine_settings=None`` skips MI and measures probes only.
    """
    embeddings = np.asarray(embeddings, dtype=np.float64)
    if embeddings.shape[0] != len(grouped.groups):
        raise ValueError(f"{embeddings.shape[0]} embeddings for {len(grouped.groups)} images.")
    names = list(grouped.labels) if names is None else list(names)
    unknown = [name for name in names if name not in grouped.labels]
    if unknown:
        raise ValueError(f"Unknown labels {unknown}; known: {sorted(grouped.labels)}.")
    usable = [n for n in names if len(np.unique(grouped.labels[n][grouped.labels[n] >= 0])) >= 2]
    complete = [n for n in usable if np.all(grouped.labels[n] >= 0)]
    partial = [n for n in usable if n not in complete]
    batches = ([complete] if complete else []) + [[n] for n in partial]
    scores: dict[str, LabelScore] = {}
    for batch in batches:
        rows = np.all(np.stack([grouped.labels[n] >= 0 for n in batch], axis=1), axis=1)
        factors = np.stack([grouped.labels[n][rows] for n in batch], axis=1)
        probe = probes.probe_accuracies(
            embeddings[rows], factors, sigma, names=batch, settings=probe_settings, seed=seed
        )
        if mine_settings is not None:
            mi = np.atleast_1d(
                mine.mine_mutual_information(embeddings[rows], factors, sigma, mine_settings, seed)
            )
        else:
            mi = [None] * len(batch)
        for index, name in enumerate(batch):
            scores[name] = LabelScore(
                probe_accuracy=float(probe.accuracy[index]),
                chance=float(probe.chance[index]),
                mutual_information=None if mi[index] is None else float(mi[index]),
                classes=int(len(np.unique(factors[:, index]))),
                count=int(rows.sum()),
                sigma=float(sigma),
            )
    return {name: scores[name] for name in names if name in scores}


def trained_vs_untrained(
    config: ExperimentConfig,
    trained: keras.Model,
    grouped: GroupedImages,
    settings: LabelSettings = LabelSettings(),
) -> dict[str, dict[str, LabelScore]]:
    """{"trained": scores, "untrained": scores}: the same measurement on both encoders.

    The untrained encoder has ``config``'s architecture and initial seed.
    """
    settings.validate()
    measure = (settings.names, settings.probe_settings, settings.mine_settings, config.trainer.seed)
    untrained = untrained_encoder(config)
    result = {}
    for key, encoder in (("trained", trained), ("untrained", untrained)):
        embeddings = embed(encoder, grouped.images).astype(np.float64)
        # sigma: the one given, else the method's length scale; a fraction of the spread when
        # asked, or when the method has no length scale (0.1 x, as every evaluator).
        relative = settings.relative_sigma
        if relative is None and settings.sigma is None and config.method.length_scale() is None:
            relative = factor_isolation.RELATIVE_NOISE
        if relative is not None:
            scale = max(noise.spread(embeddings), 1e-12)
            scores = label_information(embeddings / scale, grouped, relative, *measure)
            result[key] = {
                name: dataclasses.replace(score, sigma=relative * scale) for name, score in scores.items()
            }
        else:
            sigma = config.method.length_scale() if settings.sigma is None else float(settings.sigma)
            result[key] = label_information(embeddings, grouped, sigma, *measure)
    return result


def evaluate_run(
    run_dir: str,
    labels_csv: str | None = None,
    names: Sequence[str] | None = None,
    probe_settings: probes.ProbeSettings = probes.ProbeSettings(),
    mine_settings: mine.MineSettings | None = mine.MineSettings(),
    sigma: float | None = None,
    relative_sigma: float | None = None,
) -> dict[str, dict[str, LabelScore]]:
    """:func:`trained_vs_untrained` for a run directory that ``abc_tf.runs.training.train`` wrote."""
    run = load_run(run_dir)
    grouped = load_labelled(run.config, labels_csv)
    return trained_vs_untrained(
        run.config,
        run.encoder,
        grouped,
        LabelSettings(names, probe_settings, mine_settings, sigma, relative_sigma),
    )


def to_dict(result: dict[str, dict[str, LabelScore]]) -> dict:
    """``result`` as plain dicts, ready for JSON."""
    return {
        key: {name: dataclasses.asdict(score) for name, score in scores.items()}
        for key, scores in result.items()
    }


def markdown_table(result: dict[str, dict[str, LabelScore]]) -> str:
    """One row per label: classes, chance, probe accuracy and MI in nats, untrained and trained.

    The noise sigma of each encoder is given below the table.
    """
    trained, untrained = result["trained"], result["untrained"]
    lines = [
        "| label | classes | chance | probe acc. untrained | probe acc. trained "
        "| MI untrained (nats) | MI trained (nats) |",
        "|---|---|---|---|---|---|---|",
    ]

    def mi(score: LabelScore) -> str:
        return "-" if score.mutual_information is None else f"{score.mutual_information:.2f}"

    for name, score in trained.items():
        before = untrained[name]
        lines.append(
            f"| {name} | {score.classes} | {score.chance:.3f} | {before.probe_accuracy:.3f} | "
            f"{score.probe_accuracy:.3f} | {mi(before)} | {mi(score)} |"
        )
    if trained:
        first = next(iter(trained))
        lines.append("")
        lines.append(
            f"Noise sigma: untrained {untrained[first].sigma:.3g}, trained {trained[first].sigma:.3g}."
        )
    return "\n".join(lines)

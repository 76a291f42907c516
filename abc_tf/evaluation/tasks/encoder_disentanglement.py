"""Disentanglement scores of an encoder on a data family with known factors.

Glue between a representation and the scores of :mod:`abc_tf.evaluation.estimators.disentanglement`.
A representation is anything :func:`abc_tf.runs.run_dir.embed` runs: a run's ``encoder.keras``, an
untrained encoder, a SavedModel signature. Observations come through the family's ``KnownFactors``:

- A family with ``images_of`` (Shapes3D) gets all five scores. Observations are drawn uniformly and
  independently over the factor grid, then made into images and embedded, as disentanglement_lib does.
- A family without it gets MIG, DCI and SAP on a labelled sample of ``num_array_train() + num_test``
  images. MNIST is one: its slant and thickness are bins of measured style, not values to render.
  BetaVAE and FactorVAE are listed under ``"skipped"`` with the reason.

Point counts come from ``ScoreSettings.preset``: "fast" draws 23,100 codes, for a CPU; "full" and
"library" draw 2,895,000. One seed draws the same factor values every call, so runs share observations.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from abc_tf import data
from abc_tf.config import ExperimentConfig
from abc_tf.data.family import KnownFactors
from abc_tf.evaluation.estimators import disentanglement as dis
from abc_tf.evaluation.estimators import plots
from abc_tf.evaluation.estimators.disentanglement_sampled import GridSource
from abc_tf.evaluation.progress import Progress
from abc_tf.runs.run_dir import embed

FIGURE = "disentanglement.png"


def known_factors(config: ExperimentConfig) -> KnownFactors:
    """The known factors of ``config``'s family; ValueError for a family without them."""
    factors = data.get_family(config.data.family).known_factors
    if factors is None:
        raise ValueError(
            f"Data family {config.data.family!r} declares no known factors; disentanglement scores need them."
        )
    return factors


class _Timer:
    """Seconds spent making and embedding images, and the codes made.

    Also counted on ``progress``: making and embedding the images is most of the scores' time.
    """

    def __init__(self) -> None:
        self.seconds = 0.0
        self.codes = 0
        self.progress: Progress | None = None


def factor_source(encoder: Callable, config: ExperimentConfig, timer: _Timer | None = None) -> GridSource:
    """A :class:`GridSource` over ``config``'s factor grid; its codes embed ``images_of(config, factors)``.

    Raises ValueError when the family declares no ``images_of``.
    """
    factors = known_factors(config)
    if factors.images_of is None:
        raise ValueError(
            f"Data family {config.data.family!r} cannot draw images of given factor values (no images_of)."
        )

    def encode(values: np.ndarray) -> np.ndarray:
        start = time.perf_counter()
        codes = embed(encoder, factors.images_of(config, values))
        if timer is not None:
            timer.seconds += time.perf_counter() - start
            timer.codes += values.shape[0]
            if timer.progress is not None:
                timer.progress.update(timer.codes)
        return codes

    return GridSource(tuple(factors.sizes), encode, tuple(factors.names))


def evaluate_disentanglement(
    encoder: Callable,
    config: ExperimentConfig,
    settings: dis.ScoreSettings,
    seed: int,
    scores: Sequence[str] = dis.SCORES,
) -> dict[str, Any]:
    """The chosen ``scores`` of ``encoder`` on ``config``'s data family, JSON-ready.

    Keys:
      scores: {key: value}, from dis.headline.
      results: {score: full result}.
      skipped: {score: reason}.
      observations: "factor grid (images_of)" or "labelled sample".
      codes: the number of codes embedded.
      seconds: wall time; encode_seconds: the part spent making and embedding images.
      settings: the point counts.
    """
    factors = known_factors(config)
    scores = tuple(scores)
    unknown = [name for name in scores if name not in dis.SCORES]
    if unknown or not scores:
        raise ValueError(
            f"Unknown or no disentanglement scores {unknown or list(scores)}; "
            f"choose from {', '.join(dis.SCORES)}."
        )
    settings.validate()
    start = time.perf_counter()
    timer = _Timer()
    skipped: dict[str, str] = {}
    if factors.images_of is not None:
        observations = "factor grid (images_of)"
        # At most this many codes: FactorVAE draws none for a code whose dimensions all collapsed.
        with Progress(
            "disentanglement: images made and embedded", settings.codes_drawn(scores), "codes"
        ) as progress:
            timer.progress = progress
            results = dis.all_scores(factor_source(encoder, config, timer), settings, seed, scores)
    else:
        observations = "labelled sample"
        for name in scores:
            if name in dis.SAMPLED_SCORES:
                skipped[name] = (
                    f"data family {config.data.family!r} cannot draw images of given factor values "
                    "(KnownFactors.images_of is None): only the scores on a labelled sample run"
                )
        kept = [name for name in scores if name in dis.ARRAY_SCORES]
        results = _array_scores(encoder, config, factors, settings, seed, kept, timer) if kept else {}
    return {
        "scores": dis.headline(results),
        "results": results,
        "skipped": skipped,
        "observations": observations,
        "codes": timer.codes,
        "seconds": time.perf_counter() - start,
        "encode_seconds": timer.seconds,
        "settings": dataclasses.asdict(settings),
    }


def _array_scores(
    encoder,
    config,
    factors: KnownFactors,
    settings: dis.ScoreSettings,
    seed: int,
    scores: Sequence[str],
    timer: _Timer,
) -> dict[str, dict]:
    """MIG, DCI and SAP on one labelled sample: its first rows train, the last ``num_test`` test."""
    num_train, num_test = settings.num_array_train(), settings.num_test
    started = time.perf_counter()
    try:
        images, values = factors.labelled_sample(config, num_train + num_test, seed)
    except ValueError as error:
        raise ValueError(
            f"Disentanglement scores need {num_train + num_test} labelled images "
            f"({num_train} training, {num_test} test; a smaller preset needs fewer): {error}"
        ) from None
    codes = embed(encoder, images)
    timer.seconds += time.perf_counter() - started
    timer.codes += codes.shape[0]
    train = (codes[:num_train], values[:num_train])
    test = (codes[num_train:], values[num_train:])
    return dis.array_scores(train, test, settings, seed, scores, factors.names)


def plot_scores(series: Mapping[str, Mapping[str, Any]], path: str, title: str | None = None) -> None:
    """The bar figure: one group per :data:`dis.HEADLINE` score that any series has, one bar per series.

    A series maps label -> ``{key: value}`` as in ``"scores"``, or ``{key: [values over seeds]}``.
    """
    keys = [
        (key, label) for key, _, _, label in dis.HEADLINE if any(key in values for values in series.values())
    ]
    if not keys:
        raise ValueError("No disentanglement score to plot.")
    table = {}
    for name, values in series.items():
        columns = [np.atleast_1d(np.asarray(values.get(key, np.nan), np.float64)) for key, _ in keys]
        table[name] = np.full((max(column.size for column in columns), len(keys)), np.nan)
        for index, column in enumerate(columns):
            table[name][: column.size, index] = column
    plots.plot_grouped_bars([label for _, label in keys], table, path, "score", title)

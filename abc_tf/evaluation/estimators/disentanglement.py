"""Disentanglement scores of the field, as disentanglement_lib defines them (docs/PAPERS.md section P4).

BetaVAE (Higgins et al. 2017), FactorVAE (Kim and Mnih 2018), MIG (Chen et al. 2018), DCI disentanglement,
completeness and informativeness (Eastwood and Williams 2018) and SAP (Kumar et al. 2018). They apply to
any representation on any family with known factors. disentanglement_lib 1.5 does not import beside
TensorFlow 2.21, so we rebuild it on scikit-learn. BetaVAE and FactorVAE draw their own observations
(disentanglement_sampled); MIG, DCI and SAP read arrays (disentanglement_arrays); this module holds the
settings and runs them.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from abc_tf.evaluation.estimators.disentanglement_arrays import DCI_TREES, dci, mig, names_of, sap
from abc_tf.evaluation.estimators.disentanglement_sampled import (
    FactorSource,
    beta_vae_score,
    draw,
    factor_vae_score,
)

SCORES: tuple[str, ...] = ("beta_vae", "factor_vae", "mig", "dci", "sap")
# The scores that need observations drawn with one factor held fixed (a FactorSource).
SAMPLED_SCORES: tuple[str, ...] = ("beta_vae", "factor_vae")
ARRAY_SCORES: tuple[str, ...] = ("mig", "dci", "sap")
# One number per score (tables, figures): (key, score, entry of its result, label).
HEADLINE: tuple[tuple[str, str, str, str], ...] = (
    ("beta_vae", "beta_vae", "eval_accuracy", "BetaVAE"),
    ("factor_vae", "factor_vae", "eval_accuracy", "FactorVAE"),
    ("mig", "mig", "mig", "MIG"),
    ("dci_disentanglement", "dci", "disentanglement", "DCI D"),
    ("dci_completeness", "dci", "completeness", "DCI C"),
    ("dci_informativeness", "dci", "informativeness_test", "DCI I"),
    ("sap", "sap", "sap", "SAP"),
)
PRESETS: tuple[str, ...] = ("none", "fast", "full", "library")


@dataclasses.dataclass(frozen=True)
class ScoreSettings:
    """Point counts and options of :func:`all_scores` and :func:`array_scores`.

    The defaults are disentanglement_lib's. Each score module states each setting's origin in its gin files.
    Three defaults differ on purpose; ``disentanglement_lib()`` restores all three.

    - ``dci_num_train`` is 5,000, not 10,000. Tree cost grows with the points, so this halves DCI's time.
      Fewer points let the trees overfit more, which lowers D and C a little: compare DCI only within one
      setting.
    - ``standardize`` is True for BetaVAE's logistic regression and SAP's 1-D SVMs. Every score is then
      invariant to permuting, shifting, rescaling and flipping code dimensions, except through FactorVAE's
      collapse threshold. DCI may change slightly, as scikit-learn's trees split float32 copies of the codes.
    - ``factor_vae_prune_relative`` is True. FactorVAE's collapse threshold of 0.05 then applies to each
      dimension's std in units of the codes' spread. Methods with codes at different scales are pruned alike;
      PMP's spread is 0.05, ABC's 0.44-1.8. FactorVAE becomes invariant to rescaling the whole code.
    """

    # BetaVAE (beta_vae_sklearn.gin).
    beta_vae_batch_size: int = 64
    beta_vae_num_train: int = 10_000
    beta_vae_num_eval: int = 5_000
    # FactorVAE (factor_vae_metric.gin).
    factor_vae_batch_size: int = 64
    factor_vae_num_train: int = 10_000
    factor_vae_num_eval: int = 5_000
    factor_vae_num_variance_estimate: int = 10_000
    factor_vae_prune_threshold: float = 0.05
    # The threshold in units of the codes' spread. Ours: the library compares it with the raw std.
    factor_vae_prune_relative: bool = True
    # MIG, DCI and SAP share these sets (mig.gin, dci.gin, sap_score.gin: 10,000 / 5,000).
    num_train: int = 10_000
    num_test: int = 5_000
    mig_num_bins: int = 20
    # DCI trains on the first dci_num_train points of that set; see the class docstring.
    dci_num_train: int = 5_000
    # "exact": scikit-learn's GradientBoostingClassifier, as the library; "histogram": the same
    # schedule on binned codes, about 10x faster (disentanglement_arrays.dci_importance).
    dci_trees: str = "exact"
    sap_continuous_factors: bool = False
    # Deliberate differences (class docstring) and execution.
    standardize: bool = True
    n_jobs: int = -1
    chunk_size: int = 4096

    @classmethod
    def disentanglement_lib(cls) -> "ScoreSettings":
        """disentanglement_lib's settings where ours differ.

        No standardisation, FactorVAE's collapse threshold on the raw std, DCI's trees on 10,000 points.
        """
        return cls(standardize=False, factor_vae_prune_relative=False, dci_num_train=10_000)

    @classmethod
    def fast(cls) -> "ScoreSettings":
        """The preset "fast", for a CPU: 23,100 codes instead of the library's 2,895,000.

        Smaller batches and fewer points make every score noisier (BetaVAE and FactorVAE lower), and DCI's
        histogram trees (6x faster) score D and C 0.02 to 0.03 higher (BENCHMARKS.md, "Evaluation of a
        Shapes3D run, stage by stage"): compare values only between runs scored with one preset.
        """
        return cls(
            beta_vae_batch_size=16,
            beta_vae_num_train=300,
            beta_vae_num_eval=150,
            factor_vae_batch_size=32,
            factor_vae_num_train=150,
            factor_vae_num_eval=75,
            factor_vae_num_variance_estimate=1_000,
            num_train=1_000,
            num_test=500,
            dci_num_train=1_000,
            dci_trees="histogram",
        )

    @classmethod
    def preset(cls, name: str) -> "ScoreSettings | None":
        """The settings of a preset of :data:`PRESETS`; None for "none"."""
        if name not in PRESETS:
            raise ValueError(f"Unknown disentanglement preset {name!r}; choose one of {', '.join(PRESETS)}.")
        return {"none": None, "fast": cls.fast(), "full": cls(), "library": cls.disentanglement_lib()}[name]

    def validate(self) -> None:
        at_least = {
            "beta_vae_batch_size": (self.beta_vae_batch_size, 1),
            "beta_vae_num_train": (self.beta_vae_num_train, 2),
            "beta_vae_num_eval": (self.beta_vae_num_eval, 1),
            "factor_vae_batch_size": (self.factor_vae_batch_size, 2),
            "factor_vae_num_train": (self.factor_vae_num_train, 1),
            "factor_vae_num_eval": (self.factor_vae_num_eval, 1),
            "factor_vae_num_variance_estimate": (self.factor_vae_num_variance_estimate, 2),
            "num_train": (self.num_train, 2),
            "dci_num_train": (self.dci_num_train, 2),
            "num_test": (self.num_test, 1),
            "mig_num_bins": (self.mig_num_bins, 2),
            "chunk_size": (self.chunk_size, 1),
        }
        for name, (value, minimum) in at_least.items():
            if int(value) != value or value < minimum:
                raise ValueError(f"{name} must be an integer >= {minimum}, got {value}.")
        if self.dci_trees not in DCI_TREES:
            raise ValueError(f"dci_trees must be one of {', '.join(DCI_TREES)}, got {self.dci_trees!r}.")
        if not self.factor_vae_prune_threshold >= 0:
            raise ValueError(
                f"factor_vae_prune_threshold must be >= 0, got {self.factor_vae_prune_threshold}."
            )

    def codes_drawn(self, scores: Sequence[str] = SCORES) -> int:
        """How many codes :func:`all_scores` asks the source for: the encoder's work."""
        scores = _check_scores(scores)
        total = 0
        if "beta_vae" in scores:
            total += 2 * self.beta_vae_batch_size * (self.beta_vae_num_train + self.beta_vae_num_eval)
        if "factor_vae" in scores:
            total += self.factor_vae_batch_size * (self.factor_vae_num_train + self.factor_vae_num_eval)
        if set(scores) & {"factor_vae", "mig", "dci", "sap"}:
            total += self._num_shared_train()
        if set(scores) & {"dci", "sap"}:
            total += self.num_test
        return total

    def _num_shared_train(self) -> int:
        # One size whichever scores run, so that a score's value does not depend on the others.
        return max(self.num_train, self.factor_vae_num_variance_estimate, self.dci_num_train)

    def num_array_train(self) -> int:
        """Training observations MIG, DCI and SAP read (:func:`array_scores` takes this many)."""
        return max(self.num_train, self.dci_num_train)


def _check_scores(scores: Sequence[str]) -> tuple[str, ...]:
    scores = tuple(scores)
    unknown = [s for s in scores if s not in SCORES]
    if unknown or not scores:
        raise ValueError(f"Unknown or no scores {unknown or list(scores)}; choose from {list(SCORES)}.")
    return scores


def _streams(seed: int) -> dict[str, np.random.Generator]:
    """One generator per score and shared set, so a score does not depend on which others run."""
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(len(SCORES) + 2)]
    return dict(zip(SCORES + ("train", "test"), streams))


def all_scores(
    source: FactorSource,
    settings: ScoreSettings = ScoreSettings(),
    seed: int = 0,
    scores: Sequence[str] = SCORES,
) -> dict[str, dict]:
    """The chosen ``scores`` of ``source``'s representation, keyed by score name.

    ``{"beta_vae": {...}, "factor_vae": {...}, "mig": {...}, "dci": {...}, "sap": {...}}``; each score
    draws from its own seed stream. MIG, DCI and SAP share one training set of ``num_train`` observations,
    DCI and SAP one test set of ``num_test``, and FactorVAE's global variances come from the training set's
    first codes: 15,000 codes instead of 50,000. DCI's trees take nearly all of the scores' own time; at the
    library's point counts (``codes_drawn()``: 2,895,000) encoding is the expensive part.
    """
    scores = _check_scores(scores)
    settings.validate()
    stream = _streams(seed)
    chunk = settings.chunk_size
    train = test = None
    if set(scores) & {"factor_vae", "mig", "dci", "sap"}:
        train = draw(source, settings._num_shared_train(), stream["train"], chunk)
    if set(scores) & {"dci", "sap"}:
        test = draw(source, settings.num_test, stream["test"], chunk)
    results: dict[str, dict] = {}
    for name in scores:
        if name == "beta_vae":
            results[name] = beta_vae_score(
                source,
                batch_size=settings.beta_vae_batch_size,
                num_train=settings.beta_vae_num_train,
                num_eval=settings.beta_vae_num_eval,
                standardize=settings.standardize,
                seed=stream[name],
                chunk_size=chunk,
            )
        elif name == "factor_vae":
            results[name] = factor_vae_score(
                source,
                batch_size=settings.factor_vae_batch_size,
                num_train=settings.factor_vae_num_train,
                num_eval=settings.factor_vae_num_eval,
                prune_threshold=settings.factor_vae_prune_threshold,
                prune_relative=settings.factor_vae_prune_relative,
                variance_codes=train[0][: settings.factor_vae_num_variance_estimate],
                seed=stream[name],
                chunk_size=chunk,
            )
    array_names = [name for name in scores if name in ARRAY_SCORES]
    if array_names:
        results.update(array_scores(train, test, settings, seed, array_names, source.factor_names))
    return {name: results[name] for name in scores}


def array_scores(
    train: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray] | None,
    settings: ScoreSettings = ScoreSettings(),
    seed: int = 0,
    scores: Sequence[str] = ARRAY_SCORES,
    factor_names: Sequence[str] | None = None,
) -> dict[str, dict]:
    """MIG, DCI and SAP, those in ``scores``, of a labelled sample.

    ``train`` is (codes [n, d], factors [n, k]) with n >= :meth:`ScoreSettings.num_array_train`.
    MIG and SAP read its first ``num_train`` rows, DCI its first ``dci_num_train``.
    ``test`` is the same for DCI and SAP. The values equal :func:`all_scores`' for the same sets and seed.
    """
    scores = _check_scores(scores)
    sampled = [name for name in scores if name not in ARRAY_SCORES]
    if sampled:
        raise ValueError(f"{sampled} draw their own observations: use all_scores with a FactorSource.")
    settings.validate()
    needed = {"mig": settings.num_train, "dci": settings.dci_num_train, "sap": settings.num_train}
    short = [name for name in scores if train[0].shape[0] < needed[name]]
    if short:
        raise ValueError(
            f"{short} need {max(needed[n] for n in short)} training observations, got {train[0].shape[0]}."
        )
    if test is None and set(scores) & {"dci", "sap"}:
        raise ValueError("DCI and SAP need a test set.")
    names = names_of(factor_names, np.shape(train[1])[1])
    stream = _streams(seed)
    results: dict[str, dict] = {}
    for name in scores:
        if name == "mig":
            n = settings.num_train
            results[name] = mig(
                train[0][:n], train[1][:n], num_bins=settings.mig_num_bins, factor_names=names
            )
        elif name == "dci":
            n = settings.dci_num_train
            results[name] = dci(
                train[0][:n],
                train[1][:n],
                test[0],
                test[1],
                factor_names=names,
                seed=stream[name],
                n_jobs=settings.n_jobs,
                trees=settings.dci_trees,
            )
        elif name == "sap":
            n = settings.num_train
            results[name] = sap(
                train[0][:n],
                train[1][:n],
                test[0],
                test[1],
                continuous_factors=settings.sap_continuous_factors,
                standardize=settings.standardize,
                factor_names=names,
                seed=stream[name],
            )
    return results


def headline(results: dict[str, dict]) -> dict[str, float]:
    """One number per score of :func:`all_scores`' or :func:`array_scores`' ``results``, keyed as in
    :data:`HEADLINE`."""
    return {key: float(results[score][entry]) for key, score, entry, _ in HEADLINE if score in results}

"""Disentanglement scores of the field (docs/PAPERS.md section P4), as disentanglement_lib defines them.

BetaVAE score (Higgins et al. 2017), FactorVAE score (Kim and Mnih 2018), MIG (Chen et al.
2018), DCI disentanglement / completeness / informativeness (Eastwood and Williams 2018) and
SAP (Kumar et al. 2018), for any method's representation on any data family whose generative
factors are known. disentanglement_lib 1.5 does not import beside TensorFlow 2.21, so the
definitions are rebuilt on NumPy and scikit-learn (no TensorFlow): scikit-learn provides every
learned part (logistic regression, linear SVMs, gradient-boosted trees, uniform binning,
discrete mutual information, Pearson correlation); the modules only arrange the samples and
combine the results. By job:

- :mod:`abc_tf.evaluation.estimators.disentanglement_sampled`: BetaVAE and FactorVAE, which draw their
  own observations with one factor held fixed from a :class:`FactorSource` (factor draws ->
  codes of observations with those factor values; :class:`GridSource` on a factor grid);
- :mod:`abc_tf.evaluation.estimators.disentanglement_arrays`: MIG, DCI and SAP on given arrays of codes
  [n, d] and factors [n, k] (any labelled sample);
- this module: the point counts (:class:`ScoreSettings`, the presets of :data:`PRESETS`),
  :func:`all_scores` (every score of a source), :func:`array_scores` (MIG, DCI, SAP of a
  labelled sample, for families that cannot draw an image of given factor values) and
  :func:`headline` (one number per score, for tables and figures).

For a run's encoder on a data family: :mod:`abc_tf.evaluation.tasks.encoder_disentanglement`.
Each score module states its settings' origin in disentanglement_lib's gin files and its
deliberate differences. Those of this module:

- DCI's trees train on 5,000 points (``dci_num_train``), not 10,000: the trees cost time in
  proportion to the points, and at 10,000 they took about 105 s of a 108 s evaluation on the
  2 busy cores of "Cost". Fewer points let the trees overfit more, which spreads importance
  over more dimensions and lowers disentanglement and completeness a little: on the synthetic
  codes of "Cost" D / C / I(test) are 0.40 / 0.36 / 0.58 at 2,500 points, 0.46 / 0.41 / 0.62 at
  5,000, 0.51 / 0.47 / 0.65 at 10,000. Compare DCI values only between runs of one setting.
- ``standardize=True`` (default; BetaVAE's logistic regression and SAP's 1-D SVMs): every
  score is then invariant to permuting, shifting, rescaling and flipping code dimensions (DCI
  up to small changes: scikit-learn's trees split float32 copies of the codes) except through
  FactorVAE's collapse threshold.
- ``factor_vae_prune_relative=True`` (default): FactorVAE's collapse threshold (0.05) applies
  to each dimension's std in units of the codes' spread, not to the raw std, so that methods
  whose codes differ in overall scale (PMP's spread 0.05, ABC's 0.44-1.8) are pruned alike
  (:mod:`abc_tf.evaluation.estimators.disentanglement_sampled`); FactorVAE is then invariant to rescaling
  the whole code, and changes under rescaling single dimensions only where one crosses the
  threshold. ``ScoreSettings.disentanglement_lib()`` turns standardisation and the relative
  threshold off and trains DCI's trees on 10,000 points.
- In :func:`all_scores` MIG, DCI and SAP share one training set (and DCI and SAP one test
  set), and FactorVAE's variance estimate uses the same training codes, instead of drawing a
  fresh set for each score: the same statistics from 15,000 codes instead of 50,000.

Cost
----
DCI's gradient-boosted trees are nearly all of the scores' own time: 100 stages of one depth-3
tree per factor value (Shapes3D: 57 values, 5,700 trees), each sorting every code dimension at
every node, so their time grows with the training points (15-20 ms per tree on 10,000 x 10
points here). The factors' classifiers run in parallel threads (``n_jobs``, largest factor
first). Measured with :func:`all_scores` on the 2 CPU cores of the build machine while other
jobs kept them busy (load average about 2; scikit-learn 1.9), synthetic codes d = 10 of k = 6
factors with the Shapes3D sizes 10, 10, 10, 8, 4, 15, the time to compute the codes excluded:

- ``ScoreSettings()``: 32 s wall, 61 s CPU in all: DCI 30 s (5,000 training points), BetaVAE
  0.5 s, SAP 0.4 s, FactorVAE 0.2 s, MIG 0.1 s.
- ``ScoreSettings.disentanglement_lib()`` (DCI on 10,000 points): 108 s wall, 128 s CPU.

The encoder, not the metrics, is the expensive part of a real evaluation at the library's point
counts: ``ScoreSettings().codes_drawn()`` = 2,895,000 codes (BetaVAE 1,920,000, FactorVAE
960,000, the shared sets 15,000), one to two hours of rendering and encoding with the S3
encoder on those 2 cores. ``ScoreSettings.fast()`` (the preset "fast", evaluate.py's default;
its counts at :meth:`ScoreSettings.fast`) draws 23,100 codes instead, and grows DCI's trees on
binned codes (``dci_trees="histogram"``): the same schedule about 6x faster. On a demo run its
D and C came out 0.02 to 0.03 above the exact trees' at each of three seeds, more than their seed
spread, and I within it (BENCHMARKS.md, "Evaluation of a Shapes3D run, stage by stage"): compare
DCI values between runs scored with one preset only. The "full" and "library" presets keep the
exact trees.
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

    The defaults are disentanglement_lib's (module docstring: each setting's origin), except
    ``dci_num_train``, ``standardize`` and ``factor_vae_prune_relative``
    (``disentanglement_lib()`` restores all three).
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
    # The threshold in units of the codes' spread (ours; the library compares it with the raw std).
    factor_vae_prune_relative: bool = True
    # MIG, DCI and SAP share these sets (mig.gin, dci.gin, sap_score.gin: 10,000 / 5,000).
    num_train: int = 10_000
    num_test: int = 5_000
    mig_num_bins: int = 20
    # DCI trains on the first dci_num_train points of that set: half the library's 10,000,
    # which halves the cost of its trees (module docstring, "Cost").
    dci_num_train: int = 5_000
    # "exact": scikit-learn's GradientBoostingClassifier, as the library; "histogram": the same
    # schedule on binned codes, about 10x faster (disentanglement_arrays.dci_importance).
    dci_trees: str = "exact"
    sap_continuous_factors: bool = False
    # Deliberate differences (module docstring) and execution.
    standardize: bool = True
    n_jobs: int = -1
    chunk_size: int = 4096

    @classmethod
    def disentanglement_lib(cls) -> "ScoreSettings":
        """disentanglement_lib's settings where ours differ: no standardisation, FactorVAE's
        collapse threshold on the raw std, DCI's trees on 10,000 points."""
        return cls(standardize=False, factor_vae_prune_relative=False, dci_num_train=10_000)

    @classmethod
    def fast(cls) -> "ScoreSettings":
        """The preset "fast", for a CPU: 23,100 codes (the library's: 2,895,000).

        BetaVAE: batches of 16 pairs (library: 64), 300 training and 150 evaluation points;
        FactorVAE: batches of 32 (library: 64), 150 training and 75 evaluation votes, the
        variances from 1,000 codes; MIG, DCI and SAP: 1,000 training and 500 test observations
        (DCI's histogram trees on all 1,000). Smaller batches make BetaVAE's features and FactorVAE's
        batch variances noisier, which lowers both scores, and fewer points make every score
        noisier (an accuracy on 150 points has a standard error near 0.04): compare values
        between runs scored with one preset only. Time per run: module docstring, "Cost".
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
        """The settings of a preset of :data:`PRESETS`: "none" (None: no scores), "fast"
        (:meth:`fast`), "full" (the defaults) or "library" (:meth:`disentanglement_lib`)."""
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
        """How many codes :func:`all_scores` asks the source for (the encoder's work)."""
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
        """Training observations MIG, DCI and SAP read (a labelled sample of this many plus
        ``num_test`` serves :func:`array_scores`)."""
        return max(self.num_train, self.dci_num_train)


def _check_scores(scores: Sequence[str]) -> tuple[str, ...]:
    scores = tuple(scores)
    unknown = [s for s in scores if s not in SCORES]
    if unknown or not scores:
        raise ValueError(f"Unknown or no scores {unknown or list(scores)}; choose from {list(SCORES)}.")
    return scores


def _streams(seed: int) -> dict[str, np.random.Generator]:
    """One generator per score and per shared set, so that a score's value does not depend on
    which others run (nor on whether :func:`all_scores` or :func:`array_scores` runs it)."""
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(len(SCORES) + 2)]
    return dict(zip(SCORES + ("train", "test"), streams))


def all_scores(
    source: FactorSource,
    settings: ScoreSettings = ScoreSettings(),
    seed: int = 0,
    scores: Sequence[str] = SCORES,
) -> dict[str, dict]:
    """The chosen ``scores`` of ``source``'s representation, keyed by score name.

    ``{"beta_vae": {...}, "factor_vae": {...}, "mig": {...}, "dci": {...}, "sap": {...}}``
    with the dicts of ``beta_vae_score``, ``factor_vae_score`` (disentanglement_sampled),
    ``mig``, ``dci`` and ``sap`` (disentanglement_arrays). Each score draws from its own seed
    stream, so a score's value does not depend on which others were asked for. MIG, DCI and
    SAP share one training set of ``num_train`` observations (DCI and SAP one test set of
    ``num_test``); FactorVAE's global variances come from the first
    ``factor_vae_num_variance_estimate`` codes of that set.
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
    """MIG, DCI and SAP (those of ``scores``) of a labelled sample: ``train`` = (codes [n, d],
    factors [n, k]) with n >= :meth:`ScoreSettings.num_array_train` (MIG and SAP read its first
    ``num_train`` rows, DCI its first ``dci_num_train``), ``test`` the same for DCI and SAP.
    The values equal those :func:`all_scores` gives for the same sets and seed."""
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
    """One number per score of ``results`` (:func:`all_scores`' or :func:`array_scores`' dict),
    keyed as in :data:`HEADLINE`: BetaVAE and FactorVAE evaluation accuracy, MIG, DCI
    disentanglement / completeness / test informativeness, SAP."""
    return {key: float(results[score][entry]) for key, score, entry, _ in HEADLINE if score in results}

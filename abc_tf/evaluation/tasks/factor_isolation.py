"""Factor isolation of a trained encoder on a data set with known factors (docs/PAPERS.md section 4).

It embeds the family's labelled sample and measures per factor MINE mutual information in nats, the
histogram estimate where d <= 3, probe accuracy against chance and optionally a noise sweep, and draws
Fig. 3b, S1 and S2. Metric dicts are JSON-ready, factor names as keys.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Callable, Sequence

import numpy as np

from abc_tf import data
from abc_tf.config import ExperimentConfig
from abc_tf.data.family import KnownFactors
from abc_tf.evaluation.estimators import plots, probes, sweep_plots
from abc_tf.evaluation.estimators.histogram_mi import histogram_mutual_information, histogram_sigma_sweep
from abc_tf.evaluation.estimators.mine import MineSettings, mine_mutual_information, mine_sigma_sweep
from abc_tf.evaluation.estimators.noise import add_noise, sigma_grid, spread
from abc_tf.runs.run_dir import embed

METRICS_FILE = "metrics.json"
# Methods without a length scale: the noise sigma is this fraction of the embeddings' spread.
RELATIVE_NOISE = 0.1
RELATIVE_RULE = f"{RELATIVE_NOISE:g} x spread"
NOISE_RULE = (
    "noise sigma = the method's length scale when its loss has one (sqrt(tau) for l2sq, tau for l2/l1/linf, "
    f"1 for cosine), else {RELATIVE_NOISE:g} x the embedding's own spread "
    "(RMS per-coordinate standard deviation of the sample's embeddings)"
)


@dataclasses.dataclass(frozen=True)
class IsolationSettings:
    """How much measuring to do. ``None`` for mine or probe skips that measure.

    Attributes:
      num_images: size of the labelled sample, in distinct images.
      sample_seed: seed of that sample. Every run uses the same, so runs are compared on the same images.
      mine: MINE settings; paper defaults unless overridden.
      probe: probe settings.
      num_sigmas: points of the noise sweep; 0 means no sweep. The paper uses 40.
      sweep_estimator: "mine", "histogram" (d <= 3 only) or "auto" (histogram when d <= 2).
      pca_points: points in the principal-component figure. The paper shows 256.
      sigma: noise scale of the single-sigma measures; None means the config's length scale.
    """

    num_images: int = 4096
    sample_seed: int = 1234
    mine: MineSettings | None = MineSettings()
    probe: probes.ProbeSettings | None = probes.ProbeSettings()
    num_sigmas: int = 0
    sweep_estimator: str = "auto"
    pca_points: int = 256
    sigma: float | None = None

    def validate(self) -> None:
        if self.num_images < 10:
            raise ValueError(f"num_images must be at least 10, got {self.num_images}.")
        if self.num_sigmas < 0 or self.num_sigmas == 1:
            raise ValueError(f"num_sigmas must be 0 (no sweep) or at least 2, got {self.num_sigmas}.")
        if self.sweep_estimator not in ("auto", "mine", "histogram"):
            raise ValueError(
                f"sweep_estimator must be auto, mine or histogram, got {self.sweep_estimator!r}."
            )
        if self.sigma is not None and self.sigma < 0:
            raise ValueError(f"sigma must be >= 0, got {self.sigma}.")
        if self.mine is not None:
            self.mine.validate()
        if self.probe is not None:
            self.probe.validate()


def known_factors(config: ExperimentConfig) -> KnownFactors:
    """The known factors of ``config``'s data family; ValueError for families without them."""
    factors = data.get_family(config.data.family).known_factors
    if factors is None:
        raise ValueError(
            f"Data family {config.data.family!r} has no labelled factor sample; "
            "factor isolation is measured on families with known factors (shapes3d)."
        )
    return factors


def factor_names(config: ExperimentConfig) -> tuple[str, ...]:
    return tuple(known_factors(config).names)


def inactive_names(config: ExperimentConfig) -> tuple[str, ...]:
    """Factors the run was trained to drop, for marking in figures; an augmentation baseline's too
    (``KnownFactors.augmented_by_baseline``)."""
    names = factor_names(config)
    if config.method.batch_format != "sets":
        return ()  # only sets fix factors (--data.inactive_factors); other formats leave it unread
    if config.batch.augmentation_baseline:
        return tuple(name for name in names if name in known_factors(config).augmented_by_baseline)
    return tuple(names[i] for i in known_factors(config).inactive(config))


def condition_label(config: ExperimentConfig) -> str:
    """Short human label of a run's training condition."""
    if config.method.batch_format != "sets":
        return f"{config.method.name} ({config.method.batch_format})"
    if config.batch.augmentation_baseline:
        # The family's augmentation (Shapes3D: hue; MNIST: rotation, zoom, elastic) is the only signal.
        dropped = inactive_names(config)
        return (
            f"double augmentation ({config.method.name})"
            if not dropped
            else f"{'/'.join(dropped)} augmented away ({config.method.name})"
        )
    inactive = inactive_names(config)
    label = "no inactive factor" if not inactive else ", ".join(inactive) + " inactive"
    # Families that say nothing curate set B like set A (MNIST: a stack of another digit).
    if inactive and not getattr(config.data, "curate_both_sets", True):
        label += ", set B unconstrained"
    return label


def saved_model_encoder(path: str) -> Callable:
    """A callable from float [B, H, W, C] in [0, 1] to embeddings [B, D], from an exported SavedModel's
    ``embed`` signature (or any single-output one)."""
    import tensorflow as tf

    if not os.path.isdir(path):
        raise ValueError(f"SavedModel path {path} is not a directory.")
    loaded = tf.saved_model.load(path)
    if hasattr(loaded, "embed"):
        function = loaded.embed
    elif "serving_default" in loaded.signatures:
        function = loaded.signatures["serving_default"]
    else:
        raise ValueError(f"The SavedModel at {path} has no 'embed' endpoint or serving_default signature.")

    def call(images):
        result = function(tf.convert_to_tensor(images, tf.float32))
        if isinstance(result, dict):
            result = result["embeddings"] if "embeddings" in result else next(iter(result.values()))
        return result

    call.loaded = loaded  # keeps the restored variables alive
    return call


def labelled_sample(config: ExperimentConfig, num_images: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(images [N, H, W, C] uint8, factor indices [N, F]) from the config's data family."""
    return known_factors(config).labelled_sample(config, num_images, seed)


def factor_sizes(config: ExperimentConfig) -> tuple[int, ...]:
    return tuple(known_factors(config).sizes)


def noise_sigma(config: ExperimentConfig, embeddings: np.ndarray) -> tuple[float, str]:
    """(sigma, rule) of the single-sigma measures for a run of ``config``'s method; see :data:`NOISE_RULE`."""
    scale = config.method.length_scale()
    if scale is not None:
        return float(scale), "length scale"
    return RELATIVE_NOISE * spread(embeddings), RELATIVE_RULE


def measuring_unit(rule: str, embeddings: np.ndarray) -> float:
    """The unit :func:`evaluate_embeddings` measures in: the spread under the relative rule, else 1.

    A method without a length scale may leave its codes at any scale (PMP's spread is about 0.05), and
    the probes' and MINE's networks train poorly on inputs that small. Dividing changes no information.
    """
    return max(spread(embeddings), 1e-12) if rule == RELATIVE_RULE else 1.0


def _per_factor(names: Sequence[str], values: np.ndarray) -> dict[str, float]:
    return {name: float(value) for name, value in zip(names, values)}


def evaluate_embeddings(
    embeddings: np.ndarray,
    factors: np.ndarray,
    names: Sequence[str],
    length_scale: float,
    settings: IsolationSettings = IsolationSettings(),
    inactive: Sequence[str] = (),
    num_classes: Sequence[int] | None = None,
    out_dir: str | None = None,
    title: str = "",
    seed: int = 0,
    unit: float = 1.0,
) -> dict[str, Any]:
    """All measures on embeddings [N, D] and factor indices [N, F]; figures go into out_dir.

    The measures run on ``embeddings / unit`` with noise ``sigma / unit``; see :func:`measuring_unit`.
    Sigma, spread and the sweep's sigmas are reported in the embeddings' units.

    Returns a JSON-ready dict: sigma, length_scale, embedding_dim, spread, pca_explained_variance,
    inactive, figures and, as far as computed, mine, histogram, probe and sweep.
    """
    settings.validate()
    embeddings = np.asarray(embeddings, dtype=np.float64)
    names = list(names)
    sigma = float(length_scale if settings.sigma is None else settings.sigma)
    dims = embeddings.shape[1]
    _, explained = plots.principal_components(embeddings, 2)
    metrics: dict[str, Any] = {
        "sigma": sigma,
        "unit": float(unit),
        "length_scale": float(length_scale),
        "embedding_dim": int(dims),
        "num_images": int(embeddings.shape[0]),
        "spread": spread(embeddings),
        "pca_explained_variance": [float(v) for v in explained],
        "inactive": list(inactive),
        "figures": [],
    }
    measured, measured_sigma = embeddings / unit, sigma / unit
    if settings.mine is not None:
        values = mine_mutual_information(measured, factors, measured_sigma, settings.mine, seed)
        metrics["mine"] = _per_factor(names, np.atleast_1d(values))
    if dims <= 3:
        noisy = add_noise(measured, measured_sigma, np.random.default_rng(seed))
        metrics["histogram"] = _per_factor(names, histogram_mutual_information(noisy, factors))
    if settings.probe is not None:
        result = probes.probe_accuracies(
            measured, factors, measured_sigma, names, num_classes, settings.probe, seed
        )
        metrics["probe"] = result.as_dict()
    if settings.num_sigmas:
        estimator = settings.sweep_estimator
        if estimator == "auto":
            estimator = "histogram" if dims <= 2 or settings.mine is None else "mine"
        sigmas = sigma_grid(embeddings, length_scale, settings.num_sigmas)
        if estimator == "histogram":
            values = histogram_sigma_sweep(measured, factors, sigmas / unit, seed)
        else:
            values = mine_sigma_sweep(measured, factors, sigmas / unit, settings.mine or MineSettings(), seed)
        metrics["sweep"] = {"estimator": estimator, "sigmas": sigmas.tolist(), "values": values.tolist()}

    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)

        def save(figure_name: str, draw: Callable[[str], Any]) -> None:
            draw(os.path.join(out_dir, figure_name))
            metrics["figures"].append(figure_name)

        save(
            "pca.png",
            lambda p: plots.plot_embeddings_pca(
                embeddings, factors, names, p, settings.pca_points, title, seed
            ),
        )
        for key in ("mine", "histogram"):
            if key in metrics:
                save(
                    f"mi_{key}.png",
                    lambda p, key=key: plots.plot_factor_distribution(
                        [metrics[key][n] for n in names],
                        names,
                        inactive,
                        p,
                        title=f"{title} ({key}, sigma={sigma:.3g})",
                        kind="bars",
                    ),
                )
        if "probe" in metrics:
            save(
                "probes.png",
                lambda p: plots.plot_probe_accuracies(
                    [metrics["probe"][n]["accuracy"] for n in names],
                    [metrics["probe"][n]["chance"] for n in names],
                    names,
                    inactive,
                    p,
                    title=f"{title} (sigma={sigma:.3g})",
                ),
            )
        if "sweep" in metrics:
            sweep = metrics["sweep"]
            save(
                "mi_sweep.png",
                lambda p: sweep_plots.plot_mi_sweep(
                    np.array(sweep["sigmas"]),
                    np.array(sweep["values"]),
                    names,
                    inactive,
                    length_scale,
                    p,
                    title=f"{title} ({sweep['estimator']})",
                ),
            )
    return metrics


def evaluate_encoder(
    encoder: Callable,
    config: ExperimentConfig,
    settings: IsolationSettings = IsolationSettings(),
    out_dir: str | None = None,
    sample: tuple[np.ndarray, np.ndarray] | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    """:func:`evaluate_embeddings` for ``encoder`` on ``config``'s labelled sample or on ``sample``.

    The noise is :func:`noise_sigma`'s unless ``settings.sigma`` is given; ``noise_rule`` says which applied.
    """
    settings.validate()
    names = factor_names(config)
    images, factors = (
        sample if sample is not None else labelled_sample(config, settings.num_images, settings.sample_seed)
    )
    embeddings = embed(encoder, images)
    sigma, rule = noise_sigma(config, embeddings)
    metrics = evaluate_embeddings(
        embeddings,
        factors,
        names,
        sigma,
        settings,
        inactive_names(config),
        factor_sizes(config),
        out_dir,
        condition_label(config) if title is None else title,
        seed=config.trainer.seed,
        unit=measuring_unit(rule if settings.sigma is None else "given sigma", embeddings),
    )
    metrics["noise_rule"] = rule if settings.sigma is None else "given sigma"
    if rule != "length scale":
        metrics["length_scale"] = None
    metrics["condition"] = condition_label(config)
    metrics["config"] = json.loads(config.to_json())
    return metrics


def aggregate(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean, standard deviation and per-run values of every per-factor measure over runs.

    Returns {"num_runs", "mine"/"histogram"/"probe_accuracy": {factor: {mean, std, values}},
    "chance": {factor: value}, "disentanglement": {score: {mean, std, values}}}.
    Only measures every run has are included. Disentanglement reads each run's ``"scores"`` entry.
    """
    if not runs:
        raise ValueError("aggregate needs at least one run's metrics.")
    result: dict[str, Any] = {"num_runs": len(runs)}
    for key in ("mine", "histogram"):
        if all(key in run for run in runs):
            names = list(runs[0][key])
            table = np.array([[run[key][n] for n in names] for run in runs])
            result[key] = _summary(names, table)
    if all("probe" in run for run in runs):
        names = list(runs[0]["probe"])
        table = np.array([[run["probe"][n]["accuracy"] for n in names] for run in runs])
        result["probe_accuracy"] = _summary(names, table)
        result["chance"] = {n: runs[0]["probe"][n]["chance"] for n in names}
    if all("disentanglement" in run for run in runs):
        scores = [run["disentanglement"]["scores"] for run in runs]
        keys = [key for key in scores[0] if all(key in s for s in scores)]
        result["disentanglement"] = _summary(
            keys, np.array([[s[key] for key in keys] for s in scores]).reshape(len(runs), -1)
        )
    return result


def mean_std_values(values: Sequence[float]) -> dict[str, Any]:
    """One measure over runs as the JSON files hold it: mean, std over runs (ddof 0) and the values."""
    column = np.asarray(values, np.float64)
    return {"mean": float(column.mean()), "std": float(column.std()), "values": column.tolist()}


def _summary(names: Sequence[str], table: np.ndarray) -> dict[str, dict[str, Any]]:
    return {name: mean_std_values(column) for name, column in zip(names, table.T)}


def seed_table(summary: dict[str, Any], key: str) -> tuple[list[str], np.ndarray]:
    """(factor names, values [S, F]) of one aggregated measure, for the distribution plots."""
    names = list(summary[key])
    return names, np.array([summary[key][n]["values"] for n in names]).T

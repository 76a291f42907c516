"""Pose errors, nearest-neighbour pose lookup and the pose evaluation of a run (docs/PAPERS.md section 5).

Errors are geodesic angles in **degrees** (:mod:`abc_tf.geometry`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Sequence

import keras
import numpy as np

import models
from abc_tf import data, json_files
from abc_tf.evaluation import progress
from abc_tf.geometry import as_matrices, euler_to_matrix, geodesic_error
from abc_tf.lookup import MAX_SCORES, keep_best, similarity_tiles
from abc_tf.runs.run_dir import TrainedRun, embed, load_run
from abc_tf.runs.training import untrained_encoder
from models import pose_head

DEFAULT_THRESHOLDS_DEG = (30.0, 15.0)


# ----------------------------------------------------------------------------- errors


def flip_invariant(errors_deg: np.ndarray) -> np.ndarray:
    """``min(theta, 180 - theta)``: a prediction off by a half turn counts as right, as cars are symmetric."""
    errors_deg = np.asarray(errors_deg, dtype=np.float64)
    return np.minimum(errors_deg, 180.0 - errors_deg)


def pose_metrics(
    errors_deg: np.ndarray, thresholds_deg: Sequence[float] = DEFAULT_THRESHOLDS_DEG
) -> dict[str, float]:
    """Median error in degrees and the fraction of errors below each threshold.

    Returns ``{"median_error_deg": ..., "acc_at_30": ..., ...}``; thresholds are formatted with ``%g``.
    """
    errors_deg = np.asarray(errors_deg, dtype=np.float64).ravel()
    if errors_deg.size == 0:
        raise ValueError("pose_metrics needs at least one error.")
    metrics = {"median_error_deg": float(np.median(errors_deg))}
    for threshold in thresholds_deg:
        metrics[f"acc_at_{threshold:g}"] = float(np.mean(errors_deg < threshold))
    return metrics


def error_metrics(
    predicted: np.ndarray, truth: np.ndarray, thresholds_deg: Sequence[float] = DEFAULT_THRESHOLDS_DEG
) -> dict[str, float]:
    """Metrics of predicted against true rotations [N, 3, 3], plain and flip-invariant (prefix ``flip_``)."""
    errors = geodesic_error(predicted, truth)
    metrics = pose_metrics(errors, thresholds_deg)
    metrics.update(
        {f"flip_{key}": value for key, value in pose_metrics(flip_invariant(errors), thresholds_deg).items()}
    )
    return metrics


# ----------------------------------------------------------------------------- lookup


def backbone_model(encoder: keras.Model, layer_name: str = "backbone") -> keras.Model:
    """A model from images to the encoder's flattened backbone features [B, F]: the paper's "ResNet" row.

    Uses the layer named ``layer_name``, else the encoder's last layer with a 4-D output.
    """
    try:
        features = encoder.get_layer(layer_name).output
    except ValueError:
        maps = [
            layer
            for layer in encoder.layers
            if not isinstance(layer, keras.layers.InputLayer) and len(layer.output.shape) == 4
        ]
        if not maps:
            raise ValueError(
                f"Encoder {encoder.name!r} has no layer {layer_name!r} and no feature-map layer."
            ) from None
        features = maps[-1].output
    flat = keras.layers.Flatten(name="backbone_features")(features)
    return keras.Model(encoder.input, flat, name=f"{encoder.name}_backbone")


@dataclasses.dataclass
class LookupResult:
    """Lookup metrics over R random dictionaries.

    per_dictionary: metric name -> [R] values: ``median_error_deg``, ``acc_at_30``, ... and the
    flip-invariant ``flip_*``. dictionary_size and repeats are the values used.
    """

    per_dictionary: dict[str, np.ndarray]
    dictionary_size: int
    repeats: int

    def summary(self) -> dict[str, dict[str, float]]:
        """metric -> {"mean", "std", "sem"} over dictionaries; sem is the standard error of the mean."""
        out = {}
        for name, values in self.per_dictionary.items():
            std = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
            out[name] = {"mean": float(np.mean(values)), "std": std, "sem": float(std / np.sqrt(len(values)))}
        return out


def lookup_evaluation(
    query_embeddings: np.ndarray,
    query_rotations: np.ndarray,
    pool_embeddings: np.ndarray,
    pool_rotations: np.ndarray,
    similarity: str = "cosine",
    dictionary_size: int = 1800,
    repeats: int = 50,
    seed: int = 0,
    thresholds_deg: Sequence[float] = DEFAULT_THRESHOLDS_DEG,
    max_elements: int = MAX_SCORES,
) -> LookupResult:
    """Pose by nearest neighbour in R random dictionaries drawn from a pool of known poses.

    Each query takes the rotation of its most similar entry of a dictionary of ``dictionary_size`` pool
    images, under the training similarity, and is scored by the geodesic error to its true rotation.
    ``max_elements``: similarities held at once; the result does not depend on it.
    """
    query_rotations = as_matrices(query_rotations)
    pool_rotations = as_matrices(pool_rotations)
    pool_size = len(pool_embeddings)
    if len(query_embeddings) != len(query_rotations) or pool_size != len(pool_rotations):
        raise ValueError("Each embedding needs one rotation (queries and pool).")
    if not 0 < dictionary_size <= pool_size:
        raise ValueError(
            f"dictionary_size must lie in 1..{pool_size} (the pool of known poses), got {dictionary_size}."
        )
    if repeats <= 0:
        raise ValueError(f"repeats must be positive, got {repeats}.")
    rng = np.random.default_rng(seed)
    # Sorted, so that gathering a dictionary's columns reads each row forwards (7x faster than
    # random order for large pools); int32: half the memory, and 2^31 embeddings would not fit.
    members = np.stack(
        [
            np.sort(rng.choice(pool_size, size=dictionary_size, replace=False)).astype(np.int32)
            for _ in range(repeats)
        ]
    )
    neighbours = np.zeros((repeats, len(query_embeddings)), np.int64)
    best = np.full(neighbours.shape, -np.inf, np.float32)
    # Each similarity of a query to the pool is computed once and serves every dictionary (a
    # subset of the pool's columns); by tiles, so memory does not grow with Q x pool.
    tiles = similarity_tiles(query_embeddings, pool_embeddings, similarity, max_elements)
    for query_start, key_start, scores in tiles:
        rows = slice(query_start, query_start + len(scores))
        for dictionary, chosen, value in zip(members, neighbours, best):
            low, high = np.searchsorted(dictionary, [key_start, key_start + scores.shape[1]])
            if low < high:  # the dictionary's members inside this tile's keys
                ids = dictionary[low:high]
                keep_best(value[rows], chosen[rows], np.take(scores, ids - key_start, axis=1), ids)
    per_dictionary: dict[str, list[float]] = {}
    for neighbour in neighbours:
        for name, value in error_metrics(pool_rotations[neighbour], query_rotations, thresholds_deg).items():
            per_dictionary.setdefault(name, []).append(value)
    return LookupResult({k: np.asarray(v) for k, v in per_dictionary.items()}, dictionary_size, repeats)


def regression_metrics(
    predicted_euler: np.ndarray,
    true_rotations: np.ndarray,
    thresholds_deg: Sequence[float] = DEFAULT_THRESHOLDS_DEG,
) -> dict[str, float]:
    """Metrics of regressed Euler angles [N, 3] in radians against true rotations [N, 3, 3]."""
    return error_metrics(euler_to_matrix(predicted_euler), true_rotations, thresholds_deg)


# ----------------------------------------------------------------------------- run directories

POSE_METRICS_FILE = "pose_metrics.json"
# Row names of the report, in the order of the paper's Tables 1 and 2.
ROW_UNTRAINED = "untrained encoder (lookup)"
ROW_BACKBONE = "backbone features (lookup)"
ROW_PRETRAINED = "ImageNet ResNet50V2 features (lookup)"
# The pretrained row's input size when the data's images are smaller: the pose presets' 128
# (docs/PAPERS.md section 3); ResNet50V2's conv4 stage needs at least 65 pixels [ours].
PRETRAINED_MIN_SIZE = 128
ROW_LOOKUP = "trained encoder (lookup)"
ROW_REGRESSION = "spherical regression head"


@dataclasses.dataclass(frozen=True)
class PoseEvalSettings:
    """How a pose run is evaluated (docs/PAPERS.md section 5). Counts are images.

    dictionary_size: images of known pose per lookup dictionary. The paper uses 1800.
    repeats: random dictionaries whose metrics are averaged. The paper uses 50.
    pool_size: synthetic images of known pose that dictionaries are drawn from; 0 means 4 x dictionary_size.
    num_queries: test images per query domain; 0 means the data module's default.
    query_domains: "real", the paper's Pascal3D+ stand-in, and/or "synthetic".
      Synthetic queries are held-out instances, the in-domain Table S1 setting.
    query_split: "test", instances held out of training, or "validation", for tuning.
      Validation is the training instances ``--data.validation_instances`` holds out; synthetic only.
    baselines: also evaluate the untrained encoder. Where the run trains a models-registry encoder
      (an ``encoder`` part), also evaluate its raw backbone features.
    pretrained_backbone: "imagenet" or the path of a ResNet50V2 notop weights file.
      Adds the paper's "ImageNet-pretrained ResNet" row (Table 1; supplement S8.5).
      Empty means no such row.
    seed: seeds the pool, the queries and the dictionary draws.
    """

    dictionary_size: int = 1800
    repeats: int = 50
    pool_size: int = 0
    num_queries: int = 0
    query_domains: tuple[str, ...] = ("real",)
    query_split: str = "test"
    thresholds_deg: tuple[float, ...] = DEFAULT_THRESHOLDS_DEG
    baselines: bool = True
    pretrained_backbone: str = ""
    seed: int = 0
    batch_size: int = 128

    def validate(self) -> None:
        for name in ("dictionary_size", "repeats", "batch_size"):
            if getattr(self, name) <= 0:
                raise ValueError(f"Pose evaluation {name} must be positive, got {getattr(self, name)}.")
        if self.pool_size and self.pool_size < self.dictionary_size:
            raise ValueError(
                f"pool_size ({self.pool_size}) must be at least dictionary_size ({self.dictionary_size})."
            )
        if self.num_queries < 0:
            raise ValueError(f"num_queries must be >= 0, got {self.num_queries}.")
        unknown = sorted(set(self.query_domains) - {"real", "synthetic"})
        if unknown or not self.query_domains:
            raise ValueError(
                f"query_domains must name 'real' and/or 'synthetic', got {list(self.query_domains)}."
            )
        if self.query_split not in ("test", "validation"):
            raise ValueError(f"query_split must be 'test' or 'validation', got {self.query_split!r}.")
        if self.query_split == "validation" and set(self.query_domains) != {"synthetic"}:
            raise ValueError(
                "The validation split has synthetic renders only: query domains 'synthetic', "
                f"got {list(self.query_domains)}."
            )

    @property
    def resolved_pool_size(self) -> int:
        return self.pool_size or 4 * self.dictionary_size


def pretrained_backbone_model(weights: str, image_shape: tuple[int, int, int]) -> keras.Model:
    """A model from images [B, S, S, 3] in [0, 1] to flattened ResNet50V2 conv4 features with ``weights``.

    Images smaller than ``PRETRAINED_MIN_SIZE`` are first resized up to it.
    """
    size = max(int(image_shape[0]), PRETRAINED_MIN_SIZE)
    network = backbone_model(models.build("s5", input_shape=(size, size, 3), weights=weights))
    inputs = keras.Input(shape=tuple(image_shape), name="images")
    resized = keras.layers.Resizing(size, size, name="resize")(inputs) if size != image_shape[0] else inputs
    return keras.Model(inputs, network(resized), name="pretrained_resnet50v2")


def evaluate_pose_run(
    run_dir: str,
    settings: PoseEvalSettings = PoseEvalSettings(),
    out_dir: str | None = None,
    write: bool = True,
    run: TrainedRun | None = None,
) -> dict:
    """Pose metrics of a pose run directory, written to ``pose_metrics.json`` in ``out_dir or run_dir``.

    Rows per query domain: the untrained encoder and its backbone features, the trained encoder by
    lookup ({"mean", "std", "sem"} over the dictionaries) and the spherical-regression head if the run
    has one. ``run``: an already loaded run to use instead of ``run_dir``'s.
    """
    settings.validate()
    run = run or load_run(run_dir)
    config, encoder, head = run.config, run.encoder, run.network("head")
    family = data.get_family(config.data.family)
    pose_views = family.pose_views
    if pose_views is None:
        raise ValueError(
            f"{run_dir} trained on data {config.data.family!r}, which has no images of known pose; "
            "pose evaluation needs them."
        )
    # Built first: weights that cannot be read fail before any image is rendered.
    pretrained = (
        pretrained_backbone_model(settings.pretrained_backbone, family.image_shape(config))
        if settings.pretrained_backbone
        else None
    )
    pool_images, pool_rotations, _ = pose_views(
        config, "train", "synthetic", settings.resolved_pool_size, seed=settings.seed
    )
    models_to_lookup = {ROW_LOOKUP: encoder}
    if settings.baselines:
        untrained = untrained_encoder(config)
        # A backbone is a trunk of the models registry's encoders; the reconstruction baselines'
        # own networks have none to speak of.
        backbone = {ROW_BACKBONE: backbone_model(untrained)} if config.encoder is not None else {}
        models_to_lookup = {ROW_UNTRAINED: untrained, **backbone, **models_to_lookup}
    if pretrained is not None:
        models_to_lookup = {ROW_PRETRAINED: pretrained, **models_to_lookup}
    pools = {name: embed(model, pool_images, settings.batch_size) for name, model in models_to_lookup.items()}
    results: dict = {
        "run_dir": run_dir,
        "settings": {**dataclasses.asdict(settings), "pool_size": settings.resolved_pool_size},
        "similarity": config.embedding_similarity,
        "embedding_dims": {name: int(pool.shape[1]) for name, pool in pools.items()},
        "domains": {},
    }
    lookups = progress.Progress(
        "pose lookups (query domain x representation)",
        len(settings.query_domains) * len(models_to_lookup),
        "lookups",
    )
    for offset, domain in enumerate(settings.query_domains):
        query_images, query_rotations, _ = pose_views(
            config,
            settings.query_split,
            domain,
            settings.num_queries or None,
            seed=settings.seed + 1 + offset,
        )
        rows: dict = {}
        for name, model in models_to_lookup.items():
            # Backbone features use cosine, as the paper's "ResNet" row; the others the run's similarity.
            similarity = "cosine" if name in (ROW_BACKBONE, ROW_PRETRAINED) else config.embedding_similarity
            lookup = lookup_evaluation(
                embed(model, query_images, settings.batch_size),
                query_rotations,
                pools[name],
                pool_rotations,
                similarity=similarity,
                dictionary_size=settings.dictionary_size,
                repeats=settings.repeats,
                seed=settings.seed,
                thresholds_deg=settings.thresholds_deg,
            )
            rows[name] = lookup.summary()
            lookups.update(lookups.done + 1)
        if head is not None:
            outputs = embed(keras.Sequential([encoder, head]), query_images, settings.batch_size)
            predicted = np.asarray(pose_head.decode_angles(outputs))
            rows[ROW_REGRESSION] = regression_metrics(predicted, query_rotations, settings.thresholds_deg)
        results["domains"][domain] = {"num_queries": int(len(query_images)), "rows": rows}
    lookups.close()
    if write:
        out_dir = out_dir or run_dir
        os.makedirs(out_dir, exist_ok=True)
        json_files.write_json(os.path.join(out_dir, POSE_METRICS_FILE), results)
        progress.wrote(os.path.join(out_dir, POSE_METRICS_FILE))
    return results


def format_table(results: dict, domain: str = "real") -> str:
    """A Markdown table of one domain of :func:`evaluate_pose_run`: median error, Acc@30, flip-invariant."""
    rows = results["domains"][domain]["rows"]
    lines = [
        "| row | median error (deg) | Acc@30 | flip-inv. median (deg) | flip-inv. Acc@30 |",
        "|---|---|---|---|---|",
    ]
    for name, metrics in rows.items():

        def cell(key: str) -> str:
            value = metrics[key]
            if isinstance(value, dict):
                return f"{value['mean']:.3g} ± {value['std']:.2g}"
            return f"{value:.3g}"

        lines.append(
            f"| {name} | {cell('median_error_deg')} | {cell('acc_at_30')} | "
            f"{cell('flip_median_error_deg')} | {cell('flip_acc_at_30')} |"
        )
    return "\n".join(lines)

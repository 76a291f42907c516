"""The data-family interface: what a family gives the trainer and the evaluators, declared.

Every family's package declares one :class:`DataFamily` named ``FAMILY`` in
``abc_tf/data/<name>/family.py``; abc_tf/data/__init__.py finds it. The trainer and the
evaluators read only this declaration. What a family does not offer is ``None`` here, never
discovered by probing the module.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from abc_tf.config import DataConfig
from abc_tf.data.groups import GroupIndex
from abc_tf.registry import GUIDE as _GUIDES
from abc_tf.registry import ContractError

GUIDE = "see " + _GUIDES["data family"]

if TYPE_CHECKING:  # type names only; the data layer needs nothing of Keras at import
    import keras
    import tensorflow as tf

    from abc_tf.config import ExperimentConfig

# Batch formats a family can stream; a method names the one it trains on, and the trainer
# refuses a family that does not stream it, before any work.
# - "sets": {"set_a" [P, N, H, W, C], "set_b" [P, M, H, W, C], optional "set_a_view2" /
#   "set_b_view2" and "labels_a", and "index_a" / "group_a" from a family with a
#   ``training_bank``} (ABC, the contrastive baseline, the grouped baselines);
# - "pairs": {"x1" [B, H, W, C], "x2" [B, H, W, C]}, two images that share every known factor
#   but one, which one not given (weak supervision of Locatello et al. 2020; product-manifold
#   projection).
# - "images": {"images" [B, H, W, C]}, single training images drawn uniformly with no label or
#   grouping (the unsupervised peers: VAE, VITAE, InfoGAN), B = ``batch_size``.
BATCH_FORMATS = ("sets", "pairs", "images")
# What each built-in evaluation task (abc_tf.evaluation.tasks.TASKS) reads of a family.
TASK_NEEDS = {
    "factors": "known_factors",
    "digit_style": "known_factors",
    "labels": "grouped_images",
    "pose": "pose_views",
}
# The images of each format's batch: {key: rank}; a set's images have a set axis first. They are
# uint8, or float32 in [0, 1] once augmented (double augmentation, the augmentation baseline).
BATCH_IMAGES = {"sets": {"set_a": 5, "set_b": 5}, "pairs": {"x1": 4, "x2": 4}, "images": {"images": 4}}


def check_batches(family: str, batch_format: str, spec, image_shape: tuple[int, ...]) -> None:
    """ContractError in one line for a stream whose batches (``spec``, its ``element_spec``) lack
    the images :data:`BATCH_IMAGES` names, uint8 or float32, of the family's ``image_shape``."""
    keys = dict(BATCH_IMAGES[batch_format])
    if isinstance(spec, dict) and "set_b" not in spec and "set_a_view2" in spec:
        keys = {"set_a": 5, "set_a_view2": 5}  # the augmentation baseline: view 2 serves as set B
    for key, rank in keys.items():
        got = spec.get(key) if isinstance(spec, dict) else None
        shape = None if got is None else got.shape
        fits = got is not None and got.dtype.name in ("uint8", "float32") and shape.rank == rank
        if not (fits and shape[-3:].is_compatible_with(image_shape)):
            wanted = "[P, N, H, W, C]" if rank == 5 else "[B, H, W, C]"
            found = "none" if got is None else f"{got.dtype.name} {list(shape)}"
            raise ContractError(
                f"The {batch_format!r} stream of the data family {family!r} yields {key}: {found}; a "
                f"{batch_format!r} batch holds {key}: uint8 (or float32 in [0, 1]) {wanted}, (H, W, C) = "
                f"{tuple(image_shape)} (its image_shape); {GUIDE}."
            )


@dataclasses.dataclass
class GroupedImages:
    """Images sorted by group, with labels for evaluation.

    images: uint8 [N, H, W, C]. The rows of group g are ``offsets[g] : offsets[g] + counts[g]``
    of :meth:`group_index`, so drawing a set is index arithmetic.
    group_names: one name per group. ``groups``: int32 [N], the group of each row.
    files: [N] path of each row relative to the data directory.
    labels: {name: int32 [N]} class index per row, -1 where unknown. The evaluation reads these.
    label_values: {name: [K]} the value of each class index, numbers or strings.
    attributes: {name: float [N]} continuous values kept for reference, e.g. car azimuth in
    degrees. Their binned classes are a label.
    """

    images: np.ndarray
    group_names: list[str]
    groups: np.ndarray
    files: list[str]
    labels: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    label_values: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    attributes: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)

    def group_index(self) -> GroupIndex:
        """The groups as a :class:`abc_tf.data.groups.GroupIndex`, the sampler of sets.

        ValueError unless the rows are sorted by group.
        """
        return GroupIndex.from_groups(self.groups, len(self.group_names), self.group_names)


def _nothing_to_check(config: "ExperimentConfig") -> None:
    del config


def _no_callbacks(config: "ExperimentConfig") -> list:
    del config
    return []


def quantile_bins(values: np.ndarray, bins: int) -> np.ndarray:
    """int32 [N]: the quantile bin 0..bins-1 of each value, so every bin holds about N / bins.

    It makes a continuous factor discrete for classifiers and MI, e.g. a digit's slant.
    """
    edges = np.quantile(values, np.linspace(0.0, 1.0, bins + 1)[1:-1])
    return np.searchsorted(edges, values, side="right").astype(np.int32)


@dataclasses.dataclass(frozen=True)
class KnownFactors:
    """Discrete factors of variation known for every image: Shapes3D's factor grid, or MNIST's digit
    and binned style.

    ``labelled_sample(config, num_images, seed)`` returns uint8 images [n, H, W, C] and int64
    factor indices [n, len(names)]. The images are distinct and drawn uniformly; columns are in
    ``names`` order.
    ``inactive(config)``: the positions in ``names`` of the factors a run fixes within a set.
    ``images_of(config, factor_indices)`` returns uint8 images [n, H, W, C], one of exactly each
    combination in int [n, len(names)]. The scores that draw their own observations need it:
    BetaVAE, FactorVAE. It raises ValueError for values outside ``sizes`` or a combination the
    data lacks. It is ``None`` where the family cannot make one, e.g. MNIST's binned style
    factors. Then only MIG, DCI and SAP are computed, on a labelled sample.
    ``augmented_by_baseline``: the factors of ``names`` that ``--batch.augmentation_baseline``
    varies between the two views. A baseline run is trained to drop them, e.g. Shapes3D's three
    hues under random hue. () where it varies none.
    """

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    labelled_sample: Callable[["ExperimentConfig", int, int], tuple[np.ndarray, np.ndarray]]
    inactive: Callable[["ExperimentConfig"], tuple[int, ...]]
    images_of: Callable[["ExperimentConfig", np.ndarray], np.ndarray] | None = None
    augmented_by_baseline: tuple[str, ...] = ()

    def __post_init__(self):
        unknown = sorted(set(self.augmented_by_baseline) - set(self.names))
        if unknown:
            raise ValueError(f"augmented_by_baseline names {unknown}, not among the factors {self.names}.")


@dataclasses.dataclass
class ClassLabelledImages:
    """A family's images labelled by class, as a run of the config sees them. MNIST's class is the
    digit.

    train_images: uint8 [N, H, W, C], the training split. It has every class, the held-out one
    too, though no training batch draws it.
    train_labels: int64 [N], their class.
    test_images: uint8 [M, H, W, C], the whole test split; test_labels: int64 [M].
    held_out: the class no training batch draws, or None.
    """

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    held_out: int | None


def _fits_nothing(path: str) -> str | None:
    del path
    return None


@dataclasses.dataclass(frozen=True)
class DataSources:
    """What ``--data.source`` and ``--data.path`` may name for a family.

    ``auto`` is every family's default. It takes the source that reads the given path, or
    ``default()`` without one. A path is read or refused, never ignored.

    reading: {source: what its ``--data.path`` is, in words} for the sources that read files.
    built_in: the sources that read no file, e.g. a renderer. They refuse a ``--data.path``.
    detect: ``path -> source`` of ``reading`` whose files ``path`` holds. None, or a ValueError
    naming what it lacks, when it holds none.
    default: ``() -> source`` that ``auto`` takes without a path. None: the family needs a path.
    path_optional: sources of ``reading`` with a default place, e.g. tfds's data folder.
    """

    reading: dict[str, str] = dataclasses.field(default_factory=dict)
    built_in: tuple[str, ...] = ()
    detect: Callable[[str], str | None] = _fits_nothing
    default: Callable[[], str] | None = None
    path_optional: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return ("auto", *self.built_in, *self.reading)

    def expected(self) -> str:
        """What a ``--data.path`` of the family may be, in words."""
        return "; or ".join(f"{what} (source {name})" for name, what in self.reading.items())

    def resolve(self, family: str, source: str, path: str) -> tuple[str, str]:
        """The source and path that ``--data.source`` and ``--data.path`` name, ``auto`` resolved.

        ValueError naming the flag for a source the family lacks or a path a built-in source
        would ignore. Also for a path that does not exist, or whose contents fit no source.
        """
        if source not in self.names:
            raise ValueError(
                f"--data.source={source!r} is not a source of data family {family!r}; "
                f"choose one of {', '.join(self.names)}."
            )
        if source in self.built_in:
            if path:
                raise ValueError(
                    f"--data.source={source} reads no file, so --data.path={path} would be ignored; "
                    "leave --data.source at auto to read the path, or drop --data.path."
                )
            return source, ""
        if not path:
            if source != "auto" and source not in self.path_optional:
                raise ValueError(f"--data.source={source} needs --data.path: {self.reading[source]}.")
            if source != "auto":
                return source, ""
            if self.default is None:
                raise ValueError(
                    f"data family {family!r} has no built-in data; give --data.path: {self.expected()}."
                )
            return self.default(), ""
        if not self.reading:
            raise ValueError(
                f"data family {family!r} reads no file, so --data.path={path} would be ignored; "
                "drop --data.path."
            )
        if not os.path.exists(path) and source not in self.path_optional:  # tfds makes its folder
            raise ValueError(
                f"--data.path={path} does not exist; data family {family!r} reads {self.expected()}."
            )
        if source != "auto":
            return source, path
        found = self.detect(path)
        if found is None:
            raise ValueError(
                f"--data.path={path} holds nothing data family {family!r} reads; expected {self.expected()}."
            )
        return found, path

    def describe(self, family: str, source: str, path: str) -> str:
        """The data a run reads, in words: "built-in procedural data" or "h5 data from PATH"."""
        source, path = self.resolve(family, source, path)
        if source in self.built_in:
            return f"built-in {source} data"
        return (
            f"{source} data from {os.path.abspath(path)}"
            if path
            else f"{source} data from its default folder"
        )


# A family that declares no sources: its built-in data, and no file read.
BUILT_IN_ONLY = DataSources(built_in=("generated",), default=lambda: "generated")


# What a method or an evaluation may need of a family, by the DataFamily field that gives it
# (declared, not None), with what it is in words (the messages that name a missing one).
CAPABILITIES = {
    "known_factors": "known factors of variation for each image",
    "class_labelled_images": "training and test images with class labels",
    "grouped_images": "every image with its group label",
    "pose_views": "images with their 3D rotations",
    "training_bank": "a fixed bank of training images indexed in the batches",
}


def missing_capabilities(family: "DataFamily", needs: Sequence[str]) -> list[str]:
    """The capabilities of ``needs`` that ``family`` does not declare, each as "name (what it is)".

    ``needs`` holds keys of :data:`CAPABILITIES`. ValueError for a name that is no capability.
    """
    unknown = [need for need in needs if need not in CAPABILITIES]
    if unknown:
        raise ValueError(f"Unknown capabilities {unknown}; known: {', '.join(CAPABILITIES)}.")
    return [f"{need} ({CAPABILITIES[need]})" for need in needs if getattr(family, need) is None]


@dataclasses.dataclass(frozen=True)
class DataFamily:
    """One data family.

    Required:
      name: the value of ``--data`` (its package's folder or entry point name).
      config: its :class:`abc_tf.config.DataConfig` subclass, the ``--data.*`` flags.
      image_shape: ``config -> (H, W, C)``, the encoder's input.
      streams: ``{batch format: (config, seed, start_step) -> tf.data.Dataset}``, an endless
        stream of batches per format of :data:`BATCH_FORMATS` it offers. The first batch is that
        of step ``start_step``: families whose batches follow a schedule (pose's real-image
        titration) use it; the others draw from ``seed``, which the trainer derives from the
        start step. Raises ValueError on bad settings or files before returning.
    Optional:
      presets: ``{name: ExperimentConfig}``, ``--experiment`` values of its own.
      check_config: ``config -> None``, the family's checks that read no data (ValueError
        naming the flag); run once, before the model is built.
      training_callbacks: ``config -> [keras.callbacks.Callback]`` that add to the training logs.
      sources: :class:`DataSources`, the sources ``--data.source`` names and how ``auto``
        picks one; the trainer refuses a path no source reads before any work. Default: built-in
        data only (``--data.path`` refused).
      evaluation_task: the task that evaluates a representation on the family's labels, a key
        of ``abc_tf.evaluation.tasks.TASKS`` ("factors", "digit_style", "labels", "pose") or the
        ``"module:NAME"`` of an ``abc_tf.evaluation.tasks.Task`` in the family's own package;
        "" when it has none.
    Capabilities, ``None`` when not offered:
      known_factors: :class:`KnownFactors` (factor isolation, disentanglement scores).
      grouped_images: ``(config, labels_csv or None) -> GroupedImages``, every image with its
        known labels (probes and mutual information per label); ``labels_csv`` replaces the
        labels where the family reads them from a file.
      pose_views: ``(config, split, domain, num_images, seed) -> (uint8 images, rotations
        [n, 3, 3], Euler angles [n, 3])``: images of known pose (pose lookup dictionaries,
        the lookup evaluation, the ``lookup_pose`` export).
      class_labelled_images: ``config -> ClassLabelledImages``, training and test images with
        their class (a VAE's test likelihood and kNN accuracy).
      class_proportions: ``config -> float64 [K]``, the proportion of each of the K classes
        among the training images a run's batches draw from (the held-out class 0): what a
        learned class prior should find.
      class_split_description: ``config -> dict or None``, the class-imbalanced split a run
        trains on, JSON-ready (None when the config sets none).
      set_shares: what the images of one set share, in words ("the digit"), for the
        supervision a grouped method states in comparison tables.
      training_bank: ``config -> (num_images, num_groups)``: the family trains from a fixed
        bank of ``num_images`` images in ``num_groups`` groups, and its "sets" batches also
        carry ``index_a`` int64 [P, N] (each image of set A's row in the bank) and ``group_a``
        int64 [P] (each set A's group): what a method that learns a code per training image or
        group (LORD's latent optimisation) needs.
    """

    name: str
    config: type
    image_shape: Callable[["ExperimentConfig"], tuple[int, int, int]]
    streams: dict[str, Callable[["ExperimentConfig", int, int], "tf.data.Dataset"]]
    presets: dict[str, "ExperimentConfig"] = dataclasses.field(default_factory=dict)
    check_config: Callable[["ExperimentConfig"], None] = _nothing_to_check
    training_callbacks: Callable[["ExperimentConfig"], list["keras.callbacks.Callback"]] = _no_callbacks
    sources: DataSources = BUILT_IN_ONLY
    evaluation_task: str = ""
    known_factors: KnownFactors | None = None
    grouped_images: Callable[["ExperimentConfig", str | None], GroupedImages] | None = None
    pose_views: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
    class_labelled_images: Callable[["ExperimentConfig"], ClassLabelledImages] | None = None
    class_proportions: Callable[["ExperimentConfig"], np.ndarray] | None = None
    class_split_description: Callable[["ExperimentConfig"], dict | None] | None = None
    set_shares: str = "the set's inactive factors"
    training_bank: Callable[["ExperimentConfig"], tuple[int, int]] | None = None

    def __post_init__(self):
        where = f"The data family {self.name!r}"
        if not (isinstance(self.config, type) and issubclass(self.config, DataConfig)):
            raise ContractError(f"{where}: config={self.config!r} is not a DataConfig subclass; {GUIDE}.")
        unknown = sorted(set(self.streams) - set(BATCH_FORMATS))
        if unknown or not self.streams:
            raise ContractError(
                f"{where} streams the batch formats {sorted(self.streams)}; it needs one or more of "
                f"{', '.join(BATCH_FORMATS)}; {GUIDE}."
            )
        for key, preset in self.presets.items():
            if getattr(preset, "name", None) != key:
                raise ContractError(
                    f"{where}: preset {key!r} is not an ExperimentConfig named {key!r}; {GUIDE}."
                )
        needed = TASK_NEEDS.get(self.evaluation_task)
        if needed and getattr(self, needed) is None:
            raise ContractError(
                f"{where} names the evaluation task {self.evaluation_task!r}, which reads {needed}: declare "
                f"{needed}=..., or name a task of its own ('module:NAME'); {GUIDE}."
            )

    def source(self, config: "ExperimentConfig") -> tuple[str, str]:
        """The source and path that ``config``'s data part names, ``auto`` resolved
        (:class:`DataSources`).
        """
        return self.sources.resolve(self.name, config.data.source, config.data.path)

    def describe_data(self, config: "ExperimentConfig") -> str:
        """The data a run of ``config`` reads, in words, for its first line."""
        return self.sources.describe(self.name, config.data.source, config.data.path)

    @property
    def batch_formats(self) -> tuple[str, ...]:
        return tuple(self.streams)

    def stream(self, batch_format: str) -> Callable[["ExperimentConfig", int, int], "tf.data.Dataset"]:
        """The stream of ``batch_format``, one of :attr:`batch_formats`."""
        return self.streams[batch_format]

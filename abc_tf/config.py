"""A run's config: a few parts, each owned by the code that reads it.

``ExperimentConfig`` holds the preset's ``name`` and five parts:

- ``trainer`` (:class:`TrainerConfig`): steps, optimizer schedule, precision, distribution, checkpoints
  and logging; every run has the same one.
- ``data``: the family's :class:`DataConfig`, declared beside it; its ``family`` is the value of ``--data``.
- ``batch``: what one step's batch holds: :class:`SetBatch`, :class:`PairBatch` or :class:`ImageBatch`.
- ``method``: the method's :class:`MethodConfig`, declared beside the method; its ``name`` is ``--method``.
- ``encoder``: :class:`EncoderConfig` (``--encoder``); ``None`` for methods with their own networks.

Each field's flag help is its ``metadata["help"]``. ``train.py`` makes a flag ``--<part>.<field>`` of each
field of the chosen parts only. A field name is in one part, so :meth:`ExperimentConfig.replace` takes bare
names. Bottom layer: ``abc_tf.runs.experiments`` finds classes by name, holds presets, reads config.json.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import typing
from typing import Any, ClassVar

SIMILARITIES = ("l2sq", "l2", "l1", "linf", "cosine")
STRATEGIES = ("default", "mirrored", "multi_worker", "tpu")
JIT_COMPILE = ("auto", "true", "false")
PART_NAMES = ("trainer", "encoder", "data", "batch", "method")
# The field of a part that chooses its class: set with --data, --method, --encoder, not --<part>.<field>.
SELECTORS = {"data": "family", "method": "name", "encoder": "architecture"}


_TYPE_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def field(default: Any, help: str, path: bool = False) -> Any:  # noqa: A002 - mirrors absl's argument name
    """A config field with its flag help; ``path``: a file or folder checked to exist when set."""
    return dataclasses.field(default=default, metadata={"help": help, "path": path})


@dataclasses.dataclass(frozen=True)
class Part:
    """One part of a run's config: a frozen dataclass of flag fields."""

    def replace(self, **overrides: Any) -> "Part":
        return dataclasses.replace(self, **overrides)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    def check_types(self) -> None:
        """ValueError naming ``<part>.<field>`` for a value that is not of its field's type (a
        config.json edited by hand: ``"steps": "ten"``); an integer is a float too, a bool no number."""
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            value, kind = getattr(self, f.name), hints[f.name]
            if kind is bool:
                fits = isinstance(value, bool)
            elif kind in (int, float):
                fits = isinstance(
                    value, numbers.Integral if kind is int else numbers.Real
                ) and not isinstance(value, bool)
            else:
                fits = isinstance(value, kind)
            if not fits:
                raise ValueError(f"{self.part_name()}.{f.name} is {value!r}, not {_TYPE_WORDS[kind]}")

    def validate(self) -> None:
        """ValueError naming the flag when a value cannot work; parts add their own checks."""
        self.check_types()
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("path") and value and not os.path.exists(value):
                raise ValueError(f"--{self.part_name()}.{f.name}={value} does not exist.")

    @classmethod
    def part_name(cls) -> str:
        for base in cls.__mro__:
            if base in _PART_BASES:
                return _PART_BASES[base]
        raise TypeError(f"{cls.__name__} derives from none of the config parts")

    def check_positive(self, *names: str) -> None:
        for name in names:
            value = getattr(self, name)
            if not value > 0 or (isinstance(value, float) and not math.isfinite(value)):
                raise ValueError(f"--{self.part_name()}.{name} must be positive, got {value}.")


@dataclasses.dataclass(frozen=True)
class TrainerConfig(Part):
    """How a run trains, whatever the data and method. Units: steps are optimizer updates."""

    steps: int = field(2000, "Training steps.")
    learning_rate: float = field(3e-5, "Adam learning rate.")
    lr_halving_steps: int = field(0, "Halve the learning rate every this many steps (0: constant).")
    lr_drop_step: int = field(
        0, "Multiply the learning rate by --trainer.lr_drop_factor from this step on (0: never)."
    )
    lr_drop_factor: float = field(0.1, "The factor of --trainer.lr_drop_step.")
    seed: int = field(0, "Seed for weights, data and augmentation.")
    log_every: int = field(100, "Steps between TensorBoard logs and checkpoints.")
    keep_checkpoints: int = field(
        2, "Checkpoints kept in <output_dir>/checkpoints (the newest; older ones are deleted)."
    )
    eval_every: int = field(
        0,
        "Steps between factor-isolation measurements (probes, short MINE) written to TensorBoard, on the "
        "run's labelled sample: known factors, the labels of grouped images, pose bins "
        "(0: once, at the end).",
    )
    eval_images: int = field(
        512,
        "Labelled images in the fixed sample of the factor-isolation callback and the embedding projector.",
    )
    jit_compile: str = field(
        "auto",
        "Compile the train step with XLA: true, false, or auto (the run's first calls time the plain graph "
        "and XLA, and it trains on with the faster; a run with under 5 minutes left stays in the plain "
        "graph; XLA and the graph round differently, so pin true or false where runs must match to the "
        "last bit).",
    )
    steps_per_execution: int = field(
        0,
        "Train steps per compiled call; 0 (auto): the largest divisor of the steps between log and "
        "evaluation steps, up to 10.",
    )
    strategy: str = field(
        "default",
        "tf.distribute strategy: default (one device), mirrored (all local GPUs), "
        "multi_worker (TF_CONFIG), tpu.",
    )
    mixed_precision: bool = field(
        False,
        "Compute in the host's fast reduced precision, keeping embeddings and the loss in float32: float16 "
        "with loss scaling on GPUs, bfloat16 on TPUs and CPUs that compute it natively (AVX-512 BF16, "
        "AMX), float32 with a warning on other CPUs.",
    )

    def __post_init__(self) -> None:
        # Code and config.json files written when the flag was a bool pass True and False.
        if isinstance(self.jit_compile, bool):
            object.__setattr__(self, "jit_compile", str(self.jit_compile).lower())
        elif isinstance(self.jit_compile, str):
            object.__setattr__(self, "jit_compile", self.jit_compile.lower())

    def validate(self) -> None:
        super().validate()
        self.check_positive(
            "steps", "learning_rate", "log_every", "keep_checkpoints", "eval_images", "lr_drop_factor"
        )
        if self.jit_compile not in JIT_COMPILE:
            raise ValueError(
                f"--trainer.jit_compile={self.jit_compile!r}: choose one of {', '.join(JIT_COMPILE)}."
            )
        for name in ("lr_halving_steps", "lr_drop_step", "eval_every", "steps_per_execution"):
            if getattr(self, name) < 0:
                raise ValueError(f"--trainer.{name} must be >= 0, got {getattr(self, name)}.")
        if self.strategy not in STRATEGIES:
            raise ValueError(
                f"Unknown --trainer.strategy={self.strategy!r}; choose one of {', '.join(STRATEGIES)}."
            )


@dataclasses.dataclass(frozen=True)
class EncoderConfig(Part):
    """The encoder a method trains, from the models registry (``models/``)."""

    architecture: str = field(
        "s3",
        "Encoder architecture: a key of the models registry (s3, s4, s5, s5_small, s6, pmp_encoder, ...).",
    )
    embedding_dim: int = field(64, "Size d of the embedding.")
    backbone_weights: str = field(
        "",
        "Pretrained weights of the encoder's backbone (s5: 'imagenet' as in the paper, needs internet or "
        "the cached file, or a weights file path; empty: random).",
    )

    def validate(self) -> None:
        super().validate()
        self.check_positive("embedding_dim")


@dataclasses.dataclass(frozen=True)
class BatchConfig(Part):
    """What one training step's batch holds; its class follows the method's batch format."""

    format: ClassVar[str] = ""
    global_batch_field: ClassVar[str] = ""  # the field the replicas of a distribution strategy split

    @property
    def global_batch(self) -> int:
        return int(getattr(self, self.global_batch_field))


@dataclasses.dataclass(frozen=True)
class SetBatch(BatchConfig):
    """Pairs of sets (ABC and the contrastive loss)."""

    format: ClassVar[str] = "sets"
    global_batch_field: ClassVar[str] = "pairs_per_step"
    set_size: int = field(32, "Images per set (N = M).")
    pairs_per_step: int = field(1, "Pairs of sets (P) per training step.")
    double_augmentation: bool = field(
        False, "Augment every image twice and cycle from one view to the other."
    )
    # The family's augmentation makes the second view: Shapes3D random_hue(0.5), the paper's
    # Fig. 3c baseline; MNIST Elastic-InfoGAN's augmentation T, the authors' rotation and zoom.
    augmentation_baseline: bool = field(
        False,
        "Train on unconstrained sets and their augmented second views, with no set B (abc, contrastive).",
    )

    def validate(self) -> None:
        super().validate()
        self.check_positive("pairs_per_step")
        if self.set_size < 2:
            # A set of one has nothing to match or share: ABC's cycle returns to its start (loss
            # exactly 0), a group posterior or a pair of one image is no group.
            raise ValueError(
                f"--batch.set_size must be at least 2 (a set or group of one image teaches nothing about "
                f"what images share), got {self.set_size}."
            )


@dataclasses.dataclass(frozen=True)
class PairBatch(BatchConfig):
    """Pairs of images that differ in one factor (product-manifold projection)."""

    format: ClassVar[str] = "pairs"
    global_batch_field: ClassVar[str] = "pairs_per_step"
    pairs_per_step: int = field(1, "Pairs of images per training step.")
    pair_factors: str = field(
        "",
        "Factors that may change between the two images of a pair, comma separated names or the authors' "
        "digits; one of them, drawn uniformly, changes in each pair (empty: every factor).",
    )
    pair_labels: bool = field(
        False,
        "Put the index of each pair's changed factor in its batch (key 'changed_factor'), for a method told "
        "which factor changed (GVAE: --method=ada_gvae --method.aggregation=labels).",
    )

    def validate(self) -> None:
        super().validate()
        self.check_positive("pairs_per_step")


@dataclasses.dataclass(frozen=True)
class ImageBatch(BatchConfig):
    """Single images (VAE, VITAE, Elastic-InfoGAN)."""

    format: ClassVar[str] = "images"
    global_batch_field: ClassVar[str] = "batch_size"
    batch_size: int = field(64, "Images per training step.")

    def validate(self) -> None:
        super().validate()
        self.check_positive("batch_size")


BATCH_CONFIGS: dict[str, type[BatchConfig]] = {cls.format: cls for cls in (SetBatch, PairBatch, ImageBatch)}


@dataclasses.dataclass(frozen=True)
class DataConfig(Part):
    """The base of a data family's config class; ``family`` is the value of ``--data``."""

    family: str = field(
        "",
        "Data family: a package of abc_tf/data/, or one an installed distribution names "
        "(entry point group abc_tf.data).",
    )
    source: str = field(
        "auto",
        "Where the data comes from: auto reads --data.path with the source its contents fit, or "
        "takes the family's built-in data without a path; or a source by name (procedural, h5, tfds, "
        "idx, npz, keypointnet, files: each family has its own).",
    )
    path: str = field("", "File or folder of the user's data, read by the source (never ignored).", path=True)


# Earlier names of MethodConfig.has_encoder_part.
_OLD_HAS_ENCODER_PART = ("trains_encoder", "has_model_part")


@dataclasses.dataclass(frozen=True)
class MethodConfig(Part):
    """The base of a method's config class; ``name`` is the value of ``--method``.

    batch_format: the batch format the method trains on (a key of :data:`BATCH_CONFIGS`).
    has_encoder_part: whether the run has an ``encoder`` part (the encoder chosen with ``--encoder``).
    """

    batch_format: ClassVar[str] = "sets"
    has_encoder_part: ClassVar[bool] = True
    name: str = field(
        "",
        "Training method: a package of abc_tf/methods/, or one an installed distribution names "
        "(entry point group abc_tf.methods).",
    )

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        for old in _OLD_HAS_ENCODER_PART:  # the attribute's earlier names: a plug-in would lose it silently
            if old in vars(cls):
                raise TypeError(
                    f"{cls.__module__}.{cls.__name__} sets {old}, now named has_encoder_part (whether the "
                    "run has an encoder part chosen with --encoder); rename it."
                )

    def length_scale(self) -> float | None:
        """The scale in embedding space below which the method's loss sees no difference
        (docs/PAPERS.md section 1): every evaluator adds noise of that scale. None when the loss has
        none: evaluators then scale the noise to the embeddings' own spread (0.1 x)."""
        return None

    @property
    def embedding_similarity(self) -> str:
        """The similarity under which evaluators compare the run's embeddings (retrieval, pose
        lookup): squared Euclidean, unless the method's loss has a similarity of its own."""
        return "l2sq"


_PART_BASES: dict[type, str] = {
    TrainerConfig: "trainer",
    EncoderConfig: "encoder",
    DataConfig: "data",
    BatchConfig: "batch",
    MethodConfig: "method",
}


def length_scale(similarity: str, temperature: float) -> float:
    """sqrt(tau) for l2sq; tau for the unsquared distances l2, l1 and linf (similarity / tau
    changes by 1 over a distance tau); 1 for cosine (the scale is an angle)."""
    if similarity == "l2sq":
        return math.sqrt(temperature)
    if similarity in ("l2", "l1", "linf"):
        return temperature
    return 1.0


@dataclasses.dataclass(frozen=True)
class ExperimentConfig:
    """Every setting of one training run, in its parts (see the module docstring)."""

    name: str
    trainer: TrainerConfig
    data: DataConfig
    batch: BatchConfig
    method: MethodConfig
    encoder: EncoderConfig | None = None

    def __post_init__(self) -> None:
        if type(self.batch) is not BATCH_CONFIGS.get(type(self.method).batch_format):
            raise ValueError(
                f"method {self.method.name!r} trains on {type(self.method).batch_format!r} batches; "
                f"the config's batch part is {type(self.batch).__name__}."
            )
        if (self.encoder is not None) != type(self.method).has_encoder_part:
            raise ValueError(
                f"method {self.method.name!r} {'needs' if type(self.method).has_encoder_part else 'has no'} "
                "encoder part (--encoder)."
            )
        owners: dict[str, str] = {}
        for part_name, part in self.parts().items():
            for name in part.field_names():
                if name in owners:
                    raise TypeError(
                        f"field {name!r} is declared by both the {owners[name]} and the {part_name} part."
                    )
                owners[name] = part_name

    def parts(self) -> dict[str, Part]:
        """The parts this config has, by name (``encoder`` left out when the method has none)."""
        return {name: getattr(self, name) for name in PART_NAMES if getattr(self, name) is not None}

    def owner(self, name: str) -> str:
        """The part that holds field ``name``; ValueError listing every part's fields."""
        for part_name, part in self.parts().items():
            if name in part.field_names():
                return part_name
        listed = "; ".join(
            f"{part_name}: {', '.join(part.field_names())}" for part_name, part in self.parts().items()
        )
        raise ValueError(
            f"This config has no field {name!r} (data family {self.data.family!r}, method "
            f"{self.method.name!r}). Its fields: {listed}."
        )

    def replace(self, **overrides: Any) -> "ExperimentConfig":
        """A copy with fields replaced: ``name``, whole parts (``trainer=TrainerConfig(...)``)
        or fields by name (``steps=3``; each name is in one part only). Choosing another
        family, method or architecture by name is :func:`abc_tf.runs.experiments.choose`."""
        whole = {
            key: overrides.pop(key)
            for key in list(overrides)
            if key == "name"
            or (key in PART_NAMES and (overrides[key] is None or isinstance(overrides[key], Part)))
        }
        config = dataclasses.replace(self, **whole) if whole else self
        by_part: dict[str, dict[str, Any]] = {}
        for name, value in overrides.items():
            if (
                name in SELECTORS.values()
                and config.owner(name) in SELECTORS
                and getattr(config.parts()[config.owner(name)], name) != value
            ):
                raise ValueError(
                    f"{name}={value!r} chooses another config class: use abc_tf.runs.experiments.choose."
                )
            by_part.setdefault(config.owner(name), {})[name] = value
        if not by_part:
            return config
        return dataclasses.replace(
            config, **{part: getattr(config, part).replace(**values) for part, values in by_part.items()}
        )

    def flat(self) -> dict[str, Any]:
        """Every field as ``{"<part>.<field>": value}`` (TensorBoard's HParams, config diffs)."""
        return {
            f"{part_name}.{name}": getattr(part, name)
            for part_name, part in self.parts().items()
            for name in part.field_names()
        }

    def to_dict(self) -> dict[str, Any]:
        values: dict[str, Any] = {"name": self.name}
        for part_name in PART_NAMES:
            part = getattr(self, part_name)
            values[part_name] = None if part is None else dataclasses.asdict(part)
        return values

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    def validate(self) -> None:
        """Raises ValueError naming the flag when a value cannot work. Called before any work."""
        for part in self.parts().values():
            part.validate()

    @property
    def embedding_similarity(self) -> str:
        """The similarity under which evaluators compare the run's embeddings: the method's."""
        return self.method.embedding_similarity

"""The checks of a run's config that need no data: each failure a user can cause, named before training.

:func:`abc_tf.runs.training.prepare` runs them once, before any data is read (``train.py
--check_only`` stops there). Each raises ValueError naming the flag at fault.
"""

from __future__ import annotations

from abc_tf import data, methods
from abc_tf.config import ExperimentConfig
from abc_tf.data.family import DataFamily, missing_capabilities
from abc_tf.methods.base import Method


def check_config(config: ExperimentConfig) -> tuple[DataFamily, Method]:
    """Every check of ``config`` that reads no data.

    Checks its values, its family's and its method's settings, and that the family streams the batches
    the method trains on. The augmentation baseline's two-view sets go only to a method declaring
    ``accepts_two_view_sets``.
    """
    config.validate()
    family = data.get_family(config.data.family)
    if (
        config.method.batch_format not in family.batch_formats
    ):  # before the family's checks, which read the batch
        raise ValueError(
            f"--method={config.method.name} trains on {config.method.batch_format!r} batches; data family "
            f"{family.name!r} streams {', '.join(family.batch_formats)}."
        )
    family.source(config)  # a path is read or refused, before the family's own checks
    family.check_config(config)
    method = methods.get_method(config.method.name)
    if method.needs_training_bank and family.training_bank is None:
        banked = [name for name in data.DATA_FAMILIES if data.get_family(name).training_bank is not None]
        raise ValueError(
            f"--method={method.name} learns a code per training image and group, "
            "so it needs a fixed bank of training images indexed in the batches; "
            f"data family {family.name!r} has none. Families that do: {', '.join(banked)}."
        )
    check_image_shape(config, method, tuple(family.image_shape(config)))
    method.check_config(config)
    if getattr(config.batch, "augmentation_baseline", False) and not method.accepts_two_view_sets:
        accepting = [name for name in methods.METHODS if methods.get_method(name).accepts_two_view_sets]
        raise ValueError(
            f"--batch.augmentation_baseline streams two augmented views of unconstrained sets and no set B; "
            f"--method={method.name} does not train on them. Methods that do: {', '.join(accepting)}."
        )
    return family, method


def check_image_shape(config: ExperimentConfig, method: Method, given: tuple[int, int, int]) -> None:
    """ValueError when the family's images (``given``) are not what the method's networks take."""
    need = method.images(config)
    if need is None or all(want in (None, got) for want, got in zip(need.shape, given)):
        return
    size = " x ".join(str(side) for side in need.shape if side is not None)
    advice = f" {need.advice}" if need.advice else ""
    raise ValueError(
        f"{need.networks} takes {size} images; data {config.data.family!r} gives {tuple(given)}.{advice}"
    )


def measures_skipped(config: ExperimentConfig) -> dict[str, str]:
    """{measure: why} for the evaluate.py measures that a run of ``config`` will not get.

    These are the method's own measures when its data family lacks a capability they need
    (``Method.measures_need``). Empty when every measure applies.
    """
    family = data.get_family(config.data.family)
    method = methods.get_method(config.method.name)
    missing = missing_capabilities(family, method.measures_need) if method.measures else []
    if not missing:
        return {}
    return {
        "method": f"{method.name}'s own measures need {' and '.join(missing)}, which data family "
        f"{family.name!r} does not give"
    }


def data_description(config: ExperimentConfig, family: DataFamily | None = None) -> str:
    """The data a run of ``config`` reads, and its data fields that differ from the family's defaults.

    In words: what the run's first line and ``--check_only`` say.
    """
    family = family or data.get_family(config.data.family)
    defaults = type(config.data)(family=config.data.family)
    changed = [
        f"{name}={getattr(config.data, name)}"
        for name in config.data.field_names()
        if name not in ("family", "source", "path") and getattr(config.data, name) != getattr(defaults, name)
    ]
    return family.describe_data(config) + (f"; {', '.join(changed)}" if changed else "")


BATCH_UNITS = {"sets": "set pairs", "pairs": "image pairs", "images": "images"}


def check_replicas(config: ExperimentConfig, method: Method, replicas: int) -> None:
    """The method's global batch must split evenly over the replicas.

    Each replica trains on an equal share, and the update is the mean over the whole batch.
    The batch size is the batch part's ``global_batch_field``.
    """
    batch = config.batch.global_batch
    if batch % replicas:
        raise ValueError(
            f"--batch.{config.batch.global_batch_field}={batch} "
            f"must be a multiple of the {replicas} replicas of the distribution strategy: "
            f"--method={method.name} trains on "
            f"{BATCH_UNITS.get(config.method.batch_format, 'batches')}, which the replicas split."
        )

"""One labelled sample per run, whatever its data family: images with discrete labels known for each.

The factor-isolation callback, the end-of-run summary and ``compare.py`` measure on it.
The family's task (abc_tf.evaluation.tasks) names how it is drawn:

- Known factors, such as Shapes3D's grid or MNIST's digit with binned slant and thickness:
  the family's own sample. Factors a run fixes within a set are marked inactive.
- Grouped images (yaleb, epfl_cars, the user's folders): the labels known for every image.
  Labels constant within every group are marked inactive, since a set is drawn within one group.
  None when no label varies within a group; then nothing tells kept from dropped.
- Images of known pose: renders of held-out instances, with azimuth in 8 bins of 45 degrees and
  elevation in 3 quantile bins.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from abc_tf import data, methods
from abc_tf.config import ExperimentConfig
from abc_tf.data.family import GroupedImages, quantile_bins
from abc_tf.evaluation.tasks import factor_isolation, label_information

AZIMUTH_BINS, ELEVATION_BINS = 8, 3


@dataclasses.dataclass(frozen=True)
class LabelledSample:
    """A labelled sample.

    images: uint8 [n, H, W, C].
    factors: int64 [n, F], the class of each image per label.
    names: [F]. sizes: [F], the number of classes of each label.
    inactive: the labels a run fixes within a set.
    """

    images: np.ndarray
    factors: np.ndarray
    names: tuple[str, ...]
    sizes: tuple[int, ...]
    inactive: tuple[str, ...] = ()


def known_factor_sample(config: ExperimentConfig, num_images: int, seed: int) -> LabelledSample:
    images, factors = factor_isolation.labelled_sample(config, num_images, seed)
    return LabelledSample(
        images,
        np.asarray(factors, np.int64),
        factor_isolation.factor_names(config),
        factor_isolation.factor_sizes(config),
        factor_isolation.inactive_names(config),
    )


def grouping_labels(grouped: GroupedImages) -> list[str]:
    """The labels constant within every group.

    A set is drawn within one group, so these are the factors a run fixes within a set.
    Examples are the person and pose of yaleb, and the car of epfl_cars.
    """
    groups = len(grouped.group_names)
    return [
        name
        for name, values in grouped.labels.items()
        if len(np.unique(np.stack([grouped.groups, values], axis=1), axis=0)) == groups
    ]


def grouped_label_sample(config: ExperimentConfig, num_images: int, seed: int) -> LabelledSample | None:
    grouped = label_information.load_labelled(config)
    complete = [name for name, values in grouped.labels.items() if np.all(values >= 0)]
    inactive = [name for name in grouping_labels(grouped) if name in complete]
    if set(complete) <= set(inactive):
        return None
    rows = np.sort(np.random.default_rng(seed).permutation(len(grouped.groups))[:num_images])
    factors = np.stack([grouped.labels[name][rows] for name in complete], axis=1).astype(np.int64)
    sizes = tuple(int(grouped.labels[name].max()) + 1 for name in complete)
    return LabelledSample(grouped.images[rows], factors, tuple(complete), sizes, tuple(inactive))


def pose_sample(config: ExperimentConfig, num_images: int, seed: int) -> LabelledSample:
    images, _, euler = data.get_family(config.data.family).pose_views(
        config, "test", "synthetic", num_images, seed
    )
    azimuth = (
        np.floor(np.mod(euler[:, 0], 2 * np.pi) / (2 * np.pi / AZIMUTH_BINS)).astype(np.int64) % AZIMUTH_BINS
    )
    factors = np.stack([azimuth, quantile_bins(euler[:, 1], ELEVATION_BINS)], axis=1).astype(np.int64)
    return LabelledSample(images, factors, ("azimuth", "elevation"), (AZIMUTH_BINS, ELEVATION_BINS))


def inactive_of(config: ExperimentConfig, sample: LabelledSample) -> tuple[str, ...]:
    """The labels of ``sample`` that a run of ``config`` fixed within a set.

    A family with known factors gives its ``--data.inactive_factors``. Otherwise, for methods trained on
    sets, the sample's labels that are constant within a group.
    """
    if data.get_family(config.data.family).known_factors is not None:
        return factor_isolation.inactive_names(config)
    return sample.inactive if config.method.batch_format == "sets" else ()


def condition_of(config: ExperimentConfig, sample: LabelledSample) -> str:
    """A run's training condition in a few words: which labels it was trained to drop."""
    if data.get_family(config.data.family).known_factors is not None:
        return factor_isolation.condition_label(config)
    inactive = inactive_of(config, sample)
    return ", ".join(inactive) + " inactive" if inactive else methods.get_method(config.method.name).name

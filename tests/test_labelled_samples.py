"""abc_tf.evaluation.tasks.labelled_samples: one labelled sample per family, drawn as its task says."""

from __future__ import annotations

import numpy as np
import pytest

from abc_tf.runs import experiments
from abc_tf.runs.experiments import get_preset
from abc_tf.evaluation.tasks import labelled_samples
from abc_tf.evaluation.tasks.task_registry import labelled_sample
from folder_helpers import make_folder


def test_known_factors_come_with_their_sizes_and_the_inactive_ones():
    sample = labelled_sample(experiments.config_for(inactive_factors="wall_hue,shape"), 40, seed=3)
    assert sample.images.shape == (40, 64, 64, 3) and sample.factors.shape == (40, 6)
    assert sample.names[:3] == ("floor_hue", "wall_hue", "object_hue") and sample.sizes == (
        10,
        10,
        10,
        8,
        4,
        15,
    )
    assert sample.inactive == ("wall_hue", "shape")
    assert np.all(sample.factors < np.array(sample.sizes))


def test_grouped_images_give_their_complete_labels_the_group_s_constant_ones_inactive(tmp_path):
    make_folder(str(tmp_path / "data"), {"a": 6, "b": 6, "c": 6})
    rows = ["filename,colour,partial"] + [
        f"{group}/img_{index:03d}.png,{index % 3},{'' if index == 0 else index % 2}"
        for group in "abc"
        for index in range(6)
    ]
    (tmp_path / "data" / "labels.csv").write_text("\n".join(rows) + "\n")
    config = get_preset("folders").replace(path=str(tmp_path / "data"), image_size=8)
    sample = labelled_sample(config, 12, seed=0)
    # "partial" is unknown for three images: only the labels known for every image are kept.
    assert sample.names == ("group", "colour") and sample.inactive == ("group",) and sample.sizes == (3, 3)
    assert sample.images.shape == (12, 8, 8, 3) and sample.factors.shape == (12, 2)
    (tmp_path / "data" / "labels.csv").unlink()
    assert labelled_sample(config, 12, seed=0) is None  # only the groups the sets were drawn from


def test_pose_renders_are_binned_by_azimuth_and_elevation():
    config = experiments.config_for(
        data="pose",
        source="procedural",
        image_size=16,
        similarity="cosine",
        temperature=0.1,
        real_fraction=0.0,
    )
    sample = labelled_sample(config, 48, seed=1)
    assert sample.names == ("azimuth", "elevation") and sample.sizes == (8, 3) and sample.inactive == ()
    assert sample.factors[:, 0].min() >= 0 and sample.factors[:, 0].max() < 8
    assert sorted(np.bincount(sample.factors[:, 1], minlength=3)) == pytest.approx([16, 16, 16], abs=1)
    assert labelled_samples.AZIMUTH_BINS == 8

"""The contrastive method (abc_tf/methods/contrastive: ABC's model with the two-view contrastive loss on two
views of each image): a training step on two-view sets, and the package's declaration, config and
smallest run."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import models
import toy_family
from abc_tf import methods
from abc_tf.methods.abc import ContrastiveConfig
from abc_tf.methods.abc.model import AbcModel
from abc_tf.runs import experiments

SET_SIZE = 12


def grouped_batches(pairs: int, seed: int, views: bool = False):
    return toy_family.batches(pairs, SET_SIZE, seed, views=views)


@pytest.mark.slow
def test_contrastive_loss_type_uses_the_two_views():
    model = AbcModel(models.build("s4"), loss_type="contrastive")
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = model.fit(
        grouped_batches(pairs=1, seed=6, views=True), epochs=1, steps_per_epoch=2, verbose=0
    ).history
    assert np.isfinite(history["abc_loss"][0])


def test_the_package_declares_the_contrastive_loss_on_two_views():
    method = methods.get_method("contrastive")
    assert method.name == "contrastive" and method.accepts_two_view_sets
    assert method.supervision_for(experiments.get_preset("shapes3d_hue_baseline")).startswith(
        "none beyond the augmentations"
    )
    assert experiments.method_config_class("contrastive") is ContrastiveConfig
    smoke = experiments.smoke_configs()["contrastive"]
    smoke.validate()
    assert smoke.method.name == "contrastive" and smoke.batch.augmentation_baseline

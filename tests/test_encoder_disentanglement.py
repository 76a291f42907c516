"""Disentanglement scores of an encoder on a data family (abc_tf.evaluation.tasks.encoder_disentanglement):
all five where the family draws images of given factor values (Shapes3D), the array scores on a
labelled sample where it cannot (BetaVAE and FactorVAE skipped, with the reason)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tensorflow as tf

from abc_tf.runs import experiments
from abc_tf import data
from abc_tf.config import DataConfig
from abc_tf.data.family import DataFamily, KnownFactors
from abc_tf.evaluation.estimators import disentanglement as dis
from abc_tf.evaluation.tasks import encoder_disentanglement as ed

TINY = dis.ScoreSettings(
    beta_vae_batch_size=4,
    beta_vae_num_train=20,
    beta_vae_num_eval=10,
    factor_vae_batch_size=4,
    factor_vae_num_train=20,
    factor_vae_num_eval=10,
    factor_vae_num_variance_estimate=100,
    num_train=100,
    num_test=50,
    dci_num_train=100,
    n_jobs=1,
)


class MeanColour:
    """An 'encoder': the mean colour of each image (3 codes), recording the images it saw."""

    def __init__(self):
        self.seen = []

    def __call__(self, images):
        self.seen.append(images.numpy())
        return tf.reduce_mean(images, axis=[1, 2])


@pytest.mark.slow
def test_all_five_scores_on_shapes3d_from_images_of_given_factors():
    encoder = MeanColour()
    result = ed.evaluate_disentanglement(encoder, experiments.config_for(), TINY, seed=7)
    assert list(result["scores"]) == [key for key, *_ in dis.HEADLINE]
    assert result["skipped"] == {} and result["observations"] == "factor grid (images_of)"
    assert result["codes"] == TINY.codes_drawn() == sum(len(images) for images in encoder.seen)
    assert {"seconds", "encode_seconds"} <= set(result)  # recorded; their values belong to benchmarks
    assert result["settings"]["num_train"] == 100
    json.dumps(result)
    assert all(0.0 <= value <= 1.0 for value in result["scores"].values())
    # One seed, one set of observations, whatever the encoder.
    again = MeanColour()
    ed.evaluate_disentanglement(again, experiments.config_for(), TINY, seed=7, scores=["mig"])
    np.testing.assert_array_equal(again.seen[0], encoder.seen[0])


def labelled_only_sample(config, num_images, seed):
    rng = np.random.default_rng(seed)
    factors = np.stack([rng.integers(0, 4, num_images), rng.integers(0, 3, num_images)], axis=1)
    images = np.zeros((num_images, 8, 8, 3), np.uint8)
    images[..., 0] = (factors[:, 0] * 60)[:, None, None]
    images[..., 1] = rng.integers(0, 255, num_images)[:, None, None]
    return images, factors


LABELLED_ONLY = DataFamily(
    name="labelled_only",
    config=DataConfig,
    image_shape=lambda config: (8, 8, 3),
    streams={"sets": None},
    known_factors=KnownFactors(("red", "unseen"), (4, 3), labelled_only_sample, lambda config: (0,)),
)


def test_a_family_without_images_of_gets_the_array_scores_and_says_why_not_the_others(monkeypatch):
    monkeypatch.setitem(
        data.DATA_FAMILIES,
        "labelled_only",
        "test_encoder_disentanglement:LABELLED_ONLY",
    )
    config = experiments.config_for(data="labelled_only")
    result = ed.evaluate_disentanglement(MeanColour(), config, TINY, seed=0)
    assert list(result["results"]) == ["mig", "dci", "sap"] and result["observations"] == "labelled sample"
    assert (
        set(result["skipped"]) == {"beta_vae", "factor_vae"} and "images_of" in result["skipped"]["beta_vae"]
    )
    assert result["codes"] == TINY.num_array_train() + TINY.num_test
    # Red carries the first factor alone, nothing carries the second.
    assert (
        result["results"]["mig"]["per_factor"]["red"] > 0.5 > result["results"]["mig"]["per_factor"]["unseen"]
    )
    with pytest.raises(ValueError, match="cannot draw images of given factor values"):
        ed.factor_source(MeanColour(), config)


def test_bad_requests_raise(tmp_path):
    with pytest.raises(ValueError, match="Unknown or no disentanglement scores"):
        ed.evaluate_disentanglement(MeanColour(), experiments.config_for(), TINY, seed=0, scores=["irs"])
    with pytest.raises(ValueError, match="declares no known factors"):
        ed.evaluate_disentanglement(MeanColour(), experiments.config_for(data="folders"), TINY, seed=0)
    with pytest.raises(ValueError, match="No disentanglement score"):
        ed.plot_scores({"trained": {}}, str(tmp_path / "none.png"))
    ed.plot_scores(
        {"trained": {"mig": [0.1, 0.3], "sap": [0.2, 0.2]}, "untrained": {"mig": 0.05}},
        str(tmp_path / "s.png"),
    )
    assert (tmp_path / "s.png").stat().st_size > 0

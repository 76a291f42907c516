"""abc_tf.examples.squares, the example family: found by its entry point, it passes the family's
checks (abc_tf check --data=squares) and its labelled sample is distinct and labelled."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from abc_tf import data
from abc_tf.data.family import check_batches
from abc_tf.registry import ContractError
from abc_tf.evaluation import contract
from abc_tf.examples.squares import family as squares


def test_the_example_family_passes_its_checks():
    assert data.get_family("squares") is squares.FAMILY
    assert [line.split(":")[0] for line in contract.family_checks("squares")] == [
        "PASS the 'sets' stream",
        "PASS the 'images' stream",
        "PASS the labelled sample",
    ]
    sample = squares.labelled_sample(None, 64, seed=0)
    # The square's position and the background's bin are what the images show.
    corner = sample.images[:, 0, 0, 0].astype(np.int64)
    np.testing.assert_array_equal(corner * squares.BACKGROUND_BINS // 128, sample.factors[:, 1])


def test_a_stream_that_drops_the_set_axis_is_one_line_naming_the_stream():
    spec = {
        "set_a": tf.TensorSpec([32, 28, 28, 1], tf.uint8),
        "set_b": tf.TensorSpec([4, 8, 28, 28, 1], tf.uint8),
    }
    with pytest.raises(
        ContractError, match=r"^The 'sets' stream of the data family 'squares' yields set_a: uint8 "
    ):
        check_batches("squares", "sets", spec, squares.IMAGE_SHAPE)


def test_a_family_without_an_evaluation_task_is_told_what_that_costs(monkeypatch):
    monkeypatch.setattr(squares, "FAMILY", dataclasses.replace(squares.FAMILY, evaluation_task=""))
    assert contract.family_checks("squares")[-1] == (
        "PASS no evaluation_task: evaluate refuses its runs, and train advises none"
    )

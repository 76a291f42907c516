"""abc_tf.examples.lab, the example method: found by its entry point, trained a few steps."""

import math

import pytest

from abc_tf import methods
from abc_tf.runs import training


@pytest.mark.slow
def test_the_example_method_is_found_and_trains_its_smallest_run(tmp_path):
    method = methods.get_method("lab")
    assert method.quick_run is method.presets["mnist_lab"]
    result = training.train(method.smallest_run, str(tmp_path / "run"), verbose=0)
    assert result.final_step == method.smallest_run.trainer.steps and set(result.networks) == {"encoder"}
    assert all(math.isfinite(loss) for loss in result.history["loss"])

"""abc_tf.examples.lab, the example method: found by its entry point, trained a few steps."""

import math

import pytest
import tensorflow as tf

from abc_tf import methods, registry
from abc_tf.examples.lab import model as lab
from abc_tf.runs import training


@pytest.mark.slow
def test_the_example_method_is_found_and_trains_its_smallest_run(tmp_path):
    method = methods.get_method("lab")
    assert method.quick_run is method.presets["mnist_lab"]
    result = training.train(method.smallest_run, str(tmp_path / "run"), verbose=0)
    assert result.final_step == method.smallest_run.trainer.steps and set(result.networks) == {"encoder"}
    assert all(math.isfinite(loss) for loss in result.history["loss"])


class PerPairLoss(lab.LabModel):  # the authoring mistake: a loss of shape [P], not its mean
    def compute_terms(self, batch, step, training):
        return {"loss": tf.reduce_sum(self.embed(batch["set_a"], training), [1, 2])}


def test_check_only_traces_the_step_a_loss_that_is_no_scalar_fails_in_one_line(tmp_path):
    prepared = training.prepare(methods.get_method("lab").smallest_run, str(tmp_path), verbose=0)
    training.check_step(prepared)
    prepared.model.__class__ = PerPairLoss
    with pytest.raises(
        registry.ContractError, match=r"test_lab.py:\d+: PerPairLoss's term 'loss' is float32 of "
    ):
        training.check_step(prepared)

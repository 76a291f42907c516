"""abc_tf.evaluation.tasks.evaluation_settings: a setting that cannot work is refused before any run
is evaluated."""

from __future__ import annotations

import pytest

from abc_tf.evaluation.tasks.evaluation_settings import EvaluationSettings
from abc_tf.evaluation.tasks.factor_isolation import IsolationSettings


def test_settings_refuse_an_unknown_preset_or_score():
    with pytest.raises(ValueError, match="Unknown disentanglement preset 'huge'"):
        EvaluationSettings(disentanglement="huge").validate()
    with pytest.raises(ValueError, match=r"unknown or no scores \['irs'\]"):
        EvaluationSettings(disentanglement_scores=("mig", "irs")).validate()
    with pytest.raises(ValueError, match="num_images must be at least 10"):
        EvaluationSettings(isolation=IsolationSettings(num_images=3)).validate()

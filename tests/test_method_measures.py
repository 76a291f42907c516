"""abc_tf.evaluation.tasks.method_measures: the built-in measures of methods, and the function a
method's ``measures`` names loaded from its "module:function"."""

from __future__ import annotations

import pytest

from abc_tf import methods
from abc_tf.evaluation.tasks import method_measures
from abc_tf.evaluation.tasks.method_measures import measures_of


def test_every_method_s_declared_measures_load_as_functions():
    declared = {methods.get_method(name).measures for name in methods.METHODS} - {"", None}
    assert declared, "some method declares measures of its own"
    assert all(callable(measures_of(reference)) for reference in declared)
    assert (
        measures_of("abc_tf.evaluation.tasks.method_measures:likelihood_measures")
        is method_measures.likelihood_measures
    )


def test_a_reference_to_something_not_callable_is_refused():
    with pytest.raises(TypeError, match="is not a function"):
        measures_of("abc_tf.evaluation.tasks.run_evaluation:METRICS_FILE")

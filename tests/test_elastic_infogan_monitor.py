"""abc_tf.methods.elastic_infogan.monitor: Elastic-InfoGAN's failure checks (its logs and files: the
tiny runs of tests/test_elastic_infogan.py)."""

from __future__ import annotations

import numpy as np

from abc_tf.methods.elastic_infogan import monitor as infogan_monitor


def test_failures_are_detected():
    uniform = np.full(10, 0.1)
    assert infogan_monitor.failures(uniform, 1.0) == []
    collapsed = np.array([0.95] + [0.05 / 9] * 9)
    assert "collapsed prior" in infogan_monitor.failures(collapsed, 1.0)[0]
    assert "mode collapse" in infogan_monitor.failures(uniform, 0.01)[0]
    real = np.random.default_rng(0).uniform(size=(20, 28, 28))
    assert infogan_monitor.diversity(np.repeat(real[:1], 20, axis=0), real) < 1e-12
    assert abs(infogan_monitor.diversity(real, real) - 1.0) < 1e-9

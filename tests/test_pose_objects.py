"""Procedural pose objects (abc_tf.data.pose.objects): deterministic instances, disjoint
pools, viewpoints inside the elevation filter."""

from __future__ import annotations

import numpy as np
import pytest

from abc_tf.data.pose import objects as pose_objects


def test_procedural_instances_are_deterministic_and_pools_disjoint():
    first = pose_objects.make_instance("car", "train", 3)
    again = pose_objects.make_instance("car", "train", 3)
    np.testing.assert_array_equal(first.size, again.size)
    assert not np.allclose(first.size[0], pose_objects.make_instance("car", "test", 3).size[0])
    euler = pose_objects.sample_viewpoints(np.random.default_rng(0), 500, 0.5)
    assert euler[:, 1].min() >= 0.0 and euler[:, 1].max() <= 0.5 and np.all(euler[:, 2] == 0)
    with pytest.raises(ValueError, match="pose category"):
        pose_objects.make_instance("boat", "train", 0)

"""Parameter counts of the architecture tables, worked out by hand (docs/PAPERS.md section 2)."""

from __future__ import annotations

import numpy as np


def conv(in_channels, filters):
    """Parameters of a 3x3 convolution with bias."""
    return 3 * 3 * in_channels * filters + filters


def dense(inputs, units):
    """Parameters of a dense layer with bias."""
    return inputs * units + units


def trainable_count(model):
    return int(sum(np.prod(w.shape) for w in model.trainable_weights))

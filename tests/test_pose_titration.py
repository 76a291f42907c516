"""abc_tf.data.pose.titration: the titration schedule of real images logged at the trained step."""

from __future__ import annotations

import keras
import pytest

from abc_tf.data.pose import titration


def test_titration_logger_writes_the_fraction():
    logger = titration.TitrationLogger(0.1, 4000, 40000)
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam")
    model.optimizer.iterations.assign(8000)
    logger.set_model(model)
    logs: dict = {}
    logger.on_epoch_end(0, logs)
    assert logs["real_fraction"] == pytest.approx(0.1 / 9)  # step 7999: the first stair

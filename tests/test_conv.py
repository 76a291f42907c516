"""The convolutional encoders S3, S4 and S6 (models/conv.py) against their tables (docs/PAPERS.md
section 2): output shape and parameter count."""

import pytest

import models
from model_helpers import conv, dense, trainable_count


def test_s3_matches_table():
    # 64 -> 62 -> 60 -> (60-3)//2+1 = 29 -> 27 -> 25 -> (25-3)//2+1 = 12; flatten 12*12*128.
    want = (
        conv(3, 32)
        + conv(32, 32)
        + conv(32, 64)
        + conv(64, 64)
        + conv(64, 128)
        + conv(128, 128)
        + dense(12 * 12 * 128, 128)
        + dense(128, 64)
    )
    model = models.build("s3")
    assert model.output_shape == (None, 64)
    assert trainable_count(model) == want == 2_654_688
    assert models.build("s3", embedding_dim=2).output_shape == (None, 2)


def test_s4_matches_table():
    # 28 -> 26 -> 24 -> (24-3)//2+1 = 11 -> 9 -> 7; flatten 7*7*32.
    want = conv(1, 32) + 4 * conv(32, 32) + dense(7 * 7 * 32, 128) + dense(128, 8)
    model = models.build("s4")
    assert model.input_shape == (None, 28, 28, 1)
    assert model.output_shape == (None, 8)
    assert trainable_count(model) == want == 239_176


@pytest.mark.parametrize("channels", [1, 3])
def test_s6_matches_table(channels):
    # 64 -> 62 -> 30 -> 28 -> 13 -> 11 -> 5; flatten 5*5*256.
    want = (
        conv(channels, 64)
        + conv(64, 64)
        + conv(64, 128)
        + conv(128, 128)
        + conv(128, 256)
        + conv(256, 256)
        + dense(5 * 5 * 256, 128)
        + dense(128, 64)
    )
    model = models.build("s6", channels=channels)
    assert model.input_shape == (None, 64, 64, channels)
    assert model.output_shape == (None, 64)
    assert trainable_count(model) == want


def test_s6_rejects_other_channel_counts():
    with pytest.raises(ValueError, match="1 \\(faces\\) or 3 \\(cars\\)"):
        models.build("s6", channels=2)

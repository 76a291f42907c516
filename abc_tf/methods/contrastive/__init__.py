"""The contrastive loss (NT-Xent on two views of each image; ``--method=contrastive``): ABC's
model with the loss the paper compares it with (Fig. 3c). Its config, the temperature and
similarity ABC shares, is ABC's base class; its presets are among ABC's (``shapes3d_hue_baseline``)."""

from __future__ import annotations

from abc_tf.config import EncoderConfig
from abc_tf.methods.abc import PRESETS as ABC_PRESETS
from abc_tf.methods.abc import ContrastiveConfig

CONFIG = ContrastiveConfig
PRESETS: dict = {}
# The smallest run the method trains (tests/test_methods.py's every-method checks: XLA, mixed_float16
# with loss scaling, two replicas, evaluate.py), on built-in data; QUICK: the preset a user runs first
# (benchmarks/gpu_readiness.py measures each method's step on it).
SMOKE = ABC_PRESETS["shapes3d_hue_baseline"].replace(
    name="contrastive_smoke",
    model=EncoderConfig(architecture="s3", embedding_dim=8),
    set_size=8,
    pairs_per_step=2,
    eval_every=0,
    steps=4,
    log_every=2,
)
QUICK = "shapes3d_hue_baseline"

"""The config of product-manifold projection (``--method=pmp``; docs/PAPERS.md section P1) and its presets."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from abc_tf.config import EncoderConfig, ExperimentConfig, MethodConfig, PairBatch, TrainerConfig, field
from abc_tf.data.shapes3d import Shapes3DConfig


@dataclasses.dataclass(frozen=True)
class PmpConfig(MethodConfig):
    """PMP's flags. A weight of 0 turns its loss off.

    The warm-up is 0.25 in the authors' code, 0.2 in their supplement.
    """

    batch_format: ClassVar[str] = "pairs"
    num_subspaces: int = field(10, "Number k of latent subspaces, one projector each.")
    warmup: float = field(
        0.25,
        "Fraction of the steps trained on the reconstruction loss alone; the authors' code uses 0.25.",
    )
    distance_weight: float = field(0.1, "Maximum weight of the distance loss L_dis.")
    sparsity_weight: float = field(0.1, "Maximum weight of the sparsity loss L_spar.")
    consistency_weight: float = field(100.0, "Maximum weight of the consistency loss L_cons.")
    usage_weight: float = field(
        1e-4, "Initial weight of the subspace-usage loss L_reg, decaying as L_dis ramps in."
    )


# Paper settings: Table 1's networks, d = 10, k = 10, batches of 32 pairs, Adam 5e-4 (0.9, 0.99),
# the authors' loss weights and schedule. The supplement gives no training length. We use 30
# epochs of 480,000 pairs, 450,000 steps: the epochs of the authors' Cars3D notebook [ours].
# Pairs change any of the six factors.
_PMP = ExperimentConfig(
    name="shapes3d_pmp",
    trainer=TrainerConfig(steps=450_000, learning_rate=5e-4, log_every=1000, eval_every=15_000),
    data=Shapes3DConfig(family="shapes3d"),
    batch=PairBatch(pairs_per_step=32),
    method=PmpConfig(name="pmp", num_subspaces=10),
    encoder=EncoderConfig(architecture="pmp_encoder", embedding_dim=10),
)
PRESETS: dict[str, ExperimentConfig] = {
    "shapes3d_pmp": _PMP,
    # About 4 minutes on 2 CPU cores: the same networks, losses and schedule over 1,500 steps.
    # Warm-up ends at step 375; L_dis is at full weight from step 600, L_cons from 750.
    # Mixed precision is bfloat16 on CPUs that compute it natively (BENCHMARKS.md, "PMP training
    # step (CPU)"), float16 on GPUs, float32 on other CPUs (abc_tf/runs/precision.py).
    # The reconstruction loss falls from 0.13 to about 0.013.
    "shapes3d_pmp_quick": _PMP.replace(
        name="shapes3d_pmp_quick", steps=1500, log_every=100, eval_every=500, mixed_precision=True
    ),
}

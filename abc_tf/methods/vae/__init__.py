"""The configs of the VAE and VITAE (``--method=vae``, ``u_vitae``, ``c_vitae``) and their presets.

See docs/PAPERS.md section P2. The three share one model, ``model.py``. Each variant's config
declares the parts of its generative model (:class:`Structure`). The model, its checks and the
likelihood measures read them.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from abc_tf.config import ExperimentConfig, ImageBatch, MethodConfig, TrainerConfig, field
from abc_tf.data.mnist import MnistConfig


@dataclasses.dataclass(frozen=True)
class Structure:
    """The parts of a variant's generative model.

    perspective: a perspective space z_P, as in VITAE. Its decoded affine map warps the appearance
      decoder's template. Without it, the one latent space is the appearance's, as in the VAE.
    aligned_appearance: the appearance posterior reads the image with the inferred perspective
      undone, as in C-VITAE. U-VITAE reads the image itself. Needs ``perspective``.
    """

    perspective: bool = False
    aligned_appearance: bool = False

    def __post_init__(self):
        if self.aligned_appearance and not self.perspective:
            raise ValueError("Structure: aligned_appearance needs a perspective space to undo.")


@dataclasses.dataclass(frozen=True)
class VaeConfig(MethodConfig):
    """The VAE's flags, shared by both VITAE variants.

    latent_dim is the VAE's d, or VITAE's d_A + d_P split in halves. kl_warmup 0 gives weight 1
    from the start. affine_augmentation follows the authors' disentanglement script:
    RandomAffine(20, translate 0.1). Their final main.py has that line commented out. Their
    poster's MNIST is randomly translated and rotated.
    """

    batch_format: ClassVar[str] = "images"
    has_encoder_part: ClassVar[bool] = False  # Table 1's MLPs, not an encoder of the models registry
    structure: ClassVar[Structure] = Structure()  # the VAE: one latent space, no perspective
    latent_dim: int = field(4, "Size of the whole latent, split in halves by VITAE; the paper uses 4.")
    kl_warmup: float = field(
        0.5,
        "Fraction of the steps over which the KL weight rises linearly from 0 to 1; the paper uses half.",
    )
    affine_augmentation: bool = field(
        True,
        "Warp every training image by a random rotation up to 20 degrees and a shift up to 10% of its size.",
    )

    def validate(self) -> None:
        super().validate()
        self.check_positive("latent_dim")


# Paper settings: Table 1's MLPs, d = 4 (VITAE: 2 + 2), Adam 1e-4, batches of 512. 2000 epochs of
# the 54,051 training images without digit 9, held out as in ABC's MNIST preset: 211,200 steps.
# The KL weight rises over the first half. The holdout is ours. The paper trains on all ten
# digits: 2,000 epochs of 60,000 images are 234,375 steps of 512.
# --data.holdout_digit=none --trainer.steps=234375 runs that.
def variant_presets(config_class: type[VaeConfig], variant: str) -> dict[str, ExperimentConfig]:
    """The paper's MNIST run of ``variant`` and its quick run, by name.

    ``variant`` is vae, u_vitae or c_vitae; ``config_class`` is its config class.
    """
    paper = ExperimentConfig(
        name=f"mnist_{variant}",
        trainer=TrainerConfig(steps=211_200, learning_rate=1e-4, log_every=1000),
        data=MnistConfig(family="mnist", source="auto", holdout_digit="9"),
        batch=ImageBatch(batch_size=512),
        method=config_class(name=variant, latent_dim=4),
    )
    # About 1.5 minutes on 2 CPU cores: 5,000 steps of batches of 128 at Adam 1e-3 [ours]. The KL
    # weight rises over the first half. XLA runs these small MLPs and the warp 3x faster.
    # C-VITAE reaches a test ELBO of about -154 nats and importance-weighted log p(x) -151
    # (README.md, "VITAE (peer method)").
    quick = paper.replace(
        name=f"mnist_{variant}_quick",
        batch_size=128,
        learning_rate=1e-3,
        steps=5000,
        log_every=250,
        jit_compile="true",
    )
    return {paper.name: paper, quick.name: quick}


def variant_smoke(config_class: type[VaeConfig], variant: str) -> ExperimentConfig:
    """The smallest run of ``variant``, on the procedural digits, for tests/test_methods.py."""
    return variant_presets(config_class, variant)[f"mnist_{variant}_quick"].replace(
        name=f"{variant}_smoke", source="procedural", jit_compile="false", batch_size=8, steps=4, log_every=2
    )


PRESETS = variant_presets(VaeConfig, "vae")

"""The config of CC-VAE (``--method=cc_vae``; Jha, Anand, Singh and Veeravasarapu, "Disentangling
Factors of Variation with Cycle-Consistent Variational Auto-Encoders", ECCV 2018; docs/PAPERS.md
section P5) and its presets.

The paper itself was not available offline (we had the ABC paper and
supplement only), so its text is not a source here; the facts come from the authors' code,
cited by file and line of github.com/ananyahjha93/cycle-consistent-vae at its newest commit
(6ecdfe5; README.md: tested with PyTorch 0.4.0):

- latents: style_dim = class_dim = 16 (main.py L14-15): the unspecified code z (a Gaussian
  posterior, networks.py L34-36) and the specified code s (deterministic: one linear head,
  networks.py L38-39, L47);
- loss weights: reconstruction 2, reverse cycle 10, KL 3 (main.py L18-22);
- forward cycle: per step 64 pairs of images of one digit (main.py L9; data_loader.py L28-33:
  each image with another of its class); each image reconstructed from its own z and its
  partner's s (training.py L143-144), by the mean squared error per pixel (utils.py L13-14,
  training.py L146-150); the KL of each q(z | x) to N(0, I) summed over the batch and divided
  by batch size x pixels (training.py L128-141); no reconstruction from the image's own s;
- reverse cycle: z ~ N(0, I) (training.py L166), decoded with the specified codes of two
  images of two independent batches, the codes detached (training.py L158-172), the two images
  re-encoded and the L1 distance (mean per entry, utils.py L17-18) between the two style
  means (training.py L174-180): the two re-encodings are matched to each other, not to z;
- optimisers: Adam, learning rate 1e-4, betas (0.9, 0.999) (main.py L12, L24-25), PyTorch's
  epsilon 1e-8; one over the encoder and decoder for the forward cycle, another over the
  encoder for the reverse cycle, stepped in that order each iteration (training.py L67-77,
  L120-184); the decoder's gradients of the reverse cycle are discarded (its optimiser zeroes
  them before the next forward cycle, training.py L120);
- schedule: 100 epochs (main.py L36) of int(60,000 / 64) iterations (training.py L116), both
  learning rates divided by 10 after 80 epochs (training.py L79-81);
- networks (models/cc_vae_networks.py): networks.py L13-86, init utils.py L30-39.

What neither settles [ours]:

- Groups: our group is one stack of ``set_a`` (ABC's MNIST stack of 64, ABC supplement L164:
  the ABC authors used ABC's stack size as ML-VAE's group size, L217; for CC-VAE they say
  nothing). A stack of 64 makes 32 disjoint pairs, drawn by a shuffle of (seed, step); two
  stacks (``pairs_per_step=2``) make the authors' 64 pairs per step. The reverse cycle takes, for
  each pair, the first member's code and the code of an image of ``set_b``'s stack of the same
  index: the MNIST stream draws that stack from another digit (unless --data.allow_same_digit),
  where the authors' two independent batches differ in digit only by chance. So a step encodes,
  decodes and re-encodes as many images as one of the authors' iterations.
- Steps: epochs counted in our training images, as the other VAE presets: 100 epochs of the
  54,051 images left without digit 9 (held out as in ABC, supplement L114) in steps of 64
  pairs: 84,455 steps.
- The learning-rate drop (x 0.1 after 80 epochs) is ``--trainer.lr_drop_step`` at 80 epochs
  counted the same way (the quick presets stop before it).
- ``base_channels``: a knob for tests (16, the authors').
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

from abc_tf.config import ExperimentConfig, MethodConfig, SetBatch, TrainerConfig, field
from abc_tf.data.mnist import MnistConfig
from abc_tf.data.pose import PoseConfig

NETWORKS = ("mnist", "conv64")


@dataclasses.dataclass(frozen=True)
class CcVaeConfig(MethodConfig):
    batch_format: ClassVar[str] = "sets"
    has_model_part: ClassVar[bool] = False  # the authors' convolutional networks (models/cc_vae_networks.py)
    style_dim: int = field(
        16, "Size of the unspecified (style) code z, a Gaussian posterior (the authors' style_dim: 16)."
    )
    class_dim: int = field(
        16, "Size of the specified (class) code s, deterministic (the authors' class_dim: 16)."
    )
    networks: str = field(
        "mnist",
        "The encoder and decoder: 'mnist' (the authors' MNIST networks, 28 x 28 images) or 'conv64' (the "
        "networks for 64 x 64 images the ABC authors used for both VAE baselines on pose, after CC-VAE's "
        "supplement; sizes ours: models/vae64_networks.py).",
    )
    base_channels: int = field(
        16,
        "Channels of the encoder's first convolution; mnist: the others have 2x and 4x, the decoder's 8x, "
        "2x, 1x (the authors: 16); conv64: the others 2x, 4x, 8x, the decoder's 4x, 2x, 1x [ours].",
    )
    reconstruction_weight: float = field(
        2.0, "Weight of the forward cycle's reconstruction error (the authors' reconstruction_coef: 2)."
    )
    kl_weight: float = field(
        3.0, "Weight of the KL of q(z | x) to N(0, I) (the authors' kl_divergence_coef: 3)."
    )
    reverse_cycle_weight: float = field(
        10.0,
        "Weight of the reverse cycle's L1 loss (the authors' reverse_cycle_coef: 10; 0: forward cycle only).",
    )

    def validate(self) -> None:
        super().validate()
        self.check_positive("style_dim", "class_dim", "base_channels")
        if self.networks not in NETWORKS:
            raise ValueError(f"--method.networks={self.networks!r}; choose one of {', '.join(NETWORKS)}.")
        for name in ("reconstruction_weight", "kl_weight", "reverse_cycle_weight"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"--method.{name} must be a finite number >= 0, got {value}.")


GROUP_SIZE = 64  # ABC's MNIST stack size (ABC supplement L164)
AUTHORS_PAIRS = 64  # main.py L9: the batch of 64 pairs
AUTHORS_EPOCHS = 100  # main.py L36
LEARNING_RATE = 1e-4  # main.py L12
TRAINING_IMAGES = 54_051  # MNIST's training images without digit 9 (held out as in ABC's preset)
AUTHORS_STEPS = round(AUTHORS_EPOCHS * TRAINING_IMAGES / AUTHORS_PAIRS)  # 84,455
AUTHORS_DROP_EPOCH = 80  # training.py L79-81: both learning rates / 10 after 80 epochs
LR_DROP_FACTOR = 0.1

PRESETS: dict[str, ExperimentConfig] = {
    "mnist_cc_vae": ExperimentConfig(
        name="mnist_cc_vae",
        trainer=TrainerConfig(
            steps=AUTHORS_STEPS,
            learning_rate=LEARNING_RATE,
            log_every=1000,
            lr_drop_factor=LR_DROP_FACTOR,
            lr_drop_step=round(AUTHORS_DROP_EPOCH * TRAINING_IMAGES / AUTHORS_PAIRS),
        ),  # 67,564
        data=MnistConfig(family="mnist", source="auto", holdout_digit="9"),
        batch=SetBatch(set_size=GROUP_SIZE, pairs_per_step=AUTHORS_PAIRS // (GROUP_SIZE // 2)),
        method=CcVaeConfig(name="cc_vae"),
    ),
}
# About 6 minutes on 2 CPU cores [ours]: the authors' settings for 3,500 steps (4 epochs of the
# training images) at about 10 steps/s (8.1 in BENCHMARKS.md's XLA table of every method's step),
# the step compiled with XLA (on this CPU no faster than the plain graph; the GPU's choice). The
# full preset's 84,455 steps take about 2.4 hours a seed at that rate; on another 2-core host the
# XLA step ran at 0.045 s on both cores (70 min a seed) and 0.08 s on one [ours].
PRESETS["mnist_cc_vae_quick"] = PRESETS["mnist_cc_vae"].replace(
    name="mnist_cc_vae_quick",
    steps=3500,
    log_every=500,
    jit_compile=True,
)

# Table S1 (synthetic cars, ABC supplement L66-70) on the built-in procedural cars at 64 x 64
# (the ABC authors downsized the pose images to 64 x 64 for both VAE baselines, L217), with
# the 64 x 64 networks (networks=conv64; sizes ours, models/vae64_networks.py). Clean renders
# on black, as the synthetic-domain queries of Table S1: no real images, crops, colouring
# augmentations or painted backgrounds. A group is one stack of set A, ABC's pose stack of 32
# renders of ONE car instance: the specified (class) code is the instance, the unspecified
# (style) code the pose, which ``networks()["encoder"]`` returns and the pose lookup evaluates.
# The reverse cycle's second code comes from set B's stack, renders of all training instances.
# Four stacks of 16 pairs make the authors' 64 pairs per step. [ours]: the group size (ABC's
# stack, as the ML-VAE group size, L217; the supplement says nothing of CC-VAE's); the loss
# (the authors' mean squared error of sigmoid images, weights 2, 3, 10), latent sizes (16, 16)
# and learning rate (1e-4) of the authors' MNIST code (no source gives theirs for pose);
# base_channels 32; steps: the authors' 100 epochs counted over the 4,000 procedural training
# renders (100 instances x 40 views) in steps of 64 pairs: 6,250 (with
# --data.source=keypointnet, scale --trainer.steps with the number of renders).
POSE_GROUP_SIZE = 32  # ABC's pose stack size (docs/PAPERS.md section 3: 4 pairs of sets of 32)
POSE_TRAINING_RENDERS = 4000  # ProceduralSizes(): train_instances 100 x views_per_instance 40
POSE_STEPS = round(AUTHORS_EPOCHS * POSE_TRAINING_RENDERS / AUTHORS_PAIRS)  # 6,250
POSE_DATA = PoseConfig(
    family="pose",
    image_size=64,
    real_fraction=0.0,
    crop_amplitude=0.0,
    augmentation_amplitude=0.0,
    paint_backgrounds=False,
)
PRESETS["pose_cc_vae"] = ExperimentConfig(
    name="pose_cc_vae",
    trainer=TrainerConfig(
        steps=POSE_STEPS,
        learning_rate=LEARNING_RATE,
        log_every=500,
        lr_drop_factor=LR_DROP_FACTOR,
        lr_drop_step=round(AUTHORS_DROP_EPOCH * POSE_TRAINING_RENDERS / AUTHORS_PAIRS),
    ),  # 5,000
    data=POSE_DATA,
    batch=SetBatch(
        set_size=POSE_GROUP_SIZE,
        pairs_per_step=AUTHORS_PAIRS // (POSE_GROUP_SIZE // 2),
        double_augmentation=False,
    ),
    method=CcVaeConfig(name="cc_vae", networks="conv64", base_channels=32),
)
# About 5 minutes of training on 2 CPU cores [ours]: the same networks, data and groups of 32,
# 2 stacks (32 pairs) per step, 1,000 steps (16 epochs of the renders) at about 0.3 s a step,
# the plain graph (XLA took 183 ms a step of one stack here against 140 ms without it).
PRESETS["pose_cc_vae_quick"] = PRESETS["pose_cc_vae"].replace(
    name="pose_cc_vae_quick",
    pairs_per_step=2,
    steps=1000,
    log_every=250,
)

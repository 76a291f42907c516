"""The config of CC-VAE (``--method=cc_vae``) and its presets.

CC-VAE is Jha, Anand, Singh and Veeravasarapu, "Disentangling Factors of Variation with
Cycle-Consistent Variational Auto-Encoders", ECCV 2018; see docs/PAPERS.md section P5.
The paper was not at hand offline, so the facts come from the authors' code.
Source: github.com/ananyahjha93/cycle-consistent-vae at 6ecdfe5, tested with PyTorch 0.4.0.
The comment under the imports lists what each file and line settles, and what we chose [ours].
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

from abc_tf.config import ExperimentConfig, MethodConfig, SetBatch, TrainerConfig, field
from abc_tf.data.mnist import MnistConfig
from abc_tf.data.pose import PoseConfig

# From the authors' code (main.py, training.py, networks.py, utils.py at 6ecdfe5): latents 16 + 16,
# a Gaussian z and a deterministic s; loss weights reconstruction 2, reverse cycle 10, KL 3; 64
# pairs per step, each image rebuilt from its own z and its partner's s; the reverse cycle decodes
# z ~ N(0, I) with two detached codes and matches the re-encoded style means by L1; two Adam
# optimisers (1e-4), forward then reverse, the decoder's reverse-cycle gradients discarded; 100
# epochs, the learning rate divided by 10 after 80.
# [ours], as neither paper nor code settles them: a group is one stack of set_a, ABC's MNIST stack
# of 64 (ABC supplement L164, its size for ML-VAE, L217), so two stacks make the authors' 64 pairs;
# epochs count our 54,051 training images without the held-out 9 (84,455 steps), the drop at 80 of
# them (--trainer.lr_drop_step); base_channels is a knob for tests, 16 the authors'.

NETWORKS = ("mnist", "conv64")


@dataclasses.dataclass(frozen=True)
class CcVaeConfig(MethodConfig):
    """CC-VAE's flags.

    networks='conv64' builds the 64 x 64 networks the ABC authors used for both VAE baselines on
    pose, after CC-VAE's supplement; the sizes are ours (models/vae64_networks.py).
    base_channels: with mnist the other encoder convolutions have 2x and 4x, the decoder's 8x, 2x
    and 1x. With conv64 the encoder has 2x, 4x and 8x, the decoder 4x, 2x and 1x [ours].
    The authors' names: style_dim, class_dim, reconstruction_coef, kl_divergence_coef and
    reverse_cycle_coef.
    """

    batch_format: ClassVar[str] = "sets"
    has_encoder_part: ClassVar[bool] = (
        False  # the authors' convolutional networks (models/cc_vae_networks.py)
    )
    style_dim: int = field(
        16, "Size of the unspecified style code z, a Gaussian posterior; the authors use 16."
    )
    class_dim: int = field(16, "Size of the deterministic specified class code s; the authors use 16.")
    networks: str = field(
        "mnist",
        "The networks: 'mnist', the authors' for 28 x 28 images, or 'conv64', for 64 x 64 pose images.",
    )
    base_channels: int = field(
        16,
        "Channels of the encoder's first convolution, which set the other widths; the authors use 16.",
    )
    reconstruction_weight: float = field(
        2.0, "Weight of the forward cycle's reconstruction error; the authors use 2."
    )
    kl_weight: float = field(3.0, "Weight of the KL of q(z | x) to N(0, I); the authors use 3.")
    reverse_cycle_weight: float = field(
        10.0,
        "Weight of the reverse cycle's L1 loss; the authors use 10, and 0 trains the forward cycle only.",
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
# The authors' settings for 3,500 steps, 4 epochs of the training images: minutes on 2 CPU cores.
# Which of XLA and the plain graph runs the step faster depends on the CPU (BENCHMARKS.md, "The
# paper's baselines: compiled step against eager"), so both presets leave --trainer.jit_compile at
# auto, which times the two. The full preset's 84,455 steps take about an hour a seed on 2 CPU
# cores [ours].
PRESETS["mnist_cc_vae_quick"] = PRESETS["mnist_cc_vae"].replace(
    name="mnist_cc_vae_quick",
    steps=3500,
    log_every=500,
)

# Table S1, synthetic cars (ABC supplement L66-70), on clean 64 x 64 procedural renders, conv64
# networks (sizes ours) as the ABC authors used for both VAE baselines (L217). A group is ABC's
# stack of 32 renders of one car, so the specified code is the instance and the unspecified one,
# the encoder, the pose. [ours]: the group size; the loss, weights and latents are the authors'
# MNIST ones; steps are their 100 epochs over the 4,000 renders in steps of 64 pairs (scale
# --trainer.steps with the renders of --data.source=keypointnet).
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
# About 5 minutes of training on 2 CPU cores [ours]. The same networks, data and groups of 32,
# with 2 stacks (32 pairs) per step. 1,000 steps, 16 epochs of the renders, at about 0.3 s a step.
# The plain graph: XLA took 183 ms a step of one stack here, against 140 ms without it.
PRESETS["pose_cc_vae_quick"] = PRESETS["pose_cc_vae"].replace(
    name="pose_cc_vae_quick",
    pairs_per_step=2,
    steps=1000,
    log_every=250,
)

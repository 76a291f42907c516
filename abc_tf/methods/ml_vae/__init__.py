"""The config of ML-VAE (``--method=ml_vae``; Bouchacourt et al., AAAI 2018; docs/PAPERS.md section P5)
and its presets.

The sources, cited by file and line of the authors' repository github.com/DianeBouchacourt/
multi-level-vae at its newest commit (6de7264, 2019-06-27; "HEAD" below) unless said otherwise:

- latents: style_dim = class_dim = 10 (main.py L17-18);
- optimiser: Adam, learning rate 1e-3, betas (0.9, 0.999) (main.py L13-15), PyTorch's epsilon 1e-8;
- batches of 256 MNIST images (main.py L9), grouped by digit label within the batch
  (utils.py L13-51); 400 epochs (main.py L32) of the 50,000 images left after a 10,000-image
  validation split (training.py L127-131);
- likelihood: a Gaussian per pixel, mean and log-variance from the decoder, the log-variance
  squashed by tanh (networks.py L44-52, training.py L39-45). (The first commit, 522572d, had a
  sigmoid decoder and a mean squared error instead; neither version is Bernoulli.)
- loss: -ELBO = (sum of the images' -log p(x | s, c) + sum of the style KLs + sum of the groups'
  content KLs) / number of groups (training.py L33-49), all weights 1 (main.py L21-22).

From the ABC supplement (L217): for MNIST the ABC authors translated that code to TensorFlow,
used a group size equal to ABC's stack size (64: supplement L164) and held digit 9 out of training
(L114). Our group is one stack (``set_a`` of a "sets" batch); 4 stacks of 64 make the authors'
256 images per step.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from abc_tf.config import ExperimentConfig, MethodConfig, SetBatch, TrainerConfig, field
from abc_tf.data.mnist import MnistConfig
from abc_tf.data.pose import PoseConfig

LIKELIHOODS = ("gaussian", "bernoulli")
CONTENT_SAMPLES = ("group", "image")
NETWORKS = ("mnist", "conv64")


@dataclasses.dataclass(frozen=True)
class MlVaeConfig(MethodConfig):
    batch_format: ClassVar[str] = "sets"
    has_model_part: ClassVar[bool] = (
        False  # the authors' MLPs (models/ml_vae_networks.py), not the models registry's
    )
    style_dim: int = field(10, "Size of the per-image style code s (the authors' MNIST code: 10).")
    content_dim: int = field(10, "Size of the group's content code c (the authors' class_dim: 10).")
    networks: str = field(
        "mnist",
        "The encoder and decoder: 'mnist' (the authors' MNIST MLPs, any image size) or 'conv64' (the "
        "convolutional networks for 64 x 64 images the ABC authors used for both VAE baselines on pose, "
        "after CC-VAE's supplement; sizes ours: models/vae64_networks.py).",
    )
    hidden_units: int = field(
        500,
        "Units of the encoder's and the decoder's one tanh hidden layer (the authors: 500; networks=mnist).",
    )
    base_channels: int = field(
        32,
        "Channels of the conv64 encoder's first convolution; the others have 2x, 4x, 8x, the decoder's 4x, "
        "2x, 1x (networks=conv64 only) [ours].",
    )
    likelihood: str = field(
        "gaussian",
        "p(x | s, c) per pixel: 'gaussian' (the authors' code: mean and tanh-squashed log-variance from the "
        "decoder) or 'bernoulli' (sigmoid of the decoder's logits; pixels in [0, 1] read as probabilities) "
        "[ours].",
    )
    content_sample: str = field(
        "group",
        "Content samples per step: 'group' (one draw of c per group, shared by its images [ours: the ML-VAE "
        "paper is not among our sources to check its algorithm]) or 'image' (one draw per image from its "
        "group's posterior: the authors' final code, group_wise_reparameterize_each). Both estimate the same "
        "ELBO.",
    )
    kl_weight: float = field(1.0, "Weight of both KL terms (the authors' kl_divergence_coef: 1).")
    sample_std: float = field(
        1.0,
        "Standard deviation of the noise that reparameterises the content draw: c = mean + sqrt(variance) * "
        "sample_std * eps, eps ~ N(0, I). 1: a draw from the group's posterior, as the authors' final code "
        "(group_wise_reparameterize_each, HEAD 6de7264). Their README reports that 0.1 (their first commit "
        "522572d, utils.py L101-103, one draw per group) reproduced the paper's results where 1 let the "
        "decoder ignore the content code. Below 1 the loss is no longer the ELBO.",
    )

    def validate(self) -> None:
        super().validate()
        self.check_positive("style_dim", "content_dim", "hidden_units", "base_channels")
        if self.networks not in NETWORKS:
            raise ValueError(f"--method.networks={self.networks!r}; choose one of {', '.join(NETWORKS)}.")
        if self.likelihood not in LIKELIHOODS:
            raise ValueError(
                f"--method.likelihood={self.likelihood!r}; choose one of {', '.join(LIKELIHOODS)}."
            )
        if self.content_sample not in CONTENT_SAMPLES:
            raise ValueError(
                f"--method.content_sample={self.content_sample!r}; choose one of "
                f"{', '.join(CONTENT_SAMPLES)}."
            )
        if not self.kl_weight >= 0 or self.kl_weight == float("inf"):
            raise ValueError(f"--method.kl_weight must be a finite number >= 0, got {self.kl_weight}.")
        if not 0 < self.sample_std < float("inf"):
            raise ValueError(f"--method.sample_std must be a finite number > 0, got {self.sample_std}.")


GROUP_SIZE = 64  # ABC's MNIST stack size (ABC supplement L164), the ML-VAE group size (L217)
AUTHORS_BATCH = 256  # main.py L9
AUTHORS_EPOCHS = 400  # main.py L32
TRAINING_IMAGES = 54_051  # MNIST's training images without digit 9 (held out as in ABC's preset)
# 400 epochs of 54,051 images in batches of 256 (4 stacks of 64): 84,455 steps. The authors'
# 400 epochs of their 50,000 images were 78,400 steps (196 batches each); ours count epochs of
# our training images, as the VAE presets do.
AUTHORS_STEPS = round(AUTHORS_EPOCHS * TRAINING_IMAGES / AUTHORS_BATCH)

PRESETS: dict[str, ExperimentConfig] = {
    "mnist_ml_vae": ExperimentConfig(
        name="mnist_ml_vae",
        trainer=TrainerConfig(steps=AUTHORS_STEPS, learning_rate=1e-3, log_every=1000),
        data=MnistConfig(family="mnist", source="auto", holdout_digit="9"),
        batch=SetBatch(set_size=GROUP_SIZE, pairs_per_step=AUTHORS_BATCH // GROUP_SIZE),
        method=MlVaeConfig(name="ml_vae"),
    ),
}
# About 4 minutes on 2 CPU cores [ours]: the authors' settings for 8,000 steps (38 epochs of the
# training images), the step compiled with XLA (about 38 steps/s: BENCHMARKS.md's XLA table of
# every method's step). The full preset's 84,455 steps take about 40 minutes a seed.
PRESETS["mnist_ml_vae_quick"] = PRESETS["mnist_ml_vae"].replace(
    name="mnist_ml_vae_quick",
    steps=8000,
    log_every=1000,
    jit_compile=True,
)

# Table S1 (synthetic cars, ABC supplement L66-70) on the built-in procedural cars at 64 x 64
# (the ABC authors downsized the pose images to 64 x 64 for both VAE baselines, L217), with
# the 64 x 64 networks (networks=conv64; sizes ours, models/vae64_networks.py). Clean renders
# on black, as the synthetic-domain queries of Table S1: no real images, crops, colouring
# augmentations or painted backgrounds. A group is one stack of set A, ABC's pose stack of 32
# renders of ONE car instance (L217: group size = ABC's stack size): the content (group) code
# is the instance, the style (per-image) code the pose, which ``networks()["encoder"]`` returns
# and the pose lookup evaluates. 8 groups make the authors' 256 images per step.
# [ours]:
# - likelihood Bernoulli: the renders are RGB in [0, 1]; the authors' Gaussian has its
#   log-variance squashed into [-1, 1] by tanh, i.e. a standard deviation of at least 0.61 per
#   pixel, under which the details that tell poses apart (a few pixels' edges on black) cost
#   almost nothing against the KL terms; the Bernoulli cross-entropy of [0, 1] targets weighs
#   them fully (the usual VAE choice for [0, 1] images);
# - base_channels 32 (models/vae64_networks.py); latent sizes the authors' MNIST 10 and 10;
#   learning rate the authors' MNIST 1e-3 (no source gives theirs for pose);
# - steps: the authors' 400 epochs counted over the 4,000 procedural training renders (100
#   instances x 40 views, abc_tf.data.pose.procedural.ProceduralSizes) in steps of 256: 6,250.
#   With --data.source=keypointnet, scale --trainer.steps with the number of renders.
POSE_GROUP_SIZE = (
    32  # ABC's pose stack (docs/PAPERS.md section 3: 4 pairs of sets of 32), the group size (L217)
)
POSE_TRAINING_RENDERS = 4000  # ProceduralSizes(): train_instances 100 x views_per_instance 40
POSE_STEPS = round(AUTHORS_EPOCHS * POSE_TRAINING_RENDERS / AUTHORS_BATCH)  # 6,250
POSE_DATA = PoseConfig(
    family="pose",
    image_size=64,
    real_fraction=0.0,
    crop_amplitude=0.0,
    augmentation_amplitude=0.0,
    paint_backgrounds=False,
)
PRESETS["pose_ml_vae"] = ExperimentConfig(
    name="pose_ml_vae",
    trainer=TrainerConfig(steps=POSE_STEPS, learning_rate=1e-3, log_every=500),
    data=POSE_DATA,
    batch=SetBatch(
        set_size=POSE_GROUP_SIZE, pairs_per_step=AUTHORS_BATCH // POSE_GROUP_SIZE, double_augmentation=False
    ),
    method=MlVaeConfig(name="ml_vae", networks="conv64", likelihood="bernoulli", base_channels=32),
)
# About 4 to 5 minutes of training on 2 CPU cores [ours]: the same networks, data and groups of
# 32, 2 groups per step (four times the updates of 8 groups in the same time), 1,500 steps (24
# epochs of the renders) at about 0.15 s a step, the plain graph (XLA took 134 ms a step of one
# group here against 72 ms without it).
PRESETS["pose_ml_vae_quick"] = PRESETS["pose_ml_vae"].replace(
    name="pose_ml_vae_quick",
    pairs_per_step=2,
    steps=1500,
    log_every=250,
)

"""ML-VAE (``--method=ml_vae``; Bouchacourt et al., AAAI 2018; docs/PAPERS.md section P5): config, presets.

Source: github.com/DianeBouchacourt/multi-level-vae at 6de7264, 2019-06-27 ("HEAD"), by file and line:

- style_dim = class_dim = 10 (main.py L17-18). Adam: lr 1e-3, betas (0.9, 0.999) (main.py L13-15), eps 1e-8.
- Batches of 256 MNIST images (main.py L9), grouped by digit within the batch (utils.py L13-51).
  400 epochs (main.py L32) of the 50,000 images left after a validation split (training.py L127-131).
- Likelihood: a Gaussian per pixel, not Bernoulli. The decoder gives the mean and a tanh-squashed log-variance
  (networks.py L44-52, training.py L39-45). The first commit, 522572d, had a sigmoid and a squared error.
- Loss: -ELBO = (the images' -log p(x | s, c) + the style KLs + the groups' content KLs), summed
  and divided by the number of groups (training.py L33-49). All weights are 1 (main.py L21-22).

The ABC authors ported it to TensorFlow for MNIST (supplement L217), with groups of ABC's stack size, 64
(L164), and digit 9 held out (L114). Our group is one stack, ``set_a``; 4 stacks make their 256 images.
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
    """ML-VAE's flags.

    networks='conv64' builds the 64 x 64 networks the ABC authors used for both VAE baselines on
    pose, after CC-VAE's supplement; the sizes are ours (models/vae64_networks.py). Its encoder's
    later convolutions have 2x, 4x and 8x base_channels, the decoder's 4x, 2x and 1x [ours].
    likelihood='gaussian' is the authors': the decoder gives a mean and a tanh-squashed
    log-variance. 'bernoulli' [ours] reads pixels in [0, 1] as probabilities of the decoder's logits.
    content_sample='group' draws c once per group, shared by its images [ours: the ML-VAE paper is
    not among our sources to check its algorithm]. 'image' draws once per image from its group's
    posterior, as the authors' final code (group_wise_reparameterize_each). Both estimate the ELBO.
    sample_std scales the content noise: c = mean + sqrt(variance) * sample_std * eps,
    eps ~ N(0, I). 1 draws from the group's posterior, as the authors' final code (HEAD 6de7264).
    Their README reports that 0.1 reproduced the paper's results, where 1 let the decoder ignore
    the content code. That was their first commit, 522572d, utils.py L101-103, one draw per group.
    Below 1 the loss is no longer the ELBO.
    """

    batch_format: ClassVar[str] = "sets"
    has_encoder_part: ClassVar[bool] = (
        False  # the authors' MLPs (models/ml_vae_networks.py), not the models registry's
    )
    style_dim: int = field(10, "Size of the per-image style code s; the authors' MNIST code uses 10.")
    content_dim: int = field(10, "Size of the group's content code c; the authors' class_dim is 10.")
    networks: str = field(
        "mnist",
        "The networks: 'mnist', the authors' MLPs for any image size, or 'conv64', for 64 x 64 pose images.",
    )
    hidden_units: int = field(
        500,
        "Units of the one tanh hidden layer of the mnist encoder and decoder; the authors use 500.",
    )
    base_channels: int = field(
        32,
        "Channels of the conv64 encoder's first convolution, which set the other widths [ours].",
    )
    likelihood: str = field(
        "gaussian",
        "p(x | s, c) per pixel: 'gaussian', the authors', or 'bernoulli' [ours].",
    )
    content_sample: str = field(
        "group",
        "Content draws per step: 'group', one per group [ours], or 'image', one per image as the authors' "
        "final code.",
    )
    kl_weight: float = field(1.0, "Weight of both KL terms; the authors' kl_divergence_coef is 1.")
    sample_std: float = field(
        1.0,
        "Standard deviation of the noise in the content draw; 1 is the posterior, below 1 is not the ELBO.",
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
# 400 epochs of 50,000 images were 78,400 steps, 196 batches each. Ours count epochs of our
# training images, as the VAE presets do.
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
# About 4 minutes on 2 CPU cores [ours]: the authors' settings for 8,000 steps, 38 epochs of the
# training images. The step is compiled with XLA, which ran it 1.2x as fast as the plain graph
# (BENCHMARKS.md, "The paper's baselines: compiled step against eager"); a run this short would not
# time the two under auto. The full 84,455 steps take about 40 minutes a seed.
PRESETS["mnist_ml_vae_quick"] = PRESETS["mnist_ml_vae"].replace(
    name="mnist_ml_vae_quick",
    steps=8000,
    log_every=1000,
    jit_compile="true",
)

# Table S1's synthetic cars, set up as CC-VAE's pose preset: a group is 32 renders of one car, so
# the content code is the instance and the style code, the encoder, the pose; 8 groups make the
# authors' 256 images per step. [ours]: a Bernoulli likelihood, as the authors' tanh-squashed
# log-variance (standard deviation >= 0.61) makes the few edge pixels that tell poses apart cost
# almost nothing against the KL; base_channels 32 (latents and learning rate are their MNIST
# values); steps are their 400 epochs over the 4,000 renders in steps of 256 (scale
# --trainer.steps with the renders of --data.source=keypointnet).
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
# 32. 2 groups per step give four times the updates of 8 groups in the same time. 1,500 steps,
# 24 epochs of the renders, at about 0.15 s a step. The plain graph: XLA took 134 ms a step of
# one group here, against 72 ms without it.
PRESETS["pose_ml_vae_quick"] = PRESETS["pose_ml_vae"].replace(
    name="pose_ml_vae_quick",
    pairs_per_step=2,
    steps=1500,
    log_every=250,
)

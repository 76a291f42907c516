"""The config of LORD (``--method=lord``) and its presets.

LORD is Gabbay and Hoshen, "Demystifying Inter-Class Disentanglement", ICLR 2020; see
docs/PAPERS.md section P5. The paper was not at hand offline, so the facts come from the authors'
TensorFlow/Keras code. Source: github.com/avivga/lord at d817d59. The comment under the imports
lists what each file and line settles, and what we chose [ours].
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

from abc_tf.config import ExperimentConfig, MethodConfig, SetBatch, TrainerConfig, field
from abc_tf.data.pose import PoseConfig

# What the authors' code settles; "config.py" and "network.py" are its config.py and model/network.py.
# - Codes: content_dim 128, class_dim 256 (config.py L2-3). Content noise std 1 (L5). The content
#   codes' activation penalty is 0.001 (L6).
# - Generator: 4 AdaIN layers of 256 channels (config.py L8-9), built in network.py L239-275.
# - Stage 1, latent optimisation: batches of 64, 1000 epochs (config.py L17-20). Adam with betas
#   (0.5, 0.999) (network.py L115), Keras' epsilon 1e-7. The learning rate follows a cosine from
#   3e-4 to 1e-5 over the epochs (L125, L421-438). The two embedding tables get a learning-rate
#   multiplier of 10 (L114-120): keras-lr-multiplier's LRMultiplier with the prefixes
#   "content-embedding" and "class-embedding", the two embedding models' names (L200, L216).
#   We could not check that those prefixes matched the variables built inside them. The authors'
#   PyTorch port has the same 10x: generator 3e-4, codes 3e-3 (lord-pytorch config.py L19-23).
# - Stage 2, amortisation: batches of 64, 200 epochs (config.py L22-25). A fresh Adam at 1e-4,
#   betas (0.5, 0.999) (network.py L150-151). Loss = perceptual + 1e4 x MSE(content) +
#   1e4 x MSE(class) (L149-154).
# - Perceptual loss: VGG16 features with ImageNet weights (network.py L277-298), at layers
#   [2, 5, 8, 13, 18] of Keras' VGG16 without its top (config.py L11-15), weight 1 each.
#
# What neither the paper nor the code settles [ours]:
# - Steps: epochs count our training images, as in the other presets. The procedural pose bank
#   holds 100 instances x 40 views = 4,000 renders (pose_procedural.PROCEDURAL). The ABC authors
#   used 200 instances per category (ABC supplement L219), the LORD authors 183 Cars3D cars.
#   An epoch is 62.5 steps of 64: stage 1 is 62,500 steps, stage 2 is 12,500.
# - The authors stop either stage early on a plateau (network.py L126, L157). They halve stage 2's
#   rate on one (L156). Our runs have fixed steps, and stage 2 trains at 1e-4 throughout. Stage 1's
#   cosine is evaluated per step, not per epoch.
# - The default reconstruction is a pixel loss: no VGG weights can be fetched here. See the comment
#   in abc_tf/methods/lord/losses.py.
# - base_channels (64, the authors' widths) and the quick preset's sizes.
RECONSTRUCTIONS = ("pixel", "perceptual")


@dataclasses.dataclass(frozen=True)
class LordConfig(MethodConfig):
    """LORD's flags; every default is the authors' value except ``stage1_steps`` and ``reconstruction``.

    content_decay weighs the penalty decay x the sum of ||c||^2 over the step's images, the authors'
    Keras l2 activity regulariser. The image size must be a multiple of 2^n_adain_layers.
    base_channels b sets the encoders' widths (b, 2b, 4b, 4b, 4b channels, 4b units) and the
    generator's last hidden convolution (b). Stage 1's cosine runs from --trainer.learning_rate
    to min_learning_rate at stage1_steps; the authors go from 3e-4 to 1e-5.
    reconstruction='pixel' is the mean absolute error on the 0-255 scale [ours].
    """

    batch_format: ClassVar[str] = "sets"
    has_encoder_part: ClassVar[bool] = False  # the authors' networks (abc_tf/methods/lord/networks.py)
    content_dim: int = field(128, "Size of the per-image content code.")
    class_dim: int = field(256, "Size of the per-group class code.")
    content_std: float = field(1.0, "Std of the Gaussian noise added to the content codes in stage 1.")
    content_decay: float = field(
        1e-3,
        "Weight of the content codes' L2 activation penalty.",
    )
    n_adain_layers: int = field(
        4,
        "Upsampling AdaIN layers of the generator.",
    )
    adain_dim: int = field(256, "Channels of the generator's AdaIN layers, at least 8.")
    base_channels: int = field(
        64,
        "Base width b of the encoders and of the generator's last hidden convolution.",
    )
    stage1_steps: int = field(
        1600, "Steps of stage 1, latent optimisation; the rest of --trainer.steps trains the encoders."
    )
    min_learning_rate: float = field(
        1e-5,
        "Where stage 1's cosine learning-rate schedule ends.",
    )
    latent_lr_multiplier: float = field(
        10.0, "Stage 1's learning rate of the code tables relative to the generator's."
    )
    encoder_learning_rate: float = field(1e-4, "Stage 2's constant learning rate.")
    code_weight: float = field(
        1e4,
        "Stage 2's weight of each code's mean squared error against the optimised codes.",
    )
    reconstruction: str = field(
        "pixel",
        "Reconstruction loss: 'pixel' [ours] or 'perceptual', the authors' VGG16 loss, which needs "
        "--method.vgg_weights.",
    )
    vgg_weights: str = field(
        "",
        "A local Keras VGG16 no-top weights file (vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5) for "
        "--method.reconstruction=perceptual.",
        path=True,
    )

    def validate(self) -> None:
        super().validate()
        self.check_positive(
            "content_dim",
            "class_dim",
            "n_adain_layers",
            "base_channels",
            "stage1_steps",
            "min_learning_rate",
            "latent_lr_multiplier",
            "encoder_learning_rate",
        )
        if self.adain_dim < 8:
            raise ValueError(
                "--method.adain_dim must be at least 8 (the generator's first layer has adain_dim / 8 "
                f"channels), got {self.adain_dim}."
            )
        for name in ("content_std", "content_decay", "code_weight"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"--method.{name} must be a finite number >= 0, got {value}.")
        if self.reconstruction not in RECONSTRUCTIONS:
            raise ValueError(
                f"--method.reconstruction={self.reconstruction!r}; choose one of "
                f"{', '.join(RECONSTRUCTIONS)}."
            )


AUTHORS_BATCH = 64  # config.py L18, L23
AUTHORS_EPOCHS = (1000, 200)  # config.py L19, L24: stage 1, stage 2
TRAINING_IMAGES = 100 * 40  # the procedural pose bank: pose_procedural.PROCEDURAL (100 instances x 40 views)
STAGE1_STEPS = round(AUTHORS_EPOCHS[0] * TRAINING_IMAGES / AUTHORS_BATCH)  # 62,500
STAGE2_STEPS = round(AUTHORS_EPOCHS[1] * TRAINING_IMAGES / AUTHORS_BATCH)  # 12,500
# Clean 64 x 64 renders, as the ABC authors gave LORD (supplement L219): no backgrounds, crops,
# colour augmentations or real images, so that each bank row is one fixed image (its code).
POSE = PoseConfig(
    family="pose",
    image_size=64,
    real_fraction=0.0,
    crop_amplitude=0.0,
    augmentation_amplitude=0.0,
    paint_backgrounds=False,
)

PRESETS: dict[str, ExperimentConfig] = {
    "pose_lord": ExperimentConfig(
        name="pose_lord",
        # The plain graph, not XLA, and no timing of the two: on the CPU, XLA runs the convolutions
        # inside a tf.cond (the stages) tens of times slower (BENCHMARKS.md, "The paper's
        # baselines: compiled step against eager").
        trainer=TrainerConfig(
            steps=STAGE1_STEPS + STAGE2_STEPS, learning_rate=3e-4, log_every=1000, jit_compile="false"
        ),
        data=POSE,
        # Two sets of 32 views of one instance: the authors' 64 images a step.
        batch=SetBatch(set_size=32, pairs_per_step=2, double_augmentation=False),
        method=LordConfig(name="lord", stage1_steps=STAGE1_STEPS),
    ),
}
# About 3.5 minutes of training on 2 CPU cores [ours]: 0.13 s a stage-1 step, 0.16 s a stage-2
# step. train.py takes 7 minutes in all, with rendering, export and the end-of-run summary.
# The authors' schedules, weights and 5 : 1 split of the stages, with narrower networks, shorter
# codes and 16 images a step, for 1,500 steps (6 epochs of the bank), in the plain graph as above.
PRESETS["pose_lord_quick"] = PRESETS["pose_lord"].replace(
    name="pose_lord_quick",
    steps=1500,
    log_every=250,
    set_size=8,
    stage1_steps=1250,
    content_dim=32,
    class_dim=64,
    adain_dim=32,
    base_channels=16,
)

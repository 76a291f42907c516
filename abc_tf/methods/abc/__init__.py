"""The configs of ABC and the contrastive loss, and their presets.

The presets are the paper's settings per data family (docs/PAPERS.md section 3) and this
project's short runs.
"""

from __future__ import annotations

import dataclasses
import math

from abc_tf.config import (
    SIMILARITIES,
    EncoderConfig,
    length_scale,
    ExperimentConfig,
    MethodConfig,
    SetBatch,
    TrainerConfig,
    field,
)
from abc_tf.data.folders import ImageFolderConfig
from abc_tf.data.mnist import MnistConfig
from abc_tf.data.pose import PoseConfig
from abc_tf.data.shapes3d import Shapes3DConfig


@dataclasses.dataclass(frozen=True)
class ContrastiveConfig(MethodConfig):
    similarity: str = field("l2sq", "Similarity: l2sq, l2, l1, linf or cosine.")
    temperature: float = field(1.0, "Temperature tau dividing every similarity.")

    def validate(self) -> None:
        super().validate()
        self.check_positive("temperature")
        if self.similarity not in SIMILARITIES:
            raise ValueError(
                f"Unknown --method.similarity={self.similarity!r}; choose one of {', '.join(SIMILARITIES)}."
            )

    def length_scale(self) -> float:
        """The scale below which similarity / temperature changes by less than 1.

        See docs/PAPERS.md section 1.
        """
        return length_scale(self.similarity, self.temperature)

    @property
    def embedding_similarity(self) -> str:
        return self.similarity


@dataclasses.dataclass(frozen=True)
class AbcConfig(ContrastiveConfig):
    """ABC's flags. The regression head needs pose data.

    abc_weight=0 with regression_weight > 0 is the regression-only baseline.
    """

    # Pose regression (docs/PAPERS.md section 3, Table 2): a spherical-regression head on set A's embeddings.
    regression_weight: float = field(
        0.0,
        "Weight of the spherical-regression head loss on set A's pose labels; 0 builds no head.",
    )
    abc_weight: float = field(1.0, "Weight of the ABC loss.")

    def validate(self) -> None:
        super().validate()
        for name in ("regression_weight", "abc_weight"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"--method.{name} must be a finite number >= 0, got {value}.")
        if self.regression_weight == 0 and self.abc_weight == 0:
            raise ValueError(
                "--method.abc_weight and --method.regression_weight are both 0: nothing to train."
            )


def _abc(
    name: str,
    data,
    *,
    steps: int,
    learning_rate: float,
    architecture: str,
    embedding_dim: int = 64,
    set_size: int = 32,
    pairs_per_step: int = 1,
    double_augmentation: bool = False,
    similarity: str = "l2sq",
    temperature: float = 1.0,
    trainer: dict | None = None,
) -> ExperimentConfig:
    return ExperimentConfig(
        name=name,
        trainer=TrainerConfig(steps=steps, learning_rate=learning_rate, **(trainer or {})),
        data=data,
        batch=SetBatch(
            set_size=set_size, pairs_per_step=pairs_per_step, double_augmentation=double_augmentation
        ),
        method=AbcConfig(name="abc", similarity=similarity, temperature=temperature),
        encoder=EncoderConfig(architecture=architecture, embedding_dim=embedding_dim),
    )


_SHAPES3D = _abc(
    "shapes3d",
    Shapes3DConfig(family="shapes3d", inactive_factors="wall_hue"),
    steps=2000,
    learning_rate=3e-5,
    architecture="s3",
)


# Supplement S8.4: S6 encoder, negative l2, lr 3e-4, double augmentation; one set = one group.
def _real_images(
    name: str,
    family: str,
    channels: int,
    set_size: int,
    inactive: str,
    augmentations: str,
    steps: int = 10000,
) -> ExperimentConfig:
    data = ImageFolderConfig(
        family=family,
        source="files",
        image_size=64,
        image_channels=channels,
        inactive_factors=inactive,
        augmentations=augmentations,
    )
    return _abc(
        name,
        data,
        steps=steps,
        learning_rate=3e-4,
        architecture="s6",
        set_size=set_size,
        double_augmentation=True,
        similarity="l2",
        trainer={"log_every": 500},
    )


# Pose lookup (docs/PAPERS.md section 3; supplement S8.3): S5 on 128 x 128 images, 4 pairs of sets
# of 32, cosine with tau 0.1, double augmentation (S5). lr 1e-4 halved every 10k steps, 40k steps.
# Real images are titrated into set B up to 10%, in stairs every 4k steps. source=procedural
# renders the built-in stand-in. --data.source=keypointnet --data.path=... --data.real_data_path=...
# --data.pose_test_list=... reads the paper's data.
_POSE_LOOKUP = _abc(
    "pose_lookup",
    PoseConfig(
        family="pose",
        image_size=128,
        real_fraction=0.1,
        titration_interval=4000,
        crop_amplitude=0.1,
        augmentation_amplitude=1.0,
    ),
    steps=40000,
    learning_rate=1e-4,
    architecture="s5",
    pairs_per_step=4,
    double_augmentation=True,
    similarity="cosine",
    temperature=0.1,
    trainer={"lr_halving_steps": 10000, "log_every": 1000},
)


def _pose_regression(name: str, category: str, **data) -> ExperimentConfig:
    """Table 2 (supplement S8.3): ABC plus the spherical-regression head on set A's labelled renders.

    tau 0.05, lr 1e-4 halved every 20k, 60k steps, real images titrated into set B up to 2%.
    The loss is regression + abc_weight * ABC, weights 1 and 1. The paper does not state its weighting.
    """
    return _POSE_LOOKUP.replace(
        name=name,
        pose_category=category,
        temperature=0.05,
        lr_halving_steps=20000,
        steps=60000,
        real_fraction=0.02,
        regression_weight=1.0,
    ).replace(**data)


PRESETS: dict[str, ExperimentConfig] = {
    # Paper settings, docs/PAPERS.md section 3, Shapes3D row.
    "shapes3d": _SHAPES3D,
    # The README's main job: the same experiment, short enough for 2 CPU cores.
    "shapes3d_demo": _SHAPES3D.replace(name="shapes3d_demo", steps=600, log_every=100, eval_every=300),
    # Fig. 3c bottom: contrastive loss on two random_hue(0.5) views of one unconstrained batch.
    "shapes3d_hue_baseline": _SHAPES3D.replace(
        name="shapes3d_hue_baseline",
        augmentation_baseline=True,
        method=ContrastiveConfig(name="contrastive", similarity="l2sq", temperature=1.0),
    ),
    # Paper settings, docs/PAPERS.md section 3, MNIST row.
    "mnist": _abc(
        "mnist",
        MnistConfig(family="mnist", source="auto"),
        steps=500,
        learning_rate=1e-4,
        architecture="s4",
        embedding_dim=8,
        set_size=64,
        trainer={"log_every": 50},
    ),
    # YaleB row: a set is the 64 illuminations of one person and pose.
    "yaleb_illumination": _real_images(
        "yaleb_illumination", "yaleb", 1, 64, "person,pose", "contrast:0.3,crop:0.2"
    ),
    # YaleB row, pose also active: 384 of a person's 576 images per set, 50k steps.
    "yaleb_pose_illumination": _real_images(
        "yaleb_pose_illumination", "yaleb", 1, 384, "person", "contrast:0.3,crop:0.2", steps=50000
    ),
    # EPFL cars row: a set is 81 frames of one car's turntable sequence.
    "epfl_cars": _real_images("epfl_cars", "epfl_cars", 3, 81, "car", "contrast:0.3,saturation:0.3,crop:0.2"),
    # Pose lookup, paper settings (Table 1), per category; elevation filter 0.5 / 1.3 rad.
    "pose_lookup_car": _POSE_LOOKUP.replace(name="pose_lookup_car", pose_category="car"),
    "pose_lookup_chair": _POSE_LOOKUP.replace(name="pose_lookup_chair", pose_category="chair"),
    # Pose isolation on the procedural cars in about 15 minutes on 2 CPU cores. The S5 head on a
    # small trunk (s5_small) at 32 x 32, with the paper's sets, loss and augmentations. A shorter
    # schedule: titration stairs every 100 steps, lr 3e-4 halved every 500.
    "pose_quick": _POSE_LOOKUP.replace(
        name="pose_quick",
        encoder=EncoderConfig(architecture="s5_small", embedding_dim=64),
        image_size=32,
        steps=1000,
        log_every=100,
        learning_rate=3e-4,
        lr_halving_steps=500,
        titration_interval=100,
    ),
    "pose_regression_car": _pose_regression("pose_regression_car", "car"),
    "pose_regression_chair": _pose_regression("pose_regression_chair", "chair"),
    # Table 2's first row (Liao et al. 2019): the same network and schedule with regression alone;
    # real images could only enter through the ABC loss, so none are drawn.
    "pose_regression_only_car": _pose_regression(
        "pose_regression_only_car", "car", real_fraction=0.0, abc_weight=0.0
    ),
    "pose_regression_only_chair": _pose_regression(
        "pose_regression_only_chair", "chair", real_fraction=0.0, abc_weight=0.0
    ),
    # The user's own grouped folders (--data.path), with the real-image settings above.
    "folders": _real_images("folders", "folders", 3, 32, "group", "contrast:0.3,saturation:0.3,crop:0.2"),
}

# pose_quick with the regression head, Table 2's tau 0.05 and 2% real images. It derives from
# pose_quick so that it follows its tuning. --method.abc_weight=0 --data.real_fraction=0 gives the
# regression-only baseline. --data.real_fraction=0 gives regression + ABC on synthetic images only.
PRESETS["pose_regression_quick"] = PRESETS["pose_quick"].replace(
    name="pose_regression_quick", temperature=0.05, real_fraction=0.02, regression_weight=1.0
)
# ABC given Elastic-InfoGAN's signal: no labels, unconstrained sets of 64 from split 1 with all
# ten digits. Both sets are two views under its augmentation. The rest is the paper's MNIST ABC
# ("mnist"). --method=contrastive trains the two-view loss on the same batches.
PRESETS["mnist_abc_augmentation"] = PRESETS["mnist"].replace(
    name="mnist_abc_augmentation",
    augmentation_baseline=True,
    holdout_digit="none",
    class_split=1,
)

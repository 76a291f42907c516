"""The config of Elastic-InfoGAN (``--method=elastic_infogan``) and its presets.

See docs/PAPERS.md section P3. The paper's two ablations are settings of the same model.
``prior=uniform`` with ``contrastive_weight=0`` is InfoGAN. ``learned`` with 0 is the
Gumbel-softmax baseline.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from abc_tf.config import ExperimentConfig, ImageBatch, MethodConfig, TrainerConfig, field
from abc_tf.data.mnist import MnistConfig

PRIORS = ("learned", "uniform")


@dataclasses.dataclass(frozen=True)
class ElasticInfoGanConfig(MethodConfig):
    """Elastic-InfoGAN's flags.

    The learned prior is a softmax of trained logits, initialised uniform. The uniform prior is
    fixed, as in InfoGAN. The NT-Xent temperature 1 is what the authors' run script passes; their
    main.py's default is 0.5. elastic_field is ours: the authors' augmentation T is rotation and
    zoom only.
    """

    batch_format: ClassVar[str] = "images"
    has_encoder_part: ClassVar[bool] = False  # its networks are fixed; Q's 128 penultimate features embed
    prior: str = field(
        "learned",
        "The categorical code's class prior: 'learned', or 'uniform' as in InfoGAN.",
    )
    contrastive_weight: float = field(
        10.0, "Weight of the NT-Xent loss on Q's features of real images and their augmentations; 0 is off."
    )
    noise_dim: int = field(62, "Dimensions of the generator's Gaussian noise z, besides the 10-way code.")
    ntxent_temperature: float = field(
        1.0,
        "Temperature of the NT-Xent loss; the authors' run script passes 1.",
    )
    elastic_field: bool = field(
        False,
        "Add a smooth random displacement of about one pixel to the augmentation T [ours].",
    )


# The authors' settings on class-imbalanced MNIST: all ten digits, their split 1 drawn from all
# 70,000 images; --data.class_split picks another of 1..50. Batches of 64, Adam 2e-4 (0.5, 0.999),
# NT-Xent at temperature 1, 200 epochs. Their epoch of split 1's 42,794 images is 668 full
# batches of 64; they drop the partial one. So 133,600 steps [code: main.py, infoGAN.py; the
# splits' epochs are 463 to 751 steps].
_ELASTIC_INFOGAN = ExperimentConfig(
    name="mnist_elastic_infogan",
    trainer=TrainerConfig(
        steps=133_600,
        learning_rate=2e-4,
        log_every=1000,
        # XLA: 1.2x the plain graph (BENCHMARKS.md, "Elastic-InfoGAN training step"); the quick
        # presets' runs are too short for auto to time the two.
        jit_compile="true",
    ),
    data=MnistConfig(family="mnist", source="auto", holdout_digit="none", class_split=1),
    batch=ImageBatch(batch_size=64),
    method=ElasticInfoGanConfig(name="elastic_infogan"),
)
PRESETS: dict[str, ExperimentConfig] = {"mnist_elastic_infogan": _ELASTIC_INFOGAN}
# About 3 minutes on 2 CPU cores: the same model and data over 1,500 steps (2.2 epochs of split 1).
PRESETS["mnist_elastic_infogan_quick"] = _ELASTIC_INFOGAN.replace(
    name="mnist_elastic_infogan_quick", steps=1500, log_every=100
)
# The paper's two baselines as settings of the same model, at the quick length.
PRESETS["mnist_infogan_quick"] = PRESETS["mnist_elastic_infogan_quick"].replace(
    name="mnist_infogan_quick",
    prior="uniform",
    contrastive_weight=0.0,
)
PRESETS["mnist_gumbel_infogan_quick"] = PRESETS["mnist_elastic_infogan_quick"].replace(
    name="mnist_gumbel_infogan_quick",
    contrastive_weight=0.0,
)

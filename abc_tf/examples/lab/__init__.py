"""The lab's method: its config class and presets, as plain data (no TensorFlow), so that a
preset is found without importing the method's model."""

import dataclasses

from abc_tf.config import EncoderConfig, ExperimentConfig, MethodConfig, SetBatch, TrainerConfig, field
from abc_tf.data.mnist import MnistConfig


@dataclasses.dataclass(frozen=True)
class LabConfig(MethodConfig):
    # batch_format = "sets" and has_encoder_part = True are MethodConfig's defaults.
    epsilon: float = field(1e-3, "Added to both sides of the ratio, so a collapsed encoder scores 1.")

    def validate(self) -> None:
        super().validate()
        self.check_positive("epsilon")


# Every --experiment value of the package: found here by name.
PRESETS = {
    "mnist_lab": ExperimentConfig(
        name="mnist_lab",
        trainer=TrainerConfig(steps=500, learning_rate=1e-4, log_every=50),
        data=MnistConfig(family="mnist"),
        batch=SetBatch(set_size=32, pairs_per_step=4),
        method=LabConfig(name="lab"),
        encoder=EncoderConfig(architecture="s4", embedding_dim=8),
    ),
}

"""The suite's small family: abc_tf.examples.squares registered as ``--data=toy``
(``abc_tf.data.DATA_FAMILIES["toy"] = ENTRY``, tests/conftest.py's fixture), and the toy runs."""

from __future__ import annotations

import dataclasses

from abc_tf.config import EncoderConfig, ExperimentConfig, SetBatch, TrainerConfig
from abc_tf.examples.squares import SquaresConfig
from abc_tf.examples.squares import family as squares
from abc_tf.examples.squares.family import IMAGE_SHAPE, TASK, batches, draw_set  # noqa: F401
from abc_tf.methods.abc import AbcConfig

ENTRY = "toy_family:FAMILY"
make_dataset = squares.make_sets
FAMILY = dataclasses.replace(squares.FAMILY, name="toy", evaluation_task="toy_family:TASK")
# A run of the toy family that trains in seconds: checkpoints at steps 10, 20, 30, 40. One step a
# compiled call, so a test's callback sees every step (the default, auto, is tested in
# tests/test_training.py); the plain graph, so that runs compare to the last bit (auto's timing:
# tests/test_compile_choice.py).
CONFIG = ExperimentConfig(
    name="toy",
    trainer=TrainerConfig(
        learning_rate=1e-3, steps=40, log_every=10, seed=3, steps_per_execution=1, jit_compile="false"
    ),
    data=SquaresConfig(family="toy"),
    batch=SetBatch(set_size=12, pairs_per_step=2),
    method=AbcConfig(name="abc", temperature=0.1),
    encoder=EncoderConfig(architecture="s4", embedding_dim=8),
)
# The finished run that tests only read, trained once per session (the ``trained_toy_run``
# fixture of tests/conftest.py): CONFIG with the learning rate halved at steps 20 and 40.
TRAINED = CONFIG.replace(lr_halving_steps=20)

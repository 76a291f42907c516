"""abc_tf.runs.hparams: a run's config on TensorBoard's HParams dashboard."""

from __future__ import annotations

import glob
import os

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import metadata, plugin_data_pb2

from abc_tf.runs import hparams
from toy_family import TRAINED


def session_hparams(log_dir: str) -> dict:
    """The hparams of the session-start summary written into ``log_dir`` (not its subfolders)."""
    [path] = glob.glob(os.path.join(log_dir, "events.out.tfevents.*"))
    events = EventAccumulator(path, size_guidance={"tensors": 0}).Reload()
    content = events.SummaryMetadata(metadata.SESSION_START_INFO_TAG).plugin_data.content
    info = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info
    return {
        name: value.WhichOneof("kind") and getattr(value, value.WhichOneof("kind"))
        for name, value in info.hparams.items()
    }


def test_every_scalar_field_of_the_config_is_an_hparam():
    values = hparams.hparam_values(TRAINED)
    assert (
        values["trainer.steps"] == 40
        and values["method.name"] == "abc"
        and values["trainer.jit_compile"] == "false"
    )
    assert values["name"] == "toy" and values["data.family"] == "toy" and values["encoder.embedding_dim"] == 8
    assert set(values) == {"name", *TRAINED.flat()}  # every field is a bool, int, float or str


@pytest.mark.slow
def test_a_trained_run_writes_its_config_beside_its_logs(trained_toy_run):
    written = session_hparams(os.path.join(trained_toy_run.run_dir, "logs"))
    assert (
        written["trainer.steps"] == 40
        and written["method.name"] == "abc"
        and written["trainer.lr_halving_steps"] == 20
    )
    assert (
        written["trainer.learning_rate"] == TRAINED.trainer.learning_rate
        and written["trainer.jit_compile"] == "false"
    )

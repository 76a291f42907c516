"""A run as it was at one of its checkpoints, for learning curves (``curves.py --checkpoints``).

A run keeps its ``--trainer.keep_checkpoints`` newest checkpoints of the whole model: all networks
and optimizers (abc_tf.runs.checkpoints). Rebuilding the model from the run's config and loading one
gives that step's networks. Every evaluator takes them like a finished run's.
Checkpoints are complete once listed, so a run still training can be read too.
"""

from __future__ import annotations

import os

from abc_tf.runs.config_files import read_config
from abc_tf.runs import checkpoints, training
from abc_tf.runs.run_dir import CONFIG_FILE, ENCODER, TrainedRun


def select_steps(run_dir: str, which: str) -> list[int]:
    """The checkpoint steps ``which`` names among those ``run_dir`` keeps.

    ``which`` is "all", "last", or comma-separated steps.
    A ValueError lists the kept steps when one is missing.
    """
    kept = [step for step, _ in checkpoints.list_checkpoints(run_dir)]
    if not kept:
        raise ValueError(
            f"{run_dir} keeps no checkpoint (train.py writes them every --trainer.log_every steps)."
        )
    if which == "all":
        return kept
    if which == "last":
        return kept[-1:]
    try:
        asked = sorted({int(step) for step in which.split(",") if step.strip()})
    except ValueError:
        raise ValueError(f"--checkpoints={which!r}: give all, last, or steps separated by commas.") from None
    missing = [step for step in asked if step not in kept]
    if missing or not asked:
        raise ValueError(
            f"--checkpoints: {run_dir} keeps no checkpoint of step {', '.join(map(str, missing or asked))} "
            f"(kept: {', '.join(map(str, kept))}; "
            "train with a larger --trainer.keep_checkpoints to keep more)."
        )
    return asked


def load_checkpoint_run(run_dir: str, step: int, config_path: str | None = None) -> TrainedRun:
    """The run in ``run_dir`` with the networks of its checkpoint at ``step``."""
    config = read_config(config_path or os.path.join(run_dir, CONFIG_FILE))
    model = training.build_model(config)
    checkpoints.restore(model, run_dir, step=step)
    networks = model.networks()
    return TrainedRun(run_dir, config, networks[ENCODER], networks=networks, step=step)

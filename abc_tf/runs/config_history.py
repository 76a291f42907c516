"""A run directory's config across restarts.

It defines what may change between two checkpoints and checks a rerun's config against config.json.
It keeps config_history.json, every accepted change. It reads only small files, so train.py checks a
run directory before any heavy work.
"""

from __future__ import annotations

import datetime
import json
import os
from typing import Sequence

from abc_tf import data, json_files
from abc_tf.config import ExperimentConfig
from abc_tf.runs.config_files import is_run_config, read_config, to_run_json
from abc_tf.runs import checkpoints, run_lock
from abc_tf.runs.run_dir import CONFIG_FILE, check_writable

# Settings a run may change between two of its checkpoints (--allow_config_change): they shape
# the optimisation and the bookkeeping, not the data or the network the checkpoint belongs to.
CHANGEABLE_FIELDS = (
    "trainer.learning_rate",
    "trainer.lr_halving_steps",
    "trainer.lr_drop_step",
    "trainer.lr_drop_factor",
    "method.temperature",
    "trainer.log_every",
    "trainer.keep_checkpoints",
    "trainer.steps_per_execution",
    "trainer.jit_compile",
    "trainer.eval_every",
    "trainer.eval_images",
)
STEPS = "trainer.steps"
# Settings that change how fast the steps run, not what they compute (XLA rounds differently from
# the plain graph, no more): a resume may change them unasked (a run written when one step a call,
# or no XLA, was the default resumes under auto).
SPEED_FIELDS = ("trainer.steps_per_execution", "trainer.jit_compile")
CONFIG_HISTORY_FILE = "config_history.json"


def check_allow_changes(names: Sequence[str]) -> tuple[str, ...]:
    """The field names of --allow_config_change, checked against :data:`CHANGEABLE_FIELDS`."""
    names = tuple(name.strip() for name in names if name.strip())
    unknown = [name for name in names if name not in CHANGEABLE_FIELDS]
    if unknown:
        raise ValueError(
            f"--allow_config_change: {', '.join(unknown)} cannot change within a run; "
            f"changeable: {', '.join(CHANGEABLE_FIELDS)} (and {STEPS}, which may always be raised)."
        )
    return names


def _same_data(first: ExperimentConfig, second: ExperimentConfig) -> bool:
    """Whether two configs of one family read the same data once ``auto`` is resolved."""
    if first.data.family != second.data.family:
        return False
    family = data.get_family(first.data.family)
    try:
        return family.source(first) == family.source(second)
    except ValueError:
        return False


def config_changes(
    run_dir: str, config: ExperimentConfig, allow_changes: Sequence[str] = ()
) -> dict[str, tuple]:
    """{"<part>.<field>": (old, new)} between ``run_dir``'s config.json and ``config``.

    Raises ValueError when the change is not allowed. A run directory without a checkpoint holds nothing
    trained, so any config replaces it. With checkpoints, ``steps`` may take any value from the newest
    checkpoint's step up, which extends a finished run. Fields in ``allow_changes`` and
    :data:`SPEED_FIELDS` may change.
    """
    path = os.path.join(run_dir, CONFIG_FILE)
    if not os.path.exists(path):
        return {}
    previous = read_config(path)
    before, after = previous.flat(), config.flat()
    changed = {
        name: (before.get(name), after.get(name))
        for name in sorted(set(before) | set(after))
        if before.get(name) != after.get(name)
    }
    if "data.source" in changed and _same_data(previous, config):
        del changed["data.source"]  # "procedural" written before "auto" existed, now auto's choice
    saved = checkpoints.list_checkpoints(run_dir)
    if not changed or not saved:
        return changed
    newest = saved[-1][0]
    refused = [name for name in changed if name not in (STEPS, *SPEED_FIELDS) and name not in allow_changes]
    if refused:
        listed = "; ".join(f"{name}: {changed[name][0]!r} -> {changed[name][1]!r}" for name in refused)
        hint = ""
        if all(name in CHANGEABLE_FIELDS for name in refused):
            hint = (
                f" To continue from its checkpoint at step {newest} with these settings, "
                f"add --allow_config_change={','.join(refused)}."
            )
        raise ValueError(
            f"{run_dir} holds a run with a different config ({listed}); resume with the same settings "
            f"or choose another --output_dir.{hint}"
        )
    if config.trainer.steps < newest:
        raise ValueError(
            f"--trainer.steps={config.trainer.steps} is below the step of {run_dir}'s newest checkpoint "
            f"({newest}); a run can only be extended."
        )
    if config.trainer.steps == newest:  # no step will train: a speed setting is not worth recording
        changed = {name: change for name, change in changed.items() if name not in SPEED_FIELDS}
    allowed = [name for name in changed if name != STEPS]
    if allowed and config.trainer.steps == newest:
        # Recording the change would tell a later reader that steps trained with it.
        raise ValueError(
            f"{run_dir} has trained all its {newest} steps, "
            f"so no step would train with {', '.join(allowed)} changed; "
            "raise --trainer.steps to extend the run with the change, "
            "or drop the change to export the run again."
        )
    return changed


# What the project writes into a run directory before its config.json: the lock, and the grid's
# logs of the point whose run it is, train.py --seeds' log of a run side by side.
_WRITTEN_BEFORE_CONFIG = {".lock", "grid_check.log", "grid_train.log", "train.log"}


def check_is_run_dir(run_dir: str) -> None:
    """Raises ValueError unless ``run_dir`` is new, empty, or a run directory.

    A run directory's config.json is a run's (:func:`abc_tf.runs.config_files.is_run_config`).
    So a user's folder is never read as a run's config nor written into. A config.json that is not JSON
    is left to :func:`read_config`, which names it as damaged.
    """
    if not os.path.isdir(run_dir):
        return
    held = sorted(set(os.listdir(run_dir)) - _WRITTEN_BEFORE_CONFIG)
    if not held:
        return
    path = os.path.join(run_dir, CONFIG_FILE)
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as handle:
                values = json.load(handle)
        except (OSError, UnicodeDecodeError, ValueError):
            return
        if is_run_config(values):
            return
        raise ValueError(
            f"--output_dir={run_dir} is not a run directory: its config.json was not written by "
            "train.py (no run format mark). Nothing was read or written; choose a new or empty folder."
        )
    listed = ", ".join(held[:5]) + (f" and {len(held) - 5} more" if len(held) > 5 else "")
    raise ValueError(
        f"--output_dir={run_dir} is not a run directory: it holds {listed} but no config.json. Nothing "
        "was written; choose a new or empty folder."
    )


def check_run_dir(
    config: ExperimentConfig, run_dir: str, allow_changes: Sequence[str] = ()
) -> dict[str, tuple]:
    """The checks of ``run_dir`` that need no data or model; returns the accepted config changes.

    It fails on a file in its place, a folder that is not a run's, another train.py training into it,
    or a damaged or different config.json. See :func:`config_changes`.
    """
    allow_changes = check_allow_changes(allow_changes)
    if os.path.exists(run_dir) and not os.path.isdir(run_dir):
        raise ValueError(f"--output_dir={run_dir} is an existing file, not a directory.")
    check_is_run_dir(run_dir)
    check_writable(run_dir, "--output_dir")
    run_lock.check_free(run_dir)  # read-only: the lock is taken at the run's first write
    return config_changes(run_dir, config, allow_changes)


def write_config(config: ExperimentConfig, run_dir: str, changes: dict[str, tuple], step: int) -> None:
    """Writes config.json; an accepted change is appended to config_history.json first."""
    path = os.path.join(run_dir, CONFIG_FILE)
    if os.path.exists(path) and not changes:
        return
    if changes:
        history_path = os.path.join(run_dir, CONFIG_HISTORY_FILE)
        history = []
        if os.path.exists(history_path):
            try:
                with open(history_path) as handle:
                    history = json.load(handle)
            except (OSError, ValueError):
                history = []  # a damaged history must not stop the run; it restarts here
        history.append(
            {
                "step": step,
                "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "changed": {name: {"old": old, "new": new} for name, (old, new) in sorted(changes.items())},
            }
        )
        json_files.write_json(history_path, history)
    json_files.write_json(path, to_run_json(config), sort_keys=True)

"""A run directory as evaluators read it: its config, its networks, and embedding images with them.

Layout, written by :mod:`abc_tf.runs.training`::

  config.json          the resolved config; a rerun may only raise ``steps`` and change ``allow_changes``
  config_history.json  every accepted change of config.json: step, fields, old and new values
  .lock                held by the one process training into it (abc_tf.runs.run_lock)
  logs/                the config as TensorBoard hparams (abc_tf.runs.hparams)
  logs/train/          TensorBoard scalars every ``log_every`` steps, against the optimizer step
  checkpoints/         model and optimizer state (abc_tf.runs.checkpoints)
  <network>.keras      every network the method keeps; ``encoder.keras`` always
  saved_model/         SavedModel (abc_tf.runs.export): ``embed``; pose adds ``lookup_pose``, ``regress_pose``
  isolation_summary.*  what the run isolated per known factor (abc_tf.evaluation.run_summary)
  seed_<k>/            one run directory per seed, for ``train.py --seeds N``
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
import weakref
from typing import Callable

import keras
import numpy as np
import tensorflow as tf

from abc_tf.config import ExperimentConfig
from abc_tf.runs.config_files import read_config
from abc_tf.methods.base import to_float_images
from abc_tf.runs import run_lock

CONFIG_FILE = "config.json"
ENCODER = "encoder"
SAVED_MODEL_DIR = "saved_model"
_SEED_DIR = re.compile(r"^seed_(\d+)$")


def network_file(run_dir: str, name: str) -> str:
    """Where a run keeps its network ``name``: ``<run_dir>/<name>.keras``."""
    return os.path.join(run_dir, f"{name}.keras")


def check_writable(path: str, flag: str, advice: str = "") -> None:
    """Raises ValueError naming ``flag`` unless a file can be created in the folder ``path``.

    While ``path`` does not exist, its nearest existing parent is tried. The check creates a file before
    any work, so nothing fails at its first write; e.g. a read-only file system or another user's folder.
    ``advice`` ends the message and says what to do instead.
    """
    existing = os.path.abspath(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise ValueError(f"{flag}={path}: {existing} is an existing file, not a directory.")
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".abc_tf_write_check_"):
            pass
    except OSError as error:
        raise ValueError(
            f"{flag}={path} cannot be written: creating a file in {existing} failed "
            f"({error.strerror or error}){'; ' + advice if advice else ''}."
        ) from None


def load_keras_file(path: str) -> keras.Model:
    """A model saved with ``model.save``; a ValueError naming the file when it is damaged."""
    if not os.path.isfile(path):
        raise ValueError(f"{path} is missing.")
    if os.path.getsize(path) == 0:
        raise ValueError(
            f"{path} is empty (the run was stopped while exporting it); "
            "run the same train.py command again to rewrite it."
        )
    try:
        return keras.saving.load_model(path, compile=False)
    except Exception as error:  # Keras raises ValueError, OSError, zipfile errors, ... for a damaged file
        raise ValueError(
            f"{path} cannot be read ({type(error).__name__}); "
            "run the same train.py command again to rewrite it."
        ) from None


@dataclasses.dataclass
class TrainedRun:
    """A finished run: its directory, config and trained encoder; other networks on demand.

    A run read from one of its checkpoints (``abc_tf.runs.checkpoint_run``) carries that step's
    networks in ``networks`` and the step in ``step``. A finished run reads its ``<name>.keras`` files.
    """

    run_dir: str
    config: ExperimentConfig
    encoder: keras.Model
    networks: dict[str, keras.Model] | None = None
    step: int | None = None

    def network(self, name: str) -> keras.Model | None:
        """The run's network ``name``, e.g. "head", or None when the run has none."""
        if self.networks is not None:
            return self.networks.get(name)
        path = network_file(self.run_dir, name)
        return load_keras_file(path) if os.path.isfile(path) else None

    def embedding_with(self, name: str) -> "TrainedRun":
        """This run with its network ``name`` as the representation evaluators embed with.

        Used by ``evaluate.py --network``; "encoder" gives the run itself. ValueError when it has none.
        """
        if name == ENCODER:
            return self
        network = self.network(name)
        if network is None:
            raise ValueError(f"--network={name}: {self.run_dir} has no network {name!r} ({name}.keras).")
        return dataclasses.replace(self, encoder=network)

    def measures(self) -> dict:
        """What was measured of the run: {"metrics": ..., "isolation_summary": ...}, the files that
        ``abc_tf evaluate`` and training wrote into its directory, where present."""
        found = {}
        for name in ("metrics", "isolation_summary"):
            path = os.path.join(self.run_dir, f"{name}.json")
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as handle:
                    found[name] = json.load(handle)
        return found


def load_run(run_dir: str, config_path: str | None = None) -> TrainedRun:
    """The finished run in ``run_dir``; a clear error when it is not one.

    ``config_path`` overrides ``run_dir/config.json``. A run that a train.py is still training is refused
    (abc_tf.runs.run_lock). Its networks are exported at the end, so until then they are missing or stale.
    """
    run_lock.check_free(
        run_dir, advice="evaluate it once that run has finished (its networks are exported at its end)"
    )
    config_path = config_path or os.path.join(run_dir, CONFIG_FILE)
    encoder_path = network_file(run_dir, ENCODER)
    for path in (config_path, encoder_path):
        if not os.path.isfile(path):
            raise ValueError(f"{run_dir} is not a finished training run: {path} is missing.")
    return TrainedRun(run_dir, read_config(config_path), load_keras_file(encoder_path))


def seed_run_dirs(run_dir: str) -> list[str]:
    """``run_dir/seed_<k>`` folders holding a config.json, in k order; see ``train.py --seeds N``."""
    if not os.path.isdir(run_dir):
        return []
    found = [(int(match.group(1)), name) for name in os.listdir(run_dir) if (match := _SEED_DIR.match(name))]
    return [
        os.path.join(run_dir, name)
        for _, name in sorted(found)
        if os.path.isfile(os.path.join(run_dir, name, CONFIG_FILE))
    ]


def embed(
    model: keras.Model | Callable, images: np.ndarray, batch_size: int = 256
) -> np.ndarray | dict[str, np.ndarray]:
    """Runs ``model`` on images [N, H, W, C] in batches: uint8 in 0..255 or float in [0, 1].

    ``model`` is a Keras model, or any callable on float32 images in [0, 1] such as a SavedModel
    signature. A Keras model runs through one traced function (:func:`traced_call`). It equals the eager
    call up to float32 rounding and skips Python's per-layer dispatch.
    Returns float32 [N, ...], or a dict of them for models with dict outputs.
    """
    images = np.asarray(images)
    if images.ndim != 4 or images.shape[0] == 0:
        raise ValueError(f"Expected a non-empty batch of images [N, H, W, C], got shape {images.shape}.")
    call = traced_call(model) if isinstance(model, keras.Model) else model
    outputs = []
    for start in range(0, len(images), batch_size):
        batch = to_float_images(tf.convert_to_tensor(images[start : start + batch_size]))
        outputs.append(keras.tree.map_structure(lambda x: np.asarray(x, np.float32), call(batch)))
    if isinstance(outputs[0], dict):
        return {key: np.concatenate([out[key] for out in outputs]) for key in outputs[0]}
    return np.concatenate(outputs)


_TRACED: "weakref.WeakKeyDictionary[keras.Model, Callable]" = weakref.WeakKeyDictionary()


def traced_call(model: keras.Model) -> Callable:
    """``model(images, training=False)`` as a ``tf.function`` traced once for any batch size.

    It is kept while the model lives, since the disentanglement scores embed in many small calls.
    """
    if model not in _TRACED:
        alive = weakref.ref(model)  # a strong reference in the value would keep the key alive
        _TRACED[model] = tf.function(lambda images: alive()(images, training=False), reduce_retracing=True)
    return _TRACED[model]

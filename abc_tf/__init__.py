"""abc_tf: Approximate Bijective Correspondence (ABC) in TensorFlow/Keras.

The commands are ``abc_tf <command>`` (``abc_tf --help``). For a Keras user's own code,
``import abc_tf`` offers the names below; each loads its module, and TensorFlow, on first use:

- ``abc_loss(set_a, set_b, similarity, temperature)``: the ABC loss of embeddings [P, N, D] and
  its cycle accuracy.
- ``ABCLoss(set_size)``: the same as a Keras loss for ``compile(loss=...)``, on batches laid out
  by ``stacked_sets``.
- ``AbcModel(encoder)``: trains any Keras encoder of images with ``compile(optimizer)`` and ``fit``
  on set batches.
- ``set_dataset(images, groups, set_size, pairs)``: endless {"set_a", "set_b"} batches from arrays,
  each set drawn within one group.
- ``load_grouped_folder(root, image_size, channels)``: a folder of group folders as ``.images``
  and ``.groups``, for ``set_dataset``.
- ``load_run(run_dir)``: a finished run's ``.config`` and ``.encoder``; ``.measures()`` what was
  measured of it.
- ``embed(encoder, images)``: the codes [N, D] of images [N, H, W, C].
- ``mine_mutual_information(codes, factors)`` and ``probe_accuracies(codes, factors, sigma)``: the
  measures, MINE in nats and probe accuracy per factor.
"""

import importlib

__version__ = "0.1.0"

_API = {
    "abc_loss": "abc_tf.losses",
    "ABCLoss": "abc_tf.losses",
    "AbcModel": "abc_tf.methods.abc.model",
    "stacked_sets": "abc_tf.methods.abc.model",
    "set_dataset": "abc_tf.data.folders.family",
    "load_grouped_folder": "abc_tf.data.folders.family",
    "load_run": "abc_tf.runs.run_dir",
    "embed": "abc_tf.runs.run_dir",
    "mine_mutual_information": "abc_tf.evaluation.estimators.mine",
    "probe_accuracies": "abc_tf.evaluation.estimators.probes",
}


def __getattr__(name: str):
    # Loaded on first use, so that the commands and `import abc_tf` do not start TensorFlow.
    if name not in _API:
        raise AttributeError(f"module 'abc_tf' has no attribute {name!r}")
    return getattr(importlib.import_module(_API[name]), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])

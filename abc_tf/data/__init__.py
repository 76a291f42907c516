"""Data families. Each module named here provides

- ``make_dataset(config, seed) -> tf.data.Dataset``: an endless stream of set-pair batches in
  the format of ``abc_tf.model`` (uint8 or float32 [0, 1] images), raising ``ValueError``
  on bad settings or missing files before any training starts;
- ``image_shape(config) -> (H, W, C)``: the encoder's input shape.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# family name -> module under abc_tf.data
DATA_FAMILIES: dict[str, str] = {
    "shapes3d": "abc_tf.data.shapes3d",
    "mnist": "abc_tf.data.mnist",
    "yaleb": "abc_tf.data.faces_cars",
    "epfl_cars": "abc_tf.data.faces_cars",
    "folders": "abc_tf.data.folders",
    "pose": "abc_tf.data.pose",
}


def family_module(name: str) -> ModuleType:
    if name not in DATA_FAMILIES:
        raise ValueError(f"Unknown data family {name!r}; known families: {', '.join(sorted(DATA_FAMILIES))}.")
    return importlib.import_module(DATA_FAMILIES[name])

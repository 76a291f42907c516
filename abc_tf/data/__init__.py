"""Data families: the registry of :class:`abc_tf.data.family.DataFamily` declarations.

``DATA_FAMILIES`` maps a ``--data`` name to ``"module"`` (whose ``FAMILY`` is the declaration)
or ``"module:NAME"`` (a module declaring several). Modules are imported on first use, the
interface ``family.py`` included (its ``groups`` builds ``tf.data`` pipelines), so importing the
package costs nothing and loads no TensorFlow (``train.py --help``); tests register their own
small families here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from abc_tf import registry

if TYPE_CHECKING:
    from abc_tf.config import ExperimentConfig
    from abc_tf.data.family import DataFamily

DATA_FAMILIES: dict[str, str] = {
    "shapes3d": "abc_tf.data.shapes3d",
    "mnist": "abc_tf.data.mnist",
    "yaleb": "abc_tf.data.faces_cars:YALEB",
    "epfl_cars": "abc_tf.data.faces_cars:EPFL_CARS",
    "folders": "abc_tf.data.folders",
    "pose": "abc_tf.data.pose_family",
}


def get_family(name: str) -> DataFamily:
    """The declaration of data family ``name``; ValueError naming the known ones."""
    return registry.resolve(DATA_FAMILIES, name, "data family", "abc_tf.data.family:DataFamily", "FAMILY")


def check_config(config: "ExperimentConfig") -> DataFamily:
    """The family of ``config``, after its checks that read no data (ValueError naming the flag).

    A field that only other families read must keep its default: set, it would do nothing
    (e.g. ``regression_weight`` needs pose labels, which only the pose family streams).
    """
    family = get_family(config.data)
    registry.refuse_stray_fields(map(get_family, DATA_FAMILIES), family, config, f"data family {config.data!r}")
    family.check_config(config)
    return family


def unused_fields(name: str, fields: Iterable[str]) -> list[str]:
    """The names among ``fields`` that only other families read: given for family ``name``,
    they would do nothing (train.py refuses them on its command line)."""
    return registry.unused_fields(map(get_family, DATA_FAMILIES), get_family(name), fields)

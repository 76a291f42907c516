"""Data families: the registry of :class:`abc_tf.data.family.DataFamily` declarations.

``DATA_FAMILIES`` maps a ``--data`` name to a :class:`abc_tf.registry.Entry`: the declaration,
``"module"`` (whose ``FAMILY`` it is) or ``"module:NAME"`` (a module declaring several), and the
family's config class (a :class:`abc_tf.config.DataConfig`, in a module without TensorFlow). Modules are imported on first use, the
interface ``family.py`` included (its ``groups`` builds ``tf.data`` pipelines), so importing the
package costs nothing and loads no TensorFlow (``train.py --help``); tests register their own
small families here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from abc_tf import registry

if TYPE_CHECKING:
    from abc_tf.config import ExperimentConfig
    from abc_tf.data.family import DataFamily

DATA_FAMILIES: dict[str, registry.Entry] = {
    "shapes3d": registry.Entry("abc_tf.data.shapes3d", "abc_tf.data.shapes3d_config:Shapes3DConfig"),
    "mnist": registry.Entry("abc_tf.data.mnist", "abc_tf.data.mnist_config:MnistConfig"),
    "yaleb": registry.Entry("abc_tf.data.faces_cars:YALEB", "abc_tf.data.folders_config:ImageFolderConfig"),
    "epfl_cars": registry.Entry("abc_tf.data.faces_cars:EPFL_CARS", "abc_tf.data.folders_config:ImageFolderConfig"),
    "folders": registry.Entry("abc_tf.data.folders", "abc_tf.data.folders_config:ImageFolderConfig"),
    "pose": registry.Entry("abc_tf.data.pose_family", "abc_tf.data.pose_config:PoseConfig"),
}


def get_family(name: str) -> DataFamily:
    """The declaration of data family ``name``; ValueError naming the known ones."""
    return registry.resolve(DATA_FAMILIES, name, "data family", "abc_tf.data.family:DataFamily", "FAMILY")


def check_config(config: "ExperimentConfig") -> DataFamily:
    """The family of ``config``, after its checks that read no data (ValueError naming the flag)."""
    family = get_family(config.data.family)
    family.check_config(config)
    return family

"""Data families, one package each, found by convention: ``abc_tf/data/<name>/`` is the family
``--data=<name>``, and a package that an installed distribution names under the entry point group
``abc_tf.data`` (``<name> = their_package``) is one too.

A family's package declares ``FAMILY`` (a :class:`abc_tf.data.family.DataFamily`) in its
``family.py``: its config class, its streams, what it offers the evaluators, and any presets
of its own. ``DATA_FAMILIES`` maps each name found to its :class:`abc_tf.registry.Entry`; tests
add their own small families to it. docs/ARCHITECTURE.md, "Adding a data family", shows the
contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from abc_tf import registry

if TYPE_CHECKING:
    from abc_tf.config import ExperimentConfig
    from abc_tf.data.family import DataFamily

ENTRY_POINT_GROUP = "abc_tf.data"
DATA_FAMILIES: dict[str, registry.Entry] = registry.discover(
    __name__, __path__, ENTRY_POINT_GROUP, "family:FAMILY", "data family"
)


def get_family(name: str) -> DataFamily:
    """The declaration of data family ``name``; ValueError naming the known ones."""
    return registry.resolve(DATA_FAMILIES, name, "data family", "abc_tf.data.family:DataFamily")


def check_config(config: "ExperimentConfig") -> DataFamily:
    """The family of ``config``, after its checks that read no data (ValueError naming the flag)."""
    family = get_family(config.data.family)
    family.source(config)
    family.check_config(config)
    return family

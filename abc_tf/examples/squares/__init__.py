"""The squares family's config class, as plain data. It has no field beyond every family's
``source`` and ``path`` (each field made with ``abc_tf.config.field`` would be a flag
``--data.<field>``), and no preset of its own (a ``PRESETS`` dict here would add some)."""

import dataclasses

from abc_tf.config import DataConfig


@dataclasses.dataclass(frozen=True)
class SquaresConfig(DataConfig):
    """Squares: a bright 6x6 square at one of 16 positions on a background fixed within a set."""

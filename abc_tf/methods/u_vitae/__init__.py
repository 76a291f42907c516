"""U-VITAE: the VAE with a spatial transformer that models the perspective.

See docs/PAPERS.md section P2. Its config is the VAE's (abc_tf/methods/vae) with its own structure.
Its presets are the paper's MNIST run and a quick one.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from abc_tf.methods.vae import Structure, VaeConfig, variant_presets


@dataclasses.dataclass(frozen=True)
class UVitaeConfig(VaeConfig):
    """The VAE's settings with U-VITAE's structure.

    It has a perspective space, and the appearance is inferred from the image itself.
    """

    structure: ClassVar[Structure] = Structure(perspective=True)


PRESETS = variant_presets(UVitaeConfig, "u_vitae")

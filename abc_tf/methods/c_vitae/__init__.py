"""C-VITAE: U-VITAE whose appearance is inferred from the aligned image.

See docs/PAPERS.md section P2. Its config is the VAE's (abc_tf/methods/vae) with its own structure.
Its presets are the paper's MNIST run and a quick one.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from abc_tf.methods.vae import Structure, VaeConfig, variant_presets


@dataclasses.dataclass(frozen=True)
class CVitaeConfig(VaeConfig):
    """The VAE's settings with C-VITAE's structure.

    It has a perspective space, and the appearance is inferred from the aligned image.
    """

    structure: ClassVar[Structure] = Structure(perspective=True, aligned_appearance=True)


PRESETS = variant_presets(CVitaeConfig, "c_vitae")

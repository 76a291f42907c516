"""Registry of the architecture tables of docs/PAPERS.md section 2.

``models.build("s3", embedding_dim=64)`` returns an uncompiled ``keras.Model``. Encoders take
float32 images in [0, 1]; ``AbcModel`` and the exported SavedModels convert uint8 first.
"""

from __future__ import annotations

import importlib
import pkgutil

from models.architectures import build, names, register, takes_pretrained_weights  # noqa: F401

# Importing every module of this package registers its builders; a method's own networks
# register when the method's package loads them (abc_tf/methods/<name>/networks.py).
for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

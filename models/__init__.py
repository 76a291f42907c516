"""Registry of the architecture tables of SPEC.md section 2.

``models.build("s3", embedding_dim=64)`` returns an uncompiled ``keras.Model``. Encoders take
float32 images in [0, 1]; ``ABCModel`` and the exported SavedModels convert uint8 first.
"""

from __future__ import annotations

from models.architectures import build, names, register, takes_pretrained_weights  # noqa: F401

# Importing the modules registers their builders.
from models import conv, heads  # noqa: E402,F401
from models import pose_head  # noqa: E402,F401  (spherical-regression head)
from models import pose_encoders  # noqa: E402,F401  (S5 and s5_small pose encoders)
from models import pmp_networks  # noqa: E402,F401  (product-manifold projection networks)
from models import infogan  # noqa: E402,F401  (Elastic-InfoGAN networks)
from models import vitae_networks  # noqa: E402,F401  (VAE / VITAE networks and the spatial transformer)
from models import ml_vae_networks  # noqa: E402,F401  (ML-VAE networks)
from models import cc_vae_networks  # noqa: E402,F401  (CC-VAE networks)
from models import vae64_networks  # noqa: E402,F401  (ML-VAE and CC-VAE networks for 64 x 64 images)
from models import lord_networks  # noqa: E402,F401  (LORD networks)

"""The contrastive method's declaration: ABC's model with the NT-Xent loss (abc_tf/methods/abc/model.py)."""

from __future__ import annotations

from abc_tf.methods.abc.model import CONTRASTIVE as METHOD  # noqa: F401

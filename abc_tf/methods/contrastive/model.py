"""The contrastive method's declaration: ABC's model with the two-view contrastive loss."""

from __future__ import annotations

from abc_tf.methods.abc.model import CONTRASTIVE as METHOD  # noqa: F401

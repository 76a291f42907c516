"""Small networks on embeddings: the MINE statistics network and the factor probe.

Source: docs/PAPERS.md section 2.
"""

from __future__ import annotations

import keras

from models.architectures import register


@register("mine")
def mine_statistics_network(embedding_dim: int, factor_dim: int = 1) -> keras.Model:
    """T(u, g): concat(embedding, factor value) -> 3 x Dense128 ReLU -> Dense1."""
    embedding = keras.Input(shape=(embedding_dim,), name="embedding")
    factor = keras.Input(shape=(factor_dim,), name="factor")
    x = keras.layers.Concatenate(name="concat")([embedding, factor])
    for index in range(3):
        x = keras.layers.Dense(128, activation="relu", name=f"dense{index + 1}")(x)
    score = keras.layers.Dense(1, name="score")(x)
    return keras.Model([embedding, factor], score, name="mine_statistics")


@register("probe")
def probe_classifier(embedding_dim: int, num_classes: int) -> keras.Model:
    """3 x Dense32 ReLU -> softmax over the factor's values."""
    embedding = keras.Input(shape=(embedding_dim,), name="embedding")
    x = embedding
    for index in range(3):
        x = keras.layers.Dense(32, activation="relu", name=f"dense{index + 1}")(x)
    probabilities = keras.layers.Dense(num_classes, activation="softmax", name="probabilities")(x)
    return keras.Model(embedding, probabilities, name="probe")

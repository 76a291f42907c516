"""The digit classifier that reads generated images for Elastic-InfoGAN's measures.

The authors' evaluation CNN (:func:`build_classifier`), trained once per MNIST copy and cached
by the data's fingerprint (:func:`digit_classifier`). Source: docs/PAPERS.md section P3.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os

import keras
import numpy as np

from abc_tf import json_files, optimizers
from abc_tf.config import ExperimentConfig
from abc_tf.data.mnist import family as mnist
from abc_tf.data.mnist import sources as mnist_sources
from abc_tf.data.mnist import imbalance as mnist_imbalance
from abc_tf.evaluation import progress
from abc_tf.runs.run_dir import embed

NUM_DIGITS = 10
CLASSIFIER_EPOCHS = 3
CLASSIFIER_BATCH = 128
DEFAULT_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "abc_tf")


def first_images(data: mnist.MnistData, max_images: int) -> mnist.MnistData:
    """``data`` with only the first ``max_images`` images of each split; 0 keeps all."""
    if not max_images:
        return data
    return dataclasses.replace(
        data,
        x_train=data.x_train[:max_images],
        y_train=data.y_train[:max_images],
        x_test=data.x_test[:max_images],
        y_test=data.y_test[:max_images],
        test_style=None,
    )


def build_classifier() -> keras.Model:
    """The authors' evaluation CNN: images [B, 28, 28, 1] in [0, 1] -> digit logits [B, 10].

    conv 20 5x5, max pool, conv 50 5x5, max pool, FC 500, FC 10.
    ReLU follows each convolution and the hidden layer.
    """
    return keras.Sequential(
        [
            keras.Input((28, 28, 1)),
            keras.layers.Conv2D(20, 5, activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Conv2D(50, 5, activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Flatten(),
            keras.layers.Dense(500, activation="relu"),
            keras.layers.Dense(NUM_DIGITS),
        ],
        name="digit_classifier",
    )


def fingerprint(data: mnist.MnistData) -> str:
    """A short hash of both splits' labels and a sample of the images: the cache key."""
    digest = hashlib.sha1()
    for array in (data.y_train, data.y_test, data.x_train[::997], data.x_test[::991]):
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()[:12]


def train_classifier(
    data: mnist.MnistData, epochs: int = CLASSIFIER_EPOCHS, seed: int = 0
) -> tuple[keras.Model, float]:
    """Trains the classifier on ``data``'s training images; returns (model, test accuracy).

    Adam 1e-3, batches of 128, ``CLASSIFIER_EPOCHS`` epochs. Ours: the paper gives the architecture only.
    """
    keras.utils.set_random_seed(seed)
    model = build_classifier()
    model.compile(
        optimizer=optimizers.adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    to_float = lambda images: np.asarray(images, np.float32)[..., None] / 255.0  # noqa: E731
    model.fit(
        to_float(data.x_train),
        np.asarray(data.y_train, np.int64),
        batch_size=CLASSIFIER_BATCH,
        epochs=epochs,
        verbose=0,
        shuffle=True,
    )
    predictions = np.argmax(model.predict(to_float(data.x_test), batch_size=1024, verbose=0), axis=1)
    return model, float(np.mean(predictions == data.y_test))


def digit_classifier(
    config: ExperimentConfig, cache_dir: str = DEFAULT_CACHE, max_images: int = 0
) -> tuple[keras.Model, float, str]:
    """(classifier, test accuracy, file) for the MNIST that ``config`` reads.

    Loads it from ``cache_dir`` if trained on the same data; the data's fingerprint is the key.
    Otherwise trains on all 60,000 training images, with no class split or held-out digit, and saves it.
    ``max_images`` > 0 keeps only that many images of each split.
    """
    data = first_images(
        mnist_sources.load_mnist(config.replace(class_split=mnist_imbalance.NO_SPLIT)), max_images
    )
    path = os.path.join(cache_dir, f"mnist_classifier_{fingerprint(data)}.keras")
    info = path[: -len(".keras")] + ".json"
    if os.path.isfile(path) and os.path.isfile(info):
        with open(info) as handle:
            return (
                keras.saving.load_model(path, compile=False),
                float(json.load(handle)["test_accuracy"]),
                path,
            )
    model, accuracy = train_classifier(data)
    os.makedirs(cache_dir, exist_ok=True)
    partial = f"{path}.{os.getpid()}.tmp.keras"  # its own name: two processes may train it at once
    model.save(partial)
    os.replace(partial, path)
    json_files.write_json(
        info, {"test_accuracy": accuracy, "epochs": CLASSIFIER_EPOCHS, "source": data.source}
    )
    progress.wrote(path)
    progress.wrote(info)
    return model, accuracy, path


def classify(classifier: keras.Model, images: np.ndarray) -> np.ndarray:
    """Digits int64 [N] of float images [N, 28, 28, 1] in [0, 1]."""
    return np.argmax(embed(classifier, images, batch_size=1024), axis=1).astype(np.int64)

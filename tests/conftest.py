"""What every test shares: seeded global random state, and fixtures several test modules use.

Helpers that tests import live beside this file in ``*_helpers.py`` modules (and the toy
family and method in ``toy_*.py``); none is copied into a test module.
"""

from __future__ import annotations

import gc
import random
import sys

import numpy as np
import pytest

SEED = 0


@pytest.fixture(autouse=True)
def seeded_global_random_state():
    """Every test starts from the same global random state, whatever ran before it: Python's
    ``random``, NumPy's legacy global generator and, once loaded, TensorFlow's and Keras's
    (the initial weights of a model built without a seed). Tests that need randomness still
    draw from their own seeded generators (``np.random.default_rng(k)``)."""
    random.seed(SEED)
    np.random.seed(SEED)
    if "keras" in sys.modules:
        sys.modules["keras"].utils.set_random_seed(SEED)
    elif "tensorflow" in sys.modules:
        sys.modules["tensorflow"].random.set_seed(SEED)
    yield


def pytest_collection_finish(session):
    """Once every test module is imported (TensorFlow and Keras with them), their objects are
    moved out of the garbage collector's sight (``gc.freeze``): they live as long as the process,
    and every collection would otherwise walk those hundreds of thousands of objects again, the
    one after each test (below) as well as Python's own."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def fresh_keras_state():
    """After each test that loaded Keras: ``keras.backend.clear_session()``, which resets Keras's
    global state (layer-name counters, the dtype policy, TensorFlow's default graph and kernel
    cache) and collects the garbage, so the models, datasets and traced functions of one test are
    freed before the next and the test process does not grow over the suite."""
    yield
    if "keras" in sys.modules:
        sys.modules["keras"].backend.clear_session()


@pytest.fixture
def toy_family(monkeypatch):
    """The tiny toy data family of tests/toy_family.py, registered as ``--data=toy``."""
    from abc_tf import data

    monkeypatch.setitem(data.DATA_FAMILIES, "toy", "toy_family")


@pytest.fixture(scope="module")
def small_mnist():
    """A tiny coded MNIST (tests/mnist_helpers.py): 12 training and 4 test images per digit."""
    from mnist_helpers import small_arrays

    return small_arrays()

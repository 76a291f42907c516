"""What every test shares: seeded global random state, and fixtures several test modules use.

Helpers that tests import live beside this file in ``*_helpers.py`` modules (and the toy
family and method in ``toy_*.py``); none is copied into a test module.
"""

from __future__ import annotations

import gc
import os
import random
import shutil
import sys

import numpy as np
import pytest

SEED = 0
RAM_DISK = "/dev/shm"
RAM_DISK_ROOM = (
    4 * 2**30
)  # bytes free that the suite needs there: its largest test directories at once, with room to spare


def use_a_ram_disk_for_test_directories() -> None:
    """Test directories (``tmp_path``) on a RAM disk where the machine has one with room: the suite
    writes some 2 GB of runs (Elastic-InfoGAN's paper-size checkpoints are 156 MB each), and each
    checkpoint's fsyncs (``abc_tf/runs/checkpoints.py`` makes every save durable) wait on a busy
    disk: the tests that write most took 10% less time there. Elsewhere, or when the user chose
    a root (pytest's ``PYTEST_DEBUG_TEMPROOT``), the system's temporary directory as before. Passed
    tests' directories are removed as they pass (``tmp_path_retention_policy`` in pyproject.toml),
    so the suite holds a few hundred MB there at a time."""
    if (
        "PYTEST_DEBUG_TEMPROOT" in os.environ
        or not os.path.isdir(RAM_DISK)
        or not os.access(RAM_DISK, os.W_OK)
    ):
        return
    if shutil.disk_usage(RAM_DISK).free >= RAM_DISK_ROOM:
        os.environ["PYTEST_DEBUG_TEMPROOT"] = (
            RAM_DISK  # read by pytest's tmp_path_factory, and inherited by xdist's workers
        )


use_a_ram_disk_for_test_directories()


def compile_xla_without_llvm_optimisation() -> None:
    """XLA's CPU backend without LLVM's optimisation passes, unless the user set ``XLA_FLAGS``:
    the tests check that steps compile under XLA and what they compute, not how fast the emitted
    code runs, and those passes took half of the longest check (LORD's step, whose stage switch
    XLA compiles as two large branches: 13 s, 7 s without). The suite's XLA tests took 54 s
    instead of 60-67 s (two runs each). Read when XLA first compiles, and inherited by the tests'
    child processes."""
    os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")


compile_xla_without_llvm_optimisation()


def render_without_a_disk_cache() -> None:
    """Procedural renders are not kept on disk (abc_tf.data.pose.render_cache) while the suite
    runs, child processes included: each test renders what it checks, and nothing is written
    to the user's cache. tests/test_render_cache.py turns it on in a temporary directory."""
    os.environ["ABC_TF_RENDER_CACHE"] = "off"


render_without_a_disk_cache()


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


def custom_gradients() -> dict:
    """TensorFlow's global registry of gradient functions (empty before TensorFlow is loaded).
    ``tf.custom_gradient`` in a traced function registers one under a new name
    ("CustomGradient-<n>") and never removes it, and the entry holds the traced graph. Keras's
    optimizer sums gradients through one (``ReplicaContext.all_reduce``), so every traced train
    step stays in memory for the rest of the process: about 9 MB per toy run (TensorFlow 2.21,
    Keras 3.15)."""
    ops = sys.modules.get("tensorflow.python.framework.ops")
    return ops._gradient_registry._registry if ops is not None else {}


@pytest.fixture(autouse=True)
def fresh_keras_state():
    """After each test: the custom gradients it registered are dropped (their graphs were
    traced by this test and are not differentiated again), then ``keras.backend.clear_session()``
    resets Keras's global state (layer-name counters, the dtype policy, TensorFlow's default
    graph and kernel cache) and collects the garbage, so the models, datasets and traced
    functions of one test are freed before the next and the test process does not grow over
    the suite. What survives that collection is then frozen (``gc.freeze``), as the modules are at
    collection (below): the next test's collection walks only the objects created since, not
    everything earlier tests left alive. Unfrozen, those survivors made the collection 27% of the
    suite's time in one process (269 of about 1,000 s, 0.27 s a test); frozen objects that are no
    longer used are still freed by reference counting."""
    registered = set(custom_gradients())
    yield
    registry = custom_gradients()
    for name in set(registry) - registered:
        if name.startswith("CustomGradient-"):
            del registry[name]
    if "keras" in sys.modules:
        sys.modules["keras"].backend.clear_session()
    gc.freeze()


def split_the_cpu_into_two_logical_devices() -> None:
    """Two logical CPU devices, "/cpu:0" and "/cpu:1", in each process that runs tests: the
    replica tests (tests/test_methods.py, tests/test_training.py) train over both with a
    MirroredStrategy in the test's own process. TensorFlow takes the split only before it starts,
    so it is made here, before any test module is imported. Everything else runs on "/cpu:0" as
    before: both devices share the process's thread pools, and a MirroredStrategy without a device
    list, the only kind the code builds, takes the GPUs or else "/cpu:0" alone. Child processes
    (train.py, the multi-worker tests) keep one device."""
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)


@pytest.fixture(scope="session")
def two_replicas():
    """One MirroredStrategy over the two logical CPU devices for the whole process: each strategy
    numbers its collective ops from the same start, so a second strategy's all-reduce met the
    first one's in TensorFlow's collective executor ("Shape mismatch in the collective instance
    100"), which then aborts every later collective of the process."""
    import tensorflow as tf

    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "saved_model: the test reads the SavedModel that a run exports (see skip_saved_model_export)",
    )
    # xdist's controller process runs no test: only its workers (or the one process of -n 0) split.
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        split_the_cpu_into_two_logical_devices()


@pytest.fixture(autouse=True)
def skip_saved_model_export(request, monkeypatch):
    """Runs trained in-process by a test write their networks but not the SavedModel, unless the
    test is marked ``saved_model``: the export traces every endpoint and takes some 60% of a toy
    run's time (2.8 of 4.7 s), and a test that does not read it gains nothing from it. The tests
    that read it (tests/test_export.py, a trained run's ``saved_model/``) are marked; runs in a
    subprocess (train.py) and session fixtures always export."""
    if request.node.get_closest_marker("saved_model") is None:
        from abc_tf.runs import export

        monkeypatch.setattr(export, "export_run", lambda *args, **kwargs: None)


@pytest.fixture
def toy_family(monkeypatch):
    """The tiny toy data family of tests/toy_family.py, registered as ``--data=toy``."""
    from abc_tf import data

    monkeypatch.setitem(data.DATA_FAMILIES, "toy", "toy_family:FAMILY")


@pytest.fixture(scope="session")
def trained_toy_run(tmp_path_factory):
    """The ``TrainResult`` of one run of ``toy_family.TRAINED`` (checkpoints at steps 10 to 40,
    the newest two kept), trained once for the tests that read a finished run. Its directory,
    ``trained_toy_run.run_dir``, is shared: a test that trains on in a run copies it first."""
    from abc_tf import data
    from abc_tf.runs import training
    from toy_family import TRAINED

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(data.DATA_FAMILIES, "toy", "toy_family:FAMILY")
        return training.train(TRAINED, str(tmp_path_factory.mktemp("toy_run") / "run"), verbose=0)


@pytest.fixture(scope="module")
def small_mnist():
    """A tiny coded MNIST (tests/mnist_helpers.py): 12 training and 4 test images per digit."""
    from mnist_helpers import small_arrays

    return small_arrays()


@pytest.fixture(autouse=True)
def cheap_mine_in_training_runs(monkeypatch):
    """Runs trained in-process by a test measure MINE with 20 steps (``callbacks.CHEAP_MINE``: 300)
    at their end and at each ``eval_every``: the tests check that the callback measures every
    factor and writes the scalars, not what MINE converges to (tests/test_mine.py and
    tests/test_callbacks.py train it at its settings). The 300 steps took 9.5 s of a run's end on a
    2-core AVX2 host. Runs in a subprocess (train.py) keep the preset's settings."""
    import dataclasses

    from abc_tf.evaluation import callbacks

    monkeypatch.setattr(
        callbacks, "CHEAP_MINE", dataclasses.replace(callbacks.CHEAP_MINE, steps=20, eval_samples=1024)
    )


@pytest.fixture
def train_in_process(monkeypatch, capsys, tmp_path):
    """``train_in_process(*flags) -> (exit code, stderr, stdout)``: train.py's flags parsed and
    ``main`` run in this process, in ``tmp_path``, as ``python train.py flags...`` would run them."""
    from absl import logging

    from abc_tf.cli import train

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    verbosity = logging.get_verbosity()  # main quiets TensorFlow's INFO lines
    capsys.readouterr()

    def run(*flags: str) -> tuple[int, str, str]:
        argv = ["train.py", *flags]
        monkeypatch.setattr(sys, "argv", argv)  # the advice after a NaN stop repeats the command line
        try:
            train.main(train.parse_flags(argv))
            code = 0
        except SystemExit as stop:
            code = stop.code
        finally:
            train.FLAGS.unparse_flags()
        captured = capsys.readouterr()
        return code, captured.err, captured.out

    yield run
    train.FLAGS.unparse_flags()
    logging.set_verbosity(verbosity)

"""abc_tf.runs.checkpoints: atomic writes, pruning, fallback past a damaged checkpoint."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from abc_tf.runs import checkpoint_files, checkpoints
from checkpoint_helpers import assert_same_state, files, steps, trained_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_restore_brings_back_weights_and_optimizer_state(tmp_path):
    model = trained_model(5)
    prefix = checkpoints.save(model, str(tmp_path), step=5, keep=2)
    assert prefix == os.path.join(str(tmp_path), "checkpoints", "ckpt-5")
    assert files(tmp_path) == ["checkpoint", "ckpt-5.data-00000-of-00001", "ckpt-5.index"]
    fresh = trained_model(0, seed=1)
    assert checkpoints.restore(fresh, str(tmp_path)) == 5
    assert int(fresh.optimizer.iterations.numpy()) == 5
    assert_same_state(fresh, model)


def test_only_the_newest_checkpoints_are_kept(tmp_path):
    model = trained_model(1)
    for step in (1, 2, 3, 4):
        model.optimizer.iterations.assign(step)
        checkpoints.save(model, str(tmp_path), step=step, keep=2)
    assert steps(tmp_path) == [3, 4]
    assert files(tmp_path) == [
        "checkpoint",
        "ckpt-3.data-00000-of-00001",
        "ckpt-3.index",
        "ckpt-4.data-00000-of-00001",
        "ckpt-4.index",
    ]


def test_a_save_is_numbered_by_the_optimizer_step(tmp_path):
    with pytest.raises(
        ValueError, match="optimizer is at step 2: checkpoints are numbered by model.optimizer.iterations"
    ):
        checkpoints.save(trained_model(2), str(tmp_path), step=3, keep=2)


def test_a_new_run_has_nothing_to_restore(tmp_path):
    model = trained_model(0)
    assert checkpoints.restore(model, str(tmp_path / "new")) == 0
    assert int(model.optimizer.iterations.numpy()) == 0


def test_a_non_chief_worker_saves_outside_the_run_and_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoints.tempfile, "tempdir", str(tmp_path / "worker_tmp"))
    os.makedirs(tmp_path / "worker_tmp")
    model = trained_model(2)
    assert checkpoints.save(model, str(tmp_path / "run"), step=2, keep=2, write=False) == ""
    assert not (tmp_path / "run").exists() and os.listdir(tmp_path / "worker_tmp") == []


KILLED_SAVE = textwrap.dedent(
    """
    import os, signal, sys
    import keras, numpy as np
    from abc_tf.runs import checkpoints
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    model.fit(np.ones((24, 4)), np.ones((24, 1)), batch_size=8, verbose=0)
    checkpoints.save(model, sys.argv[1], step=3, keep=2)
    model.fit(np.ones((8, 4)), np.zeros((8, 1)), batch_size=8, verbose=0)
    # SIGKILL at the worst moment: the files of step 4 are complete, the state file not updated yet.
    checkpoints._flush = lambda prefix: os.kill(os.getpid(), signal.SIGKILL)
    checkpoints.save(model, sys.argv[1], step=4, keep=2)
    """
)


@pytest.mark.slow
def test_a_save_killed_before_its_state_is_written_leaves_the_previous_checkpoint_in_charge(tmp_path):
    env = {**os.environ, "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "3"}
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_SAVE, str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    # The files of step 4 are all there, but the state file still names step 3 only.
    assert files(tmp_path) == [
        "checkpoint",
        "ckpt-3.data-00000-of-00001",
        "ckpt-3.index",
        "ckpt-4.data-00000-of-00001",
        "ckpt-4.index",
    ]
    assert steps(tmp_path) == [3]
    fresh = trained_model(0, seed=1)
    assert checkpoints.restore(fresh, str(tmp_path)) == 3
    checkpoints.save(
        fresh, str(tmp_path), step=3, keep=2
    )  # the same step again: rewritten, leftovers cleared
    assert files(tmp_path) == ["checkpoint", "ckpt-3.data-00000-of-00001", "ckpt-3.index"]
    assert steps(tmp_path) == [3]


def test_what_a_kill_leaves_at_other_moments_is_ignored_and_cleared_by_the_next_save(tmp_path):
    model = trained_model(2)
    checkpoints.save(model, str(tmp_path), step=2, keep=3)
    model.fit(np.ones((8, 4)), np.ones((8, 1)), verbose=0)
    checkpoints.save(model, str(tmp_path), step=3, keep=3)
    directory = checkpoint_files.checkpoint_dir(str(tmp_path))
    # Killed while writing step 4's data: the manager's temporary folder holds half a file.
    os.makedirs(os.path.join(directory, "ckpt-4_temp"))
    with open(
        os.path.join(directory, "ckpt-4_temp", "part-00000-of-00001.data-00000-of-00001.tempstate123"), "wb"
    ) as handle:
        handle.write(b"\0" * 100)
    # Killed while merging step 5: a half-written index the state file does not name.
    shutil.copy(
        os.path.join(directory, "ckpt-3.data-00000-of-00001"),
        os.path.join(directory, "ckpt-5.data-00000-of-00001"),
    )
    with open(os.path.join(directory, "ckpt-5.index"), "wb") as handle:
        handle.write(open(os.path.join(directory, "ckpt-3.index"), "rb").read()[:20])
    # Killed while replacing the state file: its temporary copy.
    with open(os.path.join(directory, "checkpoint.tmp0123abcd"), "w") as handle:
        handle.write('model_checkpoint_path: "ckpt-5"\n')
    # Killed while pruning: the state file still names step 2, whose index is already deleted.
    os.remove(os.path.join(directory, "ckpt-2.index"))

    assert steps(tmp_path) == [3]
    fresh = trained_model(0, seed=1)
    assert checkpoints.restore(fresh, str(tmp_path)) == 3
    assert_same_state(fresh, model)

    fresh.fit(np.ones((8, 4)), np.ones((8, 1)), verbose=0)
    checkpoints.save(fresh, str(tmp_path), step=4, keep=2)
    assert files(tmp_path) == [
        "checkpoint",
        "ckpt-3.data-00000-of-00001",
        "ckpt-3.index",
        "ckpt-4.data-00000-of-00001",
        "ckpt-4.index",
    ]
    assert steps(tmp_path) == [3, 4]


def test_an_unreadable_checkpoint_falls_back_to_the_one_before(tmp_path):
    model = trained_model(2)
    checkpoints.save(model, str(tmp_path), step=2, keep=2)
    expected = [w.copy() for w in model.get_weights()]
    model.fit(np.ones((8, 4)), np.ones((8, 1)), verbose=0)
    newest = checkpoints.save(model, str(tmp_path), step=3, keep=2)
    data = newest + ".data-00000-of-00001"
    with open(data, "r+b") as handle:  # a damaged disk: the file is cut in half
        handle.truncate(os.path.getsize(data) // 2)

    fresh = trained_model(0, seed=1)
    with pytest.warns(UserWarning, match="ckpt-3 could not be read"):
        assert checkpoints.restore(fresh, str(tmp_path)) == 2
    for mine, theirs in zip(fresh.get_weights(), expected):
        np.testing.assert_array_equal(mine, theirs)


def test_no_readable_checkpoint_is_a_clear_error(tmp_path):
    model = trained_model(1)
    prefix = checkpoints.save(model, str(tmp_path), step=1, keep=2)
    with open(prefix + ".index", "wb") as handle:
        handle.write(b"not an index file")
    with (
        pytest.warns(UserWarning),
        pytest.raises(ValueError, match="remove the folder to train from the start"),
    ):
        checkpoints.restore(trained_model(0), str(tmp_path))


def test_a_full_disk_is_a_clear_error_that_keeps_the_older_checkpoints(tmp_path, monkeypatch):
    model = trained_model(1)
    checkpoints.save(model, str(tmp_path), step=1, keep=2)
    model.fit(np.ones((8, 4)), np.ones((8, 1)), verbose=0)
    real_usage = shutil.disk_usage
    monkeypatch.setattr(checkpoints.shutil, "disk_usage", lambda path: real_usage(path)._replace(free=1000))
    with pytest.raises(
        checkpoints.CheckpointError,
        match="No room for the checkpoint of step 2 .* older checkpoints are intact",
    ):
        checkpoints.save(model, str(tmp_path), step=2, keep=2)
    monkeypatch.setattr(checkpoints.shutil, "disk_usage", real_usage)

    def no_space(prefix):  # the disk fills up as the written files are flushed
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(checkpoints, "_flush", no_space)
    with pytest.raises(checkpoints.CheckpointError, match="failed \\(No space left on device\\)"):
        checkpoints.save(model, str(tmp_path), step=2, keep=2)
    assert steps(tmp_path) == [1]
    assert files(tmp_path) == ["checkpoint", "ckpt-1.data-00000-of-00001", "ckpt-1.index"]


def test_a_full_disk_before_the_first_checkpoint_says_none_is_kept(tmp_path, monkeypatch):
    real_usage = shutil.disk_usage
    monkeypatch.setattr(checkpoints.shutil, "disk_usage", lambda path: real_usage(path)._replace(free=1000))
    with pytest.raises(
        checkpoints.CheckpointError, match="No checkpoint of this run was written before it, so none is kept"
    ):
        checkpoints.save(trained_model(1), str(tmp_path), step=1, keep=2)


FILE_SIZE_LIMIT = textwrap.dedent(
    """
    import resource, signal, sys
    import keras, numpy as np
    from abc_tf.runs import checkpoints
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(512), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((8, 64)), np.ones((8, 1)), verbose=0)
    checkpoints.save(model, sys.argv[1], step=1, keep=2)
    model.fit(np.ones((8, 64)), np.ones((8, 1)), verbose=0)
    # A write that fails for real inside TensorFlow: files may grow to 64 KiB, the checkpoint is ~0.8 MiB.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, resource.RLIM_INFINITY))
    try:
        checkpoints.save(model, sys.argv[1], step=2, keep=2)
    except checkpoints.CheckpointError as error:
        print("CheckpointError:", error)
    """
)


@pytest.mark.slow
def test_a_write_that_fails_inside_tensorflow_is_a_clear_error_that_keeps_the_older_checkpoints(tmp_path):
    env = {**os.environ, "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run(
        [sys.executable, "-c", FILE_SIZE_LIMIT, str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "CheckpointError: Writing the checkpoint of step 2 into" in result.stdout
    assert "failed (File too large). The older checkpoints are intact" in result.stdout
    assert steps(tmp_path) == [1]
    assert files(tmp_path) == ["checkpoint", "ckpt-1.data-00000-of-00001", "ckpt-1.index"]


# ----------------------------------------------------------------------- several networks, several optimizers

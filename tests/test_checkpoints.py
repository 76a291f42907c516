"""abc_tf.runs.checkpoints: atomic writes, pruning, fallback past a damaged checkpoint, several optimizers."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from abc_tf.runs import checkpoints

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def trained_model(steps: int, seed: int = 0) -> keras.Model:
    """A small compiled model after ``steps`` Adam updates (so the optimizer has state)."""
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    if steps:
        rng = np.random.default_rng(seed)
        model.fit(
            rng.normal(size=(8 * steps, 4)),
            rng.normal(size=(8 * steps, 1)),
            batch_size=8,
            epochs=1,
            verbose=0,
        )
    return model


def optimizer_state(model: keras.Model) -> list[np.ndarray]:
    return [keras.ops.convert_to_numpy(v) for v in model.optimizer.variables]


def assert_same_state(model: keras.Model, other: keras.Model) -> None:
    for mine, theirs in zip(
        model.get_weights() + optimizer_state(model), other.get_weights() + optimizer_state(other)
    ):
        np.testing.assert_array_equal(mine, theirs)


def files(run_dir) -> list[str]:
    return sorted(os.listdir(checkpoints.checkpoint_dir(str(run_dir))))


def steps(run_dir) -> list[int]:
    return [step for step, _ in checkpoints.list_checkpoints(str(run_dir))]


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
    directory = checkpoints.checkpoint_dir(str(tmp_path))
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


def saved_steps(run_dir, *numbers: int) -> keras.Model:
    """A model saved at each of ``numbers`` (keep 3) into ``run_dir``; returned at the last step."""
    model = trained_model(1)
    for step in numbers:
        model.optimizer.iterations.assign(step)
        checkpoints.save(model, str(run_dir), step=step, keep=3)
    return model


@pytest.mark.parametrize("damage", ["deleted", "unreadable", "names_none"])
def test_without_a_usable_state_file_the_checkpoints_on_disk_are_used_and_kept(tmp_path, damage):
    model = saved_steps(tmp_path, 5, 10)
    state = os.path.join(checkpoints.checkpoint_dir(str(tmp_path)), checkpoints.STATE_FILE)
    if damage == "deleted":
        os.remove(state)
    else:
        with open(state, "w") as handle:
            handle.write(
                "garbage {"
                if damage == "unreadable"
                else 'model_checkpoint_path: "ckpt-99"\nall_model_checkpoint_paths: "ckpt-99"\n'
            )
    expected = {
        "deleted": "is missing",
        "unreadable": "cannot be read",
        "names_none": "names no checkpoint whose files are there",
    }[damage]
    with pytest.warns(
        UserWarning, match=f"checkpoint \\(the list of checkpoints\\) {expected}|checkpoint {expected}"
    ):
        assert steps(tmp_path) == [5, 10]
    fresh = trained_model(0, seed=1)
    with pytest.warns(UserWarning, match="using the checkpoints found beside it: ckpt-5, ckpt-10"):
        assert checkpoints.restore(fresh, str(tmp_path)) == 10
    assert_same_state(fresh, model)
    # The next save writes the state file anew from them: nothing trained is deleted or overwritten.
    before = {
        name: os.path.getmtime(os.path.join(checkpoints.checkpoint_dir(str(tmp_path)), name))
        for name in files(tmp_path)
        if name.startswith("ckpt-")
    }
    fresh.optimizer.iterations.assign(15)
    checkpoints.save(fresh, str(tmp_path), step=15, keep=3)
    assert steps(tmp_path) == [5, 10, 15]
    for name, mtime in before.items():
        assert os.path.getmtime(os.path.join(checkpoints.checkpoint_dir(str(tmp_path)), name)) == mtime


def test_a_checkpoint_with_half_its_files_is_not_taken_from_disk(tmp_path):
    saved_steps(tmp_path, 5, 10)
    directory = checkpoints.checkpoint_dir(str(tmp_path))
    os.remove(os.path.join(directory, checkpoints.STATE_FILE))
    os.remove(os.path.join(directory, "ckpt-10.data-00000-of-00001"))
    with pytest.warns(UserWarning, match="using the checkpoints found beside it: ckpt-5\\."):
        assert steps(tmp_path) == [5]


def test_a_newest_checkpoint_without_its_index_is_skipped_with_a_warning(tmp_path):
    saved_steps(tmp_path, 5, 10)
    os.remove(os.path.join(checkpoints.checkpoint_dir(str(tmp_path)), "ckpt-10.index"))
    with pytest.warns(
        UserWarning,
        match="ckpt-10 is skipped: its index file .*ckpt-10.index is missing; "
        "the newest complete one is step 5",
    ):
        assert steps(tmp_path) == [5]


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


class TwoNetworks(keras.Model):
    """A GAN-shaped model: two networks, each updated by its own Adam (the discriminator's on a
    decaying learning rate, twice per step), following the rules of abc_tf.runs.checkpoints."""

    def __init__(self, seed: int, build: bool = True):
        super().__init__()
        keras.utils.set_random_seed(seed)
        self.generator = keras.Sequential(
            [keras.Input((4,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(4)]
        )
        self.discriminator = keras.Sequential(
            [keras.Input((4,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)]
        )
        self.g_optimizer = keras.optimizers.Adam(1e-2)
        self.d_optimizer = keras.optimizers.Adam(keras.optimizers.schedules.ExponentialDecay(1e-2, 3, 0.5))
        self.compile(optimizer=self.g_optimizer)  # the one applied once per step: it counts the steps
        if build:
            checkpoints.build_optimizers(self)  # as abc_tf.methods.base.MethodModel does at fit

    def optimizer_variables(self, optimizer):
        return (self.generator if optimizer is self.g_optimizer else self.discriminator).trainable_variables

    def call(self, x):
        return self.discriminator(self.generator(x))

    def train_step(self, real):
        for _ in range(2):
            with tf.GradientTape() as tape:
                fake = self.generator(real * 0.5)
                d_loss = tf.reduce_mean((self.discriminator(real) - 1) ** 2 + self.discriminator(fake) ** 2)
            variables = self.discriminator.trainable_variables
            self.d_optimizer.apply(tape.gradient(d_loss, variables), variables)
        with tf.GradientTape() as tape:
            g_loss = tf.reduce_mean((self.discriminator(self.generator(real * 0.5)) - 1) ** 2)
        variables = self.generator.trainable_variables
        self.g_optimizer.apply(tape.gradient(g_loss, variables), variables)
        return {"loss": g_loss}


def full_state(model: TwoNetworks) -> list[np.ndarray]:
    variables = (
        model.generator.weights
        + model.discriminator.weights
        + model.g_optimizer.variables
        + model.d_optimizer.variables
    )
    return [keras.ops.convert_to_numpy(v) for v in variables]


@pytest.mark.slow
def test_a_model_with_two_networks_and_two_optimizers_resumes_as_if_never_stopped(tmp_path):
    data = np.random.default_rng(0).normal(size=(40, 4)).astype("float32")
    uninterrupted = TwoNetworks(seed=0)
    uninterrupted.fit(data, batch_size=8, shuffle=False, verbose=0)

    first = TwoNetworks(seed=0)
    first.fit(data[:24], batch_size=8, shuffle=False, verbose=0)
    checkpoints.save(first, str(tmp_path), step=3, keep=2)
    names = [name for name, _ in tf.train.list_variables(checkpoints.list_checkpoints(str(tmp_path))[-1][1])]
    assert any(name.startswith("optimizers/d_optimizer/") for name in names)
    assert any(name.startswith("optimizers/g_optimizer/") for name in names)

    resumed = TwoNetworks(seed=1)  # other initial weights: all of them must come from the checkpoint
    assert checkpoints.restore(resumed, str(tmp_path)) == 3
    for mine, theirs in zip(full_state(resumed), full_state(first)):
        np.testing.assert_array_equal(mine, theirs)
    assert int(resumed.d_optimizer.iterations.numpy()) == 6  # two discriminator updates per step
    resumed.fit(data[24:], batch_size=8, shuffle=False, verbose=0)

    assert (
        int(resumed.g_optimizer.iterations.numpy()) == 5 and int(resumed.d_optimizer.iterations.numpy()) == 10
    )
    assert float(resumed.d_optimizer.learning_rate.numpy()) == float(
        uninterrupted.d_optimizer.learning_rate.numpy()
    )
    for mine, theirs in zip(full_state(resumed), full_state(uninterrupted)):
        np.testing.assert_array_equal(mine, theirs)


class TwoNetworksWithoutOwners(TwoNetworks):
    optimizer_variables = None


def test_a_model_with_two_optimizers_must_say_which_variables_each_updates(tmp_path):
    model = TwoNetworks(seed=0)
    model.fit(np.ones((8, 4), "float32"), batch_size=8, verbose=0)
    checkpoints.save(model, str(tmp_path), step=1, keep=2)
    with pytest.raises(
        ValueError, match="has 2 optimizers \\(d_optimizer, g_optimizer\\) and no optimizer_variables"
    ):
        checkpoints.restore(TwoNetworksWithoutOwners(seed=1, build=False), str(tmp_path))


def test_optimizer_state_that_does_not_fit_is_refused_not_left_half_restored(tmp_path):
    model = TwoNetworks(seed=0)
    model.fit(np.ones((8, 4), "float32"), batch_size=8, verbose=0)
    checkpoints.save(model, str(tmp_path), step=1, keep=2)
    # Built as Keras's fit builds compile's optimizer, on every trainable variable: more slots
    # than the checkpoint holds.
    fresh = TwoNetworks(seed=1, build=False)
    fresh.g_optimizer.build(fresh.trainable_variables)
    fresh.d_optimizer.build(fresh.discriminator.trainable_variables)
    with pytest.raises(ValueError, match="ckpt-1 does not fit the model .*optimizer_variables"):
        checkpoints.restore(fresh, str(tmp_path))
    # Fewer: the discriminator's optimizer built on nothing, its slots in the checkpoint would have
    # nowhere to go.
    fresh = TwoNetworks(seed=1, build=False)
    fresh.g_optimizer.build(fresh.generator.trainable_variables)
    fresh.d_optimizer.build([])
    with pytest.raises(ValueError, match="ckpt-1 does not fit the model"):
        checkpoints.restore(fresh, str(tmp_path))

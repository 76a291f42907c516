"""One run (abc_tf.runs.training): what it writes, the SavedModel by reload, exact step counts,
a full disk, resume after SIGKILL, and two replicas or two workers training like one process.
Runs are short toy runs (tests/toy_family.py). What a rerun may change:
tests/test_config_history.py; the NaN stop and the logs: tests/test_training_logs.py."""

import json
import os
import shutil
import signal
import subprocess
import socket
import textwrap
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from abc_tf import data
from abc_tf.config import ExperimentConfig
from abc_tf.runs import checkpoints, training
from process_helpers import ENV, run_code, start_code
from toy_family import CONFIG as TOY

pytestmark = pytest.mark.usefixtures("toy_family")


def test_a_run_writes_config_logs_checkpoint_encoder_and_saved_model(tmp_path):
    run_dir = str(tmp_path / "run")
    result = training.train(TOY, run_dir, verbose=0)
    assert len(result.history["loss"]) == 4
    assert result.final_step == 40
    assert result.history["loss"][-1] < result.history["loss"][0]
    assert ExperimentConfig.from_json(open(os.path.join(run_dir, "config.json")).read()) == TOY
    assert os.listdir(os.path.join(run_dir, "logs", "train"))
    # Checkpoints at steps 10, 20, 30, 40; the newest two kept.
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == [30, 40]

    images = next(iter(data.get_family("toy").make_dataset(TOY, seed=0)))["set_a"][0]
    want = result.encoder(images).numpy()
    reloaded = keras.models.load_model(os.path.join(run_dir, "encoder.keras"))
    np.testing.assert_allclose(reloaded(images).numpy(), want, rtol=1e-5, atol=1e-6)
    saved = tf.saved_model.load(os.path.join(run_dir, "saved_model"))
    np.testing.assert_allclose(saved.embed(images)["embeddings"].numpy(), want, rtol=1e-5, atol=1e-5)
    as_uint8 = tf.cast(tf.round(images * 255.0), tf.uint8)
    np.testing.assert_allclose(
        saved.embed_uint8(as_uint8)["embeddings"].numpy(), result.encoder(as_uint8 / 255).numpy(), rtol=1e-4, atol=1e-4
    )


def scalar_steps(log_dir: str, tag: str) -> list[int]:
    steps = []
    for name in sorted(os.listdir(log_dir)):
        for event in tf.compat.v1.train.summary_iterator(os.path.join(log_dir, name)):
            steps += [int(event.step) for value in event.summary.value if value.tag == tag]
    return steps


@pytest.mark.parametrize(
    "steps,log_every,per_execution,logged",
    [
        (20, 10, 7, [10, 20]),  # 7 does not divide 10: Keras would train 28 steps
        (41, 20, 1, [20, 40, 41]),  # gcd 1: one-step epochs, but logs only every 20
        (40, 10, 5, [10, 20, 30, 40]),
    ],
)
def test_a_run_trains_exactly_its_steps_and_logs_on_the_interval(tmp_path, steps, log_every, per_execution, logged):
    run_dir = str(tmp_path / "run")
    config = TOY.replace(steps=steps, log_every=log_every, steps_per_execution=per_execution, keep_checkpoints=5)
    result = training.train(config, run_dir, verbose=0)
    assert result.final_step == steps
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == logged
    assert len(result.history["loss"]) == len(logged)
    # TensorBoard's x axis is the optimizer step, for the losses and the learning rate alike.
    assert scalar_steps(os.path.join(run_dir, "logs", "train"), "loss") == logged
    assert scalar_steps(os.path.join(run_dir, "logs", "train"), "learning_rate") == logged
    assert training.train(config, run_dir, verbose=0).final_step == steps  # a rerun trains nothing more


def test_a_full_disk_stops_with_a_clear_message_and_keeps_the_older_checkpoints(tmp_path, monkeypatch):
    run_dir = str(tmp_path / "run")
    training.train(TOY.replace(steps=20), run_dir, verbose=0)
    real_usage = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda path: real_usage(path)._replace(free=1000))
    with pytest.raises(checkpoints.CheckpointError, match="No room for the checkpoint of step 30 .* older checkpoints are intact"):
        training.train(TOY.replace(steps=40), run_dir, verbose=0)
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == [10, 20]
    monkeypatch.setattr(shutil, "disk_usage", real_usage)

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    model = training.build_model(TOY)
    model.optimizer.iterations.assign(30)  # checkpoints are numbered by the optimizer step
    monkeypatch.setattr(checkpoints, "_flush", no_space)  # the disk fills up as the written files are flushed
    with pytest.raises(checkpoints.CheckpointError, match="failed \\(No space left on device\\)"):
        checkpoints.save(model, run_dir, 30, keep=2)
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == [10, 20]
    assert not [name for name in os.listdir(checkpoints.checkpoint_dir(run_dir)) if name.startswith("ckpt-30")]


RESUMABLE_RUN = textwrap.dedent(
    """
    import sys
    from abc_tf import data
    from abc_tf.runs import training
    from abc_tf.config import ExperimentConfig
    data.DATA_FAMILIES["toy"] = "toy_family"
    config = ExperimentConfig.from_json(open(sys.argv[1]).read())
    training.train(config, sys.argv[2], verbose=0)
    """
)


def test_a_killed_run_resumes_from_its_checkpoint(tmp_path):
    config = TOY.replace(steps=400, log_every=20, lr_halving_steps=100)
    config_path = tmp_path / "config.json"
    config_path.write_text(config.to_json())
    run_dir = tmp_path / "run"
    process = start_code(RESUMABLE_RUN, str(config_path), str(run_dir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if len(checkpoints.list_checkpoints(str(run_dir))) >= 2:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the run ended before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait()
    saved = checkpoints.list_checkpoints(str(run_dir))
    assert len(saved) <= TOY.keep_checkpoints
    killed_at = saved[-1][0]
    assert 0 < killed_at < 400 and killed_at % 20 == 0

    result = training.train(config, str(run_dir), verbose=0)
    assert len(result.history["loss"]) * 20 == 400 - killed_at
    # The optimizer state (its step counter drives the schedule) continues from the checkpoint.
    assert result.final_step == 400
    assert result.history["learning_rate"][-1] == pytest.approx(1e-3 * 0.5**4)
    first_lr = result.history["learning_rate"][0]
    assert first_lr == pytest.approx(1e-3 * 0.5 ** ((killed_at + 20) // 100))


# ----------------------------------------------------------------------------- distributed

# Logical devices must be configured before TensorFlow starts, hence a fresh process.
TWO_REPLICAS = textwrap.dedent(
    """
    import json, sys
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from abc_tf import data
    from abc_tf.runs import training
    from toy_family import CONFIG
    data.DATA_FAMILIES["toy"] = "toy_family"
    config = CONFIG.replace(temperature=0.05, steps=12, log_every=4, seed=5)
    single = training.train(config, sys.argv[1] + "/one", verbose=0)
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    double = training.train(config, sys.argv[1] + "/two", verbose=0, strategy=mirrored)
    try:
        training.train(config.replace(pairs_per_step=3), sys.argv[1] + "/odd", verbose=0, strategy=mirrored)
        odd = "no error"
    except ValueError as error:
        odd = str(error)
    print("RESULT" + json.dumps({"one": single.history["loss"], "two": double.history["loss"],
                                 "replicas": mirrored.num_replicas_in_sync, "odd": odd}))
    """
)


def child_result(output: str) -> dict:
    line = next(line for line in output.splitlines() if line.startswith("RESULT"))
    return json.loads(line[len("RESULT"):])


def test_one_and_two_replicas_give_the_same_losses(tmp_path):
    completed = run_code(TWO_REPLICAS, str(tmp_path))
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = child_result(completed.stdout)
    assert result["replicas"] == 2, result
    # Three logging intervals of four steps; the losses fall and agree within float tolerance.
    assert len(result["one"]) == 3
    assert result["one"][-1] < result["one"][0] - 0.1, result["one"]
    np.testing.assert_allclose(result["two"], result["one"], rtol=2e-3)
    assert "must be a multiple of the 2 replicas" in result["odd"]


WORKER = textwrap.dedent(
    """
    import json, sys
    from abc_tf import data
    from abc_tf.runs import training
    from toy_family import CONFIG
    data.DATA_FAMILIES["toy"] = "toy_family"
    config = CONFIG.replace(temperature=0.05, steps=12, log_every=4, seed=5, strategy=sys.argv[2])
    result = training.train(config, sys.argv[1], verbose=0)
    print("RESULT" + json.dumps({"loss": result.history["loss"], "step": result.final_step}))
    """
)


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("localhost", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def test_two_workers_train_like_one_process_and_only_the_chief_writes_the_run(tmp_path):
    cluster = {"worker": [f"localhost:{port}" for port in free_ports(2)]}
    workers = [
        start_code(
            WORKER, str(tmp_path / "cluster"), "multi_worker",
            env={**ENV, "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        for index in range(2)
    ]
    outputs = [worker.communicate(timeout=600)[0] for worker in workers]
    for worker, output in zip(workers, outputs):
        assert worker.returncode == 0, output[-3000:]
    alone = run_code(WORKER, str(tmp_path / "alone"), "default")
    assert alone.returncode == 0, alone.stderr[-3000:]

    expected = child_result(alone.stdout)
    for output in outputs:  # each worker trains one of the two pairs; the update is their mean
        result = child_result(output)
        assert result["step"] == 12
        np.testing.assert_allclose(result["loss"], expected["loss"], rtol=1e-4)
    run = tmp_path / "cluster"
    assert sorted(os.listdir(run / "checkpoints")) == ["checkpoint", "ckpt-12.data-00000-of-00001", "ckpt-12.index",
                                                       "ckpt-8.data-00000-of-00001", "ckpt-8.index"]
    assert (run / "saved_model").is_dir() and (run / "encoder.keras").is_file()
    assert sorted(os.listdir(run / "workers")) == ["worker_1"]  # the other worker's logs and exports

"""Two replicas (the CPU split into two logical devices, or two worker processes) train like one:
same seed, same losses."""

import json
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS_DIR)

# Logical devices must be configured before TensorFlow starts, hence a fresh process.
TWO_REPLICAS = textwrap.dedent(
    """
    import json, sys
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from abc_tf import data
    from abc_tf.runs import training
    from abc_tf.config import ExperimentConfig
    data.DATA_FAMILIES["toy"] = "toy_family"
    config = ExperimentConfig(name="toy", data="toy", model="s4", embedding_dim=8, set_size=12,
                              pairs_per_step=2, learning_rate=1e-3, temperature=0.05, steps=12, log_every=4, seed=5)
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


def test_one_and_two_replicas_give_the_same_losses(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([TESTS_DIR, ROOT]), "TF_CPP_MIN_LOG_LEVEL": "3"}
    completed = subprocess.run(
        [sys.executable, "-c", TWO_REPLICAS, str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    line = next(line for line in completed.stdout.splitlines() if line.startswith("RESULT"))
    result = json.loads(line[len("RESULT"):])
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
    from abc_tf.config import ExperimentConfig
    data.DATA_FAMILIES["toy"] = "toy_family"
    config = ExperimentConfig(name="toy", data="toy", model="s4", embedding_dim=8, set_size=12, pairs_per_step=2,
                              learning_rate=1e-3, temperature=0.05, steps=12, log_every=4, seed=5, strategy=sys.argv[2])
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


def worker_result(output: str) -> dict:
    line = next(line for line in output.splitlines() if line.startswith("RESULT"))
    return json.loads(line[len("RESULT"):])


def test_two_workers_train_like_one_process_and_only_the_chief_writes_the_run(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([TESTS_DIR, ROOT]), "TF_CPP_MIN_LOG_LEVEL": "3"}
    cluster = {"worker": [f"localhost:{port}" for port in free_ports(2)]}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(tmp_path / "cluster"), "multi_worker"],
            env={**env, "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        for index in range(2)
    ]
    outputs = [worker.communicate(timeout=600)[0] for worker in workers]
    for worker, output in zip(workers, outputs):
        assert worker.returncode == 0, output[-3000:]
    alone = subprocess.run([sys.executable, "-c", WORKER, str(tmp_path / "alone"), "default"],
                           env=env, capture_output=True, text=True)
    assert alone.returncode == 0, alone.stderr[-3000:]

    expected = worker_result(alone.stdout)
    for output in outputs:  # each worker trains one of the two pairs; the update is their mean
        result = worker_result(output)
        assert result["step"] == 12
        np.testing.assert_allclose(result["loss"], expected["loss"], rtol=1e-4)
    run = tmp_path / "cluster"
    assert sorted(os.listdir(run / "checkpoints")) == ["checkpoint", "ckpt-12.data-00000-of-00001", "ckpt-12.index",
                                                       "ckpt-8.data-00000-of-00001", "ckpt-8.index"]
    assert (run / "saved_model").is_dir() and (run / "encoder.keras").is_file()
    assert sorted(os.listdir(run / "workers")) == ["worker_1"]  # the other worker's logs and exports

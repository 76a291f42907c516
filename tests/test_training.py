"""One run (abc_tf.runs.training): what it writes, the SavedModel by reload, exact step counts,
a full disk, resume after SIGKILL, two replicas or two workers training like one process, and
a SIGTERM to one of two workers stopping both after the same step.
Runs are short toy runs (tests/toy_family.py). What a rerun may change:
tests/test_config_history.py; the NaN stop and the logs: tests/test_training_logs.py."""

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import socket
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from abc_tf.runs import checks
from abc_tf.runs import experiments

from abc_tf.runs import config_files
from abc_tf import data, methods
from abc_tf.runs.experiments import get_preset
from abc_tf.runs import checkpoints, precision, training
from process_helpers import ENV, start_code, wait_for_marker
from tolerance_helpers import rounding_rtol
import toy_method
from toy_family import CONFIG as TOY, TRAINED

pytestmark = [pytest.mark.usefixtures("toy_family"), pytest.mark.slow]


def test_a_run_writes_config_logs_checkpoint_encoder_and_saved_model(trained_toy_run):
    result, run_dir = trained_toy_run, trained_toy_run.run_dir  # toy_family.TRAINED, trained once per session
    assert len(result.history["loss"]) == 4
    assert result.final_step == 40
    assert result.history["loss"][-1] < result.history["loss"][0]
    assert config_files.from_json(open(os.path.join(run_dir, "config.json")).read()) == TRAINED
    assert os.listdir(os.path.join(run_dir, "logs", "train"))
    # Checkpoints at steps 10, 20, 30, 40; the newest two kept.
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == [30, 40]

    as_uint8 = next(iter(data.get_family("toy").stream("sets")(TOY, seed=0)))["set_a"][0]
    images = tf.cast(as_uint8, tf.float32) / 255.0  # what the encoder and `embed` take
    want = result.encoder(images).numpy()
    reloaded = keras.models.load_model(os.path.join(run_dir, "encoder.keras"))
    # The same weights through the same eager kernels: equal (the tolerance only for the record).
    np.testing.assert_allclose(reloaded(images).numpy(), want, rtol=1e-5, atol=1e-6)
    saved = tf.saved_model.load(os.path.join(run_dir, "saved_model"))
    # The SavedModel's graph may fuse and reorder S4's sums: about 3,000 float32 roundings on an
    # embedding's chain (the conv fan-ins 9 + 4 x 288, the dense 1,568 and 128), of terms of size ~1.
    tolerance = rounding_rtol(3000)
    np.testing.assert_allclose(
        saved.embed(images)["embeddings"].numpy(), want, rtol=tolerance, atol=tolerance
    )
    np.testing.assert_allclose(  # x / 255 in float32 or in float64: the same float32 (tests/test_abc.py)
        saved.embed_uint8(as_uint8)["embeddings"].numpy(),
        result.encoder(as_uint8 / 255).numpy(),
        rtol=tolerance,
        atol=tolerance,
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
def test_a_run_trains_exactly_its_steps_and_logs_on_the_interval(
    tmp_path, steps, log_every, per_execution, logged
):
    run_dir = str(tmp_path / "run")
    config = TOY.replace(
        steps=steps, log_every=log_every, steps_per_execution=per_execution, keep_checkpoints=5
    )
    result = training.train(config, run_dir, verbose=0)
    assert result.final_step == steps
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == logged
    assert len(result.history["loss"]) == len(logged)
    # TensorBoard's x axis is the optimizer step, for the losses and the learning rate alike.
    assert scalar_steps(os.path.join(run_dir, "logs", "train"), "loss") == logged
    assert scalar_steps(os.path.join(run_dir, "logs", "train"), "learning_rate") == logged
    assert training.train(config, run_dir, verbose=0).final_step == steps  # a rerun trains nothing more


def test_auto_runs_several_steps_a_call_and_still_trains_exactly_its_steps(tmp_path):
    auto = TOY.replace(steps=40, log_every=10, steps_per_execution=0, keep_checkpoints=5)
    assert [
        training.steps_per_execution(auto.replace(**fields))
        for fields in (
            {},
            {"log_every": 4},
            {"log_every": 7, "steps": 42},
            {"log_every": 7},
            {"eval_every": 15},
            {"log_every": 100, "steps": 2000},
        )
    ] == [10, 4, 7, 1, 5, 10]
    assert (
        training.steps_per_execution(auto, start_step=6) == 2
    )  # a resume between log steps: calls end on them
    run_dir = str(tmp_path / "run")
    seen = []
    per_call = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: seen.append(int(per_call.model.optimizer.iterations.numpy()))
    )
    result = training.train(auto, run_dir, verbose=0, callbacks=[per_call])
    assert result.final_step == 40 and seen == [10, 20, 30, 40]
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == [10, 20, 30, 40]
    assert training.train(auto.replace(steps=45), run_dir, verbose=0).final_step == 45  # extended exactly


def test_a_full_disk_stops_with_a_clear_message_and_keeps_the_older_checkpoints(tmp_path, monkeypatch):
    run_dir = str(tmp_path / "run")
    training.train(TOY.replace(steps=20), run_dir, verbose=0)
    real_usage = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda path: real_usage(path)._replace(free=1000))
    with pytest.raises(
        checkpoints.CheckpointError,
        match="No room for the checkpoint of step 30 .* older checkpoints are intact",
    ):
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
    assert not [
        name for name in os.listdir(checkpoints.checkpoint_dir(run_dir)) if name.startswith("ckpt-30")
    ]


# After its second checkpoint (training.train's own callbacks run before those it is given), the
# run writes the marker file sys.argv[3] and waits to be killed (process_helpers.hold).
RESUMABLE_RUN = textwrap.dedent(
    """
    import sys
    import keras
    from abc_tf import data
    from abc_tf.runs import config_files, training
    from process_helpers import hold
    data.DATA_FAMILIES["toy"] = "toy_family:FAMILY"
    config = config_files.from_json(open(sys.argv[1]).read())
    ready = keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: epoch == 1 and hold(sys.argv[3]))
    training.train(config, sys.argv[2], verbose=0, callbacks=[ready])
    """
)


def test_a_killed_run_resumes_from_its_checkpoint(tmp_path):
    config = TOY.replace(steps=100, log_every=20, lr_halving_steps=25)
    config_path = tmp_path / "config.json"
    config_path.write_text(config.to_json())
    run_dir, marker = tmp_path / "run", tmp_path / "second_checkpoint"
    process = start_code(
        RESUMABLE_RUN,
        str(config_path),
        str(run_dir),
        str(marker),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    wait_for_marker(process, marker)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    saved = checkpoints.list_checkpoints(str(run_dir))
    assert [step for step, _ in saved] == [20, 40]  # killed while it waited after its second checkpoint
    killed_at = saved[-1][0]

    result = training.train(config, str(run_dir), verbose=0)
    assert len(result.history["loss"]) * 20 == 100 - killed_at
    # The optimizer state (its step counter drives the schedule) continues from the checkpoint.
    assert result.final_step == 100
    assert result.history["learning_rate"][-1] == pytest.approx(1e-3 * 0.5**4)
    first_lr = result.history["learning_rate"][0]
    assert first_lr == pytest.approx(1e-3 * 0.5 ** ((killed_at + 20) // 25))


# ----------------------------------------------------------------------------- distributed


def child_result(output: str) -> dict:
    line = next(line for line in output.splitlines() if line.startswith("RESULT"))
    return json.loads(line[len("RESULT") :])


@pytest.fixture(scope="module")
def replicas(tmp_path_factory, two_replicas) -> dict:
    """The toy run on one device ("one", also what the two workers below are compared with) and on
    two replicas ("two"), over the two logical CPU devices of tests/conftest.py; "odd": the error
    for a batch the replicas cannot split."""
    root = tmp_path_factory.mktemp("replicas")
    config = TOY.replace(temperature=0.05, steps=12, log_every=4, seed=5)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(data.DATA_FAMILIES, "toy", "toy_family:FAMILY")
        single = training.train(config, str(root / "one"), verbose=0)
        mirrored = two_replicas
        double = training.train(config, str(root / "two"), verbose=0, strategy=mirrored)
        try:
            training.train(config.replace(pairs_per_step=3), str(root / "odd"), verbose=0, strategy=mirrored)
            odd = "no error"
        except ValueError as error:
            odd = str(error)
    return {
        "one": single.history["loss"],
        "two": double.history["loss"],
        "replicas": mirrored.num_replicas_in_sync,
        "odd": odd,
    }


def test_one_and_two_replicas_give_the_same_losses(replicas):
    result = replicas
    assert result["replicas"] == 2, result
    # Three logging intervals of four steps; the losses fall and agree as two trajectories of
    # Adam along two paths can (the rule at the two workers' test below): 2e-3.
    assert len(result["one"]) == 3
    assert result["one"][-1] < result["one"][0], result["one"]  # it trains (the toy run: tests above)
    np.testing.assert_allclose(result["two"], result["one"], rtol=2e-3)
    assert "must be a multiple of the 2 replicas" in result["odd"]


def test_the_replicas_split_the_batch_the_method_reads():
    # Every method on two replicas: tests/test_methods.py. Here the check alone, without devices.
    vae, abc = methods.get_method("vae"), methods.get_method("abc")
    images = experiments.config_for(data="mnist", method="vae", batch_size=8)
    checks.check_replicas(images, vae, 2)
    with pytest.raises(
        ValueError,
        match=r"^--batch.batch_size=9 must be a multiple of the 2 replicas .*--method=vae trains on images",
    ):
        checks.check_replicas(images.replace(batch_size=9), vae, 2)
    with pytest.raises(
        ValueError, match=r"^--batch.pairs_per_step=3 must be a multiple of the 4 replicas .*on set pairs"
    ):
        checks.check_replicas(TOY.replace(pairs_per_step=3), abc, 4)


def test_the_augmentation_baseline_is_for_methods_that_train_on_two_view_sets(monkeypatch):
    # Both families' baselines (unconstrained sets, second views, no set B) reach any method
    # declaring accepts_two_view_sets, and no other; checked before any data is read.
    monkeypatch.setitem(methods.METHODS, "two_network", "toy_method:TWO_NETWORK")
    for config in (
        get_preset("shapes3d_hue_baseline"),
        get_preset("mnist_abc_augmentation").replace(source="procedural"),
    ):
        for accepting in ("abc", "contrastive"):
            assert checks.check_config(experiments.choose(config, method=accepting))[1].accepts_two_view_sets
        refused = experiments.choose(config, method="two_network")  # trains on sets, but not on two views
        with pytest.raises(
            ValueError,
            match=r"^--batch.augmentation_baseline .* --method=two_network does not train on "
            r"them\. Methods that do: abc, contrastive\.$",
        ):
            checks.check_config(refused)
    # A method on single images has no such field: its batch part is another class.
    with pytest.raises(ValueError, match="has no field 'augmentation_baseline'"):
        experiments.config_for(data="mnist", method="vae", augmentation_baseline=True)


def test_a_method_that_needs_a_training_bank_is_refused_on_a_family_without_one(monkeypatch):
    # LORD learns a code per training image: only families whose batches index a fixed bank.
    banked = dataclasses.replace(toy_method.TWO_NETWORK, name="banked", needs_training_bank=True)
    monkeypatch.setattr(toy_method, "BANKED", banked, raising=False)
    monkeypatch.setitem(methods.METHODS, "banked", "toy_method:BANKED")
    with pytest.raises(
        ValueError,
        match=r"^--method=banked learns a code per training image and group, .*data family "
        r"'mnist' has none\. Families that do: pose\.$",
    ):
        checks.check_config(
            experiments.choose(get_preset("mnist").replace(source="procedural"), method="banked")
        )


@pytest.mark.parametrize(
    "host, policy, warned",
    [
        (precision.Host(cpu_flags=frozenset({"avx2"})), "float32", True),
        (precision.Host(cpu_flags=frozenset({"avx2", "avx512_bf16"})), "mixed_bfloat16", False),
    ],
)
def test_mixed_precision_falls_back_to_float32_with_one_warning_line_on_a_cpu_without_bfloat16(
    tmp_path, capsys, monkeypatch, host, policy, warned
):
    monkeypatch.setattr(precision, "this_host", lambda: host)  # a simulated host
    try:
        result = training.train(
            TOY.replace(mixed_precision=True, steps=2, log_every=2), str(tmp_path / "run"), verbose=0
        )
    finally:
        keras.mixed_precision.set_global_policy("float32")  # build_model set the run's
    assert result.precision == policy
    assert result.encoder.dtype_policy.name == policy
    warnings = [line for line in capsys.readouterr().err.splitlines() if "mixed_precision" in line]
    assert warnings == ([precision.choose(True, host).warning] if warned else [])


WORKER = textwrap.dedent(
    """
    import json, sys
    from abc_tf import data
    from abc_tf.runs import training
    from toy_family import CONFIG
    data.DATA_FAMILIES["toy"] = "toy_family:FAMILY"
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


def test_two_workers_train_like_one_process_and_only_the_chief_writes_the_run(tmp_path, replicas):
    cluster = {"worker": [f"localhost:{port}" for port in free_ports(2)]}
    workers = [
        start_code(
            WORKER,
            str(tmp_path / "cluster"),
            "multi_worker",
            env={
                **ENV,
                "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}),
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for index in range(2)
    ]
    outputs = [worker.communicate(timeout=600)[0] for worker in workers]
    for worker, output in zip(workers, outputs):
        assert worker.returncode == 0, output[-3000:]

    expected = {"loss": replicas["one"]}  # the same config, trained in one process on one device
    for output in outputs:  # each worker trains one of the two pairs; the update is their mean
        result = child_result(output)
        assert result["step"] == 12
        # A trajectory along two paths: the first interval's four steps start from equal weights
        # and differ by float32 reordering of the batch's sums (0 here, under 1e-4 on an AVX2 CPU).
        # Then Adam divides each gradient by its own size, so a component that rounding moves
        # across zero steps the other way by 2 lr, and the gap grows with every step (3.6e-4 by
        # step 12 on that CPU): later intervals within the replicas test's 2e-3 above.
        np.testing.assert_allclose(result["loss"][0], expected["loss"][0], rtol=1e-4)
        np.testing.assert_allclose(result["loss"], expected["loss"], rtol=2e-3)
    run = tmp_path / "cluster"
    assert sorted(os.listdir(run / "checkpoints")) == [
        "checkpoint",
        "ckpt-12.data-00000-of-00001",
        "ckpt-12.index",
        "ckpt-8.data-00000-of-00001",
        "ckpt-8.index",
    ]
    assert (run / "saved_model").is_dir() and (run / "encoder.keras").is_file()
    assert sorted(os.listdir(run / "workers")) == ["worker_1"]  # the other worker's logs and exports


PREEMPTED_WORKER = textwrap.dedent(
    """
    import json, sys
    from abc_tf import data
    from abc_tf.runs import preemption, training
    from preemption_helpers import HoldAtStep
    from toy_family import CONFIG
    data.DATA_FAMILIES["toy"] = "toy_family:FAMILY"
    config = CONFIG.replace(temperature=0.05, steps=20, log_every=5, seed=5, strategy="multi_worker")
    held = [HoldAtStep(7, sys.argv[2])] if len(sys.argv) > 2 else []
    try:
        training.train(config, sys.argv[1], verbose=0, callbacks=held)
        print("RESULT" + json.dumps({"stopped_at": None}))
    except preemption.RunPreempted as stop:
        print("RESULT" + json.dumps({"stopped_at": stop.step, "signal": stop.signal_number}))
    """
)


def test_a_sigterm_to_one_worker_stops_all_after_the_same_step_and_the_chief_checkpoints_it(tmp_path):
    cluster = {"worker": [f"localhost:{port}" for port in free_ports(2)]}
    marker = tmp_path / "worker_1_at_step_7"
    workers = [
        start_code(
            PREEMPTED_WORKER,
            str(tmp_path / "run"),
            *([str(marker)] if index == 1 else []),
            env={
                **ENV,
                "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}),
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for index in range(2)
    ]
    try:
        wait_for_marker(
            workers[1], marker
        )  # worker 1 waits at step 7; the chief waits for it in the next collective
        workers[1].send_signal(signal.SIGTERM)
        outputs = [worker.communicate(timeout=600)[0] for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    for worker, output in zip(workers, outputs):
        assert worker.returncode == 0, output[-3000:]
        assert child_result(output) == {"stopped_at": 7, "signal": signal.SIGTERM}, output[-3000:]
    assert [step for step, _ in checkpoints.list_checkpoints(str(tmp_path / "run"))] == [5, 7]

"""abc_tf.runs.parallel_runs: how many runs at once and their threads, runs side by side naming
the running ones, a signal reaching every child once, the same numbers side by side as one after
another, and (slow, with Ray installed) a grid on a two-node local Ray cluster that loses a node
mid-point."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from abc_tf.cli import grid as grid_cli
from abc_tf.evaluation import grid_search as grid
from abc_tf.runs import parallel_runs

TOY_GRID = [
    "--experiment=shapes3d_demo",
    "--train_flags=--trainer.log_every=2 --trainer.eval_every=0 --trainer.eval_images=32 --batch.set_size=8",
    "--evaluate_flags=--mine_steps=0 --probe_epochs=1 --num_images=64 --disentanglement=none",
]


def test_the_default_fits_the_cores_and_more_is_warned_once(monkeypatch):
    monkeypatch.setattr(parallel_runs, "cores", lambda: 4)
    said = []
    assert (parallel_runs.pool(0, 0, 10, said.append).at_once, said) == (4, [])
    two = parallel_runs.pool(0, 0, 2, said.append)
    assert (two.at_once, two.threads) == (2, 2)
    assert parallel_runs.pool(1, 0, 9, said.append).threads is None  # alone: TensorFlow's own threads
    six = parallel_runs.pool(6, 0, 9, said.append)
    assert (six.at_once, six.threads) == (6, 1)
    assert said == ["warning: --parallel=6 runs more at once than this host's 4 cores; they share them."]
    assert (
        parallel_runs.thread_env(3)["TF_NUM_INTRAOP_THREADS"] == "3" and parallel_runs.thread_env(None) == {}
    )


@pytest.mark.parametrize(
    "parallel, cpus, message",
    [(-1, 0, "--parallel must be 0"), (0, -2, "--cpus_per_run must be 0")],
)
def test_a_bad_count_is_refused(parallel, cpus, message):
    with pytest.raises(ValueError, match=message):
        parallel_runs.pool(parallel, cpus, 3, print)


def test_without_ray_the_cluster_flag_is_refused_in_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    arguments = ["grid.py", *TOY_GRID, "--vary=trainer.learning_rate=1e-3", "--measure=m.json:a"]
    assert grid_cli.command([*arguments, "--ray_address=auto"]) == 2
    assert capsys.readouterr().err.strip() == (
        "grid.py: error: --ray_address=auto needs Ray, which is not installed: pip install 'abc_tf[ray]'."
    )


def job(name: str) -> parallel_runs.Job:
    return parallel_runs.Job(name, (("training", ("train", f"--output_dir={name}"), f"{name}.log"),))


def test_runs_go_side_by_side_and_the_progress_names_the_running_ones(tmp_path):
    together = threading.Barrier(2)

    def runner(arguments, log_file, threads, started):
        assert threads == 1
        if arguments[1] != "--output_dir=c":
            together.wait(timeout=600)  # a and b run at once, or this breaks

    said = []
    parallel_runs.LocalPool(2, 1, runner).run([job("a"), job("b"), job("c")], said.append, "grid")
    assert sorted(said[:2]) == ["[grid] training a (running: a)", "[grid] training b (running: a, b)"]
    assert said[2].startswith("[grid] training c (running: ") and said[2].endswith("c)")


def test_a_failure_stops_new_runs_and_is_raised_once_the_others_end(tmp_path):
    ran = []

    def runner(arguments, log_file, threads, started):
        ran.append(arguments[1])
        if arguments[1].endswith("a"):
            raise RuntimeError("abc_tf train exited with 1")

    with pytest.raises(RuntimeError, match="exited with 1"):
        parallel_runs.LocalPool(1, None, runner).run([job("a"), job("b")], lambda line: None, "grid")
    assert ran == ["--output_dir=a"]


CHILD = """
import os, signal, sys, time
def stop(number, frame):
    open(sys.argv[1] + ".stopped", "w").write(str(number))
    sys.exit(128 + number)
signal.signal(signal.SIGTERM, stop)
open(sys.argv[1] + ".ready", "w").close()
while True:
    time.sleep(0.1)
"""


def test_a_signal_reaches_every_child_once_and_the_pool_waits_for_them(tmp_path):
    def runner(arguments, log_file, threads, started):
        process = subprocess.Popen([sys.executable, "-c", CHILD, log_file], start_new_session=True)
        started(process)
        if process.wait():
            raise RuntimeError(f"exited with {process.returncode}")

    def kill_when_ready():
        for _ in range(6000):  # every child started (a deadline of 10 minutes on a loaded host)
            if all(os.path.exists(tmp_path / f"{name}.log.ready") for name in "ab"):
                break
            threading.Event().wait(0.1)
        os.kill(os.getpid(), signal.SIGTERM)

    jobs = [
        parallel_runs.Job(name, (("training", ("train",), str(tmp_path / f"{name}.log")),)) for name in "abc"
    ]
    threading.Thread(target=kill_when_ready, daemon=True).start()
    with pytest.raises(parallel_runs.SweepStopped) as stopped:
        parallel_runs.LocalPool(2, 1, runner).run(jobs, lambda line: None, "grid")
    assert stopped.value.exit_status == 143 and "Run the same command again" in str(stopped.value)
    assert [(tmp_path / f"{name}.log.stopped").read_text() for name in "ab"] == ["15", "15"]
    assert not os.path.exists(tmp_path / "c.log.ready")  # no run starts after the signal


def run_toy_grid(folder, *flags: str, measure: str = "probe/object_hue/accuracy") -> dict:
    arguments = ["grid.py", *TOY_GRID, f"--measure=metrics.json:{measure}", "--goal=max"]
    assert grid_cli.command([*arguments, *flags, f"--output_dir={folder}"]) == 0
    return json.load(open(folder / grid.GRID_FILE))


def numbers(result: dict) -> list:
    return [(row["name"], row["values"]) for row in result["points"]] + [result["pick"]["name"]]


@pytest.mark.slow
def test_side_by_side_gives_the_numbers_of_one_after_another(tmp_path):
    vary = ["--vary=trainer.learning_rate=1e-3,1e-4", "--vary=trainer.steps=4"]
    # Runs' numbers depend on their threads (TensorFlow splits sums by them), so both ways use one.
    one = run_toy_grid(tmp_path / "one", *vary, "--parallel=1", "--cpus_per_run=1")
    two = run_toy_grid(tmp_path / "two", *vary, "--parallel=2", "--cpus_per_run=1")
    assert numbers(one) == numbers(two)
    for row in one["points"]:
        config = json.load(open(tmp_path / "one" / row["name"] / "config.json"))
        assert config == json.load(open(tmp_path / "two" / row["name"] / "config.json"))


@pytest.mark.slow
def test_a_grid_on_a_local_ray_cluster_survives_a_lost_node(tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'abc_tf[ray]')")
    from ray.cluster_utils import Cluster

    # A resumed run draws fresh batches, so the point cut off learns other numbers; the pick here is
    # by the steps each run trained (read from its evaluation), which a resume keeps.
    vary = ["--vary=trainer.learning_rate=1e-3,3e-4", "--vary=trainer.steps=30,40"]
    steps = "config/trainer/steps"
    alone = run_toy_grid(tmp_path / "alone", *vary, "--parallel=1", "--cpus_per_run=1", measure=steps)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    nodes = {node.node_id: node for node in (cluster.add_node(num_cpus=1) for _ in range(2))}
    killed = {}

    def kill_a_node_mid_point():
        """Removes the node of the first point seen with a checkpoint and no final networks."""
        folder = tmp_path / "ray"
        for _ in range(12000):  # a deadline of 20 minutes on a loaded host
            for log in folder.glob("*/grid_train.log"):
                run = log.parent
                started = [line.split()[-1] for line in log.read_text().splitlines() if "Ray node" in line]
                if started and (run / "checkpoints" / "checkpoint").exists() and not grid.finished(str(run)):
                    killed.update(point=run.name, node=started[-1])
                    cluster.remove_node(nodes[started[-1]], allow_graceful=False)  # as a host lost
                    return
            threading.Event().wait(0.1)

    watcher = threading.Thread(target=kill_a_node_mid_point, daemon=True)
    watcher.start()
    try:
        on_ray = run_toy_grid(tmp_path / "ray", *vary, f"--ray_address={cluster.address}", measure=steps)
    finally:
        watcher.join(timeout=60)
        ray.shutdown()
        cluster.shutdown()
    log = (tmp_path / "ray" / killed["point"] / "grid_train.log").read_text()
    places = [line for line in log.splitlines() if line.startswith("[ray]")]
    resumed = [line for line in log.splitlines() if line.startswith("Resuming")]
    print(f"points: {[row['name'] for row in on_ray['points']]}")
    for row in on_ray["points"]:
        text = (tmp_path / "ray" / row["name"] / "grid_train.log").read_text()
        print(row["name"], [line for line in text.splitlines() if line.startswith("[ray]")])
    print(f"node removed mid-point: {killed}; the point's log: {places} {resumed}")
    assert len(places) == 2 and killed["node"] in places[0] and killed["node"] not in places[1]
    assert resumed, "the point resumed from its checkpoint"
    assert on_ray["pick"]["name"] == alone["pick"]["name"] == "learning_rate=1e-3__steps=40"
    for row in on_ray["points"]:  # the points not cut off learned the same numbers as one after another
        probes = [
            json.load(open(tmp_path / way / row["name"] / grid.EVAL_DIR / "metrics.json"))["probe"]
            for way in ("alone", "ray")
        ]
        assert row["name"] == killed["point"] or probes[0] == probes[1], row["name"]

"""benchmarks/gpu.py, the one GPU command: on a machine without a GPU it says so, and its
sections are written from (stand-in) child results: the JAX sections from the results file alone."""

import json
import os
import subprocess
import sys

import pytest

from benchmarks import gpu, report

# Stand-in gpu_keras.py results, in the shape its main() prints them.
FACTS = {
    "mnist": {"model": "s4", "embedding_dim": 8, "similarity": "l2sq", "image_shape": [28, 28, 1]},
    "shapes3d": {"model": "s3", "embedding_dim": 64, "similarity": "l2sq", "image_shape": [64, 64, 3]},
    "pose_lookup_car": {
        "model": "s5",
        "embedding_dim": 64,
        "similarity": "cosine",
        "image_shape": [128, 128, 3],
    },
}


def child(experiment: str, **measured) -> dict:
    return {
        "experiment": experiment,
        "command": f"python -m benchmarks.gpu_keras --experiment={experiment} --seconds=5",
        "date": "2026-01-02",
        "device": "Test GPU",
        "platform": "gpu",
        "gpu": "Test GPU, 80 GiB",
        "jax": "0.9",
        "keras": "3.1",
        **FACTS[experiment],
        "preset_steps": 40_000 if experiment == "pose_lookup_car" else 500,
        "rates": [],
        **measured,
    }


def rate(precision: str, images: int, steps_per_s: float, pairs: int = 1, size: int = 64) -> dict:
    return {
        "precision": precision,
        "compile_s": 4.25,
        "steps_per_s": steps_per_s,
        "pairs": pairs,
        "set_size": size,
        "peak_memory_mb": 200.0,
        "images_per_s": steps_per_s * images,
        "images_per_step": images,
        "loss_finite": True,
    }


def step(pairs: int, size: int, steps_per_s: float, peak_mb: float, compile_s: float = 5.0) -> dict:
    images = 2 * pairs * size
    return {
        "precision": "float32",
        "compile_s": compile_s,
        "steps_per_s": steps_per_s,
        "pairs": pairs,
        "set_size": size,
        "peak_memory_mb": peak_mb,
        "images_per_s": steps_per_s * images,
        "images_per_step": images,
        "loss_finite": True,
    }


def benchmark_run() -> dict:
    """A "benchmark" part as main() stores it: mnist with its real-batch runs, a failed shapes3d, S5."""
    mnist = child(
        "mnist",
        rates=[rate("float32", 128, 1000.0), rate("mixed_bfloat16", 128, 1250.0)],
        peak_memory_mb=216.0,
        real=[
            {"precision": "float32", "steps": 500, "wall_s": 2.14, "loss_first_50": 8.3, "loss_last_50": 3.0}
        ],
    )
    pose = child("pose_lookup_car", rates=[rate("float32", 512, 20.0, 4, 32)], peak_memory_mb=9000.0)
    return {
        "children": [mnist, {"experiment": "shapes3d", "command": "c", "failed": "out | of memory"}, pose],
        "seconds": 5.0,
        "batches": ".gpu/mnist_batches.npz",
        "machine": "Measured 2026-01-02 on Test GPU, 80 GiB; JAX 0.9, Keras 3.1.",
        "load": [0.5, 1.25],
        "cpu_count": 16,
        "command": "python -m benchmarks.gpu --backend=jax --batches=.gpu/mnist_batches.npz --seconds=5",
    }


def scaling_run() -> dict:
    """A "scaling" part: 1,024 images split three ways in each child, the loss alone, a skipped row."""
    mnist = child(
        "mnist",
        scaling={
            "budget_s": 150.0,
            "steps": [
                step(1, 32, 1500.0, 150.0, 4.0),
                step(1, 512, 490.0, 1000.0),
                step(4, 128, 500.0, 1000.0),
            ]
            + [step(16, 32, 495.0, 1000.0), step(16, 128, 160.0, 3700.0, 20.0)],
            "loss": [{"similarity": "l2sq", "pairs": 1, "set_size": 32, "dim": 8, "seconds": 1e-4}],
        },
    )
    shapes3d = child(
        "shapes3d",
        scaling={
            "budget_s": 150.0,
            "steps": [step(1, 512, 85.0, 4500.0), step(4, 128, 80.0, 4500.0), step(16, 32, 84.0, 4500.0)]
            + [{"precision": "float32", "pairs": 16, "set_size": 1024, "failed": "skipped: time budget"}],
            "loss": [{"similarity": "l2sq", "pairs": 1, "set_size": 512, "dim": 64, "seconds": 2e-3}],
        },
    )
    return {
        "children": [mnist, shapes3d],
        "machine": "Measured 2026-01-02 on Test GPU, 80 GiB; JAX 0.9, Keras 3.1.",
        "load": [0.5, 1.0],
        "cpu_count": 16,
        "command": "python -m benchmarks.gpu --backend=jax --scaling",
    }


@pytest.mark.slow
def test_gpu_benchmark_on_a_machine_without_a_gpu_says_so_and_exits_0(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["benchmarks/gpu.py", "--backend=tensorflow", "--no_write"])
    gpu.main()  # returns: exit code 0
    assert "No GPU is visible to tensorflow" in capsys.readouterr().out


def test_the_jax_benchmark_section_is_written_from_the_results_alone():
    text = gpu.section({"benchmark": benchmark_run()})
    lines = text.splitlines()
    assert lines[:2] == [
        "Measured 2026-01-02 on Test GPU, 80 GiB; JAX 0.9, Keras 3.1.",
        "1-minute load average of the machine: 0.5 at the start, 1.2 at the end (16 cores).",
    ]
    assert "| mnist | s4 | 128 | float32 | 4.2 | 1000.0 | 128,000 | 216 |" in lines
    assert "| shapes3d | failed: out / of memory | | | | | | |" in lines
    # MNIST epoch: 60,000 images at 128,000 images/s; the real-batch columns where that precision ran.
    assert "| float32 | 0.47 | 0.010 | 2.1 | 8.300 | 3.000 |" in lines
    assert "| mixed_bfloat16 | 0.38 | 0.008 | - | - | - |" in lines
    # 40,000 steps at 20 steps/s: 33 minutes.
    assert (
        "The paper's pose run (S5, ResNet50V2 to conv4 + head, 128 px, 512 images a step, 40,000 steps) "
        "would take 33 min at the float32 rate."
    ) in " ".join(text.split())
    assert lines[-1] == (
        "Command: `python -m benchmarks.gpu --backend=jax --batches=.gpu/mnist_batches.npz --seconds=5` "
        "(batches made with `--make_batches` from MNIST_DIR, a folder of the four MNIST IDX files)."
    )
    without_pose = benchmark_run()
    without_pose["children"] = without_pose["children"][:1]
    assert "S5 (`pose_lookup_car`, the supplement's ResNet50V2) was not in this run." in gpu.section(
        {"benchmark": without_pose}
    )


def test_the_scaling_section_and_its_reading_are_computed_from_the_rows():
    text = gpu.scaling_section({"scaling": scaling_run()})
    lines = text.splitlines()
    # loss share: 0.1 ms at 1,500 steps/s.
    assert "| mnist (s4) | float32 | 1 | 32 | 64 | 1500.0 | 96,000 | 0.10 | 15% | 150 |" in lines
    assert "| mnist (s4) | float32 | 4 | 128 | 1024 | 500.0 | 512,000 | - |  | 1,000 |" in lines
    assert "| shapes3d | float32 | 16 | 1024 | failed: skipped: time budget | | | | | |" in lines
    assert (
        "Command: `python -m benchmarks.gpu --backend=jax --scaling` (children: "
        "`python -m benchmarks.gpu_keras --experiment=mnist --seconds=5`; "
        "`python -m benchmarks.gpu_keras --experiment=shapes3d --seconds=5`)"
    ) in lines
    reading = " ".join(text.partition("Reading: ")[2].split())
    # S3's three splits are 85 / 80 / 84 steps/s: 6% apart, past the 5% that would make the split not count.
    assert reading.startswith(
        "at the same number of images per step the cost depends on how they are split into sets: 1,024 "
        "images as P=1, N=512 / P=4, N=128 / P=16, N=32 run at 490.0 / 500.0 / 495.0 steps/s (S4, d=8; 2% "
        "apart) and 85.0 / 80.0 / 84.0 (S3, d=64; 6% apart)."
    )
    # The largest loss share: 2 ms at 85 steps/s (S3), beyond 10%, so no claim that the encoder sets the cost.
    assert (
        "The loss alone is at most 17% of a float32 step (S3, d=64, P=1, N=512): there the loss's" in reading
    )
    assert (
        "Throughput rises with the batch (S4, d=8: 96k images/s at 64 images a step, 655k at 4,096): small "
        "steps leave the GPU idle between kernels." in reading
    )
    # S3 measured one batch size only, so it has no throughput or compile clause.
    assert "XLA's compile time, float32: S4, d=8: 4 s at 64 images, 20 s at 4,096" in reading
    # (3,700 - 1,000) MB over (4,096 - 1,024) images.
    assert (
        "Peak memory in float32, per added image: 0.879 MB from 1,024 to 4,096 images (S4, d=8)." in reading
    )
    assert " ".join(text.split("\n\n")[-1].split()).startswith(
        "Not measured: 1 shapes3d row, skipped once its 150 s budget had passed."
    )


def test_a_part_the_results_file_lacks_says_how_to_measure_it():
    assert gpu.section({"scaling": scaling_run()}) == (
        "Not measured yet; on a GPU machine with JAX: `python -m benchmarks.gpu --backend=jax`."
    )
    assert "`python -m benchmarks.gpu --backend=jax --scaling`" in gpu.scaling_section({})
    assert gpu.SECTIONS == {gpu.TITLE: gpu.section, gpu.SCALING_TITLE: gpu.scaling_section}


def test_a_run_replaces_only_its_own_part_of_the_results_file(tmp_path):
    path = tmp_path / gpu.FILE
    path.parent.mkdir(parents=True)
    assert gpu.with_run("scaling", {"children": []}, str(tmp_path)) == {"scaling": {"children": []}}
    path.write_text(json.dumps({"scaling": scaling_run(), "benchmark": {"old": True}}))
    results = gpu.with_run("benchmark", benchmark_run(), str(tmp_path))
    assert results == {"scaling": scaling_run(), "benchmark": benchmark_run()}


def test_main_stores_a_plain_jax_run_beside_the_scaling_part(monkeypatch, tmp_path, capsys):
    # No GPU here: the children are stand-ins, and the results go to a temporary repository.
    (tmp_path / gpu.FILE).parent.mkdir(parents=True)
    (tmp_path / gpu.FILE).write_text(json.dumps({"scaling": scaling_run()}))
    children = {"mnist": benchmark_run()["children"][0], "pose_lookup_car": benchmark_run()["children"][2]}
    calls, saved, published = [], {}, []

    def stand_in(arguments, env=None):
        calls.append((arguments, env["KERAS_BACKEND"]))
        return children[arguments[2].partition("=")[2]]

    monkeypatch.setattr(gpu, "ROOT", str(tmp_path))
    monkeypatch.setattr(gpu, "gpu_backend", lambda requested: "jax")
    monkeypatch.setattr(gpu, "run_child", stand_in)
    monkeypatch.setattr(report, "save_results", lambda name, results: saved.update({name: results}))
    monkeypatch.setattr(report, "publish", lambda title, body, write, draw=None: published.append(title))
    monkeypatch.setattr(
        sys,
        "argv",
        ["gpu.py", "--backend=jax", "--batches=b.npz", "--seconds=2", "--experiments=mnist,pose_lookup_car"],
    )
    gpu.main()
    assert calls == [
        (["-m", "benchmarks.gpu_keras", "--experiment=mnist", "--seconds=2.0", "--batches=b.npz"], "jax"),
        (["-m", "benchmarks.gpu_keras", "--experiment=pose_lookup_car", "--seconds=2.0"], "jax"),
    ]
    results = saved["gpu"]
    assert results["scaling"] == scaling_run()  # the other invocation's part is kept
    run = results["benchmark"]
    assert run["children"] == list(children.values())
    assert run["command"] == (
        "python -m benchmarks.gpu --backend=jax --batches=b.npz --seconds=2 "
        "--experiments=mnist,pose_lookup_car"
    )
    assert run["machine"] == "Measured 2026-01-02 on Test GPU, 80 GiB; JAX 0.9, Keras 3.1."
    assert len(run["load"]) == 2 and run["cpu_count"] == os.cpu_count()
    assert published == [gpu.TITLE]  # only the section this run measured
    json.dumps(results)  # JSON-able


def test_saved_scaling_outputs_make_the_scaling_section(tmp_path, monkeypatch, capsys):
    paths = []
    for index, result in enumerate(scaling_run()["children"]):
        paths.append(tmp_path / f"child{index}.txt")
        paths[-1].write_text("log line\nRESULT" + json.dumps(result) + "\n")
    monkeypatch.setattr(gpu, "ROOT", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["gpu.py", f"--scaling_results={paths[0]},{paths[1]}", "--no_write"])
    gpu.main()
    out = capsys.readouterr().out
    assert out.startswith("Measured 2026-01-02 on Test GPU, 80 GiB; JAX 0.9, Keras 3.1.\n\nThe same step")
    assert f"Command: `python -m benchmarks.gpu --scaling_results={paths[0]},{paths[1]}` (children:" in out
    assert not (tmp_path / gpu.FILE).exists()


def test_gpu_tensorflow_sections_from_child_results(monkeypatch):
    # The TensorFlow GPU path cannot run here; its sections are checked on stand-in child results.
    rates = {
        name: 10.0
        for name in (
            "eager",
            "fit",
            "fit_spe10",
            "fit_xla",
            "fit_mixed",
            "fit_mixed_spe10",
            "fit_mixed_pipeline",
        )
    }
    mnist = {
        "experiment": "mnist",
        "model": "s4",
        "images_per_step": 128,
        "gflop_per_step": 1.0,
        "matmul_gflops": 100.0,
        "matmul_gflops_mixed": 200.0,
        "pipeline_steps_per_s": 50.0,
        "rates": rates,
        "peak_rss_mb": 1.0,
        "mixed_policy": "mixed_float16",
    }
    children = iter([mnist, {"failed": "out of memory"}, {"failed": "out of memory"}])
    monkeypatch.setattr(gpu, "run_child", lambda arguments, env=None: next(children))
    monkeypatch.setattr(gpu, "gpu_name", lambda: "Test GPU")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "", ""))
    sections = gpu.tensorflow_sections("")
    assert "| fit | 46.9 | 0.98 |" in sections["GPU benchmark (TensorFlow)"]  # 468.75 steps at 10 steps/s
    assert "| (preset) |" in sections["GPU benchmark (TensorFlow)"]
    assert "| shapes3d | skipped: failed: out of memory |" in sections["Benchmark suite (GPU)"]

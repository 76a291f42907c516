"""benchmarks/gpu.py, the one GPU command: on a machine without a GPU it says so, and its
sections are written from (stand-in) child results."""

import json
import subprocess
import sys

import pytest

from benchmarks import gpu


@pytest.mark.slow
def test_gpu_benchmark_on_a_machine_without_a_gpu_says_so_and_exits_0(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["benchmarks/gpu.py", "--backend=tensorflow", "--no_write"])
    gpu.main()  # returns: exit code 0
    assert "No GPU is visible to tensorflow" in capsys.readouterr().out


def test_gpu_scaling_section_reads_saved_child_output(tmp_path):
    row = {
        "precision": "float32",
        "pairs": 1,
        "set_size": 32,
        "images_per_step": 64,
        "steps_per_s": 100.0,
        "images_per_s": 6400.0,
        "peak_memory_mb": 10.0,
    }
    result = {
        "experiment": "mnist",
        "device": "GPU",
        "jax": "0",
        "keras": "3",
        "scaling": {
            "steps": [
                row,
                {"precision": "float32", "pairs": 16, "set_size": 1024, "failed": "skipped: time budget"},
            ],
            "loss": [{"pairs": 1, "set_size": 32, "seconds": 0.002}],
        },
    }
    path = tmp_path / "child.txt"
    path.write_text("log line\nRESULT" + json.dumps(result) + "\n")
    body = gpu.scaling_body([gpu.run_output(str(path))])
    assert "| mnist (s4) | float32 | 1 | 32 | 64 | 100.0 | 6,400 | 2.00 | 20% | 10 |" in body
    assert "skipped: time budget" in body


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

"""benchmarks/loops.py: the work count against Table S3 by hand, and the runners on a small step."""

import numpy as np
import tensorflow as tf

import models
from benchmarks import loops


def test_forward_macs_of_s3_match_the_table_by_hand():
    # Table S3 on 64x64x3: convolution outputs 62, 60, 29, 27, 25, 12 pixels a side, 3x3 kernels.
    convolutions = [(62, 32, 3), (60, 32, 32), (29, 64, 32), (27, 64, 64), (25, 128, 64), (12, 128, 128)]
    expected = sum(side * side * out * 9 * inp for side, out, inp in convolutions) + 12 * 12 * 128 * 128 + 128 * 64
    assert loops.forward_macs(models.build("s3")) == expected == 148_555_136
    assert loops.training_gflop(models.build("s3"), 64) == 6 * expected * 64 / 1e9


def test_interleaved_rates_take_the_median_of_each_runner():
    calls = []

    def runner(values):
        values = iter(values)
        return lambda steps: calls.append(steps) or next(values)

    rates = loops.interleaved_rates({"a": runner([1.0, 9.0, 2.0]), "b": runner([5.0, 4.0, 6.0])}, steps=7, rounds=3)
    assert rates == {"a": 2.0, "b": 5.0}
    assert calls == [7] * 6


def test_eager_and_fit_runners_train_the_same_step():
    rng = np.random.default_rng(0)
    batch = {key: rng.integers(0, 256, size=(1, 8, 28, 28, 1), dtype=np.uint8) for key in ("set_a", "set_b")}
    build = lambda: models.build("s4")  # noqa: E731
    eager = loops.eager_runner(build, batch, "l2sq", 1.0)
    fit = loops.fit_runner(build, batch, steps_per_execution=2)
    assert eager(2) > 0 and fit(3) > 0  # three steps round down to one call of two
    model = loops.compiled_model(build)
    assert loops.pipeline_fit_rate(model, tf.data.Dataset.from_tensors(batch).repeat(), 2, 2) > 0
    assert int(model.optimizer.iterations.numpy()) == 6  # three epochs of two steps, the first uncounted


def test_keras_ops_restatement_of_the_loss_matches_abc_tf_losses():
    # benchmarks/gpu_keras.py trains on JAX with this restatement; it must be the library's loss.
    from abc_tf import losses
    from benchmarks import gpu_keras

    rng = np.random.default_rng(3)
    sets = [tf.constant(rng.normal(size=(2, n, 5)), tf.float32) for n in (6, 4, 6, 4)]
    for similarity, temperature in (("l2sq", 1.0), ("l2", 0.5), ("cosine", 0.1)):
        for views in (sets[:2], sets):
            expected, _ = losses.abc_loss(*views[:2], similarity, temperature, *views[2:])
            got = gpu_keras.abc_loss_ops(*views[:2], similarity, temperature, *views[2:])
            np.testing.assert_allclose(float(got), float(expected), rtol=1e-5)


def test_gpu_keras_lays_out_each_preset_batch():
    from benchmarks import gpu_keras

    assert gpu_keras.experiment_settings("mnist")["set_shapes"] == [(1, 64, 28, 28, 1)] * 2
    # pose_quick: double augmentation, so set_a, set_b and their second views.
    assert gpu_keras.experiment_settings("pose_quick")["set_shapes"] == [(4, 32, 32, 32, 3)] * 4


def test_gpu_benchmark_on_a_machine_without_a_gpu_says_so_and_exits_0():
    import subprocess
    import sys

    completed = subprocess.run(
        [sys.executable, "benchmarks/gpu.py", "--backend=tensorflow", "--no_write"], capture_output=True, text=True
    )
    assert completed.returncode == 0, completed.stderr
    assert "No GPU is visible to tensorflow" in completed.stdout


def test_bare_runner_trains_the_model_with_a_plain_compiled_step():
    rng = np.random.default_rng(1)
    batch = {key: rng.integers(0, 256, size=(1, 8, 28, 28, 1), dtype=np.uint8) for key in ("set_a", "set_b")}
    run = loops.bare_runner(lambda: models.build("s4"), batch)
    assert run(3) > 0


def test_gpu_scaling_section_reads_saved_child_output(tmp_path):
    import json

    from benchmarks import gpu

    row = {"precision": "float32", "pairs": 1, "set_size": 32, "images_per_step": 64, "steps_per_s": 100.0,
           "images_per_s": 6400.0, "peak_memory_mb": 10.0}
    result = {"experiment": "mnist", "device": "GPU", "jax": "0", "keras": "3", "scaling": {
        "steps": [row, {"precision": "float32", "pairs": 16, "set_size": 1024, "failed": "skipped: time budget"}],
        "loss": [{"pairs": 1, "set_size": 32, "seconds": 0.002}]}}
    path = tmp_path / "child.txt"
    path.write_text("log line\nRESULT" + json.dumps(result) + "\n")
    body = gpu.scaling_body([gpu.run_output(str(path))])
    assert "| mnist (s4) | float32 | 1 | 32 | 64 | 100.0 | 6,400 | 2.00 | 20% | 10 |" in body
    assert "skipped: time budget" in body


def test_training_scaling_reading_is_computed_from_the_rows():
    from benchmarks import training_scaling as scaling

    s3, s4 = list(scaling.MODELS)
    steps = [dict(model=s3, policy=policy, pairs=pairs, size=size, seconds=seconds, peak_mb=1.0)
             for policy in ("float32", scaling.MIXED) for pairs, size, seconds in ((1, 512, 2.0), (16, 32, 1.0))]
    encoder = [dict(model=model, policy="float32", images=100, seconds=1.0, peak_mb=1.0) for model in (s3, s4)]
    loss = [dict(similarity="l2sq", dim=64, pairs=1, size=100, seconds=2.0, peak_mb=1.0),
            dict(similarity="l1", dim=64, pairs=4, size=100, seconds=6.0, peak_mb=50.0)]
    whole = [dict(pairs=4, size=100, dim=64, seconds=3.0, peak_mb=200.0)]
    text = "\n".join(scaling.reading({"steps": steps, "encoder": encoder, "loss": loss, "whole_l1": whole}))
    assert "one pair of sets of 512 takes 2.00x (float32) and 2.00x (mixed_bfloat16)" in text
    # 2 s of loss against 200 images at 100 images/s: half the step.
    assert "l2sq, d=64, P=1: the loss at N=100 takes 2000 ms, 50% of a float32 S3 step." in text
    assert "chunked 50 MB against 200 MB whole, at 2.0x the time" in text
    assert "for l1/linf: 43% (l1, P=4, N=100, d=64)" in text


def test_gpu_tensorflow_sections_from_child_results(monkeypatch):
    # The TensorFlow GPU path cannot run here; its sections are checked on stand-in child results.
    import subprocess

    from benchmarks import gpu

    rates = {name: 10.0 for name in ("eager", "fit", "fit_spe10", "fit_xla", "fit_mixed", "fit_mixed_spe10", "fit_mixed_pipeline")}
    mnist = {"experiment": "mnist", "model": "s4", "images_per_step": 128, "gflop_per_step": 1.0, "matmul_gflops": 100.0,
             "matmul_gflops_mixed": 200.0, "pipeline_steps_per_s": 50.0, "rates": rates, "peak_rss_mb": 1.0,
             "mixed_policy": "mixed_float16"}
    children = iter([mnist, {"failed": "out of memory"}, {"failed": "out of memory"}])
    monkeypatch.setattr(gpu, "run_child", lambda arguments, env=None: next(children))
    monkeypatch.setattr(gpu, "gpu_name", lambda: "Test GPU")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "", ""))
    sections = gpu.tensorflow_sections("")
    assert "| fit | 46.9 | 0.98 |" in sections["GPU benchmark (TensorFlow)"]  # 468.75 steps at 10 steps/s
    assert "| (preset) |" in sections["GPU benchmark (TensorFlow)"]
    assert "| shapes3d | skipped: failed: out of memory |" in sections["Benchmark suite (GPU)"]

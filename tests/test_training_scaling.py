"""benchmarks/training_scaling.py: the reading of the scaling rows is computed from them, and the
sections are written from the results alone."""

from benchmarks import training_scaling as scaling
from abc_tf.config import SIMILARITIES


def results() -> dict:
    s3, s4 = list(scaling.MODELS)
    steps = [
        dict(model=model, policy=policy, pairs=pairs, size=size, seconds=seconds, peak_mb=1.0)
        for model in (s3, s4)
        for policy in ("float32", scaling.MIXED)
        for pairs, size, seconds in ((1, 512, 2.0), (16, 32, 1.0))
    ]
    encoder = [
        dict(model=model, policy=policy, images=images, seconds=images / 100, peak_mb=1.0)
        for model in (s3, s4)
        for policy in ("float32", scaling.MIXED)
        for images in (64, 1024)
    ]
    loss = [dict(similarity=s, dim=64, pairs=1, size=100, seconds=2.0, peak_mb=1.0) for s in SIMILARITIES]
    loss.append(dict(similarity="l1", dim=64, pairs=4, size=100, seconds=6.0, peak_mb=50.0))
    whole = [dict(pairs=4, size=100, dim=64, seconds=3.0, peak_mb=200.0)]
    fit = {"bare": {"steps_per_s": 2.0, "cpu_ms": 10.0}, "fit": {"steps_per_s": 1.0, "cpu_ms": 11.0}}
    return {
        "steps": steps,
        "encoder": encoder,
        "loss": loss,
        "whole_l1": whole,
        "fit_vs_bare": {s3: fit},
        "machine": "Measured on a test.",
        "load": [0.5, 1.5],
        "cpu_count": 2,
        "command": "the command",
    }


def test_training_scaling_reading_is_computed_from_the_rows():
    text = "\n".join(scaling.reading(results()))
    assert "One pair of 512 costs 2.00x the time of 16 pairs of 32." in text
    # 2 s of loss against 200 images at 100 images/s: half the step.
    assert "Only l1 and linf, with no matmul form, reach 50% of a step" in text
    assert "chunked l1 holds 50 MB where whole takes 200 (P=4, N=100)." in text


def test_both_sections_are_written_from_the_results_alone():
    data = results()
    assert set(scaling.SECTIONS) == {scaling.TITLE, scaling.FIT_TITLE}
    text = scaling.section(data)
    assert text.startswith("Seconds a float32 `fit` step at 1,024 images in P pairs of sets of N")
    assert "| shapes3d | 2.000 | 1.000 |" in text
    assert "`the command`, Measured on a test, load 0.5-1.5." in text
    fit = scaling.fit_section(data)
    assert "| shapes3d (S3, d=64) | 10.0 | 11.0 | 1.100 |" in fit

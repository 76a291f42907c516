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
    assert (
        "one pair of sets of 512 takes 2.00x (S3 float32), 2.00x (S3\nmixed_bfloat16), 2.00x and 2.00x"
        in text
    )
    # 2 s of loss against 200 images at 100 images/s: half the step.
    assert "the\nloss takes 2000 ms (l2sq), 2000 (l2), 2000 (l1), 2000 (linf) and 2000 (cosine): 50%" in text
    assert "chunked 50 MB against 200 MB whole, at 2.0x the time" in text
    assert "and 50%\nfor l1/linf (l1, P=1, N=100, d=64)" in text
    assert "N=100: 3000 ms, 200 MB whole against 6000 ms, 50 MB\nchunked." in text


def test_both_sections_are_written_from_the_results_alone():
    data = results()
    assert set(scaling.SECTIONS) == {scaling.TITLE, scaling.FIT_TITLE}
    text = scaling.section(data)
    assert text.startswith("Measured on a test.\n1-minute load average 0.5 at the start, 1.5 at the end (2")
    assert "| shapes3d (S3, d=64) | float32 | 1 | 512 | 1024 | 2.000 | 512 | 1 |" in text
    assert text.endswith("Command: `the command`")
    fit = scaling.fit_section(data)
    assert "| shapes3d (S3, d=64) | 2.00 | 1.00 | 2.00 | 10.0 | 11.0 | 1.100 |" in fit

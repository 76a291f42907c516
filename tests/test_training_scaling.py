"""benchmarks/training_scaling.py: the reading of the scaling rows is computed from them."""

from benchmarks import training_scaling as scaling


def test_training_scaling_reading_is_computed_from_the_rows():
    s3, s4 = list(scaling.MODELS)
    steps = [
        dict(model=s3, policy=policy, pairs=pairs, size=size, seconds=seconds, peak_mb=1.0)
        for policy in ("float32", scaling.MIXED)
        for pairs, size, seconds in ((1, 512, 2.0), (16, 32, 1.0))
    ]
    encoder = [
        dict(model=model, policy="float32", images=100, seconds=1.0, peak_mb=1.0) for model in (s3, s4)
    ]
    loss = [
        dict(similarity="l2sq", dim=64, pairs=1, size=100, seconds=2.0, peak_mb=1.0),
        dict(similarity="l1", dim=64, pairs=4, size=100, seconds=6.0, peak_mb=50.0),
    ]
    whole = [dict(pairs=4, size=100, dim=64, seconds=3.0, peak_mb=200.0)]
    text = "\n".join(scaling.reading({"steps": steps, "encoder": encoder, "loss": loss, "whole_l1": whole}))
    assert "one pair of sets of 512 takes 2.00x (float32) and 2.00x (mixed_bfloat16)" in text
    # 2 s of loss against 200 images at 100 images/s: half the step.
    assert "l2sq, d=64, P=1: the loss at N=100 takes 2000 ms, 50% of a float32 S3 step." in text
    assert "chunked 50 MB against 200 MB whole, at 2.0x the time" in text
    assert "for l1/linf: 43% (l1, P=4, N=100, d=64)" in text

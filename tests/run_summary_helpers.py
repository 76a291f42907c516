"""A factor-isolation measurement for the end-of-run summary (abc_tf.evaluation.run_summary) and train.py's
table of it."""

NAMES = ["floor_hue", "wall_hue", "object_hue", "shape"]
# A measurement as FactorIsolationCallback records it: wall hue dropped, floor and object hue kept.
RECORD = {
    "step": 600,
    "sigma": 1.0,  # the noise of the measurement (the loss's length scale here)
    "probe_accuracy": {"floor_hue": 0.31, "wall_hue": 0.11, "object_hue": 0.24, "shape": 0.26},
    "mine": {"floor_hue": 0.74, "wall_hue": -0.004, "object_hue": 0.41, "shape": 0.09},
}

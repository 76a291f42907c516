"""abc_tf.evaluation.estimators.sweep_plots: the noise sweeps are written as PNGs and reject
mismatched inputs."""

from __future__ import annotations

import numpy as np
import pytest

from abc_tf.evaluation.estimators import sweep_plots

NAMES = ["floor_hue", "wall_hue", "object_hue", "scale", "shape", "orientation"]


@pytest.mark.slow
def test_a_sweep_and_a_grid_of_sweeps_write_pngs(tmp_path):
    rng = np.random.default_rng(1)
    sweep_plots.plot_mi_sweep(
        np.logspace(-2, 1, 7), rng.uniform(size=(7, 6)), NAMES, ["wall_hue"], 1.0, tmp_path / "sweep.png"
    )
    panel = {
        "sigmas": [0.1, 1.0],
        "values": np.ones((2, 6)),
        "inactive": ["wall_hue"],
        "length_scale": 0.5,
        "label": "x",
    }
    sweep_plots.plot_sweep_grid([panel] * 3, NAMES, tmp_path / "grid.png")
    for name in ("sweep", "grid"):
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name


def test_mismatched_inputs_raise():
    with pytest.raises(ValueError, match="sigmas"):
        sweep_plots.plot_mi_sweep(np.ones(3), np.ones((4, 6)), NAMES)
    with pytest.raises(ValueError, match="not among"):
        sweep_plots.plot_mi_sweep(np.ones(3), np.ones((3, 6)), NAMES, inactive=["colour"])
    with pytest.raises(ValueError, match="at least one panel"):
        sweep_plots.plot_sweep_grid([], NAMES)

"""The end-of-run summary: which factors a run kept and dropped, printed and written to run_dir."""

from __future__ import annotations

import json

import numpy as np
import pytest

from abc_tf.runs import experiments
from abc_tf.evaluation import run_summary
from run_summary_helpers import NAMES, RECORD


def test_verdicts_table_and_files(tmp_path):
    summary = run_summary.factor_summary(
        RECORD, NAMES, ["wall_hue"], [10, 10, 10, 4], sigma=1.0, num_images=512
    )
    rows = {row["factor"]: row for row in summary["factors"]}
    assert [rows[name]["verdict"] for name in NAMES] == ["kept", "dropped", "kept", "weak"]
    assert rows["wall_hue"]["trained_as"] == "inactive" and rows["floor_hue"]["trained_as"] == "active"
    assert rows["shape"]["chance"] == 0.25 and summary["mi_estimator"] == "mine"

    table = run_summary.format_table(summary).splitlines()
    assert table[0].startswith("What the run isolated at step 600 (noise sigma 1")
    assert table[3].split() == [
        "wall_hue",
        "inactive",
        "0.00",
        "0.11",
        "0.10",
        "dropped",
    ]  # -0.004 shown as 0
    assert table[2].split() == ["floor_hue", "active", "0.74", "0.31", "0.10", "kept"]

    json_path, png_path = run_summary.write(str(tmp_path), summary)
    assert json.load(open(json_path)) == summary
    assert open(png_path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_without_mutual_information_the_probe_decides():
    record = {"step": 10, "probe_accuracy": {"a": 0.9, "b": 0.52}}
    summary = run_summary.factor_summary(record, ["a", "b"], [], [2, 2], sigma=1.0, num_images=64)
    assert [row["verdict"] for row in summary["factors"]] == ["kept", "dropped"]
    assert summary["mi_estimator"] is None
    assert "   -  " in run_summary.format_table(summary)


@pytest.mark.slow
def test_folders_with_a_labels_csv_get_the_same_table(tmp_path):
    import keras

    from abc_tf.runs.experiments import get_preset
    from folder_helpers import make_folder

    make_folder(str(tmp_path / "data"), {"a": 12, "b": 12, "c": 12})
    rows = ["filename,colour"] + [
        f"{group}/img_{index:03d}.png,{index % 3}" for group in "abc" for index in range(12)
    ]
    (tmp_path / "data" / "labels.csv").write_text("\n".join(rows) + "\n")
    config = get_preset("folders").replace(path=str(tmp_path / "data"), image_size=8)
    encoder = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Flatten(), keras.layers.Dense(4)])
    summary = run_summary.summary_from_data(config, encoder, step=50, num_images=30)
    rows = {row["factor"]: row for row in summary["factors"]}
    assert set(rows) == {"group", "colour"} and summary["num_images"] == 30
    assert rows["group"]["trained_as"] == "inactive" and rows["colour"]["trained_as"] == "active"
    assert rows["colour"]["chance"] == pytest.approx(1 / 3)
    # Without label columns there is nothing beyond the groups the sets were built from.
    (tmp_path / "data" / "labels.csv").unlink()
    assert run_summary.summary_from_data(config, encoder, step=50) is None


@pytest.mark.slow
def test_mnist_and_pose_runs_get_a_table_of_their_labels(tmp_path):
    import keras

    from abc_tf.runs.experiments import get_preset
    from abc_tf.data.mnist import sources as mnist_sources

    rng = np.random.default_rng(0)
    labels = np.arange(200) % 10
    np.savez(
        tmp_path / "m.npz",
        x_train=rng.integers(0, 256, (200, 28, 28), dtype=np.uint8),
        y_train=labels,
        x_test=rng.integers(0, 256, (200, 28, 28), dtype=np.uint8),
        y_test=labels,
    )
    config = get_preset("mnist").replace(path=str(tmp_path / "m.npz"))
    encoder = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Flatten(), keras.layers.Dense(4)])
    summary = run_summary.summary_from_data(config, encoder, step=500, num_images=120)
    assert [(row["factor"], row["trained_as"]) for row in summary["factors"]] == [
        ("digit", "inactive"),
        ("slant", "active"),
        ("thickness", "active"),
    ]
    assert summary["num_images"] == 120 and [row["chance"] for row in summary["factors"]] == [0.1, 0.25, 0.25]
    mnist_sources._load_cached.cache_clear()

    pose_config = experiments.config_for(
        data="pose",
        source="procedural",
        image_size=16,
        similarity="cosine",
        temperature=0.1,
        real_fraction=0.0,
    )
    encoder = keras.Sequential([keras.Input((16, 16, 3)), keras.layers.Flatten(), keras.layers.Dense(4)])
    summary = run_summary.summary_from_data(pose_config, encoder, step=10, num_images=48)
    assert [row["factor"] for row in summary["factors"]] == ["azimuth", "elevation"]
    assert all(row["verdict"] in ("kept", "weak", "dropped") for row in summary["factors"])

"""What an embedding says about each known label (abc_tf.evaluation.tasks.label_information): the
batching of complete and partial labels, and the trained-against-untrained report of a run
directory of grouped folders with a labels.csv."""

from __future__ import annotations

import numpy as np
import pytest

from abc_tf.data.family import GroupedImages
from abc_tf.evaluation.tasks import label_information
from abc_tf.evaluation.estimators import mine, noise, probes
from abc_tf.runs.run_dir import embed, load_run
from folder_helpers import config_for, make_folder, write_stand_in_run


@pytest.mark.slow
def test_evaluate_run_reports_trained_and_untrained_per_label(tmp_path):
    make_folder(str(tmp_path / "data"), {"a": 6, "b": 6, "c": 6}, image_size=(20, 16))
    (tmp_path / "data" / "labels.csv").write_text(
        "file,parity\n" + "".join(f"{g}/img_{i:03d}.png,{i % 2}\n" for g in "abc" for i in range(6))
    )
    config = config_for(tmp_path / "data", image_size=32)
    run_dir = tmp_path / "run"
    write_stand_in_run(run_dir, config)
    encoder = load_run(str(run_dir)).encoder
    report = label_information.evaluate_run(
        str(run_dir),
        probe_settings=probes.ProbeSettings(epochs=1, batch_size=8),
        mine_settings=None,
        relative_sigma=0.1,
    )
    assert set(report) == {"trained", "untrained"}
    # Noise of 0.1 x each embedding's own spread, reported in embedding units.
    spread = noise.spread(embed(encoder, label_information.load_labelled(config).images).astype(np.float64))
    # The same embed() of the same images, the same float64 spread: equal but for 0.1's rounding.
    assert report["trained"]["group"].sigma == pytest.approx(0.1 * spread, rel=1e-4)
    assert set(report["trained"]) == {"group", "parity"}
    assert report["trained"]["group"].classes == 3 and report["trained"]["parity"].count == 18
    assert "| group | 3 |" in label_information.markdown_table(report)


def test_label_information_handles_partial_and_constant_labels(monkeypatch):
    """The glue's batching: complete labels share one call, partial labels get theirs on known rows."""
    calls = []

    def fake_probes(embeddings, factors, sigma, names, settings, seed):
        calls.append(("probe", list(names), len(embeddings), sigma))
        return probes.ProbeResult(np.full(len(names), 0.5), 1.0 / (factors.max(axis=0) + 1.0), list(names))

    def fake_mine(embeddings, factors, sigma, settings, seed):
        calls.append(("mine", factors.shape[1], len(embeddings), sigma))
        return np.arange(factors.shape[1], dtype=float) + 0.25

    monkeypatch.setattr(probes, "probe_accuracies", fake_probes)
    monkeypatch.setattr(mine, "mine_mutual_information", fake_mine)
    groups = np.repeat(np.arange(4, dtype=np.int32), 10)
    partial = (np.arange(40) % 3).astype(np.int32)
    partial[:8] = -1  # unknown for 8 images
    grouped = GroupedImages(
        images=np.zeros((40, 2, 2, 1), np.uint8),
        group_names=list("abcd"),
        groups=groups,
        files=[str(i) for i in range(40)],
        labels={
            "group": groups,
            "partial": partial,
            "parity": groups % 2,
            "constant": np.zeros(40, np.int32),
        },
    )
    embeddings = np.random.default_rng(0).normal(size=(40, 3))
    scores = label_information.label_information(
        embeddings, grouped, sigma=0.1, mine_settings=mine.MineSettings()
    )
    assert list(scores) == ["group", "partial", "parity"]  # the one-class label is skipped
    assert calls == [
        ("probe", ["group", "parity"], 40, 0.1),
        ("mine", 2, 40, 0.1),
        ("probe", ["partial"], 32, 0.1),
        ("mine", 1, 32, 0.1),
    ]
    assert scores["group"].count == 40 and scores["partial"].count == 32 and scores["partial"].classes == 3
    assert scores["group"].chance == pytest.approx(0.25) and scores["parity"].mutual_information == 1.25
    assert scores["partial"].mutual_information == 0.25 and scores["group"].sigma == 0.1
    assert (
        label_information.label_information(embeddings, grouped, 0.1, mine_settings=None)[
            "group"
        ].mutual_information
        is None
    )
    with pytest.raises(ValueError, match="Unknown labels"):
        label_information.label_information(embeddings, grouped, 0.1, names=["colour"], mine_settings=None)

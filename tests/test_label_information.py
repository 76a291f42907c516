"""What an embedding says about each known label (abc_tf.evaluation.tasks.label_information): the
batching of complete and partial labels, and the trained-against-untrained report of a run
directory of grouped folders with a labels.csv."""

from __future__ import annotations

import numpy as np
import pytest

from abc_tf.evaluation.tasks import label_information
from abc_tf.evaluation.estimators import noise, probes
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

"""scripts/pose_table_s1.py: its rows flag, the aggregation over seeds and the tables (the
evaluation itself is abc_tf.evaluation.tasks.pose_accuracy's, tested in test_pose_accuracy.py)."""

import numpy as np
import pytest

from scripts import pose_table_s1 as table


def test_rows_are_name_dir_pairs():
    assert table.parse_rows(["ABC=runs/a", "ML-VAE=runs/b=c"]) == [("ABC", "runs/a"), ("ML-VAE", "runs/b=c")]
    with pytest.raises(ValueError, match="NAME=DIR, got 'runs/a'"):
        table.parse_rows(["runs/a"])


def test_seeds_aggregate_to_mean_and_sample_std_and_the_paper_stands_beside_ours():
    seeds = [
        dict(median_error_deg=10.0, acc_at_30=0.8, flip_median_error_deg=8.0, flip_acc_at_30=0.9),
        dict(median_error_deg=14.0, acc_at_30=0.6, flip_median_error_deg=9.0, flip_acc_at_30=0.95),
    ]
    out = table.aggregate(seeds)
    assert out["median_error_deg"]["mean"] == 12.0 and out["median_error_deg"]["seeds"] == 2
    np.testing.assert_allclose(out["acc_at_30"]["std"], np.std([0.8, 0.6], ddof=1))
    assert table.aggregate(seeds[:1])["acc_at_30"]["std"] == 0.0
    summary = {
        "rows": {
            "ABC": {"domains": {"synthetic": out, "real": out}},
            "mine": {"domains": {"synthetic": out, "real": out}},
        }
    }
    text = table.markdown(summary, "synthetic")
    assert "| ABC | 2 | 12 ± 2.8 | 0.7 ± 0.14 |" in text and text.rstrip().endswith(
        "| — |"
    )  # no paper row "mine"
    assert "| 5.8 / 0.83 |" in text  # Table S1's ABC row
    assert "| 14.1 / 0.65 |" in table.markdown(summary, "real")  # Table 1's ABC cars row


def test_its_flags_are_its_own():
    # argparse, not absl's global FLAGS: tests import train.py's flags in the same process.
    args = table.parse_args(["--rows=ABC=runs/a", "--repeats=3"])
    assert (args.rows, args.repeats, args.dictionary_size, args.queries) == ("ABC=runs/a", 3, 1800, 500)

"""benchmarks/lookup_scaling.py: its section of BENCHMARKS.md, written from a results dict alone."""

from __future__ import annotations

import pytest

from benchmarks import lookup_scaling

# (N, ms reading the keys, ms per single-image call, queries/s of a 256 batch, evaluation s)
MEASURED = (
    (1_000, 0.01, 0.43, 375_602, 0.04),
    (10_000, 0.09, 0.55, 91_453, 0.44),
    (100_000, 1.07, 1.48, 14_057, 3.47),
    (1_000_000, 12.07, 8.39, 1_734, 30.85),
)


def _row(size: int, scan_ms: float, single_ms: float, batch_rate: float, eval_s: float) -> dict:
    return {
        "size": size,
        "scan_s": scan_ms / 1000,
        "export_s": 1.5,
        "export_1_s": single_ms / 1000,
        "export_1_mb": 19.0,
        "export_256_s": 256 / batch_rate,
        "export_256_mb": 148.0,
        "nn_mb": 267.0,
        "nn_s": 256 / 824,
        "eval_mb": 507.0,
        "eval_s": eval_s,
        "pool_mb": 4 * size * 64 * 4 / 1e6,
        "old_eval_mb": 500 * 5 * size * 4 / 2**20,
    }


def _results(measured=MEASURED) -> dict:
    return {
        "sizes": ",".join(str(m[0]) for m in measured),
        "rows": [_row(*m) for m in measured],
        "dim": 64,
        "similarity": "cosine",
        "batch": 256,
        "eval_queries": 500,
        "repeats": 50,
        "pool_factor": 4,
        "tile_queries": 256,
        "tile_scores": 2**25,
        "paper_dictionary": 1800,
        "serving_limit_s": 0.010,
        "machine": "Measured on a test.",
        "load": [0.1, 1.0],
        "cpu_count": 2,
        "command": "python -m benchmarks.lookup_scaling --sizes 1000,10000,100000,1000000",
    }


def test_the_section_writes_the_table_the_reading_and_the_command_from_the_results():
    text = lookup_scaling.section(_results())
    assert text.startswith("Exact search of random d=64 keys (cosine)")
    assert "| 1,000,000 | 8.39 | 1,734 | 30.85 | 507 |" in text.splitlines()
    # No size passes 10 ms: the limit is extrapolated through the two largest sizes.
    assert "extrapolated from N = 100,000 and N = 1,000,000, **it would pass 10 ms" in text
    assert "at about 1,200,000 keys**." in text
    assert (
        "`python -m benchmarks.lookup_scaling --sizes 1000,10000,100000,1000000`, Measured on a test" in text
    )


def test_the_serving_limit_is_interpolated_where_a_measured_size_passes_it():
    slow = [(m[0], m[1], 4 * m[2], m[3], m[4]) for m in MEASURED]  # 1.72 ms at 10^3 ... 33.56 ms at 10^6
    size, low, high = lookup_scaling.serving_limit(_results(slow)["rows"], 0.010)
    assert (low["size"], high["size"]) == (100_000, 1_000_000)
    assert size == pytest.approx(100_000 + (10 - 5.92) / ((33.56 - 5.92) / 900_000))
    text = lookup_scaling.section(_results(slow))
    assert "**One image a call passes 10 ms at about 230,000 keys**." in text


def test_one_size_writes_a_section_without_a_limit():
    text = lookup_scaling.section(_results(MEASURED[:1]))
    assert "Too few sizes, or no growth between them, to place where a call passes 10 ms." in text
    assert lookup_scaling.FILE == "docs/figures/benchmarks/lookup_scaling.json"

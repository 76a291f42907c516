"""Set curation against data-set size: sets/s and memory of the factor-grid curation, no images.

Synthetic grids hold 10^4 to 10^7 items, and 10^9 to show the trend. Each has the six factors of
3dshapes: floor, wall and object hue, scale, shape, orientation. All value counts scale together.
3dshapes' own 480,000 is a row. Three ways of curating are measured in one process, on the same grids:

- full grid: ``SetCurator`` with ``items=None``, as the procedural and h5 backends use it. It is
  index arithmetic, promised O(1) in the grid size.
- item table: ``items`` holds one row of factor indices per record, as in the tfds backend. A CSR
  grouping is built once in O(N log N) time and O(N) memory. Then each set costs O(1).
- ``sample_items(4096)``: the distinct labelled sample of the evaluation.

sets/s counts ids only, at 10^4 sets per call and at one set per call as the pipeline draws them.
Each is the best of three windows of ``--seconds``. Memory is the ``tracemalloc`` peak over a call.
Numpy reports its buffers to it, so it counts what the call allocates, not the process.

  python -m benchmarks.curation_scaling [--seconds 1.0] [--no_write]
"""

from __future__ import annotations

import math
import os
import time
import tracemalloc

import numpy as np

from abc_tf.data import factor_grid
from abc_tf.data.shapes3d import family as s3d
from benchmarks import report
from benchmarks.report import (
    FIGURES,
    argument_parser,
    log_log_axes,
    measured,
    publish,
    save_results,
)

TITLE = "Set curation against data-set size"
FILE = "docs/figures/benchmarks/curation_scaling.json"
SET_SIZE = 32
SETS_PER_CALL = 10_000
# Value counts of (floor_hue, wall_hue, object_hue, scale, shape, orientation), 3dshapes scaled.
GRIDS = (
    (5, 5, 5, 4, 2, 10),  # 10^4
    (10, 10, 10, 5, 4, 5),  # 10^5
    s3d.FACTOR_SIZES,  # 480,000 (3dshapes)
    (10, 10, 10, 8, 5, 25),  # 10^6
    (20, 20, 20, 10, 5, 25),  # 10^7
    (50, 50, 50, 16, 8, 100),  # 1.6 * 10^9, beyond the range asked: the full grid only
)
ITEM_TABLE_MAX = 10**7  # the item table of 10^7 rows is 480 MB; larger tables are left out
SAMPLE = 4096  # labelled images of the evaluation (evaluate.py --num_images)


def grid_of(sizes) -> factor_grid.FactorGrid:
    return factor_grid.FactorGrid(s3d.FACTOR_NAMES, tuple(int(s) for s in sizes))


def rate(function, seconds: float, windows: int = 3) -> float:
    """Calls/s of ``function``: the best of ``windows`` windows of about ``seconds`` each.
    One warm-up call comes first. Other jobs on the shared cores only ever slow a window down."""
    function()
    rates = []
    for _ in range(windows):
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            function()
            calls += 1
        rates.append(calls / (time.perf_counter() - start))
    return max(rates)


def peak_mb(function) -> tuple[float, object]:
    """A pair: the tracemalloc peak in MB of what ``function`` allocates, and its result."""
    tracemalloc.start()
    try:
        result = function()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 1e6, result


def measure(sizes, seconds: float) -> dict:
    grid = grid_of(sizes)
    inactive = grid.parse_factors("wall_hue")
    rng = np.random.default_rng(0)
    row = {"sizes": tuple(sizes), "items": grid.num_points}
    curator_mb, curator = peak_mb(lambda: factor_grid.SetCurator(grid, inactive, SET_SIZE))
    row["grid_build_mb"] = curator_mb
    row["grid_sets_per_s"] = SETS_PER_CALL * rate(lambda: curator.curated(rng, SETS_PER_CALL), seconds)
    row["grid_single_per_s"] = rate(lambda: curator.curated(rng, 1), seconds)
    row["grid_call_mb"], _ = peak_mb(lambda: curator.curated(rng, SETS_PER_CALL))
    start = time.perf_counter()
    row["sample_mb"], _ = peak_mb(lambda: curator.sample_items(np.random.default_rng(1), SAMPLE))
    row["sample_s"] = time.perf_counter() - start
    if grid.num_points <= ITEM_TABLE_MAX:
        items = grid.unravel(np.arange(grid.num_points))  # what a data source listing every record holds
        start = time.perf_counter()
        table_mb, table = peak_mb(lambda: factor_grid.SetCurator(grid, inactive, SET_SIZE, items=items))
        row["table_build_s"] = time.perf_counter() - start
        row["table_build_mb"] = table_mb
        row["table_items_mb"] = items.nbytes / 1e6
        row["table_sets_per_s"] = SETS_PER_CALL * rate(lambda: table.curated(rng, SETS_PER_CALL), seconds)
        row["table_call_mb"], _ = peak_mb(lambda: table.curated(rng, SETS_PER_CALL))
        del items, table
    return row


def plot(rows: list[dict], path_rate: str, path_memory: str) -> None:
    items = [r["items"] for r in rows]
    tables = [r for r in rows if "table_sets_per_s" in r]
    with log_log_axes(
        path_rate, "items in the data set", "sets/s (ids only)", "Set curation against data-set size"
    ) as ax:
        ax.plot(items, [r["grid_sets_per_s"] for r in rows], "o-", label="full grid, 10^4 sets per call")
        ax.plot(items, [r["grid_single_per_s"] for r in rows], "s-", label="full grid, 1 set per call")
        ax.plot(
            [r["items"] for r in tables],
            [r["table_sets_per_s"] for r in tables],
            "^-",
            label="item table, 10^4 sets per call",
        )

    title = "Memory of set curation against data-set size"
    with log_log_axes(
        path_memory, "items in the data set", "tracemalloc peak (MB)", title, legend_size=8
    ) as ax:
        ax.plot(items, [r["grid_call_mb"] for r in rows], "o-", label="full grid: one call of 10^4 sets")
        ax.plot(
            items,
            [max(r["grid_build_mb"], 1e-3) for r in rows],
            "s-",
            label="full grid: building the curator",
        )
        ax.plot(
            [r["items"] for r in tables],
            [r["table_build_mb"] for r in tables],
            "^-",
            label="item table: building the groups",
        )
        ax.plot(items, [r["sample_mb"] for r in rows], "v-", label=f"sample_items({SAMPLE})")


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    rows, set_size = results["rows"], results["set_size"]

    def cell(row: dict, key: str, fmt: str) -> str:
        return format(row[key], fmt) if key in row else "-"

    lines = [
        f"Sets of {set_size} ids drawn by index arithmetic from synthetic 3dshapes grids (the tfds item "
        "table: the JSON).",
        "",
        "| items | sets/s |",
        "|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['items']:,} | {r['grid_sets_per_s']:,.0f} |")
    first, last = rows[0], rows[-1]
    span = math.log10(last["items"] / first["items"])
    sizes = sorted({f"{r['grid_call_mb']:.1f}" for r in rows})
    memory = f"{sizes[0]} MB" if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]} MB"
    lines += [
        "",
        f"`{results['command']}`, {report.host(results)}",
        "",
        f"Over {span:.1f} decades the grid keeps its rate and its memory a call ({memory}): O(1) in size.",
        "",
        "![sets/s](docs/figures/benchmarks/curation_scaling_rate.png) "
        "![memory](docs/figures/benchmarks/curation_scaling_memory.png)",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--seconds", type=float, default=1.0, help="Timing window of each rate.")
    args = parser.parse_args()

    load_start = os.getloadavg()[0]
    rows = []
    for sizes in GRIDS:
        row = measure(sizes, args.seconds)
        rows.append(row)
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    results = {"rows": rows, "set_size": SET_SIZE, "sample": SAMPLE, **measured(load_start)}
    results["command"] = "python -m benchmarks.curation_scaling"
    paths = [os.path.join(FIGURES, f"curation_scaling_{name}.png") for name in ("rate", "memory")]
    publish(TITLE, section(results), not args.no_write, lambda: plot(rows, *paths))
    if not args.no_write:
        save_results("curation_scaling", results)


if __name__ == "__main__":
    main()

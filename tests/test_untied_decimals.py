"""The untied-decimals count (scripts/untied_decimals.py): figure links, marked tables (a
comparison.json section or a template, scripts/doc_tables.py), code and link targets are not
counted; prose and table cells are counted apart."""

from __future__ import annotations

from scripts.untied_decimals import count

TEXT = """The probe reads 0.91 and [0.42](docs/figures/x.json#/a) of it; see [v1.2](docs/a1.5.md).

| row | value |
|---|---|
| a | 1.25 ± 0.03 |

<!-- table: docs/figures/x.json "Runs" -->
| row | value |
| b | 2.50 |
<!-- end table -->

<!-- table: docs/figures/y.json
| row | value |
|---|---|
| c | {/c/mean:.2f} ± {/c/std:.2f} |
-->
| row | value |
|---|---|
| c | 3.75 ± 0.25 |
<!-- end table -->

    python train.py --trainer.learning_rate=3.5

Run `--scale=0.5` for 1,024.5 images.
"""


def test_only_untied_decimals_outside_code_are_counted_by_where_they_stand():
    assert count(TEXT) == {"prose": 2, "table cells": 2, "tied": 4}


def test_a_section_written_whole_from_its_file_is_tied():
    text = "## Speed\n\nIt runs 1.5 steps a second.\n\n## Notes\n\nAbout 2.5 more.\n"
    assert count(text, ("Speed",)) == {"prose": 1, "table cells": 0, "tied": 1}

"""Counts the decimals the documents quote without tying them to a file.

A decimal is tied when it is the text of a figure link (scripts/doc_figures.py) or sits in a
table written from its file (scripts/doc_tables.py: a comparison.json section or a template; a
template's own lines, inside its marker, are not counted). Code blocks, code spans, and link
targets are left out: they hold commands and paths, not measured numbers. Prose and table cells
are counted apart, since a table is written by a command and prose is not.

  python -m scripts.untied_decimals [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import re

from scripts.doc_figures import FIGURE_LINK
from scripts.doc_tables import BENCHMARKS, BENCHMARKS_DOC, TABLE, benchmark_sections, section_span

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ("RESULTS.md", "BENCHMARKS.md", "docs/REPRODUCTION.md")
DECIMAL = re.compile(r"(?<![\w.])\d[\d,]*\.\d+(?![\w.])")
CODE_BLOCK = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
INDENTED_CODE = re.compile(r"^(?: {4}|\t).*$", re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK_TARGET = re.compile(r"\]\([^)\s]*\)")


def count(text: str, written_sections: tuple[str, ...] = ()) -> dict[str, int]:
    """{"prose": n, "table cells": n, "tied": n}: the decimals of ``text`` by where they stand.

    ``written_sections``: titles of ``## `` sections written whole from a file (BENCHMARKS.md's
    benchmarks), tied as a whole."""
    tied = 0
    for title in written_sections:
        match = section_span(text, title)
        if match is not None:
            tied += len(DECIMAL.findall(CODE_SPAN.sub("", INDENTED_CODE.sub("", match["body"]))))
            text = text[: match.start("body")] + text[match.end("body") :]
    tied += sum(len(DECIMAL.findall(match["text"])) for match in FIGURE_LINK.finditer(text))
    tied += sum(len(DECIMAL.findall(match["body"])) for match in TABLE.finditer(text))
    text = TABLE.sub("", text)
    text = FIGURE_LINK.sub("", text)
    text = CODE_BLOCK.sub("", text)
    text = INDENTED_CODE.sub("", text)
    text = CODE_SPAN.sub("", text)
    text = LINK_TARGET.sub("]", text)
    counts = {"prose": 0, "table cells": 0, "tied": tied}
    for line in text.splitlines():
        where = "table cells" if line.lstrip().startswith("|") else "prose"
        counts[where] += len(DECIMAL.findall(line))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", default="", help="Also write the counts to this file.")
    args = parser.parse_args()
    counts = {}
    for name in DOCS:
        with open(os.path.join(ROOT, name)) as handle:
            written = tuple(
                title
                for module in BENCHMARKS
                if os.path.exists(os.path.join(ROOT, module.FILE))  # else the section is typed
                for title in benchmark_sections(module)
            )
            counts[name] = count(handle.read(), written if name == BENCHMARKS_DOC else ())
    print("| document | untied in prose | untied in table cells | tied to a file |")
    print("|---|---|---|---|")
    for name, found in counts.items():
        print(f"| {name} | {found['prose']} | {found['table cells']} | {found['tied']} |")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(counts, handle, indent=1)


if __name__ == "__main__":
    main()

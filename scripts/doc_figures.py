"""Checks every figure the documents tie to a file against that file.

A figure is tied to its file by writing it as a Markdown link whose target is a JSON (or CSV)
file under ``docs/figures/`` and whose fragment is a JSON Pointer (RFC 6901) to the value::

    | MNIST digit kept (NMI) | [0.89](docs/figures/mnist/style.json#/trained/nmi) | ...

(from ``docs/REPRODUCTION.md`` the target is ``figures/mnist/style.json#/trained/nmi``: links are
relative to the document). A key with a space is written percent-encoded, as RFC 6901 section 6
has a pointer in a URI fragment: ``curve.json#/measures/1-NN%20digit%20accuracy/3``. In a CSV
file the pointer is ``#/<row number from 0>/<column>``. The link's text is the figure as quoted:
its digits must equal the file's value rounded to as many decimals as the text shows; a thousands
separator and a unit after the number (``%``, ``°``, ``s``, ``x``, ``ms`` ...) are allowed, a
``%`` meaning the file holds the fraction (0.53 for 53%).

The tables whose header has a column named ``ours`` (RESULTS.md's and BENCHMARKS.md's summaries,
the ledger in docs/REPRODUCTION.md) quote only figures tied to a file: a number in that column
outside such a link is reported too.

  python -m scripts.doc_figures            # check; exit 1 listing every mismatch
  python -m scripts.doc_figures --list     # every tied figure with its file and value
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import os
import re
import sys
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ("README.md", "RESULTS.md", "BENCHMARKS.md", "docs/REPRODUCTION.md")
# [text](target#/pointer), the target a .json or .csv file.
FIGURE_LINK = re.compile(r"\[(?P<text>[^\]]*)\]\((?P<target>[^)#\s]+\.(?:json|csv))#(?P<pointer>/[^)\s]*)\)")
# The number a link's text quotes: sign, digits with optional thousands separators, decimals,
# then an optional unit.
QUOTED = re.compile(
    r"^\s*(?P<sign>[-+−]?)(?P<digits>\d{1,3}(?:,\d{3})+|\d+)"
    r"(?:\.(?P<decimals>\d+))?\s*(?P<unit>%|[^\d\s]*)\s*$"
)
NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?![\w.])")


@dataclasses.dataclass
class Figure:
    doc: str
    line: int
    text: str
    path: str  # the file, relative to the repository root
    pointer: str


def figures_in(doc: str, text: str) -> list[Figure]:
    """Every figure tied to a file in the Markdown ``text`` of ``doc`` (a path from the root)."""
    found = []
    folder = os.path.dirname(doc)
    for number, line in enumerate(text.splitlines(), 1):
        for match in FIGURE_LINK.finditer(line):
            path = os.path.normpath(os.path.join(folder, match.group("target")))
            found.append(Figure(doc, number, match.group("text"), path, match.group("pointer")))
    return found


def resolve(path: str, pointer: str, root: str = ROOT):
    """The value at JSON Pointer ``pointer`` in the JSON or CSV file ``path`` (from ``root``)."""
    full = os.path.join(root, path)
    if path.endswith(".csv"):
        with open(full, newline="", encoding="utf-8") as handle:
            value = list(csv.DictReader(handle))
    else:
        with open(full, encoding="utf-8") as handle:
            value = json.load(handle)
    for token in pointer.split("/")[1:]:
        token = urllib.parse.unquote(token).replace("~1", "/").replace("~0", "~")
        value = value[int(token)] if isinstance(value, list) else value[token]
    return value


def mismatch(figure: Figure, root: str = ROOT) -> str | None:
    """Why ``figure`` does not match its file; None when it does."""
    quoted = QUOTED.match(figure.text)
    if not quoted:
        return f"the link text {figure.text!r} is not a number"
    if not figure.path.startswith(os.path.join("docs", "figures") + os.sep):
        return f"{figure.path} is not under docs/figures/"
    try:
        value = float(resolve(figure.path, figure.pointer, root))
    except FileNotFoundError:
        return f"{figure.path} does not exist"
    except (KeyError, IndexError, ValueError, TypeError) as error:
        return f"{figure.path} has no number at {figure.pointer} ({type(error).__name__}: {error})"
    if quoted.group("unit") == "%":
        value *= 100
    decimals = quoted.group("decimals") or ""
    written = float(f"{quoted.group('digits').replace(',', '')}.{decimals or '0'}")
    if quoted.group("sign") in ("-", "−"):
        written = -written
    if not math.isfinite(value) or f"{value:.{len(decimals)}f}" != f"{written:.{len(decimals)}f}":
        return f"quoted {figure.text!r}, but {figure.path}#{figure.pointer} is {value:.{len(decimals) + 3}g}"
    return None


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def untied_numbers(doc: str, text: str) -> list[str]:
    """Numbers in an ``ours`` column that are not inside a figure link: ``doc:line: cell``.

    A table written from its file between markers (scripts/doc_tables.py) is tied as a whole."""
    found = []
    lines = text.splitlines()
    column = None
    marked = False
    for number, line in enumerate(lines, 1):
        if line.startswith("<!-- table:"):
            marked = True
        if marked:
            marked = not line.startswith("<!-- end table -->")
            continue
        if not line.lstrip().startswith("|"):
            column = None
            continue
        cells = _cells(line)
        if column is None:
            lowered = [cell.lower().strip("* ") for cell in cells]
            column = lowered.index("ours") if "ours" in lowered else -1
            continue
        if column < 0 or set(line.replace("|", "").strip()) <= set("-: ") or column >= len(cells):
            continue
        bare = FIGURE_LINK.sub("", cells[column])
        bare = re.sub(r"\[[^\]]*\]\([^)]*\)", "", bare)  # other links: section names, files
        bare = re.sub(r"`[^`]*`", "", bare)  # code: commands, flags, preset names
        if NUMBER.search(bare):
            found.append(f"{doc}:{number}: {cells[column]}")
    return found


def check_text(doc: str, text: str, root: str = ROOT) -> tuple[list[Figure], list[str]]:
    """(every tied figure, every problem) of the Markdown ``text`` of ``doc`` (a path from ``root``)."""
    figures = figures_in(doc, text)
    problems = [f"{doc}:{figure.line}: {why}" for figure in figures if (why := mismatch(figure, root))]
    problems += [
        f"{where} (a number in an 'ours' column not tied to a file)" for where in untied_numbers(doc, text)
    ]
    return figures, problems


def check(docs=DOCS, root: str = ROOT) -> tuple[list[Figure], list[str]]:
    """(every tied figure, every problem) of the documents ``docs`` (paths from ``root``)."""
    figures, problems = [], []
    for doc in docs:
        with open(os.path.join(root, doc), encoding="utf-8") as handle:
            found, wrong = check_text(doc, handle.read(), root)
        figures += found
        problems += wrong
    return figures, problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print every tied figure with its file and value")
    arguments = parser.parse_args()
    figures, problems = check()
    if arguments.list:
        for figure in figures:
            print(f"{figure.doc}:{figure.line}: {figure.text} <- {figure.path}#{figure.pointer}")
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"{len(figures)} figures tied to files, {len(problems)} problems.")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

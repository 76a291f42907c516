"""scripts/doc_figures: a figure the documents tie to a file matches the file at its printed
precision, and a figure edited by hand (or a file re-run without the prose) is caught."""

from __future__ import annotations

import json
import os
import re

import pytest

from scripts import doc_figures


@pytest.fixture
def root(tmp_path):
    """A repository root with one figures file, docs/figures/x/values.json (and a CSV)."""
    (tmp_path / "docs" / "figures" / "x").mkdir(parents=True)
    (tmp_path / "docs" / "figures" / "x" / "values.json").write_text(
        json.dumps(
            {
                "nmi": 0.8891,
                "error": {"median": 4.386},
                "steps": 20000,
                "accuracy": 0.5312,
                "seeds": [0.11, 0.125],
                "1-NN digit": [0.7185, 0.1585],
            }
        )
    )
    (tmp_path / "docs" / "figures" / "x" / "rows.csv").write_text("method,seconds\nabc,24.41\ncc_vae,41.9\n")
    return tmp_path


def problems(root, text: str, doc: str = "RESULTS.md") -> list[str]:
    return doc_figures.check_text(doc, text, str(root))[1]


@pytest.mark.parametrize(
    "quoted",
    [
        "[0.89](docs/figures/x/values.json#/nmi)",
        "[0.889](docs/figures/x/values.json#/nmi)",
        "[4.39°](docs/figures/x/values.json#/error/median)",
        "[20,000](docs/figures/x/values.json#/steps)",
        "[53%](docs/figures/x/values.json#/accuracy)",
        "[53.1 %](docs/figures/x/values.json#/accuracy)",
        "[0.12](docs/figures/x/values.json#/seeds/1)",
        "[41.9 s](docs/figures/x/rows.csv#/1/seconds)",
        "[0.16](docs/figures/x/values.json#/1-NN%20digit/1)",  # a key with a space, percent-encoded
    ],
)
def test_a_figure_matching_its_file_at_its_precision_passes(root, quoted):
    assert problems(root, f"text {quoted} text") == []


@pytest.mark.parametrize(
    "quoted,why",
    [
        (
            "[0.90](docs/figures/x/values.json#/nmi)",
            "quoted '0.90', but docs/figures/x/values.json#/nmi is 0.8891",
        ),
        ("[4.4°](docs/figures/x/values.json#/error/mean)", "has no number at /error/mean"),
        ("[54%](docs/figures/x/values.json#/accuracy)", "quoted '54%'"),
        ("[24.4 s](docs/figures/x/rows.csv#/1/seconds)", "quoted '24.4 s'"),
        ("[fast](docs/figures/x/values.json#/nmi)", "the link text 'fast' is not a number"),
        ("[0.89](docs/figures/x/gone.json#/nmi)", "docs/figures/x/gone.json does not exist"),
    ],
)
def test_a_figure_that_differs_from_its_file_is_reported(root, quoted, why):
    found = problems(root, f"text {quoted} text")
    assert len(found) == 1 and why in found[0], found


def test_links_are_relative_to_their_document(root):
    assert problems(root, "[0.89](figures/x/values.json#/nmi)", doc="docs/REPRODUCTION.md") == []


def test_a_number_in_an_ours_column_must_be_tied_to_a_file(root):
    table = (
        "| what | paper | ours | budget |\n|---|---|---|---|\n"
        "| NMI | 0.889 | [0.89](docs/figures/x/values.json#/nmi) | 3 seeds |\n"
        "| error | 4.0° | 4.39° (`train.py --trainer.steps=10`) | full |\n"
    )
    found = problems(root, table)
    assert len(found) == 1 and "RESULTS.md:4: 4.39°" in found[0] and "not tied to a file" in found[0], found
    # A table written from its file between markers (scripts/doc_tables.py) is tied as a whole.
    marked = '<!-- table: docs/figures/x/values.json "Runs" -->\n' + table + "<!-- end table -->\n"
    assert problems(root, marked) == []


def test_the_documents_figures_match_their_files():
    figures, found = doc_figures.check()
    assert found == [], "\n".join(found)
    assert len(figures) >= 1


def test_a_quoted_figure_changed_by_hand_in_the_documents_is_caught():
    figures, _ = doc_figures.check()
    figure = figures[0]
    with open(os.path.join(doc_figures.ROOT, figure.doc), encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    digit = re.search(r"\d(?=\D*$)", figure.text)  # the last digit of the quoted figure
    changed = figure.text[: digit.start()] + str((int(digit.group()) + 1) % 10) + figure.text[digit.end() :]
    lines[figure.line - 1] = lines[figure.line - 1].replace(f"[{figure.text}](", f"[{changed}](", 1)
    _, found = doc_figures.check_text(figure.doc, "\n".join(lines))
    assert any(f"{figure.doc}:{figure.line}: quoted {changed!r}" in problem for problem in found), found

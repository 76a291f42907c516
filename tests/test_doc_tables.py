"""The documents' marked tables, and the benchmarks' sections of BENCHMARKS.md, are those their
files give (scripts/doc_tables.py), and a changed value in a file makes its table or section stale."""

from __future__ import annotations

import ast
import json
import os
import pathlib
import shutil
import subprocess

import pytest

from benchmarks import default_speed
from scripts import doc_tables, verdicts

# The file of the first comparison.json section RESULTS.md marks.
FIRST = next(
    match
    for match in doc_tables.TABLE.finditer(open(os.path.join(doc_tables.ROOT, "RESULTS.md")).read())
    if match["section"]
)
COMPARISON, SECTION = FIRST["path"], FIRST["section"]


def test_every_marked_table_is_current():
    assert doc_tables.main(["--check"]) == 0


def test_a_changed_value_in_the_file_makes_its_table_stale_and_writing_fixes_it(tmp_path, capsys):
    marked = {
        name
        for doc in doc_tables.DOCS
        if os.path.exists(os.path.join(doc_tables.ROOT, doc))
        for name in doc_tables.table_files(open(os.path.join(doc_tables.ROOT, doc)).read())
    }
    findings = verdicts.files_of(verdicts.load()) | {verdicts.FINDINGS}
    for name in (*doc_tables.DOCS, *marked, *findings):
        source = os.path.join(doc_tables.ROOT, name)
        if os.path.exists(source):
            os.makedirs((tmp_path / name).parent, exist_ok=True)
            shutil.copy(source, tmp_path / name)
    result = json.loads((tmp_path / COMPARISON).read_text())
    for row in result["rows"]:
        for values in row.get("mine", {}).values():
            values["mean"] = values["mean"] + 0.5 if isinstance(values, dict) else values + 0.5
    (tmp_path / COMPARISON).write_text(json.dumps(result))
    assert doc_tables.main(["--check"], root=str(tmp_path)) == 1
    assert f'stale: RESULTS.md: {COMPARISON} "{SECTION}"' in capsys.readouterr().out
    assert doc_tables.main([], root=str(tmp_path)) == 0
    assert doc_tables.main(["--check"], root=str(tmp_path)) == 0


def test_a_changed_value_in_a_benchmark_file_makes_its_section_stale_and_writing_fixes_it(tmp_path, capsys):
    shutil.copy(os.path.join(doc_tables.ROOT, doc_tables.BENCHMARKS_DOC), tmp_path)
    for name in verdicts.files_of(verdicts.load()) | {verdicts.FINDINGS}:  # the summary's verdicts
        os.makedirs((tmp_path / name).parent, exist_ok=True)
        shutil.copy(os.path.join(doc_tables.ROOT, name), tmp_path / name)
    results = json.loads(open(os.path.join(doc_tables.ROOT, default_speed.FILE)).read())
    results["rows"][0]["steps_per_s"] = 123.456
    (tmp_path / default_speed.FILE).write_text(json.dumps(results))
    assert doc_tables.main(["--check"], root=str(tmp_path)) == 1
    stale = f'stale: BENCHMARKS.md: {default_speed.FILE} "## {default_speed.TITLE}"'
    assert capsys.readouterr().out.strip().splitlines() == [stale]  # the sections without a file are left
    assert doc_tables.main([], root=str(tmp_path)) == 0
    assert doc_tables.main(["--check"], root=str(tmp_path)) == 0
    text = (tmp_path / doc_tables.BENCHMARKS_DOC).read_text()
    assert f"[123.46]({default_speed.FILE}#/rows/0/steps_per_s)" in text
    assert doc_tables.section_span(text, default_speed.TITLE)["body"] == default_speed.section(results)
    # Only that section changed.
    before = open(os.path.join(doc_tables.ROOT, doc_tables.BENCHMARKS_DOC)).read()
    span = doc_tables.section_span(before, default_speed.TITLE)
    assert text.startswith(before[: span.start("body")]) and text.endswith(before[span.end("body") :])


def test_every_benchmark_with_a_section_function_is_checked():
    benchmarks = pathlib.Path(doc_tables.ROOT, "benchmarks")
    with_section = {
        path.stem
        for path in benchmarks.glob("*.py")
        if any(
            isinstance(node, ast.FunctionDef) and node.name == "section"
            for node in ast.parse(path.read_text()).body
        )
    }
    assert with_section == {module.__name__.rpartition(".")[2] for module in doc_tables.BENCHMARKS}
    for module in doc_tables.BENCHMARKS:
        assert module.FILE == f"docs/figures/benchmarks/{module.__name__.rpartition('.')[2]}.json"


TEMPLATE_DOC = """Intro.

<!-- table: docs/figures/t.json
| row | error (°) | Acc@30 | probe |
|---|---|---|---|
| trained | {/trained/median:.1f}° | {/trained/acc%4030:.2f} | {/probe/0/mean:.3f} ± {/probe/0/std:.3f} |
| untrained | {/untrained/median:.1f}° | n/a | {/probe/1/mean:.3f} |
| images | {/images:,} | {/name} | {/trained/acc%4030:.0%} |
-->
<!-- end table -->

Outro 0.5.
"""
TEMPLATE_FILE = {
    "trained": {"median": 12.345, "acc@30": 0.8549},
    "untrained": {"median": 97.0},
    "probe": [{"mean": 0.91234, "std": 0.0041}, {"mean": 0.5}],
    "images": 48000,
    "name": "pmp",
}
TEMPLATE_TABLE = """| row | error (°) | Acc@30 | probe |
|---|---|---|---|
| trained | 12.3° | 0.85 | 0.912 ± 0.004 |
| untrained | 97.0° | n/a | 0.500 |
| images | 48,000 | pmp | 85% |
"""


def _template_root(tmp_path, document=TEMPLATE_DOC, values=TEMPLATE_FILE):
    (tmp_path / "docs" / "figures").mkdir(parents=True)
    (tmp_path / "docs" / "figures" / "t.json").write_text(json.dumps(values))
    (tmp_path / "RESULTS.md").write_text(document)
    return tmp_path


def test_a_template_table_is_written_from_its_file_and_a_changed_value_makes_it_stale(tmp_path, capsys):
    root = _template_root(tmp_path)
    assert doc_tables.main(["--check"], root=str(root)) == 1  # not written yet
    assert "stale: RESULTS.md: docs/figures/t.json (the template table at line 3)" in capsys.readouterr().out
    assert doc_tables.main([], root=str(root)) == 0
    text = (root / "RESULTS.md").read_text()
    match = next(doc_tables.TABLE.finditer(text))
    assert match["section"] is None and match["body"] == TEMPLATE_TABLE
    assert text.startswith(TEMPLATE_DOC.partition("<!-- end table -->")[0])
    assert text.endswith("<!-- end table -->\n\nOutro 0.5.\n")
    assert doc_tables.main(["--check"], root=str(root)) == 0
    values = json.loads(json.dumps(TEMPLATE_FILE))
    values["probe"][0]["std"] = 0.0123
    (root / "docs" / "figures" / "t.json").write_text(json.dumps(values))
    capsys.readouterr()
    assert doc_tables.main(["--check"], root=str(root)) == 1
    assert capsys.readouterr().out.strip().splitlines() == [
        "stale: RESULTS.md: docs/figures/t.json (the template table at line 3)"
    ]
    assert doc_tables.main([], root=str(root)) == 0
    assert "| trained | 12.3° | 0.85 | 0.912 ± 0.012 |" in (root / "RESULTS.md").read_text()


def test_a_bad_pointer_in_a_template_names_the_document_and_the_pointer(tmp_path):
    root = _template_root(tmp_path, TEMPLATE_DOC.replace("{/untrained/median:.1f}", "{/untrained/mean:.1f}"))
    with pytest.raises(
        ValueError, match=r"RESULTS\.md: docs/figures/t\.json has no value at /untrained/mean"
    ):
        doc_tables.main(["--check"], root=str(root))
    with pytest.raises(ValueError, match=r"RESULTS\.md: docs/figures/t\.json#/name .* format '\.3f'"):
        doc_tables.render(TEMPLATE_DOC.replace("{/name}", "{/name:.3f}"), str(root), "RESULTS.md")
    with pytest.raises(ValueError, match=r"RESULTS\.md: .*malformed"):
        doc_tables.render(TEMPLATE_DOC.replace("\n-->\n", "\n"), str(root), "RESULTS.md")


def test_a_template_placeholder_may_read_another_file(tmp_path):
    document = TEMPLATE_DOC.replace("{/untrained/median:.1f}", "{docs/figures/u.json#/median:.1f}")
    root = _template_root(tmp_path, document)
    (root / "docs" / "figures" / "u.json").write_text(json.dumps({"median": 45.04}))
    assert doc_tables.main([], root=str(root)) == 0
    assert "| untrained | 45.0° | n/a | 0.500 |" in (root / "RESULTS.md").read_text()
    (root / "docs" / "figures" / "u.json").write_text(json.dumps({"median": 46.0}))
    assert doc_tables.main(["--check"], root=str(root)) == 1
    (root / "docs" / "figures" / "u.json").unlink()
    with pytest.raises(
        ValueError, match=r"RESULTS\.md: the table's file docs/figures/u\.json does not exist"
    ):
        doc_tables.main(["--check"], root=str(root))


def test_the_documents_stay_within_their_word_budgets():
    """A reader finishes them: the hand-written Markdown (all but the generated docs/FLAGS.md and
    docs/figures/) at most 20,000 words, and each summary fits one screen."""
    files = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=doc_tables.ROOT, capture_output=True, text=True, check=True
    )
    written = [
        name
        for name in files.stdout.split()
        if name != "docs/FLAGS.md" and not name.startswith("docs/figures/")
    ]
    words = {
        name: len(open(os.path.join(doc_tables.ROOT, name), encoding="utf-8").read().split())
        for name in written
    }
    assert sum(words.values()) <= 20_000, words
    assert words["RESULTS.md"] <= 6_000 and words["BENCHMARKS.md"] <= 3_000
    for doc, most in (("RESULTS.md", 400), ("BENCHMARKS.md", 300)):
        summary = doc_tables.section_span(
            open(os.path.join(doc_tables.ROOT, doc), encoding="utf-8").read(), "Summary"
        )
        assert len(summary["body"].split()) <= most and len(summary["body"].splitlines()) <= 40, doc

"""The documents' marked tables, and the benchmarks' sections of BENCHMARKS.md, are those their
files give (scripts/doc_tables.py), and a changed value in a file makes its table or section stale."""

from __future__ import annotations

import ast
import json
import os
import pathlib
import shutil

from benchmarks import default_speed
from scripts import doc_tables

# The file of the first table RESULTS.md marks, a comparison.json.
FIRST = next(doc_tables.TABLE.finditer(open(os.path.join(doc_tables.ROOT, "RESULTS.md")).read()))
COMPARISON, SECTION = FIRST["path"], FIRST["section"]


def test_every_marked_table_is_current():
    assert doc_tables.main(["--check"]) == 0


def test_a_changed_value_in_the_file_makes_its_table_stale_and_writing_fixes_it(tmp_path, capsys):
    for name in (*doc_tables.DOCS, COMPARISON):
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
    (tmp_path / default_speed.FILE).parent.mkdir(parents=True)
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

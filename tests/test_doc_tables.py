"""The documents' marked tables are those their files give (scripts/doc_tables.py), and a
changed value in a file makes its table stale."""

from __future__ import annotations

import json
import os
import shutil

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

"""The documents' verdicts follow the written rule (scripts/verdicts.py): each verdict and
qualifier from a finding's inputs; a value moved past a spread changes the verdict, which
`doc_tables --check` catches until the documents are written again; and the result files' own
means and spreads match their runs' values."""

from __future__ import annotations

import glob
import json
import os

import numpy as np
import pytest

from scripts import doc_tables, verdicts

RUNS = {
    "a": {"mean": 1.0, "std": 0.1, "values": [0.9, 1.1, 1.0]},
    "b": {"mean": 0.5, "std": 0.1, "values": [0.4, 0.6, 0.5]},
    "near_a": {"mean": 0.95, "std": 0.1, "values": [0.85, 1.05, 0.95]},
    "one": 0.054,
    "two_runs": {"mean": 1.0, "std": 0.1, "values": [0.9, 1.1]},
    "repeats": [2.0, 2.1, 1.9],
    "sweep": [0.1, 0.2, 0.3, 0.25],
    "rounds": 3,
}


@pytest.fixture
def root(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps(RUNS))
    return str(tmp_path)


def decide(root, **finding) -> str:
    return verdicts.decide(finding, root).text()


@pytest.mark.parametrize(
    "finding, expected",
    [
        (
            {"claim": "value", "paper": {"value": 1.05, "spread": 0.1}, "ours": "r.json#/a"},
            "holds: within the paper's spread",
        ),
        (
            {"claim": "value", "paper": {"value": 1.5, "spread": 0.1}, "ours": "r.json#/a"},
            "differs: outside the paper's spread",
        ),
        (
            {
                "claim": "value",
                "paper": {"value": 1.0, "spread": 0.1},
                "ours": "r.json#/a",
                "values": [[{"ref": "r.json#/b", "label": "B"}, 0.9, 0.1]],
            },
            "differs: outside the paper's spread in part: B",
        ),
        (
            {
                "claim": "value",
                "paper": {"value": 1.0, "spread": 0.1},
                "ours": "r.json#/a",
                "protocol": "other data",
            },
            "not measurable here: values not compared (other data)",
        ),
        (
            {"claim": "value", "paper": {"value": "0.05"}, "ours": "r.json#/one", "paper_runs": 1},
            "holds: equal at the paper's precision",
        ),
        (
            {"claim": "value", "paper": {"value": "0.06"}, "ours": "r.json#/one", "paper_runs": 1},
            "differs: unequal at the paper's precision",
        ),
        (
            {"claim": "value", "paper": {"value": "0.05"}, "ours": "r.json#/one"},
            "not measurable here: 1 run of 3",
        ),
        (
            {"claim": "value", "paper": {"value": 1.0}, "ours": "r.json#/two_runs"},
            "not measurable here: 2 runs of 3",
        ),
        (
            {
                "claim": "value",
                "paper": {"value": 1.0, "spread": 0.1},
                "ours": "r.json#/a",
                "budget": [1, 40],
            },
            "not measurable here: 2.5% of the paper's budget",
        ),
        (
            {
                "claim": "value",
                "paper": {"value": 1.0, "spread": 0.1},
                "ours": "r.json#/a",
                "budget": [[1, 2], [1, 20]],
            },
            "not measurable here: 5.0% of the paper's budget",
        ),
        (
            {
                "claim": "value",
                "paper": {"value": 1.0, "spread": 0.1},
                "ours": "r.json#/a",
                "protocol": "procedural",
            },
            "not measurable here: values not compared (procedural)",
        ),
        (
            {
                "claim": "value",
                "paper": {"value": "0.05"},
                "ours": "r.json#/one",
                "paper_runs": 1,
                "draws": [2500, 10000],
            },
            "not measurable here: 2,500 of the paper's 10,000 draws",
        ),
        ({"claim": "none", "paper": "not found"}, "not measurable here: paper's figure not found offline"),
        ({"claim": "none", "reason": "not run"}, "not measurable here: not run"),
        ({"claim": "bound", "paper": {"above": 0.9}, "ours": "r.json#/a"}, "holds: above the bound of 0.9"),
        (
            {"claim": "bound", "paper": {"above": 0.99}, "ours": "r.json#/near_a"},
            "differs: below the bound of 0.99",
        ),
        (
            {
                "claim": "bound",
                "paper": {"above": 0.7},
                "ours": [{"ref": "r.json#/a", "label": "A"}, {"ref": "r.json#/b", "label": "B"}],
            },
            "differs: below the bound of 0.7 in part: B",
        ),
        (
            {
                "claim": "bound",
                "paper": {"above": 3},
                "ours": {"ratio": ["r.json#/repeats", "r.json#/b"]},
                "timing": True,
                "goal": True,
                "protocol": "other hardware",
            },
            "holds: above the bound of 3",
        ),
        (
            {
                "claim": "bound",
                "paper": {"below": 1.1},
                "ours": "r.json#/one",
                "runs": "r.json#/rounds",
                "timing": True,
            },
            "holds: below the bound of 1.1",
        ),
        (
            {"claim": "bound", "paper": {"below": 1.1}, "ours": "r.json#/one", "timing": True},
            "not measurable here: 1 repeat of 3",
        ),
        (
            {"claim": "ordering", "paper": {}, "order": [["r.json#/a", "r.json#/b"]]},
            "holds: gaps exceed the spread",
        ),
        (
            {"claim": "ordering", "paper": {}, "order": [["r.json#/a", "r.json#/near_a"]]},
            "differs: fails wholly",
        ),
        (
            {
                "claim": "ordering",
                "paper": {},
                "order": [
                    ["r.json#/a", "r.json#/b"],
                    [{"ref": "r.json#/b", "label": "B over A"}, "r.json#/a"],
                ],
            },
            "differs: fails in part: B over A",
        ),
        (
            {"claim": "ordering", "paper": {}, "order": [["r.json#/near_a", "r.json#/a", "not above"]]},
            "holds: no gap beyond the spread",
        ),
        (
            {
                "claim": "ordering",
                "paper": {},
                "order": [[{"ref": "r.json#/a", "label": "A early"}, "r.json#/b", "not above"]],
            },
            "differs: fails wholly",
        ),
        (
            {
                "claim": "ordering",
                "paper": {},
                "order": [["r.json#/a", "r.json#/b"]],
                "values": [["r.json#/a", 1.0, 0.1]],
            },
            "holds: ordering and values agree",
        ),
        (
            {
                "claim": "ordering",
                "paper": {},
                "order": [["r.json#/a", "r.json#/b"]],
                "values": [["r.json#/a", 2.0, 0.1]],
            },
            "holds as an ordering: values outside the paper's spread",
        ),
        (
            {
                "claim": "ordering",
                "paper": {},
                "order": [["r.json#/a", "r.json#/b"]],
                "values": [["r.json#/a", 1.0, 0.1]],
                "protocol": "other hardware",
            },
            "holds as an ordering: values not compared (other hardware)",
        ),
        (
            {
                "claim": "ordering",
                "paper": {"spread": 0.1},
                "paper_runs": 1,
                "order": [["r.json#/one", "r.json#/one"]],
            },
            "differs: fails wholly",
        ),
        (
            {
                "claim": "trend",
                "direction": "rising",
                "trend": ["r.json#/sweep/0", "r.json#/sweep/1", "r.json#/sweep/2"],
            },
            "holds: rising at every step",
        ),
        (
            {"claim": "trend", "direction": "rising", "trend": [f"r.json#/sweep/{i}" for i in range(4)]},
            "differs: not rising at 1 of 3 steps",
        ),
        (
            {"claim": "trend", "direction": "rising", "trend": ["r.json#/sweep/0", "r.json#/sweep/1"]},
            "not measurable here: 2 points of 3",
        ),
    ],
)
def test_each_verdict_follows_the_rule(root, finding, expected):
    assert decide(root, **finding) == expected


@pytest.mark.parametrize(
    "ref, at_chance",
    [
        ({"ref": "r.json#/b", "chance": 0.45, "label": "B"}, True),  # within the spread of chance
        ({"ref": "r.json#/b", "chance": 0.7, "label": "B"}, True),  # below chance
        ({"ref": "r.json#/a", "chance": 0.5, "label": "A"}, False),
        ({"ref": "r.json#/b", "untrained": "r.json#/a", "label": "B"}, True),  # below the untrained score
        (
            {"ref": "r.json#/b", "chance": 0.2, "lower_is_better": True, "label": "B"},
            True,
        ),  # an error above chance
        ({"ref": "r.json#/b", "chance": 0.9, "lower_is_better": True, "label": "B"}, False),
    ],
)
def test_at_chance_names_the_figure_that_sits_there(root, ref, at_chance):
    finding = {"claim": "value", "paper": {"value": 0.5, "spread": 0.1}, "ours": ref}
    text = decide(root, **finding)
    assert text.endswith(f"; at chance: {ref['label']}") == at_chance
    assert text.startswith("holds" if ref["ref"].endswith("/b") else "differs")


def test_a_list_of_repeats_counts_them_and_gives_their_spread(root):
    repeats = verdicts.figure("r.json#/repeats", root)
    assert (
        repeats.runs == 3
        and repeats.mean == pytest.approx(2.0)
        and repeats.std == pytest.approx(np.std(RUNS["repeats"]))
    )


def test_a_bad_finding_is_named():
    with pytest.raises(ValueError, match="protocol 'gpu'"):
        verdicts.decide(
            {"claim": "value", "paper": {"value": 1}, "ours": "r.json#/a", "protocol": "gpu"},
            ".",
            {"r.json": RUNS},
        )
    with pytest.raises(ValueError, match="has no value at /missing"):
        verdicts.decide(
            {"claim": "value", "paper": {"value": 1}, "ours": "r.json#/missing"}, ".", {"r.json": RUNS}
        )


def test_a_value_moved_past_the_spread_changes_the_verdict_and_check_catches_it(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/r.json").write_text(json.dumps(RUNS))
    findings = {"gap": {"claim": "ordering", "paper": {}, "order": [["docs/r.json#/a", "docs/r.json#/b"]]}}
    (tmp_path / verdicts.FINDINGS).write_text(json.dumps(findings))
    (tmp_path / "RESULTS.md").write_text(
        "[x](docs/findings.json#tally)\n\n- A above B: [x](docs/findings.json#gap)\n"
    )
    assert doc_tables.main([], root=str(tmp_path)) == 0
    written = (tmp_path / "RESULTS.md").read_text()
    assert "[1 findings: 1 holds](docs/findings.json#tally)" in written
    assert "[holds: gaps exceed the spread](docs/findings.json#gap)" in written
    moved = dict(RUNS, b={"mean": 0.85, "std": 0.1, "values": [0.75, 0.95, 0.85]})
    (tmp_path / "docs/r.json").write_text(json.dumps(moved))
    capsys.readouterr()
    assert doc_tables.main(["--check"], root=str(tmp_path)) == 1
    assert "stale: RESULTS.md: verdict gap (differs: fails wholly)" in capsys.readouterr().out
    assert doc_tables.main([], root=str(tmp_path)) == 0
    assert "[differs: fails wholly](docs/findings.json#gap)" in (tmp_path / "RESULTS.md").read_text()
    assert doc_tables.main(["--check"], root=str(tmp_path)) == 0


def test_a_computed_cell_follows_its_values(tmp_path):
    (tmp_path / "m.json").write_text(json.dumps({"loss": [2.0, 1.5, 1.7]}))
    template = "| n | best d |\n|---|---|\n| 4 | {argmin:/loss/0,/loss/1,/loss/2=1,2,3} |\n"
    assert doc_tables.template_table("m.json", template, str(tmp_path)).endswith("| 4 | 2 |\n")
    (tmp_path / "m.json").write_text(json.dumps({"loss": [2.0, 1.5, 1.4]}))
    assert doc_tables.template_table("m.json", template, str(tmp_path)).endswith("| 4 | 3 |\n")


def test_every_finding_is_judged_in_some_document():
    used = set()
    for doc in doc_tables.DOCS:
        with open(os.path.join(verdicts.ROOT, doc), encoding="utf-8") as handle:
            used |= {match["id"] for match in verdicts.VERDICT_LINK.finditer(handle.read())}
    assert set(verdicts.load()) - used == set()
    assert used - set(verdicts.load()) <= {"tally"}


def test_every_summary_in_the_result_files_matches_its_values():
    """A {mean, std, values} object's mean is its values' mean and its std their population or
    sample standard deviation: the summaries the documents quote come from the runs they list."""
    checked = 0
    for path in glob.glob(os.path.join(verdicts.ROOT, "docs", "figures", "**", "*.json"), recursive=True):
        stack = [json.load(open(path, encoding="utf-8"))]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                values = node.get("values")
                if (
                    "mean" in node
                    and isinstance(values, list)
                    and values
                    and all(isinstance(v, (int, float)) for v in values)
                ):
                    assert node["mean"] == pytest.approx(np.mean(values), rel=1e-9, abs=1e-12), path
                    if node.get("std") is not None:
                        stds = [np.std(values, ddof=ddof) for ddof in (0, 1) if len(values) > ddof]
                        assert any(node["std"] == pytest.approx(s, rel=1e-9, abs=1e-12) for s in stds), path
                    checked += 1
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
    assert checked > 100

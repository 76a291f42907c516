"""Decides the documents' verdicts from the result files, by the rule RESULTS.md states.

Every finding the documents judge is an entry of ``docs/findings.json``: the paper's value (or
bound, or "not found"), the claim's kind, and references to our figures in the result files. A
reference is ``"path#/json/pointer"`` (path from the repository root) to a number (one run) or to
an object with ``mean``, ``std`` and the runs' ``values``; or an object ``{"ref": ..., "chance":
..., "untrained": ..., "lower_is_better": true}`` when the figure has a chance level. The kinds:

- ``value``: ``ours`` against the paper's ``value`` and ``spread`` (without a spread, the value
  as printed: ours rounds to it), and each further ``[ref, value, spread]`` of ``values``;
- ``bound``: ``ours`` (or each of a list of them) against the paper's ``above`` or ``below``;
- ``ordering``: every pair ``[higher, lower]`` of ``order`` apart by more than the two figures'
  spreads (for two single runs, than the paper's ``spread``); a pattern is a list of pairs; a
  pair ``[a, b, "not above"]`` claims ``a`` no higher than ``b`` beyond their spreads. With
  ``values`` (``[[ref, paper value, spread or null], ...]``) the values are compared too;
- ``trend``: the figures of ``trend`` each step the way of ``direction`` (``rising``/``falling``);
- ``none``: nothing of ours to compare (``reason`` says why).

Criteria, in this order, each failing one deciding "not measurable here": the paper's figure
found; runs (three, or one where ``paper_runs`` is 1; ``runs`` where the files do not count
them; ``timing`` names them repeats; ``draws`` ``[ours, paper's]`` for a Monte Carlo study; a
trend's points); ``budget`` (``[ours, paper's]`` steps or epochs, a list of such for
every method compared, at least 10%); protocol (``same``, ``named``, or ``procedural``, ``other
data`` or ``other hardware``, under which values are not compared, only orderings; a ``goal`` of
ours is compared on any host). Then the distance decides
holds, holds as an ordering or differs, and a compared figure within its spread of its chance
level (or below it, or below the untrained score) adds "at chance", naming the reference's
``label``.

In a document, a link to a finding, ``[...](docs/findings.json#ID)`` (relative to the document),
has its text written by ``python -m scripts.doc_tables``: the verdict and the criterion that
decided it. A link to ``findings.json#tally`` counts the verdicts of the document's links.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FINDINGS = "docs/findings.json"
VERDICTS = ("holds", "holds as an ordering", "differs", "not measurable here")
MIN_RUNS = 3
MIN_BUDGET = 0.10
COMPARABLE = ("same", "named")
NOT_COMPARED = ("procedural", "other data", "other hardware")


@dataclasses.dataclass(frozen=True)
class Figure:
    """One of our figures: its mean, its spread over runs (None for one run) and its runs."""

    mean: float
    std: float | None
    runs: int


@dataclasses.dataclass(frozen=True)
class Verdict:
    verdict: str
    criterion: str
    at_chance: tuple[str, ...] = ()

    def text(self) -> str:
        chance = f"; at chance: {', '.join(self.at_chance)}" if self.at_chance else ""
        return f"{self.verdict}: {self.criterion}{chance}"


def load_json(path: str, root: str, cache: dict, owner: str) -> object:
    """The JSON file ``path`` (from ``root``), read once per ``cache``; when it does not exist, a
    ValueError "<owner>file <path> does not exist." (``owner`` says who refers to it)."""
    if path not in cache:
        try:
            with open(os.path.join(root, path), encoding="utf-8") as handle:
                cache[path] = json.load(handle)
        except FileNotFoundError:
            raise ValueError(f"{owner}file {path} does not exist.") from None
    return cache[path]


def walk(value, pointer: str):
    """The value at JSON Pointer ``pointer`` (RFC 6901, percent-encoded as in a URI fragment)
    within ``value``; KeyError, IndexError, ValueError or TypeError where there is none."""
    for token in pointer.split("/")[1:]:
        token = urllib.parse.unquote(token).replace("~1", "/").replace("~0", "~")
        value = value[int(token)] if isinstance(value, list) else value[token]
    return value


def read(ref: str, root: str = ROOT, cache: dict | None = None):
    """The value at ``path#/pointer``."""
    path, _, pointer = ref.partition("#")
    value = load_json(path, root, {} if cache is None else cache, f"{FINDINGS}: the ")
    try:
        return walk(value, pointer)
    except (KeyError, IndexError, ValueError, TypeError):
        raise ValueError(f"{FINDINGS}: {path} has no value at {pointer}.") from None


def figure(ref, root: str = ROOT, cache: dict | None = None) -> Figure:
    """Our figure at ``ref`` (a reference string or an object with ``ref``): a number is one run;
    a list holds one value a run; an object gives ``mean``, ``std`` and the runs' ``values`` (or
    their count as ``runs`` or ``seeds``); ``{"ratio": [a, b]}`` is a over b."""
    if isinstance(ref, dict) and "ratio" in ref:
        a, b = (figure(part, root, cache) for part in ref["ratio"])
        return Figure(a.mean / b.mean, None, min(a.runs, b.runs))
    value = read(ref["ref"] if isinstance(ref, dict) else ref, root, cache)
    if isinstance(value, list):
        values = [float(v) for v in value]
        mean = sum(values) / len(values)
        std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
        return Figure(mean, std if len(values) > 1 else None, len(values))
    if isinstance(value, dict):
        runs = len(value.get("values") or []) or int(value.get("runs", value.get("seeds", 1)))
        return Figure(float(value["mean"]), value.get("std") if runs > 1 else None, runs)
    return Figure(float(value), None, 1)


def spread(*figures: Figure) -> float:
    return sum(f.std or 0.0 for f in figures)


def printed_decimals(value) -> int:
    text = str(value)
    return len(text.partition(".")[2])


def agrees(ours: Figure, paper, paper_spread) -> bool:
    """Our value within the paper's spread, or, without one, equal at the paper's precision."""
    if paper_spread is not None:
        return abs(ours.mean - float(paper)) <= float(paper_spread)
    return round(ours.mean, printed_decimals(paper)) == round(float(paper), printed_decimals(paper))


def chance_of(ref, root: str, cache: dict) -> bool:
    """A figure within its spread of its chance level, beyond it, or worse than untrained."""
    if not isinstance(ref, dict) or ("chance" not in ref and "untrained" not in ref):
        return False
    ours = figure(ref, root, cache)
    sign = -1.0 if ref.get("lower_is_better") else 1.0
    if "chance" in ref:
        level = ref["chance"]
        level = float(read(level, root, cache) if isinstance(level, str) else level)
        if sign * (ours.mean - level) <= (ours.std or 0.0):
            return True
    if "untrained" in ref:
        untrained = figure(ref["untrained"], root, cache)
        if sign * (ours.mean - untrained.mean) < 0:
            return True
    return False


def label(ref) -> str:
    return ref.get("label", "") if isinstance(ref, dict) else ""


def budget_fraction(budget) -> float | None:
    if budget is None:
        return None
    if isinstance(budget, (int, float)):
        return float(budget)
    pairs = budget if isinstance(budget[0], list) else [budget]
    return min(float(ours) / float(paper) for ours, paper in pairs)


def percent(fraction: float) -> str:
    return f"{fraction:.1%}" if fraction < 0.1 else f"{fraction:.0%}"


def refs_of(finding: dict) -> list:
    """Every reference of ``finding``, in the order ours, ordered pairs, trend, values."""
    ours = finding.get("ours", [])
    refs = list(ours) if isinstance(ours, list) else [ours]
    for pair in finding.get("order", []):
        refs.extend(pair[:2])
    return refs + finding.get("trend", []) + [row[0] for row in finding.get("values", [])]


def decide(finding: dict, root: str = ROOT, cache: dict | None = None) -> Verdict:
    """The verdict on ``finding`` by the rule, and the criterion that decided it."""
    cache = {} if cache is None else cache
    claim = finding["claim"]
    if finding.get("paper") == "not found":
        return Verdict("not measurable here", "paper's figure not found offline")
    if claim == "none":
        return Verdict("not measurable here", finding["reason"])
    paper = finding.get("paper") or {}
    refs = refs_of(finding)
    figures = [figure(ref, root, cache) for ref in refs]
    chance = tuple(
        dict.fromkeys(label(ref) or "a compared figure" for ref in refs if chance_of(ref, root, cache))
    )

    def verdict(name: str, criterion: str) -> Verdict:
        return Verdict(name, criterion, chance)

    # Runs.
    if "draws" in finding:
        ours_draws, paper_draws = (
            int(read(d, root, cache)) if isinstance(d, str) else d for d in finding["draws"]
        )
        if ours_draws < paper_draws:
            return verdict("not measurable here", f"{ours_draws:,} of the paper's {paper_draws:,} draws")
    elif claim == "trend":
        if len(figures) < MIN_RUNS:
            return verdict("not measurable here", f"{len(figures)} points of {MIN_RUNS}")
    else:
        compared = figures[: len(figures) - len(finding.get("values", []))] or figures
        runs = finding.get("runs", min(f.runs for f in compared))
        runs = int(read(runs, root, cache)) if isinstance(runs, str) else runs
        needed = min(MIN_RUNS, finding.get("paper_runs", MIN_RUNS))
        if runs < needed:
            what = "repeat" if finding.get("timing") else "run"
            return verdict("not measurable here", f"{runs} {what}{'s' * (runs != 1)} of {needed}")

    # Budget.
    fraction = budget_fraction(finding.get("budget"))
    if fraction is not None and fraction < MIN_BUDGET:
        return verdict("not measurable here", f"{percent(fraction)} of the paper's budget")

    # Protocol: a goal of ours is compared on any host; a paper's value only under its protocol.
    protocol = finding.get("protocol", "same")
    if protocol not in COMPARABLE + NOT_COMPARED:
        raise ValueError(f"{FINDINGS}: protocol {protocol!r} is not one of {COMPARABLE + NOT_COMPARED}.")
    compared = protocol in COMPARABLE or finding.get("goal", False)
    not_compared = f"values not compared ({protocol})"

    # Distance.
    if claim == "value":
        if not compared:
            return verdict("not measurable here", not_compared)
        # The paper's value, then any more published numbers of the same row as [ref, value, spread].
        rows = [[finding["ours"], paper["value"], paper.get("spread")], *finding.get("values", [])]
        failed = [
            label(ref) or "ours" for (ref, value, s), f in zip(rows, figures) if not agrees(f, value, s)
        ]
        exact = all(s is None for _, _, s in rows)
        if not failed:
            return verdict(
                "holds", "equal at the paper's precision" if exact else "within the paper's spread"
            )
        what = "unequal at the paper's precision" if exact else "outside the paper's spread"
        return verdict(
            "differs", what if len(failed) == len(rows) else f"{what} in part: {', '.join(failed)}"
        )

    if claim == "bound":
        if not compared:
            return verdict("not measurable here", not_compared)
        above = "above" in paper
        bound = float(paper["above"] if above else paper["below"])
        failed = [label(ref) or "ours" for ref, f in zip(refs, figures) if (f.mean > bound) != above]
        if not failed:
            return verdict("holds", f"{'above' if above else 'below'} the bound of {bound:g}")
        side = "below" if above else "above"
        if len(failed) == len(refs):
            return verdict("differs", f"{side} the bound of {bound:g}")
        return verdict("differs", f"{side} the bound of {bound:g} in part: {', '.join(failed)}")

    if claim == "ordering":
        pairs = finding["order"]
        failed = []
        for index, pair in enumerate(pairs):
            a, b = figures[2 * index], figures[2 * index + 1]
            allowed = spread(a, b) if (a.std or b.std) else float(paper.get("spread") or 0.0)
            not_above = pair[2:] == ["not above"]
            if (a.mean - b.mean > allowed) if not_above else (a.mean - b.mean <= allowed):
                failed.append(label(pair[0]) or f"pair {index + 1}")
        if failed:
            part = "wholly" if len(failed) == len(pairs) else f"in part: {', '.join(failed)}"
            return verdict("differs", f"fails {part}")
        rows = finding.get("values", [])
        if not rows:
            kinds = {pair[2:] == ["not above"] for pair in pairs}
            held = {
                frozenset([False]): "gaps exceed the spread",
                frozenset([True]): "no gap beyond the spread",
            }
            return verdict("holds", held.get(frozenset(kinds), "every pair as claimed"))
        if not compared:
            return verdict("holds as an ordering", not_compared)
        value_figures = figures[2 * len(pairs) :]
        if all(agrees(f, value, s) for f, (_, value, s) in zip(value_figures, rows)):
            return verdict("holds", "ordering and values agree")
        return verdict("holds as an ordering", "values outside the paper's spread")

    if claim == "trend":
        sign = 1.0 if finding["direction"] == "rising" else -1.0
        steps = [sign * (b.mean - a.mean) > 0 for a, b in zip(figures, figures[1:])]
        if all(steps):
            return verdict("holds", f"{finding['direction']} at every step")
        return verdict("differs", f"not {finding['direction']} at {steps.count(False)} of {len(steps)} steps")

    raise ValueError(f"{FINDINGS}: claim {claim!r} is not one of value, bound, ordering, trend, none.")


def files_of(value) -> set[str]:
    """The result files a finding (or any part of one) refers to."""
    if isinstance(value, str):
        path = value.partition("#")[0]
        return {path} if path.endswith(".json") and "#" in value else set()
    parts = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return set().union(*(files_of(part) for part in parts)) if parts else set()


def load(root: str = ROOT) -> dict:
    with open(os.path.join(root, FINDINGS), encoding="utf-8") as handle:
        return json.load(handle)


# [text](…findings.json#ID): a verdict link, or #tally for the document's count of them.
VERDICT_LINK = re.compile(r"\[(?P<text>[^\]]*)\]\((?P<target>[^)#\s]*findings\.json)#(?P<id>[\w.-]+)\)")


def tally_text(verdicts: list[Verdict]) -> str:
    counts = [(v, sum(1 for found in verdicts if found.verdict == v)) for v in VERDICTS]
    text = ", ".join(f"{count} {v}" for v, count in counts if count)
    chance = sum(1 for found in verdicts if found.at_chance)
    return f"{len(verdicts)} findings: {text}" + (f" ({chance} at chance)" if chance else "")


def render(text: str, doc: str, root: str = ROOT) -> tuple[str, list[str]]:
    """``text`` of ``doc`` with every verdict link's text decided anew, and the links that changed."""
    if not VERDICT_LINK.search(text):
        return text, []
    findings = load(root)
    cache: dict = {}
    folder = os.path.dirname(doc)
    decided: list[Verdict] = []
    changed = []

    def verdict_of(match: re.Match) -> Verdict:
        target = os.path.normpath(os.path.join(folder, match["target"]))
        if target != os.path.normpath(FINDINGS):
            raise ValueError(f"{doc}: a verdict link points to {target}, not {FINDINGS}.")
        if match["id"] not in findings:
            raise ValueError(f"{doc}: {FINDINGS} has no finding {match['id']!r}.")
        return decide(findings[match["id"]], root, cache)

    for match in VERDICT_LINK.finditer(text):
        if match["id"] != "tally":
            decided.append(verdict_of(match))

    def write(match: re.Match) -> str:
        new = tally_text(decided) if match["id"] == "tally" else verdict_of(match).text()
        if new != match["text"]:
            changed.append(f"{match['id']} ({new})")
        return f"[{new}]({match['target']}#{match['id']})"

    return VERDICT_LINK.sub(write, text), changed

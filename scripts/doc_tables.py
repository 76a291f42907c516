"""Writes the documents' tables of measured numbers from the committed files they come from.

A table is written between two markers; the first names its file and its section::

    <!-- table: docs/figures/shapes3d/gvae/comparison.json "Probe test accuracy per factor" -->
    | row | floor_hue | ... |
    <!-- end table -->

The path is relative to the repository root. The file is a ``comparison.json`` written by
``compare.py``; the section is one of its ``comparison.md`` headings, rendered by the
same code (``abc_tf.evaluation.comparison_report.markdown``). So a table cannot drift from its file:
``--check`` fails when any table differs from what its file gives (tests/test_doc_tables.py).

A table may instead be a template: the opening marker names its file and holds the table's
Markdown, each number a placeholder ``{/json/pointer:format}``: a JSON Pointer (RFC 6901, as in
scripts/doc_figures.py, a key with a space or a ``:``, ``|`` or ``}`` percent-encoded) into that
file and a Python format spec (``.3f``, ``.1f``, ``,``, ``.0%``, ``z.2f`` for no minus on a
rounded zero, or nothing). A placeholder may read another file, named before its pointer
(``{docs/figures/other.json#/a/mean:.3f}``), for a table whose rows come from several runs' files.
Text around the placeholders (``{/a/mean:.3f} ± {/a/std:.3f}``, a unit) and plain text cells are
kept::

    <!-- table: docs/figures/pose/lookup.json
    | row | median error (°) | Acc@30 |
    |---|---|---|
    | trained | {/trained/median:.1f}° | {/trained/acc30:.2f} |
    -->
    | row | median error (°) | Acc@30 |
    |---|---|---|
    | trained | 12.3° | 0.85 |
    <!-- end table -->

The table between the markers is the template with every placeholder replaced by the file's
value; it is plain (no bold, no links), since any emphasis would not come from the file.

A template may compute a cell from several values: ``{argmin:/p1,/p2,/p3=a,b,c}`` (or
``argmax``) writes the label of the pointer whose value is least (greatest), e.g. the best column
of a row.

Verdicts are written the same way: a link to a finding of ``docs/findings.json`` has its text
decided from the result files by ``scripts/verdicts.py`` (the rule of RESULTS.md, "How rows are
judged"), and a link to ``findings.json#tally`` counts the document's verdicts.

A run's printed output is written between ``<!-- log: docs/figures/demo/run.json -->`` and
``<!-- end log -->`` from the file ``scripts/demo_log.py`` writes.

The same holds for the sections of BENCHMARKS.md that a benchmark writes from its results file:
each module of ``BENCHMARKS`` names its ``FILE`` (under docs/figures/benchmarks/) and writes its
``## TITLE`` section with ``section(results)`` (a module writing more than one names them in
``SECTIONS``, title to function), the same function its measuring run calls. A section whose
module's file is absent is left alone.

  python -m scripts.doc_tables            # rewrite every table from its file
  python -m scripts.doc_tables --check    # exit 1 naming every stale table
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

from abc_tf.evaluation import comparison_report
from scripts import demo_log, verdicts
from benchmarks import (
    baselines_epoch,
    baselines_speed,
    compile_choice,
    curation,
    curation_scaling,
    default_speed,
    evaluation_cost,
    evaluation_stages,
    full_budgets,
    gpu,
    gpu_readiness,
    infogan_speed,
    lookup_scaling,
    method_speed,
    mnist_epoch,
    pmp_speed,
    report,
    run_all,
    serving,
    sweep_speed,
    training_scaling,
    vitae_speed,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ("README.md", "RESULTS.md", "BENCHMARKS.md", "docs/REPRODUCTION.md")
BENCHMARKS_DOC = "BENCHMARKS.md"
# The benchmarks whose sections are written from their results file alone.
BENCHMARKS = (
    baselines_epoch,
    baselines_speed,
    compile_choice,
    curation,
    curation_scaling,
    default_speed,
    evaluation_cost,
    evaluation_stages,
    full_budgets,
    gpu,
    gpu_readiness,
    infogan_speed,
    lookup_scaling,
    method_speed,
    mnist_epoch,
    pmp_speed,
    run_all,
    serving,
    sweep_speed,
    training_scaling,
    vitae_speed,
)
# A marked table: a comparison.json section (group ``section``) or a template (group
# ``template``, its lines each starting with ``|``); group ``body`` is the written table.
TABLE = re.compile(
    r"(?P<open><!-- table: (?P<path>\S+\.json)"
    r"(?: \"(?P<section>[^\"]+)\" -->\n|[ \t]*\n(?P<template>(?:\|[^\n]*\n)+)-->\n))"
    r"(?P<body>.*?)(?P<close><!-- end table -->)",
    re.S,
)
# A run's output: <!-- log: file.json --> ... <!-- end log -->.
LOG = re.compile(
    r"(?P<open><!-- log: (?P<path>\S+\.json) -->\n)(?P<body>.*?)(?P<close><!-- end log -->)", re.S
)
# A template's placeholder: {/json/pointer} or {/json/pointer:format}, after an optional
# other file: {docs/figures/other.json#/json/pointer:format}.
PLACEHOLDER = re.compile(
    r"\{(?:(?P<file>[\w./-]+\.json)#)?(?P<pointer>/[^{}:\n]*)(?::(?P<format>[^{}\n]*))?\}"
)
# A computed cell: {argmin:/p1,/p2=label1,label2} (or argmax), the label of the least (greatest).
COMPUTED = re.compile(r"\{(?P<op>argmin|argmax):(?P<pointers>[^{}=\n]+)=(?P<labels>[^{}\n]+)\}")


def section_table(path: str, section: str, root: str = ROOT) -> str:
    """The table under the heading ``## section`` of the comparison.md that ``path`` gives."""
    with open(os.path.join(root, path)) as handle:
        rendered = comparison_report.markdown(json.load(handle))
    for block in rendered.split("\n## ")[1:]:
        heading, _, rest = block.partition("\n")
        if heading.strip() == section:
            lines = [line for line in rest.strip().splitlines() if line.startswith("|")]
            return "\n".join(lines) + "\n"
    raise ValueError(f"{path} has no section {section!r}.")


def template_table(path: str, template: str, root: str = ROOT, doc: str = "") -> str:
    """``template`` with each ``{/pointer:format}`` replaced by the value at ``pointer`` in the
    JSON file ``path`` (from ``root``), or in the file the placeholder names, formatted with
    ``format``. A missing file, a pointer to nothing, or a value the format does not take is a
    ValueError naming ``doc`` and the pointer."""
    where = f"{doc}: " if doc else ""
    files: dict[str, object] = {}

    def load(name: str) -> object:
        return verdicts.load_json(name, root, files, f"{where}the table's ")

    def lookup(name: str, pointer: str):
        document = load(name)  # its own error when the file is missing
        try:
            found = verdicts.walk(document, pointer)
        except (KeyError, IndexError, ValueError, TypeError) as error:
            raise ValueError(
                f"{where}{name} has no value at {pointer} ({type(error).__name__}: {error})"
            ) from None
        if isinstance(found, (dict, list)):
            raise ValueError(f"{where}{name}#{pointer} is not a single value but a {type(found).__name__}")
        return found

    def value(match: re.Match) -> str:
        name = match["file"] or path
        pointer, spec = match["pointer"], match["format"] or ""
        found = lookup(name, pointer)
        try:
            return format(found, spec)
        except (ValueError, TypeError) as error:
            raise ValueError(
                f"{where}{name}#{pointer} ({found!r}) does not take the format {spec!r}: {error}"
            )

    def computed(match: re.Match) -> str:
        pointers, labels = match["pointers"].split(","), match["labels"].split(",")
        if len(pointers) != len(labels):
            raise ValueError(f"{where}{match[0]} has {len(pointers)} pointers but {len(labels)} labels.")
        values = [float(lookup(path, pointer.strip())) for pointer in pointers]
        pick = min if match["op"] == "argmin" else max
        return labels[values.index(pick(values))].strip()

    load(path)
    return PLACEHOLDER.sub(value, COMPUTED.sub(computed, template))


def table_files(text: str) -> set[str]:
    """The files the marked tables and logs of ``text`` read: each marker's file and each file a
    template's placeholder names."""
    files = {match["path"] for match in LOG.finditer(text)}
    for match in TABLE.finditer(text):
        files.add(match["path"])
        if match["template"] is not None:
            files.update(found["file"] for found in PLACEHOLDER.finditer(match["template"]) if found["file"])
    return files


def render(text: str, root: str = ROOT, doc: str = "") -> tuple[str, list[str]]:
    """``text`` (of the document ``doc``, for errors) with every marked table written from its
    file, and the tables that changed."""
    changed = []

    def write(match: re.Match) -> str:
        if match["template"] is not None:
            table = template_table(match["path"], match["template"], root, doc)
            line = text.count("\n", 0, match.start()) + 1
            name = f"{match['path']} (the template table at line {line})"
        else:
            table = section_table(match["path"], match["section"], root)
            name = f'{match["path"]} "{match["section"]}"'
        if table != match["body"]:
            changed.append(name)
        return match["open"] + table + match["close"]

    new = TABLE.sub(write, text)
    opened = text.count("<!-- table:")
    if opened != len(TABLE.findall(text)):
        raise ValueError(
            f"{doc or 'the text'}: a '<!-- table:' marker is malformed or has no '<!-- end table -->'."
        )
    return new, changed


def render_logs(text: str, root: str = ROOT) -> tuple[str, list[str]]:
    """``text`` with every marked run log written from its file, and the logs that changed."""
    changed = []

    def write(match: re.Match) -> str:
        with open(os.path.join(root, match["path"]), encoding="utf-8") as handle:
            body = demo_log.render(json.load(handle))
        if body != match["body"]:
            changed.append(f"log {match['path']}")
        return match["open"] + body + match["close"]

    return LOG.sub(write, text), changed


def benchmark_sections(module) -> dict:
    """{title: function writing that section's body from the results} of a benchmark module."""
    return getattr(module, "SECTIONS", None) or {module.TITLE: module.section}


def section_span(text: str, title: str) -> re.Match | None:
    """The body of the ``## title`` section of ``text`` (group ``body``), up to the next section."""
    pattern = rf"^## {re.escape(title)}\n\n(?P<body>.*?)\n*(?=^## |\Z)"
    return re.search(pattern, text, re.S | re.M)


def render_benchmarks(text: str, root: str = ROOT) -> tuple[str, list[str]]:
    """``text`` (BENCHMARKS.md) with every benchmark's section written from its results file, and
    the sections that changed."""
    changed = []
    for module in BENCHMARKS:
        if not os.path.exists(os.path.join(root, module.FILE)):
            continue
        results = report.read_results(module.FILE, root)
        for title, section in benchmark_sections(module).items():
            body = section(results).strip()
            match = section_span(text, title)
            if match is None:
                raise ValueError(f"{BENCHMARKS_DOC} has no section {title!r} for {module.FILE}.")
            if match["body"] != body:
                changed.append(f'{module.FILE} "## {title}"')
                text = text[: match.start("body")] + body + text[match.end("body") :]
    return text, changed


def main(argv: list[str] | None = None, root: str = ROOT) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="Write nothing; exit 1 if a table is stale.")
    args = parser.parse_args(argv)
    stale = []
    for name in DOCS:
        path = os.path.join(root, name)
        if not os.path.exists(path):
            continue
        with open(path) as handle:
            text = handle.read()
        new, changed = render(text, root, name)
        new, decided = verdicts.render(new, name, root)
        changed += [f"verdict {link}" for link in decided]
        new, logs = render_logs(new, root)
        changed += logs
        if name == BENCHMARKS_DOC:
            new, sections = render_benchmarks(new, root)
            changed += sections
        stale += [f"{name}: {table}" for table in changed]
        if changed and not args.check:
            with open(path, "w") as handle:
                handle.write(new)
    for line in stale:
        print(("stale: " if args.check else "wrote: ") + line)
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())

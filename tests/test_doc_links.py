"""Every relative link of the tracked Markdown files leads to a file or folder of the repository,
and no tracked text file points outside the repository (to design notes, papers or data that
users do not get). Fast: git and the standard library only."""

from __future__ import annotations

import os
import re
import subprocess
import urllib.parse

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THIS = os.path.relpath(os.path.abspath(__file__), ROOT).replace(os.sep, "/")

# Written in pieces so that this file does not hold them.
FORBIDDEN = ("../" + "shared", "/work/" + "shared", "SPEC" + ".md", "PEERS" + ".md")
TEXT_SUFFIXES = (".md", ".py", ".json", ".toml", ".cfg", ".txt")

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# An inline code span: a run of backticks, then anything up to the same run (CommonMark).
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
# The target of an inline link or image, [text](target "title"): what follows "](". A target may
# hold one level of balanced parentheses; it may be written in <angle brackets>.
INLINE_TARGET = re.compile(
    r"\]\(\s*(?:<(?P<angled>[^<>\n]*)>|(?P<bare>(?:[^()\s]|\([^()\s]*\))+))"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)"
)
# A link reference definition, [label]: target.
DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(?P<target>[^\s>]+)>?")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def git_files(*args: str) -> list[str]:
    try:
        done = subprocess.run(["git", "ls-files", "-z", *args], cwd=ROOT, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        pytest.skip(f"git is not usable here: {error}")
    if done.returncode != 0:
        pytest.skip("not a git checkout: " + done.stderr.decode(errors="replace").strip())
    return [path for path in done.stdout.decode().split("\0") if path]


def without_code(text: str) -> list[tuple[int, str]]:
    """(line number, line) of ``text`` outside fenced code blocks, with inline code spans blanked."""
    lines, fence = [], None
    for number, line in enumerate(text.splitlines(), 1):
        opened = FENCE.match(line)
        if fence is not None:
            if opened and opened[1][0] == fence[0] and len(opened[1]) >= len(fence) and not line.strip(" `~"):
                fence = None
            continue
        if opened:
            fence = opened[1]
            continue
        lines.append((number, CODE_SPAN.sub(lambda m: " " * len(m[0]), line)))
    return lines


def links_in(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every inline link, image and link definition of Markdown ``text``."""
    found = []
    for number, line in without_code(text):
        found += [
            (number, m["angled"] if m["angled"] is not None else m["bare"])
            for m in INLINE_TARGET.finditer(line)
        ]
        definition = DEFINITION.match(line)
        if definition:
            found.append((number, definition["target"]))
    return found


def local_path(doc: str, target: str) -> str | None:
    """The repository path (from the root, "/"-separated) that ``target``, a link of the Markdown
    file ``doc``, names; None for a link that leaves the repository (http:, mailto:, ...) or stays
    in the document (#anchor)."""
    if not target or target.startswith("#") or SCHEME.match(target):
        return None
    path = urllib.parse.unquote(target.split("#", 1)[0].split("?", 1)[0])
    if path.startswith("/"):  # as GitHub reads it: from the repository's root
        joined = path.lstrip("/")
    else:
        joined = os.path.join(os.path.dirname(doc), path)
    return os.path.normpath(joined).replace(os.sep, "/")


def test_links_parse_as_markdown_does():
    text = "\n".join(
        [
            'See [a](docs/A.md#part), ![b](img/b%20c.png "title") and [c](<d e.md>).',
            "`[not](a-link.md)` and ``x `[nor](this.md)` y`` but [yes](f(1).md).",
            "[web](https://example.org/x.md), [mail](mailto:someone@example.org), [here](#anchor).",
            "```",
            "[inside](a-fence.md)",
            "```",
            "[label]: ref/target.md",
        ]
    )
    targets = [target for _, target in links_in(text)]
    assert targets == [
        "docs/A.md#part",
        "img/b%20c.png",
        "d e.md",
        "f(1).md",
        "https://example.org/x.md",
        "mailto:someone@example.org",
        "#anchor",
        "ref/target.md",
    ]
    assert [local_path("docs/X.md", t) for t in targets] == [
        "docs/docs/A.md",
        "docs/img/b c.png",
        "docs/d e.md",
        "docs/f(1).md",
        None,
        None,
        None,
        "docs/ref/target.md",
    ]
    assert local_path("docs/X.md", "../RESULTS.md#ledger") == "RESULTS.md"
    assert local_path("docs/X.md", "/README.md") == "README.md"


def test_every_relative_link_of_the_markdown_files_resolves():
    files = set(git_files("--cached", "--others", "--exclude-standard"))  # tracked, or new and not ignored
    files = {path for path in files if os.path.exists(os.path.join(ROOT, path))}
    folders = {os.path.dirname(path) for path in files}
    folders |= {parent for folder in folders for parent in _parents(folder)}
    broken, checked = [], 0
    for doc in git_files("*.md"):
        if not os.path.exists(os.path.join(ROOT, doc)):  # deleted in this checkout
            continue
        with open(os.path.join(ROOT, doc), encoding="utf-8") as handle:
            text = handle.read()
        for number, target in links_in(text):
            path = local_path(doc, target)
            if path is None:
                continue
            checked += 1
            if (
                path.startswith("../")
                or path == ".."
                or not (path in files or path in folders or path == ".")
            ):
                broken.append(f"{doc}:{number}: ({target}) -> {path}")
    assert checked > 0
    assert not broken, (
        f"{len(broken)} of {checked} relative links lead nowhere in the repository:\n" + "\n".join(broken)
    )


def _parents(folder: str):
    while folder:
        folder = os.path.dirname(folder)
        yield folder


def test_no_tracked_text_file_points_outside_the_repository():
    found = []
    for path in git_files():
        if path == THIS or not path.endswith(TEXT_SUFFIXES) or not os.path.isfile(os.path.join(ROOT, path)):
            continue
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                found += [f"{path}:{number}: {word}" for word in FORBIDDEN if word in line]
    assert not found, (
        "files outside the repository are named (design notes are docs/PAPERS.md; data paths are "
        "written MNIST_DIR):\n" + "\n".join(found)
    )

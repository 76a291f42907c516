"""How the project's prose reads, counted: docstrings per package, Markdown words per document.

For the docstrings of every module, class and function under a folder (``ast``, so comments
and strings that are not docstrings are left out): sentences, words per sentence, and
parentheses per 100 words. Code spans (``like_this``) count as one word. For every tracked
Markdown document: its words, outside code blocks. And the Python lines over the formatter's
width. Prints a Markdown table; ``--json`` writes the counts to a file.

  python -m scripts.prose_stats [--folders abc_tf abc_tf/methods models] [--json OUT]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINE_LENGTH = 110  # pyproject.toml, [tool.ruff]
CODE_SPAN = re.compile(r"``[^`]*``|`[^`]*`")
# A sentence ends at . ! or ? followed by a space or the end, not inside "e.g." or "i.e.".
SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)[.!?](?=\s|$)")
WORD = re.compile(r"[A-Za-z0-9_'’-]+(?:\.[A-Za-z0-9_]+)*")  # "e.g" and "a.b" are one word


def tracked(pattern: str) -> list[str]:
    """The repository's tracked files matching the git pathspec ``pattern``."""
    listed = subprocess.run(
        ["git", "ls-files", pattern], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return [line for line in listed.stdout.splitlines() if line]


def docstrings(path: str) -> list[str]:
    """Every module, class and function docstring of the Python file ``path``."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    nodes = [tree] + [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    return [text for node in nodes if (text := ast.get_docstring(node))]


def prose_counts(texts: list[str]) -> dict[str, float]:
    """Words, sentences, words per sentence and parentheses per 100 words of ``texts``."""
    words = sentences = parentheses = 0
    for text in texts:
        plain = CODE_SPAN.sub("x", text)
        words += len(WORD.findall(plain))
        sentences += max(1, len(SENTENCE_END.findall(plain)))
        parentheses += plain.count("(")
    return {
        "words": words,
        "sentences": sentences,
        "words_per_sentence": words / max(sentences, 1),
        "parentheses_per_100_words": 100 * parentheses / max(words, 1),
    }


def markdown_words(path: str) -> int:
    """Words of the Markdown file ``path`` outside fenced code blocks."""
    words, fenced = 0, False
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        for line in handle:
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced:
                words += len(WORD.findall(CODE_SPAN.sub("x", line)))
    return words


def long_lines(paths: list[str]) -> int:
    count = 0
    for path in paths:
        with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
            count += sum(len(line.rstrip("\n")) > LINE_LENGTH for line in handle)
    return count


def measure(folders: list[str]) -> dict:
    python = tracked("*.py")
    packages = {}
    for folder in folders:
        files = [path for path in python if path.startswith(folder.rstrip("/") + "/")]
        packages[folder] = prose_counts([text for path in files for text in docstrings(path)])
    documents = {path: markdown_words(path) for path in tracked("*.md")}
    return {
        "docstrings": packages,
        "markdown_words": documents,
        "markdown_words_total": sum(documents.values()),
        "python_lines_over_width": long_lines(python),
        "line_length": LINE_LENGTH,
    }


def table(results: dict) -> str:
    lines = [
        "| docstrings under | words | words per sentence | parentheses per 100 words |",
        "|---|---|---|---|",
    ]
    for folder, counts in results["docstrings"].items():
        lines.append(
            f"| {folder} | {counts['words']} | {counts['words_per_sentence']:.1f} | "
            f"{counts['parentheses_per_100_words']:.1f} |"
        )
    lines += ["", "| Markdown document | words |", "|---|---|"]
    for path, words in sorted(results["markdown_words"].items(), key=lambda item: -item[1]):
        lines.append(f"| {path} | {words} |")
    lines += [
        f"| all | {results['markdown_words_total']} |",
        "",
        f"Python lines over {results['line_length']} characters: {results['python_lines_over_width']}.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--folders", nargs="+", default=["abc_tf", "abc_tf/methods", "models", "benchmarks"])
    parser.add_argument("--json", help="Also write the counts to this JSON file.")
    args = parser.parse_args()
    results = measure(args.folders)
    print(table(results))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main()

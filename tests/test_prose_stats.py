"""scripts/prose_stats.py: docstring sentences, parentheses and Markdown words, counted."""

from __future__ import annotations

from scripts import prose_stats


def test_prose_counts_sentences_words_and_parentheses():
    counts = prose_stats.prose_counts(["One short sentence. Another one (with a note), e.g. this.", "No end"])
    assert counts["sentences"] == 3  # "e.g." ends none; a text without an end is one sentence
    assert counts["words"] == 12 and counts["parentheses_per_100_words"] == 100 / 12
    assert prose_stats.prose_counts(["``a.b(c)`` runs."])["words"] == 2  # a code span is one word


def test_the_repository_is_measured_and_no_python_line_is_over_the_width():
    results = prose_stats.measure(["abc_tf"])
    assert results["docstrings"]["abc_tf"]["words"] > 0 and "README.md" in results["markdown_words"]
    assert results["python_lines_over_width"] == 0

"""abc_tf.evaluation.progress: a line at the start and the end of each stage."""

from __future__ import annotations

import re

import pytest

from abc_tf.evaluation import progress


def test_a_stage_says_when_it_starts_and_how_long_it_took(capsys):
    with progress.stage("MINE on the trained encoder"):
        print("inside")
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["[evaluate] MINE on the trained encoder ...", "inside"]
    assert re.fullmatch(r"\[evaluate\] MINE on the trained encoder: \d+\.\d s", lines[2])


def test_a_failing_stage_prints_no_time_and_lets_the_error_through(capsys):
    with pytest.raises(ValueError, match="bad"):
        with progress.stage("probes"):
            raise ValueError("bad")
    assert capsys.readouterr().out.splitlines() == ["[evaluate] probes ..."]

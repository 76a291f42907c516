"""abc_tf.evaluation.progress: a line at the start and the end of each stage; the reporter of
long computations on a fake clock (no sleeps, no timing), and the estimators reporting between
their compiled calls without changing what they compute; the record of the files written."""

from __future__ import annotations

import dataclasses
import io
import re

import numpy as np
import pytest

from abc_tf.evaluation import progress
from abc_tf.evaluation.estimators import disentanglement_arrays, mine, probes


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


class FakeClock:
    """Seconds that pass only when a test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_reporter_prints_at_most_every_n_seconds_with_the_time_left():
    clock, out = FakeClock(), io.StringIO()
    with progress.reporting(every=10, clock=clock, stream=out):
        with progress.Progress("MINE (6 factors)", 20_000) as reporter:
            for done, seconds in ((250, 4), (500, 5), (750, 3), (1000, 1), (1250, 12)):
                clock.now += seconds
                reporter.update(done)
    # 4, 9 s: too soon; 12 s: a line; 13 s: too soon after it; 25 s: the next.
    assert out.getvalue().splitlines() == [
        "[evaluate]   MINE (6 factors): 750/20000 steps, 12 s, about 5 min 08 s left",
        "[evaluate]   MINE (6 factors): 1250/20000 steps, 25 s, about 6 min 15 s left",
    ]


def test_a_reporter_names_what_it_does_and_long_times_in_hours():
    clock, out = FakeClock(), io.StringIO()
    with progress.reporting(every=0, prefix="[summary]", clock=clock, stream=out):
        reporter = progress.Progress("disentanglement codes", 4, "codes")
        clock.now += 3700
        reporter.update(1, doing="dci")
        clock.now += 60
        reporter.update(4)
    assert out.getvalue().splitlines() == [
        "[summary]   disentanglement codes: 1/4 codes (dci), 1 h 01 min, about 3 h 05 min left",
        "[summary]   disentanglement codes: 4/4 codes, 1 h 02 min",
    ]


def test_outside_reporting_a_reporter_is_silent(capsys):
    reporter = progress.Progress("probes (6 factors)", 30, "epochs")
    reporter.update(30)
    reporter.close()
    assert capsys.readouterr().out == "" and reporter.done == 30


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_line_is_rewritten_in_place_and_ended_once():
    clock, out = FakeClock(), Terminal()
    with progress.reporting(every=0, clock=clock, stream=out):
        with progress.Progress("codes", 10, "codes") as outer:
            outer.update(5)
            with progress.Progress("DCI trees (2 factors)", 2, "factors") as inner:
                inner.update(1)
                inner.update(2)
    text = out.getvalue()
    assert text.count("\r") == 3 and text.endswith("\n") and text.count("\n") == 1
    assert text.split("\r")[-1].startswith("[evaluate]   DCI trees (2 factors): 2/2 factors, 0 s")


@pytest.mark.slow
def test_mine_reports_between_its_compiled_chunks_and_estimates_the_same():
    rng = np.random.default_rng(0)
    embeddings, factors = rng.normal(size=(64, 3)), rng.integers(0, 3, size=(64, 2))
    settings = mine.MineSettings(steps=30, batch_size=16, eval_samples=256, chunk_steps=10)
    out = io.StringIO()
    with progress.reporting(every=0, stream=out):
        chunked = mine.mine_sigma_sweep(embeddings, factors, [0.1, 0.2], settings, seed=1)
    lines = out.getvalue().splitlines()
    assert [line.split(": ")[1].split(" ")[0] for line in lines] == [
        "10/60",
        "20/60",
        "30/60",
        "40/60",
        "50/60",
        "60/60",
    ]
    assert lines[0].startswith("[evaluate]   MINE (2 factors, 2 noise scales): 10/60 steps")
    whole = mine.mine_sigma_sweep(
        embeddings, factors, [0.1, 0.2], dataclasses.replace(settings, chunk_steps=30), seed=1
    )
    np.testing.assert_array_equal(chunked, whole)  # the chunks change nothing of the estimate


def test_probes_report_their_epochs_and_train_the_same_in_chunks(monkeypatch):
    rng = np.random.default_rng(0)
    embeddings, factors = rng.normal(size=(80, 3)), rng.integers(0, 3, size=(80, 2))
    settings = probes.ProbeSettings(epochs=7, batch_size=16)
    out = io.StringIO()
    with progress.reporting(every=0, stream=out):
        chunked = probes.probe_accuracies(embeddings, factors, 0.1, settings=settings, seed=2)
    assert [line.split(": ")[1].split(",")[0] for line in out.getvalue().splitlines()] == [
        "5/7 epochs",
        "7/7 epochs",
    ]
    monkeypatch.setattr(probes, "EPOCHS_PER_CALL", 7)
    whole = probes.probe_accuracies(embeddings, factors, 0.1, settings=settings, seed=2)
    np.testing.assert_array_equal(chunked.accuracy, whole.accuracy)


def test_dci_reports_each_factor_whose_trees_are_done():
    rng = np.random.default_rng(0)
    codes, factors = rng.normal(size=(60, 3)), rng.integers(0, 2, size=(60, 2))
    out = io.StringIO()
    with progress.reporting(every=0, stream=out):
        disentanglement_arrays.dci(codes, factors, codes, factors, seed=0, n_jobs=1)
    assert [line.split(": ")[1].split(",")[0] for line in out.getvalue().splitlines()] == [
        "1/2 factors",
        "2/2 factors",
    ]


def test_recording_lists_each_file_once_and_blocks_nest(tmp_path):
    progress.wrote(tmp_path / "nobody.json")  # no block: nothing to do
    with progress.recording() as everything:
        progress.wrote(tmp_path / "a.png")
        with progress.recording() as inner:
            progress.wrote(tmp_path / "b.json")
            progress.wrote(tmp_path / "b.json")
        progress.wrote(tmp_path / "a.png")
    assert inner == [str(tmp_path / "b.json")]
    assert everything == [str(tmp_path / "a.png"), str(tmp_path / "b.json")]


def test_reported_lists_the_files_written_last_and_nothing_after_an_error(capsys, tmp_path):
    with progress.reported():
        print("summary")
        progress.wrote(tmp_path / "metrics.json")
    assert capsys.readouterr().out.splitlines() == [
        "summary",
        "Wrote 1 file:",
        f"  {tmp_path / 'metrics.json'}",
    ]
    with pytest.raises(ValueError):
        with progress.reported():
            progress.wrote(tmp_path / "metrics.json")
            raise ValueError("bad run")
    assert capsys.readouterr().out == ""

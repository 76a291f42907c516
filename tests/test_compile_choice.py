"""abc_tf/runs/compile_choice.py: ``--trainer.jit_compile=auto`` times the plain graph and XLA on a
fit's first calls and trains on with the faster; the config reads the flag and older files. Also
benchmarks/compile_choice.py, which compares auto with the two pinned settings: its section."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from abc_tf.config import TrainerConfig
from abc_tf.runs import compile_choice, config_files, experiments
from abc_tf.runs.compile_choice import CALLS_NEEDED, TIMED_CALLS, WARMUP_CALLS, ChooseCompile
from benchmarks import compile_choice as benchmark


class ModeClock:
    """A clock on which a call takes ``seconds[mode]``: the callback's mode when the call ends."""

    def __init__(self, seconds: dict[str, float]):
        self.seconds, self.now, self.choose, self.ending = seconds, 0.0, None, False

    def __call__(self) -> float:
        if self.ending:  # read at a call's start, then at its end, in turn
            self.now += self.seconds[self.choose.mode]
        self.ending = not self.ending
        return self.now


def fit_choosing(seconds: dict[str, float], steps: int = 12) -> tuple[keras.Model, ChooseCompile]:
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse", jit_compile=False, steps_per_execution=1)
    clock = ModeClock(seconds)
    choose = clock.choose = ChooseCompile(steps, verbose=False, clock=clock)
    data = tf.data.Dataset.from_tensors((np.ones((8, 4), np.float32), np.zeros((8, 1), np.float32))).repeat()
    model.fit(data, epochs=1, steps_per_epoch=steps, verbose=0, callbacks=[choose])
    assert int(model.optimizer.iterations.numpy()) == steps  # the timed calls are training calls
    return model, choose


# Seconds a call: enough that the calls left after the graph's timing take MIN_SECONDS_LEFT.
SLOW = compile_choice.MIN_SECONDS_LEFT


def test_xla_is_kept_when_its_calls_are_shorter():
    model, choose = fit_choosing({"graph": SLOW, "xla": SLOW / 2})
    assert choose.choice == "xla" and model.jit_compile is True
    assert model.train_function is not choose._graph_function  # noqa: SLF001
    assert len(choose.times["graph"]) == len(choose.times["xla"]) == TIMED_CALLS
    assert choose.seconds["xla"] < choose.seconds["graph"]


def test_the_plain_graph_is_kept_when_its_calls_are_shorter_without_tracing_it_again():
    model, choose = fit_choosing({"graph": SLOW, "xla": SLOW * 1.5})
    assert choose.choice == "graph" and model.jit_compile is False
    assert model.train_function is choose._graph_function  # noqa: SLF001 - the function traced first
    assert len(choose.times["xla"]) == TIMED_CALLS


def test_a_much_slower_xla_call_ends_the_timing_at_once():
    model, choose = fit_choosing({"graph": SLOW, "xla": SLOW * compile_choice.GIVE_UP_RATIO * 1.5})
    assert choose.choice == "graph" and model.jit_compile is False
    assert len(choose.times["xla"]) == 1  # one timed call after XLA's warm-up


def test_nothing_is_timed_after_the_choice():
    _, choose = fit_choosing({"graph": SLOW, "xla": SLOW / 2}, steps=3 * 2 * (WARMUP_CALLS + TIMED_CALLS))
    assert sum(map(len, choose.times.values())) == 2 * TIMED_CALLS


def test_a_run_with_minutes_left_in_the_plain_graph_stays_in_it_without_trying_xla():
    model, choose = fit_choosing({"graph": 1.0, "xla": 0.5})  # 8 calls of a second left: too few
    assert choose.choice == "graph" and model.jit_compile is False and choose.times["xla"] == []
    assert choose.seconds == {"graph": 1.0} and choose._graph_function is None  # noqa: SLF001 - never rebuilt


@pytest.mark.parametrize(
    "jit_compile,strategy,calls,chooses",
    [
        ("auto", "default", CALLS_NEEDED, True),
        ("auto", "default", CALLS_NEEDED - 1, False),  # a short run: the timing would be most of it
        ("auto", "mirrored", 10 * CALLS_NEEDED, False),
        ("true", "default", 10 * CALLS_NEEDED, False),
        ("false", "default", 10 * CALLS_NEEDED, False),
    ],
)
def test_only_auto_on_one_device_with_enough_calls_times_the_two(jit_compile, strategy, calls, chooses):
    assert compile_choice.should_choose(jit_compile, strategy, calls) is chooses


def test_the_flag_reads_true_false_and_auto_in_any_case_and_refuses_other_words():
    assert TrainerConfig().jit_compile == "auto"
    assert TrainerConfig(jit_compile="TRUE").jit_compile == "true"
    assert TrainerConfig(jit_compile=False).jit_compile == "false"  # the flag's values before "auto"
    with pytest.raises(ValueError, match=r"--trainer.jit_compile='fast': choose one of auto, true, false"):
        TrainerConfig(jit_compile="fast").validate()


def test_a_config_json_written_with_a_boolean_reads_as_its_word():
    values = config_files.to_run_json(experiments.get_preset("mnist"))
    values["trainer"]["jit_compile"] = True
    assert config_files.from_json(json.dumps(values)).trainer.jit_compile == "true"


@pytest.mark.slow
def test_an_auto_run_says_which_it_trains_with(tmp_path, capsys, monkeypatch):
    from abc_tf import data
    from abc_tf.runs import training
    from toy_family import CONFIG

    monkeypatch.setitem(data.DATA_FAMILIES, "toy", "toy_family:FAMILY")
    config = CONFIG.replace(jit_compile="auto", steps=CALLS_NEEDED, log_every=CALLS_NEEDED)
    result = training.train(config, str(tmp_path / "run"), verbose=1)
    assert result.final_step == CALLS_NEEDED
    said = [line for line in capsys.readouterr().out.splitlines() if "--trainer.jit_compile=auto" in line]
    assert len(said) == 1 and said[0].endswith(("training on with XLA.", "training on in the plain graph."))


def benchmark_row(preset: str, steps: int, rates: dict[str, float], auto_chose_xla: list[bool]) -> dict:
    faster, slower = sorted(("false", "true"), key=lambda mode: -rates[mode])
    return {
        "preset": preset,
        "steps": steps,
        "steps_per_execution": 10,
        "seconds": {mode: [steps / rate] for mode, rate in rates.items()},
        "steps_per_s": rates,
        "auto_chose_xla": auto_chose_xla,
        "auto_call_seconds": [
            {"graph": 1.0, "xla": 0.8} if steps > 1000 else {"graph": 1.0} for _ in auto_chose_xla
        ],
        "faster_pinned": faster,
        "auto_over_faster": rates["auto"] / rates[faster],
        "auto_over_slower": rates["auto"] / rates[slower],
    }


def test_the_benchmark_section_ties_each_rate_to_its_row_and_reads_each_row():
    results = {
        "rounds": 2,
        "min_seconds_left": 300.0,
        "rows": [
            benchmark_row("mnist", 500, {"false": 10.0, "true": 5.0, "auto": 9.0}, [False, False]),
            benchmark_row(
                "mnist_ml_vae_quick", 15_000, {"false": 30.0, "true": 40.0, "auto": 36.0}, [True, False]
            ),
        ],
        "machine": "Measured on a test.",
        "load": [0.0, 0.0],
        "cpu_count": 2,
        "command": "python -m benchmarks.compile_choice --rounds=2",
    }
    text = benchmark.section(results)
    assert (
        f"| `mnist` | 500 | [10.00]({benchmark.FILE}#/rows/0/steps_per_s/false) | "
        f"[5.00]({benchmark.FILE}#/rows/0/steps_per_s/true) | "
        f"[9.00]({benchmark.FILE}#/rows/0/steps_per_s/auto) | "
        "plain graph (XLA not tried), plain graph (XLA not tried) | "
        f"[0.90]({benchmark.FILE}#/rows/0/auto_over_faster) |"
    ) in text.splitlines()
    assert "| XLA (both timed), plain graph (both timed) |" in text
    assert text.endswith(
        "Auto chose the faster setting in 2 of 2 runs of `mnist` (under 5 min, where auto keeps the plain "
        "graph); 1 of 2 runs of `mnist_ml_vae_quick`."
    )

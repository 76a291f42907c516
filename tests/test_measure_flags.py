"""abc_tf.cli.measure_flags: the measurement flags each command takes, and the settings built from them."""

from __future__ import annotations

import pytest
from absl import flags

from abc_tf.cli import compare, curves, evaluate, measure_flags


def parsed(*arguments: str, per_run: bool = True) -> flags.FlagValues:
    flag_values = flags.FlagValues()
    measure_flags.define(flag_values, per_run=per_run)
    flag_values(["test", *arguments])
    return flag_values


def test_each_command_defines_the_flags_it_takes():
    shared = set(parsed(per_run=False))
    assert {"num_images", "sample_seed", "mine_steps", "probe_epochs", "disentanglement"} <= shared
    assert not shared & set(measure_flags.PER_RUN) and set(parsed()) == shared | set(measure_flags.PER_RUN)
    assert set(measure_flags.PER_RUN) <= set(evaluate.FLAGS) and set(measure_flags.PER_RUN) <= set(
        curves.FLAGS
    )
    assert shared <= set(compare.FLAGS) and not set(measure_flags.PER_RUN) & set(compare.FLAGS)
    assert {"untrained", "pose_export_dir", "seeds", "saved_model"} <= set(evaluate.FLAGS)
    assert not {"untrained", "pose_export_dir", "seeds", "saved_model", "runs"} & set(curves.FLAGS)
    assert not {"checkpoints", "compare", "compare_untrained", "curve_reference"} & set(evaluate.FLAGS)


def test_one_run_s_settings_follow_the_flags():
    settings = measure_flags.evaluation_settings(
        parsed(
            "--mine_steps=0",
            "--probe_epochs=3",
            "--sigma=0.2",
            "--num_sigmas=4",
            "--sample_seed=7",
            "--pose_query_domains=synthetic",
            "--disentanglement=none",
            "--measure_images=16",
        ),
        untrained=True,
    )
    isolation = settings.isolation
    assert isolation.mine is None and isolation.probe.epochs == 3 and not isolation.probe.noisy_test
    assert (isolation.sigma, isolation.num_sigmas, isolation.sample_seed) == (0.2, 4, 7)
    assert settings.pose.query_domains == ("synthetic",) and settings.pose.seed == 7
    assert settings.scores is None and settings.untrained and settings.measure_images == 16


def test_a_comparison_s_settings_follow_the_flags():
    settings = measure_flags.comparison_settings(
        parsed(
            "--mine_steps=50",
            "--mine_batch_size=32",
            "--probe_epochs=0",
            "--disentanglement_scores=mig,dci",
            per_run=False,
        )
    )
    assert settings.isolation.mine.steps == 50 and settings.isolation.mine.batch_size == 32
    assert settings.isolation.probe is None and settings.isolation.sigma is None
    assert (
        settings.preset == "fast" and settings.score_names == ("mig", "dci") and settings.scores is not None
    )


@pytest.mark.parametrize(
    "arguments,message",
    [
        (["--probe_epochs=-1"], "--probe_epochs must be >= 0 (0: skip), got -1."),
        (["--disentanglement_scores=irs"], "disentanglement_scores: unknown or no scores ['irs']"),
        (["--num_images=5"], "num_images must be at least 10, got 5"),
    ],
)
def test_a_bad_value_is_refused_alike_for_a_run_and_a_comparison(arguments, message):
    for per_run, build in (
        (True, measure_flags.evaluation_settings),
        (False, measure_flags.comparison_settings),
    ):
        with pytest.raises(ValueError, match=None) as error:
            build(parsed(*arguments, per_run=per_run))
        assert message in str(error.value)

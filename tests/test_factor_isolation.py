"""Factor-isolation glue (abc_tf.evaluation.tasks.factor_isolation) and evaluate.py on a tiny run."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import ClassVar

import numpy as np
import pytest

from abc_tf import methods
from abc_tf.runs import experiments
from abc_tf.config import MethodConfig
from abc_tf.evaluation.tasks import factor_isolation
from abc_tf.evaluation.estimators import mine, probes
from abc_tf.evaluation.estimators.noise import spread
from abc_tf.methods.base import Method
from abc_tf.runs.run_dir import seed_run_dirs
from evaluate_helpers import evaluate_each

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = factor_isolation.IsolationSettings(
    num_images=64,
    mine=mine.MineSettings(steps=20, batch_size=32, eval_samples=512),
    probe=probes.ProbeSettings(epochs=1, batch_size=32),
    num_sigmas=3,
)


def test_inactive_names_and_labels_follow_the_config():
    assert factor_isolation.inactive_names(experiments.config_for(inactive_factors="0,2")) == (
        "floor_hue",
        "wall_hue",
    )
    assert factor_isolation.inactive_names(experiments.config_for(inactive_factors="none")) == ()
    baseline = experiments.config_for(augmentation_baseline=True)
    # Shapes3D declares the factors its baseline's random hue varies (KnownFactors.augmented_by_baseline).
    assert set(factor_isolation.inactive_names(baseline)) == {"floor_hue", "wall_hue", "object_hue"}
    assert (
        factor_isolation.condition_label(experiments.config_for(curate_both_sets=False))
        == "wall_hue inactive, set B unconstrained"
    )
    # The augmentation baselines: Shapes3D's augments the hues away; MNIST's fixes no factor.
    baseline = experiments.config_for(augmentation_baseline=True, method="contrastive")
    assert (
        factor_isolation.condition_label(baseline)
        == "floor_hue/wall_hue/object_hue augmented away (contrastive)"
    )
    assert (
        factor_isolation.condition_label(experiments.choose(baseline, data="mnist", method="abc"))
        == "double augmentation (abc)"
    )
    # MNIST's config has no curate_both_sets: its set B is a stack of one other digit.
    assert factor_isolation.condition_label(experiments.get_preset("mnist")) == "digit inactive"
    with pytest.raises(ValueError, match="no labelled factor sample"):
        factor_isolation.factor_names(experiments.config_for(data="folders"))


# Methods only these tests register: no length scale; pairs instead of sets.
@dataclasses.dataclass(frozen=True)
class PairsOnlyConfig(MethodConfig):
    batch_format: ClassVar[str] = "pairs"


NO_SCALE = Method(name="no_scale", config=MethodConfig, build=None, supervision="none (a test method)")
PAIRS = Method(name="pairs_only", config=PairsOnlyConfig, build=None)


def test_noise_follows_the_method_s_length_scale_or_the_embeddings_spread(monkeypatch):
    embeddings = np.random.default_rng(0).normal(scale=3.0, size=(500, 4))
    sigma, rule = factor_isolation.noise_sigma(
        experiments.config_for(similarity="l2sq", temperature=0.25), embeddings
    )
    assert (sigma, rule) == (0.5, "length scale")
    monkeypatch.setitem(methods.METHODS, "no_scale", "test_factor_isolation:NO_SCALE")
    sigma, rule = factor_isolation.noise_sigma(experiments.config_for(method="no_scale"), embeddings)
    assert rule == "0.1 x spread" and sigma == pytest.approx(0.1 * spread(embeddings)) and 0.25 < sigma < 0.35
    assert "0.1 x the embedding's own spread" in factor_isolation.NOISE_RULE


@pytest.mark.slow
def test_codes_without_a_length_scale_are_measured_in_units_of_their_spread():
    """A method without a length scale may shrink its codes (PMP's reach a spread of 0.05): they
    are measured divided by their spread with noise 0.1, the same numbers as for the unit-spread
    codes, and sigma and spread are reported in the codes' own units."""
    rng = np.random.default_rng(1)
    factors = np.stack([rng.integers(0, 4, 300), rng.integers(0, 3, 300)], axis=1)
    codes = (np.stack([factors[:, 0], rng.normal(size=300)], axis=1) + 0.1 * rng.normal(size=(300, 2))) * 1e-3
    unit = factor_isolation.measuring_unit(factor_isolation.RELATIVE_RULE, codes)
    assert unit == pytest.approx(spread(codes))
    assert factor_isolation.measuring_unit("length scale", codes) == 1.0
    settings = dataclasses.replace(
        TINY, num_sigmas=0, probe=probes.ProbeSettings(epochs=20, batch_size=32, learning_rate=1e-2)
    )
    tiny = factor_isolation.evaluate_embeddings(
        codes, factors, ["a", "b"], 0.1 * unit, settings, num_classes=[4, 3], unit=unit
    )
    scaled = factor_isolation.evaluate_embeddings(
        codes / unit, factors, ["a", "b"], 0.1, settings, num_classes=[4, 3]
    )
    assert tiny["probe"] == scaled["probe"] and tiny["mine"] == pytest.approx(scaled["mine"])
    assert (
        tiny["sigma"] == pytest.approx(0.1 * unit)
        and tiny["spread"] == pytest.approx(unit)
        and tiny["unit"] == unit
    )
    assert tiny["probe"]["a"]["accuracy"] > 0.9


def test_only_set_methods_have_inactive_factors(monkeypatch):
    monkeypatch.setitem(
        methods.METHODS,
        "pairs_only",
        "test_factor_isolation:PAIRS",
    )
    config = experiments.config_for(method="pairs_only", inactive_factors="wall_hue")
    assert factor_isolation.inactive_names(config) == ()
    assert factor_isolation.condition_label(config) == "pairs_only (pairs)"


@pytest.mark.slow
def test_evaluate_embeddings_writes_metrics_and_figures(tmp_path):
    rng = np.random.default_rng(0)
    factors = np.stack([rng.integers(0, 4, 400), rng.integers(0, 3, 400)], axis=1)
    embeddings = np.stack([factors[:, 0] * 3.0, np.zeros(400)], axis=1) + 0.01 * rng.normal(size=(400, 2))
    metrics = factor_isolation.evaluate_embeddings(
        embeddings, factors, ["a", "b"], 0.1, TINY, inactive=["b"], num_classes=[4, 3], out_dir=str(tmp_path)
    )
    assert set(metrics["mine"]) == {"a", "b"} and set(metrics["probe"]) == {"a", "b"}
    # d = 2: the histogram estimate is there too, and the sweep uses it.
    assert metrics["histogram"]["a"] == pytest.approx(np.log(4), rel=0.05)
    assert metrics["sweep"]["estimator"] == "histogram" and len(metrics["sweep"]["sigmas"]) == 3
    assert sorted(metrics["figures"]) == [
        "mi_histogram.png",
        "mi_mine.png",
        "mi_sweep.png",
        "pca.png",
        "probes.png",
    ]
    for name in metrics["figures"]:
        assert os.path.getsize(tmp_path / name) > 0
    json.dumps(metrics)  # JSON-ready


def test_aggregate_and_seed_dirs(tmp_path):
    runs = [
        {
            "mine": {"a": 1.0, "b": 0.0},
            "probe": {"a": {"accuracy": 0.9, "chance": 0.25}, "b": {"accuracy": 0.3, "chance": 0.5}},
        },
        {
            "mine": {"a": 3.0, "b": 0.0},
            "probe": {"a": {"accuracy": 0.7, "chance": 0.25}, "b": {"accuracy": 0.5, "chance": 0.5}},
        },
    ]
    runs[0]["disentanglement"] = {"scores": {"mig": 0.2, "sap": 0.1}}
    runs[1]["disentanglement"] = {"scores": {"mig": 0.4}}
    summary = factor_isolation.aggregate(runs)
    assert summary["num_runs"] == 2
    assert summary["disentanglement"] == {
        "mig": {"mean": pytest.approx(0.3), "std": pytest.approx(0.1), "values": [0.2, 0.4]}
    }
    assert summary["mine"]["a"] == {"mean": 2.0, "std": 1.0, "values": [1.0, 3.0]}
    assert summary["probe_accuracy"]["b"]["mean"] == pytest.approx(0.4)
    names, table = factor_isolation.seed_table(summary, "mine")
    assert names == ["a", "b"] and table.shape == (2, 2)
    for k in (10, 2):
        os.makedirs(tmp_path / f"seed_{k}")
        (tmp_path / f"seed_{k}" / "config.json").write_text("{}")
    os.makedirs(tmp_path / "seed_x")
    assert [os.path.basename(p) for p in seed_run_dirs(str(tmp_path))] == ["seed_2", "seed_10"]


@pytest.mark.slow
def test_evaluate_py_on_a_tiny_untrained_run(tmp_path):
    from abc_tf.runs import training

    config = experiments.config_for(embedding_dim=4, inactive_factors="wall_hue")
    run_dir = tmp_path / "run"
    os.makedirs(run_dir)
    (run_dir / "config.json").write_text(config.to_json())
    training.untrained_encoder(config).save(str(run_dir / "encoder.keras"))
    flags = [
        f"--run_dir={run_dir}",
        "--num_images=48",
        "--mine_steps=10",
        "--mine_batch_size=16",
        "--mine_eval_samples=256",
        "--probe_epochs=0",
        "--disentanglement=fast",
        "--disentanglement_scores=mig,sap",  # the fast preset's 1,500 shared codes
    ]
    result, bad = evaluate_each([(REPO, flags), (REPO, [f"--run_dir={tmp_path / 'missing'}"])])
    assert result["code"] == 0, result["stderr"][-2000:]
    assert "[evaluate] factor isolation of the trained encoder on 48 images" in result["stdout"]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["inactive"] == ["wall_hue"] and metrics["sigma"] == 1.0
    assert len(metrics["mine"]) == 6 and (run_dir / "pca.png").exists()
    assert "probe" not in metrics  # --probe_epochs=0 skips the probes
    scores = metrics["disentanglement"]
    assert list(scores["scores"]) == ["mig", "sap"] and scores["codes"] == 1500 and scores["skipped"] == {}
    assert scores["observations"] == "factor grid (images_of)" and (run_dir / "disentanglement.png").exists()
    assert "disentanglement.png" in metrics["figures"] and metrics["noise_rule"] == "length scale"
    # A missing run directory is a clear error, not a traceback.
    assert bad["code"] == 2 and "is not a directory" in bad["stderr"] and "Traceback" not in bad["stderr"]

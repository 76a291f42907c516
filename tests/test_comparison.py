"""The side-by-side comparison (abc_tf.evaluation.comparison; compare.py) over tiny run
directories written directly (encoder.keras + config.json): the three files, the rows in order,
seeds aggregated, the noise rule per method, the untrained row, clear errors."""

from __future__ import annotations

import copy
import dataclasses
import json
import os

import numpy as np
import pytest

from abc_tf.runs import experiments
from abc_tf import methods
from abc_tf.config import ExperimentConfig
from abc_tf.evaluation import comparison, comparison_report
from abc_tf.evaluation.estimators import disentanglement, mine, probes
from abc_tf.evaluation.tasks import factor_isolation
from abc_tf.methods.abc import AbcConfig
from abc_tf.methods.abc.model import METHOD as ABC
from abc_tf.methods.base import Method
from abc_tf.runs import training
from folder_helpers import config_for, make_folder


@dataclasses.dataclass(frozen=True)
class RelativeConfig(AbcConfig):
    """ABC's settings for a method whose loss declares no length scale."""

    def length_scale(self) -> None:
        return None


# A method whose loss has no length scale: its rows get noise relative to their own spread.
RELATIVE = Method(
    name="relative", config=RelativeConfig, build=ABC.build, supervision="pairs of a test (no temperature)"
)


# The smallest settings of every measure: these tests check the rows and that every row gets the
# same observations; the measures' values are checked at full settings in their own tests
# (tests/test_mine.py, test_probes.py, test_encoder_disentanglement.py, test_disentanglement*.py).
TINY = comparison.ComparisonSettings(
    isolation=factor_isolation.IsolationSettings(
        num_images=64,
        mine=mine.MineSettings(steps=10, batch_size=32, eval_samples=256),
        probe=probes.ProbeSettings(epochs=1, batch_size=32),
    ),
    scores=disentanglement.ScoreSettings(
        beta_vae_batch_size=2,
        beta_vae_num_train=20,
        beta_vae_num_eval=10,
        factor_vae_batch_size=2,
        factor_vae_num_train=20,
        factor_vae_num_eval=10,
        factor_vae_num_variance_estimate=50,
        num_train=50,
        num_test=25,
        dci_num_train=50,
        n_jobs=1,
    ),
    preset="tiny",
    score_names=("beta_vae", "factor_vae", "mig", "sap"),
)
# For tests of which rows a comparison makes (the measures themselves: TINY above): the rows'
# embeddings, their 1-NN and k-means scores and the methods' own measures, no MINE, probes or scores.
EMBEDDINGS_ONLY = comparison.ComparisonSettings(
    dataclasses.replace(TINY.isolation, mine=None, probe=None), scores=None, preset="none"
)
BASE = experiments.config_for(
    embedding_dim=4, set_size=8, steps=2, log_every=1, inactive_factors="wall_hue", temperature=0.25
)


pytestmark = pytest.mark.slow


def write_run(run_dir, config: ExperimentConfig) -> None:
    """A finished run as evaluators read it: config.json and an (untrained) encoder.keras."""
    os.makedirs(run_dir)
    (run_dir / "config.json").write_text(config.to_json())
    training.untrained_encoder(BASE.replace(seed=config.trainer.seed)).save(str(run_dir / "encoder.keras"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """abc_seeds: two seed runs of ABC (tau = 0.25: length scale 0.5); relative: one run of the
    method without a length scale."""
    root = tmp_path_factory.mktemp("runs")
    for seed in (0, 1):
        write_run(root / "abc_seeds" / f"seed_{seed}", BASE.replace(seed=seed))
    # Built from its parts: the method is registered only while the comparison reads the runs.
    write_run(
        root / "relative",
        BASE.replace(method=dataclasses.replace(BASE.method, name="relative"), seed=5, steps=7),
    )
    return root


@pytest.fixture(scope="module")
def compared(runs, tmp_path_factory):
    patch = pytest.MonkeyPatch()
    patch.setitem(methods.METHODS, "relative", "test_comparison:RELATIVE")
    out = tmp_path_factory.mktemp("comparison")
    lines = []
    try:
        result = comparison.compare(
            [str(runs / "abc_seeds"), str(runs / "relative")],
            str(out),
            TINY,
            untrained=True,
            log=lines.append,
        )
    finally:
        patch.undo()
    return result, out, lines


def test_writes_the_three_files_with_the_rows_in_order(compared):
    result, out, lines = compared
    for name in comparison_report.FILES:
        assert os.path.getsize(out / name) > 0
    assert json.loads((out / "comparison.json").read_text()) == json.loads(json.dumps(result))
    assert [row["label"] for row in result["rows"]] == ["abc_seeds", "relative", "untrained"]
    assert len(lines) == 4  # two seeds, one run, the untrained encoder
    text = (out / "comparison.md").read_text()
    assert text.index("| abc_seeds |") < text.index("| relative |") < text.index("| untrained |")
    for title in (
        "## Runs",
        "## MINE information per factor (nats)",
        "## Probe test accuracy per factor",
        "## Disentanglement scores (preset tiny)",
    ):
        assert title in text
    assert result["caption"] in text and "0.1 x the embedding's own spread" in result["caption"]
    assert result["sample"] == {
        "data": "shapes3d",
        "data_source": "procedural",
        "num_images": 64,
        "sample_seed": 1234,
        "from": os.path.join(os.path.dirname(result["rows"][0]["run_dirs"][0]), "seed_0"),
    }


def test_rows_state_method_supervision_size_steps_and_inactive_factors(compared):
    abc, relative, untrained = compared[0]["rows"]
    assert abc["method"] == "abc" and abc["supervision"] == ABC.supervision_for(BASE) and abc["steps"] == 2
    assert (
        relative["method"] == "relative"
        and relative["supervision"] == RELATIVE.supervision
        and relative["steps"] == 7
    )
    assert (
        untrained["method"] == "abc (untrained)" and untrained["steps"] == 0 and untrained["run_dirs"] == []
    )
    assert {row["embedding_dim"] for row in (abc, relative, untrained)} == {4}
    assert abc["inactive"] == ["wall_hue"] and untrained["inactive"] == []
    text = (compared[1] / "comparison.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| abc_seeds |")]
    abc_line = next(line for line in rows if "±" in line and "*" in line)
    assert abc_line.count("*") == 1  # wall_hue, in the MINE table


def test_seeds_are_aggregated(compared):
    abc = compared[0]["rows"][0]
    assert abc["num_runs"] == 2 and len(abc["seeds"]) == 2
    for name in ("floor_hue", "shape"):
        values = [seed["mine"][name] for seed in abc["seeds"]]
        assert abc["mine"][name]["values"] == values
        assert abc["mine"][name]["mean"] == pytest.approx(np.mean(values))
        assert abc["mine"][name]["std"] == pytest.approx(np.std(values))
    beta = [seed["disentanglement"]["scores"]["beta_vae"] for seed in abc["seeds"]]
    assert abc["disentanglement"]["beta_vae"]["values"] == beta
    assert set(abc["disentanglement"]) == {"beta_vae", "factor_vae", "mig", "sap"}
    assert abc["probe_accuracy"]["shape"]["values"] == [
        seed["probe"]["shape"]["accuracy"] for seed in abc["seeds"]
    ]
    for key, _ in comparison_report.CLUSTER_MEASURES:  # 1-NN and k-means NMI per factor, every row
        assert abc[key]["shape"]["values"] == [seed[key]["shape"] for seed in abc["seeds"]]
        for row in compared[0]["rows"]:
            assert list(row[key]) == compared[0]["factors"]
            assert all(0.0 <= value["mean"] <= 1.0 for value in row[key].values())
    text = (compared[1] / "comparison.md").read_text()
    assert "## 1-NN accuracy per factor" in text and "## k-means NMI per factor" in text


def test_noise_rule_per_method(compared):
    abc, relative, untrained = compared[0]["rows"]
    assert abc["noise_rule"] == "length scale" and abc["sigma"]["values"] == [0.5, 0.5]
    assert relative["noise_rule"] == "0.1 x spread"
    assert relative["sigma"]["mean"] == pytest.approx(0.1 * relative["seeds"][0]["spread"])
    assert untrained["noise_rule"] == "length scale"  # the first run's method, ABC
    text = (compared[1] / "comparison.md").read_text()
    assert "(0.1 x spread)" in text and "0.5000 (length scale)" in text
    # FactorVAE's collapse threshold is in units of the codes' spread (the caption says so): the
    # untrained encoders' small codes (the raw threshold pruned them all) keep their dimensions.
    assert "0.05 x the codes' spread" in compared[0]["caption"]
    assert all(
        seed["disentanglement"]["results"]["factor_vae"]["num_active_dims"] > 0
        for row in compared[0]["rows"]
        for seed in row["seeds"]
    )
    # A seed with no active dimension is named, with the threshold's unit.
    result = copy.deepcopy(compared[0])
    seed = result["rows"][2]["seeds"][0]
    seed["disentanglement"]["results"]["factor_vae"]["num_active_dims"] = 0
    assert (
        "untrained: FactorVAE found no code dimension with standard deviation >= 0.05 x the codes' spread"
        in comparison_report.markdown(result)
    )
    seed["disentanglement"]["settings"]["factor_vae_prune_relative"] = False
    assert "standard deviation >= 0.05 (the embedding's spread" in comparison_report.markdown(result)


def test_the_same_observations_for_every_row(compared):
    rows = compared[0]["rows"]
    # One labelled sample and one seed of the scores' observations for every row (the draws
    # themselves: tests/test_encoder_disentanglement.py). FactorVAE draws no batch for an
    # encoder with no dimension above its collapse threshold, so codes_drawn is the most.
    assert all(list(row["mine"]) == compared[0]["factors"] for row in rows)
    votes = TINY.scores.factor_vae_batch_size * (
        TINY.scores.factor_vae_num_train + TINY.scores.factor_vae_num_eval
    )
    for row in rows:
        for seed in row["seeds"]:
            scores = seed["disentanglement"]
            unused = votes if scores["results"]["factor_vae"]["num_active_dims"] == 0 else 0
            assert scores["codes"] == TINY.scores.codes_drawn(TINY.score_names) - unused


def test_bad_rows_are_refused_before_any_work(runs, tmp_path):
    with pytest.raises(ValueError, match="at least one run directory"):
        comparison.rows_of([])
    with pytest.raises(ValueError, match="is not a directory"):
        comparison.rows_of([str(tmp_path / "missing")])
    os.makedirs(tmp_path / "half")
    (tmp_path / "half" / "config.json").write_text(BASE.to_json())
    with pytest.raises(ValueError, match="is not a finished training run"):
        comparison.rows_of([str(runs / "abc_seeds"), str(tmp_path / "half")])
    write_run(tmp_path / "mnist", experiments.config_for(data="mnist"))
    with pytest.raises(ValueError, match="one labelled sample of one data family"):
        comparison.rows_of([str(runs / "abc_seeds"), str(tmp_path / "mnist")])
    # One family, but images of another size: the first row's sample would not fit its encoder.
    pose = experiments.config_for(data="pose", encoder="s4", similarity="cosine", temperature=0.1)
    write_run(tmp_path / "pose16", pose.replace(image_size=16))
    write_run(tmp_path / "pose32", pose.replace(image_size=32))
    with pytest.raises(
        ValueError,
        match=r"pose32 is a 'pose' run on \(32, 32, 3\) images, pose16 a 'pose' run on "
        r"\(16, 16, 3\) images; .* one data family and image shape",
    ):
        comparison.rows_of([str(tmp_path / "pose16"), str(tmp_path / "pose32")])
    # Two rows of one name are told apart by their paths.
    write_run(tmp_path / "x" / "abc_seeds", BASE)
    rows = comparison.rows_of([str(runs / "abc_seeds"), str(tmp_path / "x" / "abc_seeds")])
    assert rows[0].label != rows[1].label and rows[1].label.endswith(os.path.join("x", "abc_seeds"))


def test_a_row_may_embed_with_another_network_of_its_run(runs, tmp_path):
    """DIR@NETWORK: the row embeds with NETWORK.keras (a VITAE's appearance space, say)."""
    run_dir = tmp_path / "two_spaces"
    write_run(run_dir, BASE)
    training.untrained_encoder(BASE.replace(embedding_dim=3)).save(str(run_dir / "appearance.keras"))
    rows = comparison.rows_of([f"{run_dir}@appearance", str(run_dir)])
    assert [(row.label, row.network) for row in rows] == [
        ("two_spaces@appearance", "appearance"),
        ("two_spaces", "encoder"),
    ]
    result = comparison.compare(
        [f"{run_dir}@appearance"], str(tmp_path / "out"), EMBEDDINGS_ONLY, log=lambda line: None
    )
    assert result["rows"][0]["embedding_dim"] == 3 and result["rows"][0]["method"] == "abc (appearance)"
    with pytest.raises(ValueError, match="has no network 'perspective'"):
        comparison.rows_of([f"{run_dir}@perspective"])


def test_runs_joined_with_plus_make_one_row_with_their_method_measures(runs, tmp_path, monkeypatch):
    """DIR+DIR: one row of several runs (e.g. one per class split), aggregated like seeds; the
    method's own measures come from each run's metrics.json ("method" -> "headline") and are
    measured here for a run that has none."""
    measured = []

    def own_measures(run, out_dir, settings):
        measured.append(run.run_dir)
        return {"headline": {"NMI (code vs digit)": 1.0, "ENT": 0.5}}

    monkeypatch.setattr("test_comparison.own_measures", own_measures, raising=False)
    monkeypatch.setattr(
        "abc_tf.methods.abc.model.METHOD",
        dataclasses.replace(methods.get_method("abc"), measures="test_comparison:own_measures"),
    )
    for split in (0, 1, 2):
        write_run(tmp_path / f"split_{split}" / "gan", BASE.replace(seed=split))
    for split, nmi in ((0, 0.25), (1, 0.75)):
        (tmp_path / f"split_{split}" / "gan" / "metrics.json").write_text(
            json.dumps({"method": {"headline": {"NMI (code vs digit)": nmi, "ENT": 1.0}}})
        )
    spec = "+".join(str(tmp_path / f"split_{split}" / "gan") for split in (0, 1))
    rows = comparison.rows_of([spec])
    assert rows[0].label == "gan" and len(rows[0].run_dirs) == 2
    result = comparison.compare(
        [spec, spec + "+" + str(tmp_path / "split_2" / "gan")],
        str(tmp_path / "out"),
        EMBEDDINGS_ONLY,
        log=lambda line: None,
    )
    two, three = result["rows"]
    assert two["num_runs"] == 2 and two["method_measures"]["NMI (code vs digit)"]["mean"] == pytest.approx(
        0.5
    )
    # Split 2 was never evaluated: its measures are measured by the comparison, once.
    assert three["method_measures"]["NMI (code vs digit)"]["values"] == [0.25, 0.75, 1.0]
    assert measured == [str(tmp_path / "split_2" / "gan")]
    text = (tmp_path / "out" / "comparison.md").read_text()
    assert "## The methods' own measures" in text and "| NMI (code vs digit) | ENT |" in text.replace(
        "row | ", ""
    )
    # A method without measures of its own: nothing to read or measure.
    monkeypatch.setattr(
        "abc_tf.methods.abc.model.METHOD", dataclasses.replace(methods.get_method("abc"), measures="")
    )
    assert (
        comparison.method_measures(
            str(tmp_path / "split_2" / "gan"), BASE, str(tmp_path / "x"), EMBEDDINGS_ONLY
        )
        == {}
    )
    with pytest.raises(ValueError, match="is not a directory"):
        comparison.rows_of([spec + "+" + str(tmp_path / "missing")])


def test_a_score_skipped_for_every_row_is_said_once(compared):
    result = json.loads(json.dumps(compared[0]))
    for row in result["rows"]:
        row["disentanglement_skipped"] = {"beta_vae": "no images of given factor values"}
    result["rows"][0]["disentanglement_skipped"]["sap"] = "a test reason"
    text = comparison_report.markdown(result)
    assert text.count("beta_vae not computed for every row: no images of given factor values.") == 1
    assert "sap not computed for abc_seeds: a test reason." in text


def test_a_family_with_labels_only_is_compared_on_its_labels(tmp_path):
    """The user's own folders with a labels.csv: rows compared per label (the group inactive),
    the disentanglement scores said to need known factors."""
    make_folder(str(tmp_path / "data"), {"a": 8, "b": 8, "c": 8}, image_size=(16, 16))
    rows = ["filename,colour"] + [
        f"{group}/img_{index:03d}.png,{index % 2}" for group in "abc" for index in range(8)
    ]
    (tmp_path / "data" / "labels.csv").write_text("\n".join(rows) + "\n")
    config = config_for(tmp_path / "data", image_size=64)  # the folders preset's S6 encoder
    run_dir = tmp_path / "folders_run"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(config.to_json())
    training.untrained_encoder(config.replace(seed=1)).save(str(run_dir / "encoder.keras"))
    settings = dataclasses.replace(EMBEDDINGS_ONLY, scores=TINY.scores, preset="tiny")
    result = comparison.compare(
        [str(run_dir)], str(tmp_path / "out"), settings, untrained=True, log=lambda line: None
    )
    assert result["factors"] == ["group", "colour"] and result["sample"]["num_images"] == 24
    trained, untrained = result["rows"]
    assert trained["inactive"] == ["group"] and trained["condition"] == "group inactive"
    assert set(trained["nearest_neighbour"]) == {"group", "colour"}
    assert "has no known factors" in trained["disentanglement_skipped"]["mig"]
    assert (
        "mig not computed for every row: data family 'folders' has no known factors"
        in (tmp_path / "out" / "comparison.md").read_text()
    )
    (tmp_path / "data" / "labels.csv").unlink()
    with pytest.raises(ValueError, match="has no label to compare rows on"):
        comparison.compare([str(run_dir)], str(tmp_path / "out2"), settings, log=lambda line: None)

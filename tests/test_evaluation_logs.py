"""abc_tf.evaluation.evaluation_logs: evaluate.py's measures and figures in the runs' TensorBoard
logs, read back from the event files and through TensorBoard's own HParams plugin (the table
``tensorboard --logdir runs`` shows); and evaluate.py's closing list of every file it wrote."""

from __future__ import annotations

import glob
import json
import os

import pytest
from tensorboard import context
from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins import base_plugin
from tensorboard.plugins.hparams import api_pb2, backend_context, list_session_groups
from tensorboard.util import tensor_util

from abc_tf.runs import experiments
from abc_tf.evaluation import evaluation_logs
from abc_tf.runs import training
from abc_tf.runs.hparams import HParamsLogger
from evaluate_helpers import evaluate_each

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHEAP = [
    "--num_images=48",
    "--mine_steps=10",
    "--mine_batch_size=16",
    "--mine_eval_samples=256",
    "--probe_epochs=1",
    "--disentanglement=none",
]


pytestmark = pytest.mark.slow


def test_the_numeric_leaves_of_metrics_become_tags():
    metrics = {
        "mine": {"floor_hue": 0.5, "shape": -0.01},
        "probe": {"shape": {"accuracy": 0.9, "chance": 0.25}},
        "disentanglement": {"scores": {"mig": 0.1}, "settings": {"num_train": 1000}, "codes": 1500},
        "untrained": {"mine": {"shape": 0.0}},
        "config": {"trainer": {"steps": 10}},
        "figures": ["pca.png"],
        "pca_explained_variance": [0.6, 0.3],
        "inactive": [],
        "length_scale": None,
        "flag": True,
        "bad": float("nan"),
    }
    assert evaluation_logs.scalars(metrics) == {
        "mine/floor_hue": 0.5,
        "mine/shape": -0.01,
        "probe/shape/accuracy": 0.9,  # not its chance level, nor the scores' code count: no measures
        "disentanglement/scores/mig": 0.1,
        "untrained/mine/shape": 0.0,
    }


def test_a_figure_is_tagged_by_its_path_below_the_output_folder(tmp_path):
    assert (
        evaluation_logs.image_tag(str(tmp_path / "untrained" / "pca.png"), str(tmp_path)) == "untrained/pca"
    )
    assert evaluation_logs.image_tag("/elsewhere/retrieval.png", str(tmp_path)) == "retrieval"


def make_run(run_dir, seed: int):
    """A run directory as train.py leaves it, but untrained: config, encoder, hparams in logs/."""
    config = experiments.config_for(embedding_dim=4, inactive_factors="wall_hue", seed=seed, steps=40)
    os.makedirs(run_dir)
    (run_dir / "config.json").write_text(config.to_json())
    training.untrained_encoder(config).save(str(run_dir / "encoder.keras"))
    logger = HParamsLogger(config, str(run_dir / "logs"))
    logger.on_train_begin()
    logger.on_train_end()


def files_under(folder) -> set[str]:
    return {os.path.join(root, name) for root, _, names in os.walk(folder) for name in names}


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """A folder of two seed runs evaluated in place, then seed_1 again into an --output_dir
    elsewhere; (root, [the two outputs], [the files each call added])."""
    root = tmp_path_factory.mktemp("evaluation_logs")
    for seed in (0, 1):
        make_run(root / "runs" / "abc" / f"seed_{seed}", seed)
    before = files_under(root)
    [in_place] = evaluate_each([(REPO, [f"--run_dir={root / 'runs' / 'abc'}", *CHEAP])])
    middle = files_under(root)
    [elsewhere] = evaluate_each(
        [
            (
                REPO,
                [
                    f"--run_dir={root / 'runs' / 'abc' / 'seed_1'}",
                    f"--output_dir={root / 'evaluations' / 'seed_1_again'}",
                    *CHEAP,
                ],
            )
        ]
    )
    return root, [in_place, elsewhere], [middle - before, files_under(root) - middle]


def listed_files(stdout: str) -> list[str]:
    """The paths of evaluate.py's closing ``Wrote N files:`` list, which must end its output."""
    lines = stdout.rstrip("\n").splitlines()
    start = max(index for index, line in enumerate(lines) if line.startswith("Wrote "))
    files = [line.strip() for line in lines[start + 1 :]]
    assert lines[start] == f"Wrote {len(files)} files:" and all(
        line.startswith("  ") for line in lines[start + 1 :]
    )
    return files


def test_evaluate_py_ends_by_listing_every_file_it_wrote(evaluated):
    root, outputs, added = evaluated
    for output, new_files in zip(outputs, added):
        assert output["code"] == 0, output["stderr"][-3000:]
        listed = listed_files(output["stdout"])
        assert len(listed) == len(set(listed)) and set(listed) == new_files
    names = {os.path.relpath(path, root) for path in added[0]}
    for seed in ("seed_0", "seed_1"):
        assert {
            f"runs/abc/{seed}/{name}" for name in ("pca.png", "mi_mine.png", "probes.png", "metrics.json")
        } <= names
        assert any(name.startswith(f"runs/abc/{seed}/logs/evaluation/events.out.tfevents.") for name in names)
    assert {"runs/abc/metrics.json", "runs/abc/seeds_mine.png", "runs/abc/seeds_probe_accuracy.png"} <= names


def read_events(folder: str) -> dict[str, tuple[str, list]]:
    """tag -> (plugin, [(step, scalar value or image)]) of the one event file in ``folder``
    (TensorFlow 2 writes scalars and images as tensors, named by their plugin)."""
    [path] = glob.glob(os.path.join(folder, "events.out.tfevents.*"))
    events = EventAccumulator(path, size_guidance={"tensors": 0}).Reload()
    return {
        tag: (
            events.SummaryMetadata(tag).plugin_data.plugin_name,
            [(event.step, tensor_util.make_ndarray(event.tensor_proto)) for event in events.Tensors(tag)],
        )
        for tag in events.Tags()["tensors"]
    }


def test_each_seed_logs_its_measures_and_figures_at_its_last_step(evaluated):
    root = evaluated[0]
    for seed in ("seed_0", "seed_1"):
        run_dir = root / "runs" / "abc" / seed
        events = read_events(evaluation_logs.log_dir(str(run_dir)))
        metrics = json.loads((run_dir / "metrics.json").read_text())
        plugin, [(step, value)] = events["mine/floor_hue"]
        assert (
            plugin == "scalars"
            and step == 40
            and float(value) == pytest.approx(metrics["mine"]["floor_hue"], abs=1e-6)
        )
        _, [(_, value)] = events["probe/shape/accuracy"]
        assert float(value) == pytest.approx(metrics["probe"]["shape"]["accuracy"])
        images = {tag for tag, (plugin, _) in events.items() if plugin == "images"}
        assert images == {"pca", "mi_mine", "probes"}
        assert events["pca"][1][0][0] == 40
        assert not [tag for tag in events if tag.startswith("evaluation/config/")]


def hparams_table(logdir) -> dict[str, dict[tuple[str, str], tuple[int, float]]]:
    """What TensorBoard's HParams plugin serves for ``tensorboard --logdir logdir``: session ->
    {(group, tag): (step, value)}, read through the plugin's own handler, offline."""
    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(str(logdir))
    multiplexer.Reload()
    provider = data_provider.MultiplexerDataProvider(multiplexer, str(logdir))
    backend = backend_context.Context(
        base_plugin.TBContext(logdir=str(logdir), data_provider=provider, multiplexer=multiplexer)
    )
    request = api_pb2.ListSessionGroupsRequest(
        start_index=0, slice_size=100, allowed_statuses=[api_pb2.STATUS_UNKNOWN]
    )
    response = list_session_groups.Handler(context.RequestContext(), backend, "", request).run()
    return {
        session.name: {
            (value.name.group, value.name.tag): (value.training_step, value.value)
            for value in session.metric_values
        }
        for group in response.session_groups
        for session in group.sessions
    }


def test_the_hparams_table_shows_every_run_s_evaluation_beside_its_settings(evaluated):
    root = evaluated[0]
    table = hparams_table(root)
    assert set(table) == {"runs/abc/seed_0/logs", "runs/abc/seed_1/logs", "evaluations/seed_1_again/logs"}
    for session, columns in table.items():
        metrics = json.loads((root / session / ".." / "metrics.json").read_text())
        step, value = columns[("evaluation", "mine/floor_hue")]
        assert step == 40 and value == pytest.approx(metrics["mine"]["floor_hue"], abs=1e-6)
        assert ("evaluation", "probe/object_hue/accuracy") in columns

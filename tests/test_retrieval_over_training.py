"""scripts/retrieval_over_training.py: the retrieval grids of evaluate.py --checkpoints drawn side
by side per method, with their queries and style measures (Fig. S7)."""

import json
import os

import numpy as np
import pytest


from abc_tf.data.mnist import sources as mnist_sources
from abc_tf.evaluation.tasks import retrieval
from abc_tf.runs import experiments
from scripts import retrieval_over_training as script


@pytest.fixture(scope="module")
def test_digits():
    data = mnist_sources.load_mnist(experiments.get_preset("mnist").replace(source="procedural", path=""))
    return data.source, np.asarray(data.y_test)


def write_checkpoint(curve_dir, step, source, labels, seed=0, embedding_seed=0):
    """A checkpoint's mnist_metrics.json as evaluate.py --checkpoints writes it (the fields read)."""
    embeddings = np.random.default_rng(embedding_seed).normal(size=(len(labels), 4))
    grid = retrieval.retrieval_grid(embeddings, labels, range(10), seed=seed)
    folder = os.path.join(curve_dir, "checkpoints", f"step_{step}")
    os.makedirs(folder)
    metrics = {
        "data_source": source,
        "num_test_images": len(labels),
        "trained": {
            "retrieval_grid": grid.as_dict(),
            "retrieval_row_style_spread": {"slant": 0.5 + step / 1000, "thickness": 0.7},
            "style_r2": {"slant": {"ridge_within_digit_holdout_digit": 0.6, "ridge_raw_seen_digits": 0.9}},
        },
    }
    with open(os.path.join(folder, "mnist_metrics.json"), "w") as handle:
        json.dump(metrics, handle)
    return grid


def test_each_method_gets_a_panel_per_checkpoint_with_the_same_queries(tmp_path, test_digits):
    source, labels = test_digits
    curve = str(tmp_path / "curve_ml_vae")
    first = write_checkpoint(curve, 1000, source, labels, embedding_seed=1)
    write_checkpoint(curve, 50, source, labels, embedding_seed=2)
    out = str(tmp_path / "out")
    script.main([f"--rows=ML-VAE={curve}", f"--output_dir={out}"])
    summary = json.load(open(os.path.join(out, script.OUTPUT_JSON)))
    row = summary["rows"]["ML-VAE"]
    assert list(row["steps"]) == ["50", "1000"]  # by step, not by name
    assert row["steps"]["1000"]["queries"] == np.diag(first.indices).tolist()
    assert row["steps"]["50"]["retrieval_row_style_spread"] == {"slant": 0.55, "thickness": 0.7}
    assert row["steps"]["50"]["style_r2_held_out_digit"] == {"slant": 0.6}
    assert os.path.getsize(os.path.join(out, row["figure"])) > 0 and row["figure"] == "ml_vae.png"


def test_grids_of_other_queries_or_other_images_are_refused(tmp_path, test_digits):
    source, labels = test_digits
    curve = str(tmp_path / "curve")
    write_checkpoint(curve, 1, source, labels, seed=0)
    write_checkpoint(curve, 2, source, labels, seed=1)
    with pytest.raises(ValueError, match="different queries"):
        script.main([f"--rows=ABC={curve}", f"--output_dir={tmp_path / 'out'}"])
    other = str(tmp_path / "idx_curve")
    write_checkpoint(other, 1, "idx:/data/mnist", labels)
    with pytest.raises(ValueError, match="pass the --data_path it was evaluated on"):
        script.main([f"--rows=ABC={other}", f"--output_dir={tmp_path / 'out'}"])
    with pytest.raises(ValueError, match="holds no checkpoints/step_<S>/mnist_metrics.json"):
        script.main([f"--rows=ABC={tmp_path / 'nothing'}", f"--output_dir={tmp_path / 'out'}"])

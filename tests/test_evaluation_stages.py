"""benchmarks/evaluation_stages.py: the section written from its JSON file, every figure a link
into it."""

from __future__ import annotations

import json

from benchmarks import evaluation_stages
from scripts import doc_figures


def results() -> dict:
    stages = {
        "images": 23100,
        "weight_tables_cpu_s": 2.7,
        "render_numpy_cpu_s": 6.5,
        "render_graph_cpu_s": 5.0,
        "render_pixels_differing": 0,
        "embed_eager_cpu_s": 292.8,
        "embed_traced_cpu_s": 189.3,
        "embed_largest_difference": 0.0,
    }
    rows = [
        {
            "trees": trees,
            "seed": seed,
            "cpu_s": 100.0,
            "dci_disentanglement": 0.2,
            "dci_completeness": 0.2,
            "dci_informativeness": 0.45,
        }
        for trees in ("exact", "histogram")
        for seed in (0, 1)
    ]
    evaluate = {
        "wall_s": 600.0,
        "cpu_s": 700.0,
        "stages_wall_s": {"factor isolation of the trained encoder (probes, MINE)": 400.0},
    }
    return {
        "run_dir": "runs/demo",
        "stages": stages,
        "dci": {"rows": rows},
        "evaluate": evaluate,
        "machine": "Measured on a test.",
        "command": "the command",
    }


def test_every_figure_of_the_section_points_into_the_json(tmp_path):
    data = results()
    path = tmp_path / evaluation_stages.FILE
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))
    text = evaluation_stages.section(data)
    figures, problems = doc_figures.check_text("BENCHMARKS.md", text, root=str(tmp_path))
    assert problems == []
    assert len(figures) == 3 + 3  # the stages, the evaluation and its stage
    assert "factor isolation [400](" in text

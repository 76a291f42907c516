"""docs/tutorial.py, the tutorial notebook (jupytext), runs top to bottom and shows its figures."""

from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parents[1] / "docs" / "tutorial.py"


@pytest.mark.slow
def test_tutorial_runs_top_to_bottom(tmp_path):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    notebook = jupytext.read(TUTORIAL)
    # Fewer steps than a reader's run: the test proves that every cell runs, not what it learns.
    parameters = next(cell for cell in notebook.cells if "STEPS = " in cell.source)
    parameters.source = parameters.source.replace("STEPS = 300", "STEPS = 20")
    nbclient.NotebookClient(
        notebook, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    shown = [
        out
        for cell in notebook.cells
        for out in cell.get("outputs", [])
        if "image/png" in out.get("data", {})
    ]
    assert len(shown) == 2  # the retrieval grid and the embedding
    assert (tmp_path / "tutorial_figures" / "retrieval.png").is_file()

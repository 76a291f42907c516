"""The example method of docs/ARCHITECTURE.md, "Adding a method", works as written: its code
blocks, written into a folder of their own, register as a method and train its smallest run."""

from __future__ import annotations

import math
import pathlib
import re

import pytest

from abc_tf import methods
from abc_tf.runs import training

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "ARCHITECTURE.md"
# A fenced Python block whose first line names its file: "# lab_method/model.py".
BLOCK = re.compile(r"^```python\n# (lab_method/[\w/]+\.py)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def example_files() -> dict[str, str]:
    """{path: source} of the example's code blocks, each with its first line."""
    return {path: f"# {path}\n{body}" for path, body in BLOCK.findall(DOC.read_text())}


def test_the_page_holds_both_files_of_the_example():
    assert sorted(example_files()) == ["lab_method/__init__.py", "lab_method/model.py"]


@pytest.mark.slow
def test_the_example_method_trains_its_smallest_run(tmp_path, monkeypatch):
    for path, source in example_files().items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(methods.METHODS, "lab", "lab_method.model:METHOD")
    method = methods.get_method("lab")
    config = method.smallest_run
    assert method.quick_run is method.presets["mnist_lab"]

    result = training.train(config, str(tmp_path / "run"), verbose=0)

    assert result.final_step == config.trainer.steps
    assert set(result.networks) == {"encoder"}
    assert result.history["loss"] and all(math.isfinite(loss) for loss in result.history["loss"])

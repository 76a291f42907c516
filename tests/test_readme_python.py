"""The Python face of ``import abc_tf``: the README's Python blocks run as written, and the face
loads TensorFlow only when a name needs it."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow
def test_readme_python_blocks_run_as_written(tmp_path):
    blocks = re.findall(r"^```python\n(.*?)^```$", README.read_text(encoding="utf-8"), re.M | re.S)
    assert blocks, "README.md shows no ```python block"
    for number, block in enumerate(blocks):
        script = tmp_path / f"readme_block_{number}.py"
        script.write_text(block, encoding="utf-8")
        subprocess.run([sys.executable, str(script)], cwd=tmp_path, check=True)


def test_every_name_loads_and_import_alone_starts_no_tensorflow():
    code = (
        "import sys, abc_tf; assert 'tensorflow' not in sys.modules; "
        "assert all(callable(getattr(abc_tf, name)) for name in abc_tf._API); print(len(abc_tf._API))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(result.stdout) >= 10


def test_a_run_gives_what_was_measured(tmp_path):
    from abc_tf.runs.run_dir import TrainedRun

    (tmp_path / "metrics.json").write_text(json.dumps({"method": {"mi": 0.5}}))
    assert TrainedRun(str(tmp_path), None, None).measures() == {"metrics": {"method": {"mi": 0.5}}}

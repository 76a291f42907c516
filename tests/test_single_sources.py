"""One way to do each thing: read from the package's source with ``ast``,
the training step, the TensorBoard writer's lifecycle, the JSON writer and the optimizer are
each written once, and every method and monitor uses them."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "abc_tf").rglob("*.py")) + sorted((ROOT / "models").rglob("*.py"))


def places(predicate) -> list[str]:
    found = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if predicate(node):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def is_call_to(node: ast.AST, dotted: str) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func) == dotted


def test_one_train_step_the_method_base_s():
    defined = places(lambda node: isinstance(node, ast.FunctionDef) and node.name == "train_step")
    assert defined == ["abc_tf/methods/base.py:" + defined[0].rpartition(":")[2]], defined


def test_one_summary_writer_the_monitor_base_s():
    writers = places(lambda node: is_call_to(node, "tf.summary.create_file_writer"))
    assert len(writers) == 1 and writers[0].startswith("abc_tf/methods/monitor.py:"), writers


def test_one_json_writer():
    writers = places(lambda node: is_call_to(node, "json.dump"))
    assert len(writers) == 1 and writers[0].startswith("abc_tf/json_files.py:"), writers


def makes_optimizer(node: ast.AST) -> bool:
    """A call of a class of keras.optimizers, other than its schedules and the loss-scaling wrapper."""
    if not isinstance(node, ast.Call):
        return False
    called = ast.unparse(node.func)
    return (
        called.startswith("keras.optimizers.")
        and not called.startswith("keras.optimizers.schedules.")
        and called != "keras.optimizers.LossScaleOptimizer"
        and called.rpartition(".")[2][:1].isupper()
    )


def test_one_optimizer_factory():
    made = places(makes_optimizer)
    assert len(made) == 1 and made[0].startswith("abc_tf/optimizers.py:"), made

"""The package's layers (docs/ARCHITECTURE.md): each imports only the ones below it, nothing
imports inside a function, and there is no import cycle. Read from the source with ``ast``,
so every import counts, whether or not a test happens to execute it. And tests/ mirrors the
code: every module has its test module."""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Lowest first. A module may import modules of its own layer and of the layers below.
LAYERS = [
    ("maths", ("abc_tf", "abc_tf.geometry", "abc_tf.losses", "abc_tf.schedules", "abc_tf.config", "abc_tf.registry",
               "abc_tf.lookup")),
    ("models", ("models",)),
    ("data", ("abc_tf.augment", "abc_tf.augment_ops", "abc_tf.data")),
    ("methods", ("abc_tf.methods",)),
    ("runs", ("abc_tf.runs",)),
    ("evaluation", ("abc_tf.evaluation", "abc_tf.callbacks", "abc_tf.run_summary")),
]


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules() -> dict[str, ast.Module]:
    files = sorted((ROOT / "abc_tf").rglob("*.py")) + sorted((ROOT / "models").rglob("*.py"))
    return {module_name(path): ast.parse(path.read_text(), str(path)) for path in files}


MODULES = package_modules()


def layer_of(name: str) -> int:
    best, depth = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > depth:
                best, depth = index, len(prefix)
    assert best is not None, f"{name} belongs to no layer of docs/ARCHITECTURE.md; add it to LAYERS"
    return best


def imported_modules(node: ast.AST, importer: str) -> set[str]:
    """The package modules an import statement names (``from a import b``: ``a.b`` when that
    is a module, else ``a``)."""
    found = set()
    if isinstance(node, ast.Import):
        found = {alias.name for alias in node.names}
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:  # relative import
            package = importer.split(".")[: -node.level] if importer in MODULES else importer.split(".")
            base = ".".join(package + ([base] if base else []))
        for alias in node.names:
            candidate = f"{base}.{alias.name}"
            found.add(candidate if candidate in MODULES else base)
    return {name for name in found if name.split(".")[0] in ("abc_tf", "models")}


def test_every_module_belongs_to_a_layer():
    for name in MODULES:
        layer_of(name)


def test_no_package_imports_inside_functions():
    # (Optional third-party modules, e.g. tensorflow_datasets, may load on first use.)
    inside = []
    for name, tree in MODULES.items():
        for function in ast.walk(tree):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inside += [f"{name}.{function.name}" for node in ast.walk(function)
                           if isinstance(node, (ast.Import, ast.ImportFrom)) and imported_modules(node, name)]
    assert not inside, f"imports inside functions (move them to the top, or the code to its layer): {inside}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_only_its_own_layer_or_below(name):
    layer = layer_of(name)
    above = sorted(
        imported for node in ast.walk(MODULES[name]) for imported in imported_modules(node, name)
        if layer_of(imported) > layer
    )
    assert not above, f"{name} ({LAYERS[layer][0]}) imports higher layers: {above}"


def test_models_import_nothing_of_abc_tf():
    offenders = sorted(name for name in MODULES if name.startswith("models")
                       for node in ast.walk(MODULES[name]) for imported in imported_modules(node, name)
                       if imported.startswith("abc_tf"))
    assert not offenders


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for name, tree in MODULES.items():
        edges = set()
        for node in ast.walk(tree):
            edges |= {imported for imported in imported_modules(node, name) if imported in MODULES}
        # Importing a.b.c runs a and a.b first.
        graph[name] = {edge for edge in edges if edge != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycle():
    assert find_cycle(import_graph()) is None, find_cycle(import_graph())


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


# Tests mirror the code (docs/ARCHITECTURE.md, Tests): tests/test_<module>.py, except these.
TEST_MODULE_OF = {
    "abc_tf.data": "test_family.py",  # the family registry, tested with the family interface
    "abc_tf.methods": "test_methods.py",  # the method registry and interface
    "abc_tf.methods.base": "test_methods.py",
    "models": "test_models.py",  # the architecture registry
    "models.registry": "test_models.py",  # (abc_tf/registry.py is test_registry.py)
    "models.pmp": "test_pmp_models.py",  # (abc_tf/methods/pmp.py is test_pmp.py)
    "models.vitae": "test_vitae_models.py",  # (abc_tf/methods/vitae.py is test_vitae.py)
    "abc_tf.data.render.shapes3d": "test_shapes3d.py",  # the renderer, beside the family
}
ENTRY_POINTS = ("train", "evaluate")


def test_every_module_has_its_test_module():
    packages = {name.rpartition(".")[0] for name in MODULES}
    expected = {name: TEST_MODULE_OF.get(name, f"test_{name.rpartition('.')[2]}.py") for name in MODULES
                if name in TEST_MODULE_OF or name not in packages}  # a package's __init__ only if it holds code
    expected.update({name: f"test_{name}.py" for name in ENTRY_POINTS})
    missing = sorted(f"{name} -> tests/{test}" for name, test in expected.items() if not (ROOT / "tests" / test).is_file())
    assert not missing, f"modules without their test module: {missing}"

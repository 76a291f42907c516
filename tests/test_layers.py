"""The package's layers (docs/ARCHITECTURE.md): each imports only the ones below it, nothing
imports inside a function, and there is no import cycle. Read from the source with ``ast``,
so every import counts, whether or not a test happens to execute it. The entry points sit on
top: nothing of the package imports them, and they run from the repository root (``python -m
benchmarks.NAME``) with no file editing ``sys.path``. And tests/ mirrors the code: every module
has its test module. And no code outside the registries compares a family's
or method's name with a string: it reads what they declare instead."""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Lowest first. A module may import modules of its own layer and of the layers below.
LAYERS = [
    (
        "maths",
        (
            "abc_tf",
            "abc_tf.geometry",
            "abc_tf.losses",
            "abc_tf.schedules",
            "abc_tf.config",
            "abc_tf.registry",
            "abc_tf.lookup",
            "abc_tf.json_files",
            "abc_tf.optimizers",
            "abc_tf.command_line",
        ),
    ),
    ("models", ("models",)),
    ("data", ("abc_tf.data",)),
    ("methods", ("abc_tf.methods",)),
    ("runs", ("abc_tf.runs",)),
    ("evaluation", ("abc_tf.evaluation",)),
    ("examples", ("abc_tf.examples",)),  # a method and a family by example, over every layer they use
    # The commands (abc_tf train, evaluate, grid) load the layers below on first use, inside their
    # functions, so that --help and a flag error answer without loading TensorFlow.
    ("commands", ("abc_tf.cli", "abc_tf.__main__")),
]
COMMANDS_LAYER = len(LAYERS) - 1


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
        if layer_of(name) == COMMANDS_LAYER:
            continue
        for function in ast.walk(tree):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inside += [
                    f"{name}.{function.name}"
                    for node in ast.walk(function)
                    if isinstance(node, (ast.Import, ast.ImportFrom)) and imported_modules(node, name)
                ]
    assert not inside, f"imports inside functions (move them to the top, or the code to its layer): {inside}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_only_its_own_layer_or_below(name):
    layer = layer_of(name)
    above = sorted(
        imported
        for node in ast.walk(MODULES[name])
        for imported in imported_modules(node, name)
        if layer_of(imported) > layer
    )
    assert not above, f"{name} ({LAYERS[layer][0]}) imports higher layers: {above}"


def test_models_import_nothing_of_abc_tf():
    offenders = sorted(
        name
        for name in MODULES
        if name.startswith("models")
        for node in ast.walk(MODULES[name])
        for imported in imported_modules(node, name)
        if imported.startswith("abc_tf")
    )
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
                return path[path.index(nxt) :] + [nxt]
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


# Tests mirror the code (docs/ARCHITECTURE.md, Tests): tests/test_<module>.py. A method's or data
# family's package (abc_tf/methods/<name>/, abc_tf/data/<name>/) is tested by tests/test_<name>.py:
# its config and presets (__init__), its declaration (model.py, family.py) and its own networks; its
# other modules by tests/test_<name>_<module>.py or tests/test_<module>.py.
PLUGGABLE = ("abc_tf.methods", "abc_tf.data", "abc_tf.examples")
PACKAGE_CORE = ("", "model", "family", "networks")
KNOWN_TESTS = {
    "abc_tf.data": "test_family.py",  # the family registry, tested with the family interface
    "abc_tf.methods": "test_methods.py",  # the method registry and interface
    "abc_tf.methods.base": "test_methods.py",
    # Split out of a module whose test module still holds their tests.
    "abc_tf.runs.checks": "test_training.py",  # the config's checks: replicas, batch formats, two views
    "abc_tf.data.mnist.sources": "test_mnist.py",  # source detection and reading, the class splits' pool
    "models": "test_models.py",
    "models.architectures": "test_models.py",
    # The ABC paper's baselines' networks, shared by ML-VAE and CC-VAE at 64 x 64: tested with each method.
    "models.ml_vae_networks": "test_ml_vae.py",
    "models.cc_vae_networks": "test_cc_vae.py",
    "models.vae64_networks": "test_ml_vae.py",
    # The commands: the abc_tf dispatcher, and each command's module by its name.
    "abc_tf.cli": "test_cli.py",
    "abc_tf.__main__": "test_cli.py",
    "abc_tf.evaluation.grid_search": "test_grid.py",
    # Halves of one job's tests: a comparison's report, the classifier of Elastic-InfoGAN's measures.
    "abc_tf.evaluation.comparison_report": "test_comparison.py",
    "abc_tf.evaluation.tasks.mnist_classifier": "test_digit_clusters.py",
    # Methods' loss terms and monitors, split out of model.py: tested with their method.
    "abc_tf.methods.cc_vae.losses": "test_cc_vae.py",
    "abc_tf.methods.lord.losses": "test_lord.py",
    "abc_tf.methods.pmp.losses": "test_pmp.py",
    "abc_tf.methods.pmp.monitor": "test_pmp.py",
    "abc_tf.methods.vae.losses": "test_vae.py",
    "abc_tf.methods.vae.monitor": "test_vae.py",
}
ENTRY_POINTS = ("train", "evaluate", "curves", "compare", "grid")


def mirroring_tests(name: str) -> tuple[str, ...]:
    """The test modules that may test module ``name``, the first that exists counts."""
    if name in KNOWN_TESTS:
        return (KNOWN_TESTS[name],)
    for pluggable in PLUGGABLE:
        parts = name.split(".")
        if name.startswith(pluggable + ".") and len(parts) in (3, 4):
            package, module = parts[2], (parts[3] if len(parts) == 4 else "")
            if module in PACKAGE_CORE:
                return (f"test_{package}.py",)
            return (f"test_{package}_{module}.py", f"test_{module}.py")
    return (f"test_{name.rpartition('.')[2]}.py",)


def is_package_of_methods_or_families(name: str) -> bool:
    return any(name.startswith(pluggable + ".") and name.count(".") == 2 for pluggable in PLUGGABLE)


def test_every_module_has_its_test_module():
    packages = {name.rpartition(".")[0] for name in MODULES}
    expected = {
        name: mirroring_tests(name)
        for name in MODULES
        if name in KNOWN_TESTS or name not in packages or is_package_of_methods_or_families(name)
    }
    expected.update({name: (f"test_{name}.py",) for name in ENTRY_POINTS})
    missing = sorted(
        f"{name} -> tests/{' or '.join(tests)}"
        for name, tests in expected.items()
        if not any((ROOT / "tests" / test).is_file() for test in tests)
    )
    assert not missing, f"modules without their test module: {missing}"


# Capabilities, not names: a method declares the batches it accepts and a family what
# it offers; only the registries, which map names to declarations, compare a name with a string.
NAME_REGISTRIES = {"abc_tf.registry", "abc_tf.data", "abc_tf.methods"}
DECLARATION_SUFFIXES = ("family", "method")  # family.name, get_method(...).name, config.method.name, ...
EQUALITY_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def identifier(node: ast.AST) -> str:
    """The last name of ``a.b.c`` or ``a.b.c(...)``; "" for anything else."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def names_a_choice(node: ast.AST) -> bool:
    """Whether ``node`` is the name of a chosen family or method: ``config.data.family``,
    ``run.config.method.name``, or ``family.name`` / ``get_method(...).name``."""
    if isinstance(node, ast.Attribute) and node.attr == "name":
        return identifier(node.value).endswith(DECLARATION_SUFFIXES)
    return (
        isinstance(node, ast.Attribute) and node.attr == "family" and identifier(node.value).endswith("data")
    )


def is_string_constant(node: ast.AST) -> bool:
    """A string, or a tuple, list or set of strings."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(is_string_constant(element) for element in node.elts)
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def name_comparisons(tree: ast.AST) -> list[str]:
    """Every ``==``, ``!=``, ``in``, ``not in`` between a family's or method's name and string
    constants in ``tree``: "line: source"."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, sides, sides[1:]):
                if isinstance(op, EQUALITY_OPS) and (
                    (names_a_choice(left) and is_string_constant(right))
                    or (names_a_choice(right) and is_string_constant(left))
                ):
                    found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_code_compares_a_family_or_method_name_with_a_string():
    sources = {name: tree for name, tree in MODULES.items() if name not in NAME_REGISTRIES}
    sources.update({name: ast.parse((ROOT / f"{name}.py").read_text()) for name in ENTRY_POINTS})
    found = [f"{name}:{where}" for name, tree in sources.items() for where in name_comparisons(tree)]
    assert not found, f"declare a capability (DataFamily, Method) instead of comparing names: {found}"


def test_the_name_check_finds_a_comparison():
    source = (
        """
if config.method.name == "vae": pass
if run.config.data.family not in ("mnist", "shapes3d"): pass
if family.name != "yaleb": pass
if "abc" == get_method(config.method.name).name: pass
"""
        "if config.data.family == other.data.family or config.method.name in METHODS "
        'or policy.name == "mixed_float16": pass\n'
    )
    assert [where.split(":")[0] for where in name_comparisons(ast.parse(source))] == ["2", "3", "4", "5"]


# The entry points sit above every layer: train.py, evaluate.py and grid.py (ENTRY_POINTS), and the
# modules of these folders, each run as ``python -m benchmarks.NAME`` from the repository root.
ENTRY_POINT_PACKAGES = ("scripts", "benchmarks")


def top_level_imports(tree: ast.Module) -> set[str]:
    """The top-level names of the modules a file imports absolutely (``from a.b import c``: ``a``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_nothing_of_the_package_imports_an_entry_point():
    entry_points = set(ENTRY_POINTS + ENTRY_POINT_PACKAGES)
    offenders = sorted(
        f"{name} imports {sorted(top_level_imports(tree) & entry_points)}"
        for name, tree in MODULES.items()
        if top_level_imports(tree) & entry_points
    )
    assert not offenders


@pytest.mark.parametrize("package", ENTRY_POINT_PACKAGES)
def test_entry_point_folders_are_packages(package):
    # So ``python -m benchmarks.serving`` finds the module, and ``from benchmarks import loops``
    # its neighbour, from the repository root without a path edit.
    assert (ROOT / package / "__init__.py").is_file()


def python_files() -> list[pathlib.Path]:
    """The repository's own Python files: the entry points, the package, the tests."""
    folders = ("abc_tf", "models", "tests") + ENTRY_POINT_PACKAGES
    return sorted(ROOT.glob("*.py")) + sorted(
        path for folder in folders for path in (ROOT / folder).rglob("*.py")
    )


def edits_sys_path(tree: ast.Module) -> bool:
    """Whether the code calls a method of ``sys.path`` (insert, append, ...) or assigns to it."""

    def is_sys_path(node: ast.AST) -> bool:
        if isinstance(node, ast.Subscript):
            node = node.value
        return (
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        )

    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and is_sys_path(node.func.value)
        ):
            return True
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AugAssign)
            else []
        )
        if any(is_sys_path(target) for target in targets):
            return True
    return False


def test_edits_sys_path_finds_the_edits():
    for code in (
        "sys.path.insert(0, ROOT)",
        "sys.path.append(ROOT)",
        "sys.path += [ROOT]",
        "sys.path[:0] = [ROOT]",
    ):
        assert edits_sys_path(ast.parse(code)), code
    assert not edits_sys_path(ast.parse("import sys\nprint(sys.path, os.path.join('a', 'b'))"))


def test_no_file_edits_sys_path():
    # The package is installed (pip install -e .), the entry points run from the root as
    # modules, and pytest puts the root and tests/ on the path (pyproject.toml).
    files = python_files()
    assert len(files) > len(MODULES)  # the walk found the checkout, not an empty folder
    offenders = [
        str(path.relative_to(ROOT))
        for path in files
        if edits_sys_path(ast.parse(path.read_text(), str(path)))
    ]
    assert not offenders, f"sys.path edited in {offenders}; run the file as a module from the repository root"


# No two modules share a name: a reader finds a module by its name, and the mirror
# above maps each to its own tests/test_<name>.py. Inside a method's or family's package the name
# is its package's and the file's (abc/model.py, mnist/family.py: the convention's file names).
def qualified_file_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).parts
    in_package = ".".join(parts[:2]) in PLUGGABLE and len(parts) == 4
    return f"{parts[2]}/{path.name}" if in_package else path.name


def test_no_two_modules_share_a_file_name():
    files = [
        path
        for folder in ("abc_tf", "models")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.name != "__init__.py"
    ]
    assert files
    paths_of: dict[str, list[str]] = {}
    for path in files:
        paths_of.setdefault(qualified_file_name(path), []).append(str(path.relative_to(ROOT)))
    shared = {name: paths for name, paths in paths_of.items() if len(paths) > 1}
    assert not shared, (
        f"modules sharing a file name (rename the lower one, as models/pmp_networks.py): {shared}"
    )


# Helpers used across modules are public: a leading underscore means "this module
# only". The tests may reach into a module's private names; the code may not.
CODE_ROOTS = ("abc_tf", "models") + ENTRY_POINT_PACKAGES + ENTRY_POINTS


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_reaches(tree: ast.Module) -> list[tuple[int, str]]:
    """Every ``from <package code> import _name`` and every ``name._private`` (``a.b._private``
    too) where ``name`` was imported from the package, in ``tree``: (line, source). An object's
    private attribute read outside its class is not seen: ``ast`` does not know its type."""
    imported: set[str] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {
                alias.asname or alias.name.split(".")[0]
                for alias in node.names
                if alias.name.split(".")[0] in CODE_ROOTS
            }
        elif isinstance(node, ast.ImportFrom) and (
            node.level or (node.module or "").split(".")[0] in CODE_ROOTS
        ):
            imported |= {alias.asname or alias.name for alias in node.names}
            found += [(node.lineno, ast.unparse(node)) for alias in node.names if is_private(alias.name)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in imported:
                found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_no_code_uses_another_module_s_private_names():
    files = [ROOT / f"{name}.py" for name in ENTRY_POINTS] + [
        path
        for folder in ("abc_tf", "models") + ENTRY_POINT_PACKAGES
        for path in sorted((ROOT / folder).rglob("*.py"))
    ]
    assert len(files) > len(MODULES)  # the walk found the checkout, not an empty folder
    found = [
        f"{path.relative_to(ROOT)}:{line}: {source}"
        for path in files
        for line, source in private_reaches(ast.parse(path.read_text(), str(path)))
    ]
    assert not found, f"private names used from another module (make them public): {found}"


def test_the_private_name_check_finds_a_reach():
    source = """
from abc_tf.evaluation.estimators import plots
from abc_tf.evaluation.estimators.plots import _finish, save_figure
import models
figure = plots._new_figure(1.0, 1.0)
models.architectures._BUILDERS.clear()
print(self._cache, plots.__name__, other._private, save_figure)
"""
    assert [line for line, _ in private_reaches(ast.parse(source))] == [3, 5, 6]

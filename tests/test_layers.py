"""Imports point up the layer table of DESIGN.md only, no module imports itself in a loop,
the CLI uses public APIs only, and importing a module loads only its layer and those below.

A layer is a top-level package (``bench``), a subpackage of ``sol`` (``sol.core``,
``sol.train``, ``sol.infer``, ``sol.validation``) or a base module (``units``). Imports
made inside functions count; imports under ``if TYPE_CHECKING:`` do not (they never run).
The statements tell what a module may import; ``sys.modules`` after importing each module in a
fresh interpreter tells what it really loads (a package ``__init__``, ``importlib.resources``
or a re-export can load more than the statements say).
"""

from __future__ import annotations

import ast
import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "lightspeed"
BASE = {
    "units",
    "errors",
    "records",
    "files",
    "datafile",
    "stats",
    "paths",
    "environment",
    "lazy",
    "nvml",
    "extras",
    "clock",
    "limits",
}
MEASUREMENT = {"bench", "goodput", "trace", "monitor"}
DOMAINS = {"cost", "mig", "moe"}
ENGINES = {"sol.core", "sol.train", "sol.infer", "sol.serve", "sol.validation", "sol"}
CURATED = {"lightspeed", "api", "jobs", "__main__"}  # the curated API reaches every layer
BELOW_REPORT = {"catalog", "workload", *ENGINES, *DOMAINS, *MEASUREMENT, "store", "gate"}

# layer -> layers it may import (besides itself and the base modules)
ALLOWED: dict[str, set[str]] = {
    **{name: set() for name in BASE},
    "catalog": set(),
    "workload": set(),
    "sol.core": {"catalog", "workload"},
    "sol.train": {"sol.core", "catalog", "workload"},
    "sol.infer": {"sol.core", "catalog", "workload"},
    "sol.serve": {"sol.infer", "sol.core", "catalog", "workload"},
    "sol.validation": {"sol.core", "sol.train", "sol.infer", "sol.serve", "catalog", "workload"},
    "sol": {"sol.core", "sol.train", "sol.infer", "sol.serve", "sol.validation", "catalog", "workload"},
    "bench": {*ENGINES, "catalog", "workload"},
    "goodput": {*ENGINES, "catalog", "workload"},
    "trace": {*ENGINES, "catalog", "workload"},
    "monitor": {*ENGINES, "catalog", "workload", "goodput"},
    "cost": {*ENGINES, "catalog", "workload"},
    "mig": {*ENGINES, "catalog", "workload"},
    "moe": {*ENGINES, "catalog", "workload"},
    "store": set(),
    "gate": {"store", *MEASUREMENT, *ENGINES, "catalog", "workload"},
    "report": {*BELOW_REPORT, "doctor"},
    "tour": {*BELOW_REPORT, "report"},
    "doctor": {"store", "monitor", *MEASUREMENT, *ENGINES, "catalog", "workload"},
    "cli": {*BELOW_REPORT, "report", "tour", "doctor", "api", "jobs"},
}


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node except the bodies of ``if TYPE_CHECKING:`` blocks."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in (child, *_runtime_nodes(child)))
            continue
        yield node
        yield from _runtime_nodes(node)


def _module_name(path: Path) -> str:
    parts = ["lightspeed", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULE_PATHS = sorted(SRC.rglob("*.py"))
MODULES = {_module_name(path): path for path in MODULE_PATHS}


def _imports(path: Path) -> list[str]:
    """Modules ``path`` imports at run time: ``from a import b`` is ``a.b`` when that is a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                is_module = submodule in MODULES and alias.name not in _bound_names(node.module)
                names.append(submodule if is_module else node.module)
    return [name for name in dict.fromkeys(names) if name.split(".")[0] == "lightspeed"]


@functools.cache
def _bound_names(package: str) -> frozenset[str]:
    """Names a package's ``__init__`` binds itself (a function may share a submodule's name)."""
    path = MODULES.get(package)
    if path is None or path.name != "__init__.py":
        return frozenset()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bound = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    return frozenset(bound | defined)


def layer_of(module: str) -> str:
    """``lightspeed.sol.train.plan`` -> ``sol.train``; ``lightspeed.sol.systems`` -> ``sol``."""
    parts = module.split(".")[1:]
    if not parts:
        return "lightspeed"
    if parts[0] == "sol" and len(parts) > 1 and parts[1] in {"core", "train", "infer", "serve", "validation"}:
        return f"sol.{parts[1]}"
    return parts[0]


@pytest.mark.parametrize("path", MODULE_PATHS, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_point_up_the_layers(path: Path) -> None:
    module = _module_name(path)
    layer = layer_of(module)
    if layer in CURATED:  # the curated API, its config runner and `-m lightspeed` reach everything
        return
    allowed = ALLOWED[layer] | BASE | {layer}
    for name in _imports(path):
        target = layer_of(name)
        if target == "lightspeed":  # `from lightspeed import __version__`
            continue
        assert target in allowed, (
            f"{path.relative_to(SRC)} imports {name}: {layer} may import {sorted(allowed)}"
        )
        if layer == "cli" and target not in {"cli", *BASE}:
            assert name.count(".") == target.count(".") + 1, (
                f"{path.relative_to(SRC)} imports {name}: the CLI must use the public API "
                f"(import from lightspeed.{target}, not its submodules)"
            )


def test_every_package_is_in_the_layer_table() -> None:
    layers = {layer_of(name) for name in MODULES} - CURATED
    assert layers <= set(ALLOWED), f"unlisted packages: {sorted(layers - set(ALLOWED))}"


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), or a module importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, []):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, []):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@functools.cache
def module_graph() -> dict[str, list[str]]:
    return {name: [t for t in _imports(path) if t in MODULES and t != name] for name, path in MODULES.items()}


def test_no_module_import_cycle() -> None:
    assert _cycles(module_graph()) == []


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import() -> None:
    graph = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}
    assert _cycles(graph) == [["a", "b", "c"]]
    source = "def f():\n    from lightspeed.sol.train.search import search_training\n"
    tree = ast.parse(source)
    assert any(isinstance(node, ast.ImportFrom) for node in _runtime_nodes(tree))


def test_store_imports_no_measurement_or_engine() -> None:
    reached: set[str] = set()
    todo = ["lightspeed.store"]
    graph = module_graph()
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(graph.get(name, []))
    layers = {layer_of(name) for name in reached}
    assert not layers & {"bench", "goodput", "trace", "monitor", *ENGINES}, sorted(layers)


# --- what really loads ---------------------------------------------------------------------------

_LOADED_SCRIPT = r"""
import json, os, sys, tempfile
plan = json.loads(sys.stdin.read())
modules, parents = plan["modules"], plan["parents"]


def third_party(modules):
    # every non-lightspeed module that importing all of `modules` loads (found in one fork)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        before = set(sys.modules)
        for module in modules:
            try:
                __import__(module)
            except BaseException:
                pass  # reported by its own fork below
        found = sorted(n for n in set(sys.modules) - before if n.split(".")[0] != "lightspeed")
        with os.fdopen(write, "w") as out:
            out.write(json.dumps(found))
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as inp:
        found = json.loads(inp.read() or "[]")
    os.waitpid(pid, 0)
    return found


# Libraries load once here, before the forks: each fork then pays only for lightspeed's own
# modules (what the test is about), not for numpy, scipy or jinja2 again and again.
for name in third_party(modules):
    try:
        __import__(name)
    except BaseException:
        pass
children = {}
for module in modules:
    children.setdefault(parents.get(module) or "", []).append(module)
folder = tempfile.mkdtemp()


def visit(node):
    # each module imports in a fork of the process that has imported its zygote (see the
    # fixture): importing the zygote first loads nothing the module would not load itself
    for module in children.get(node, []):
        answer = os.path.join(folder, module)
        pid = os.fork()
        if pid == 0:
            try:
                __import__(module)
                loaded = sorted(name for name in sys.modules if name.split(".")[0] == "lightspeed")
                payload = {"ok": True, "loaded": loaded}
            except BaseException as error:  # reported, not raised: the parent asserts on it
                payload = {"ok": False, "error": repr(error)}
            with open(answer, "w") as out:
                out.write(json.dumps(payload))
            if payload["ok"]:
                visit(module)
            os._exit(0)
        os.waitpid(pid, 0)
        if not read(module)["ok"]:
            visit(module)  # its dependants import it themselves and report the failure


def read(module):
    try:
        with open(os.path.join(folder, module)) as inp:
            return json.loads(inp.read())
    except (OSError, ValueError):
        return {"ok": False, "error": "no answer"}


visit("")
results = {module: read(module) for module in modules}
for module in os.listdir(folder):
    os.remove(os.path.join(folder, module))
os.rmdir(folder)
print(json.dumps(results))
"""


def _body_imports(name: str) -> list[str]:
    """The lightspeed modules ``name`` imports in statements of its module body (not under an
    ``if``, ``try``, function or class): importing ``name`` always imports each of them whole."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    found: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return [module for module in found if module in MODULES and module != name]


def _zygotes(names: list[str]) -> dict[str, str | None]:
    """For each module, the module its fork starts from: of those it imports in its body, the
    one that reaches the most modules (None: a fresh interpreter's state). What the fork then
    loads is what a fresh interpreter would: the zygote's modules are all among the module's own."""
    graph = module_graph()
    reach: dict[str, set[str]] = {}

    def reached(name: str) -> set[str]:
        if name not in reach:
            reach[name] = {name}.union(*(reached(target) for target in graph.get(name, [])))
        return reach[name]

    wanted = set(names)
    return {
        name: max(
            (module for module in _body_imports(name) if module in wanted),
            key=lambda module: (len(reached(module)), module),
            default=None,
        )
        for name in names
    }


def test_a_zygote_is_imported_in_the_body_of_its_module() -> None:
    zygotes = _zygotes(sorted(name for name in MODULES if name != "lightspeed.__main__"))
    assert zygotes["lightspeed.lazy"] is None
    for name, zygote in zygotes.items():
        assert zygote is None or zygote in _body_imports(name), name


@pytest.fixture(scope="module")
def loaded_modules() -> dict[str, dict[str, Any]]:
    """For every module: the ``lightspeed`` modules in ``sys.modules`` after importing it alone
    (the parent never imports lightspeed). Each import runs in a fork of the process that imported
    its zygote (:func:`_zygotes`), so every module is imported once along each branch, not once
    per module that needs it."""
    if not hasattr(os, "fork"):
        pytest.skip("needs os.fork (POSIX)")
    names = sorted(name for name in MODULES if name != "lightspeed.__main__")
    result = subprocess.run(
        [sys.executable, "-c", _LOADED_SCRIPT],
        input=json.dumps({"modules": names, "parents": _zygotes(names)}),
        capture_output=True,
        text=True,
        check=True,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(SRC.parent), os.environ.get("PYTHONPATH", "")]),
        },
    )
    loaded: dict[str, dict[str, Any]] = json.loads(result.stdout)
    return loaded


def test_importing_a_module_loads_only_its_layer_and_those_below(
    loaded_modules: dict[str, dict[str, Any]],
) -> None:
    wrong = []
    for module, answer in loaded_modules.items():
        assert answer["ok"], f"import {module} failed: {answer.get('error')}"
        layer = layer_of(module)
        if layer in CURATED:
            continue
        allowed = ALLOWED[layer] | BASE | {layer, "lightspeed"}
        loaded = set(answer["loaded"])
        # a package's lazy __init__ loads with any module below it, and loads nothing itself
        ancestors = {name.rsplit(".", depth)[0] for name in loaded for depth in range(1, name.count("."))}
        extra = sorted(name for name in loaded - ancestors if layer_of(name) not in allowed)
        if extra:
            wrong.append(f"import {module} ({layer}) loads {', '.join(extra[:4])}")
    assert not wrong, "\n".join(wrong)


def test_a_leaf_of_the_engine_and_the_gate_load_few_modules(
    loaded_modules: dict[str, dict[str, Any]],
) -> None:
    roofline = len(loaded_modules["lightspeed.sol.core.roofline"]["loaded"])
    gate = len(loaded_modules["lightspeed.gate"]["loaded"])
    gate_compare = len(loaded_modules["lightspeed.gate.compare"]["loaded"])
    print(
        f"lightspeed modules loaded: sol.core.roofline {roofline}, gate {gate}, gate.compare {gate_compare}"
    )
    assert roofline <= 25
    assert gate <= 40
    assert gate_compare <= 40
    assert loaded_modules["lightspeed"]["loaded"] == ["lightspeed", "lightspeed.lazy"]  # nothing until used

"""Imports point up the layer table of DESIGN.md only; the CLI uses public APIs only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "lightspeed"
BASE = {"units", "errors", "records", "datafile", "stats"}

# package -> packages it may import (besides itself and the base modules)
ALLOWED: dict[str, set[str]] = {
    "units": set(),
    "errors": set(),
    "records": set(),
    "datafile": set(),
    "stats": set(),
    "catalog": set(),
    "workload": set(),
    "sol": {"catalog", "workload"},
    "bench": {"sol", "catalog", "workload"},
    "goodput": {"sol", "workload", "catalog"},
    "trace": {"catalog"},
    "monitor": {"catalog"},
    "store": {"catalog", "workload", "sol", "bench", "goodput", "trace", "monitor"},
    "report": {"catalog", "workload", "sol", "bench", "goodput", "trace", "monitor", "store"},
    "cli": {"catalog", "workload", "sol", "bench", "goodput", "trace", "monitor", "store", "report"},
}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return [name for name in names if name.split(".")[0] == "lightspeed"]


def _package_of(path: Path) -> str:
    relative = path.relative_to(SRC)
    return relative.parts[0].removesuffix(".py")


MODULES = sorted(p for p in SRC.rglob("*.py") if p.parent != SRC or p.stem in ALLOWED)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_point_up_the_layers(path: Path) -> None:
    package = _package_of(path)
    allowed = ALLOWED[package] | BASE | {package}
    for name in _imports(path):
        parts = name.split(".")
        if len(parts) == 1:  # `import lightspeed` (the version)
            continue
        target = parts[1]
        assert target in allowed, (
            f"{path.relative_to(SRC)} imports {name}: {package} may import {sorted(allowed)}"
        )
        if package == "cli" and target not in {"cli", *BASE}:
            assert len(parts) == 2, (
                f"{path.relative_to(SRC)} imports {name}: the CLI must use the public API "
                f"(import from lightspeed.{target}, not its submodules)"
            )


def test_every_package_is_in_the_layer_table() -> None:
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and not p.name.startswith("_")}
    packages |= {p.stem for p in SRC.glob("*.py") if not p.stem.startswith("_")}
    assert packages <= set(ALLOWED), f"unlisted packages: {sorted(packages - set(ALLOWED))}"

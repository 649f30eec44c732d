"""Every package loads its names on first use (:mod:`lightspeed.lazy`); what each ``__init__`` lists
under ``TYPE_CHECKING``, its ``__all__`` and what the names resolve to must agree."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from lightspeed.lazy import read_exports

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGES = sorted(
    ".".join(path.parent.relative_to(SRC).parts)
    for path in (SRC / "lightspeed").rglob("__init__.py")
    if "attach(__name__, __file__)" in path.read_text(encoding="utf-8")
)


def test_the_packages_that_re_export_are_all_lazy() -> None:
    eager = [
        ".".join(path.parent.relative_to(SRC).parts)
        for path in (SRC / "lightspeed").rglob("__init__.py")
        if any(
            line.startswith("from lightspeed.") and not line.startswith("from lightspeed.lazy ")
            for line in path.read_text(encoding="utf-8").splitlines()
        )
    ]
    assert eager == [], f"package __init__s importing at run time: {eager}"
    assert len(PACKAGES) >= 15


@pytest.mark.parametrize("package", PACKAGES)
def test_exports_all_and_imports_agree(package: str) -> None:
    module = importlib.import_module(package)
    exports = read_exports(module.__file__ or "")
    defined_here = {"__version__", "SUITES"}  # constants an __init__ defines itself
    assert sorted(set(module.__all__) - defined_here) == sorted(exports)
    for name, (source, original) in exports.items():
        assert getattr(module, name) is getattr(importlib.import_module(source), original), name


@pytest.mark.parametrize("package", PACKAGES)
def test_no_export_shares_a_submodule_name(package: str) -> None:
    """Importing ``package.name`` binds the module to the package's attribute ``name``: a lazy
    package that also exports a function ``name`` would hand out the module after that."""
    folder = SRC.joinpath(*package.split("."))
    submodules = {path.stem for path in folder.glob("*.py")} | {
        path.name for path in folder.iterdir() if (path / "__init__.py").is_file()
    }
    exports = read_exports(folder / "__init__.py")
    assert sorted(set(exports) & submodules) == []


def test_a_missing_name_is_an_attribute_error_and_subpackages_resolve() -> None:
    from lightspeed import sol

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = sol.nope
    assert sol.train.__name__ == "lightspeed.sol.train"  # a subpackage by attribute, imported on use


def test_importing_one_renderer_does_not_load_matplotlib_or_the_html_report() -> None:
    code = (
        "import sys\n"
        "from lightspeed.report import render_table\n"
        "print('matplotlib' in sys.modules, 'lightspeed.report.html' in sys.modules)\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.split() == ["False", "False"]

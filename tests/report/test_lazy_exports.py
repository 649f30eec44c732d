"""``lightspeed.report`` loads renderers on first use; its three listings must agree."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

from lightspeed import report

INIT = Path(report.__file__)


def _type_checking_imports() -> dict[str, str]:
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lightspeed.report."):
            for alias in node.names:
                found[alias.name] = node.module.rsplit(".", 1)[1]
    return found


def test_exports_all_and_imports_agree() -> None:
    imports = _type_checking_imports()
    assert imports == report._EXPORTS
    assert sorted(report.__all__) == sorted(report._EXPORTS)


def test_every_export_resolves_to_its_module() -> None:
    for name, module in report._EXPORTS.items():
        assert getattr(report, name) is getattr(importlib.import_module(f"lightspeed.report.{module}"), name)


def test_importing_one_renderer_does_not_load_matplotlib_or_the_html_report() -> None:
    code = (
        "import sys\n"
        "from lightspeed.report import render_table\n"
        "print('matplotlib' in sys.modules, 'lightspeed.report.html' in sys.modules)\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.split() == ["False", "False"]

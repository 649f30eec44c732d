"""Issue 26: one home per concept. Two modules share a basename only when they are the same
concept at two layers (a measurement and its model, training and inference), and then each
module's docstring names its twin, so a reader who opens one finds the other.

``cli/`` and ``report/`` are exempt: a command and its rendering are named for the concept
they present (``cli/trace.py`` shows ``lightspeed.trace``)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "lightspeed"
EXEMPT = {"cli", "report"}
NOT_CONCEPTS = {"__init__", "__main__"}


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(SRC.parent).with_suffix("").parts)


def _twins() -> dict[str, list[Path]]:
    by_name: dict[str, list[Path]] = defaultdict(list)
    for path in sorted(SRC.rglob("*.py")):
        inside = path.relative_to(SRC).parts
        if path.stem in NOT_CONCEPTS or (len(inside) > 1 and inside[0] in EXEMPT):
            continue
        by_name[path.stem].append(path)
    return {name: paths for name, paths in by_name.items() if len(paths) > 1}


def test_modules_that_share_a_name_name_each_other() -> None:
    missing = []
    for paths in _twins().values():
        for path in paths:
            docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            for twin in paths:
                name = _dotted(twin)
                named = name in docstring or name.removeprefix("lightspeed.") in docstring
                if twin != path and not named:
                    missing.append(f"{_dotted(path)} does not name its twin {name}")
    assert not missing, "\n".join(missing)


def test_the_rule_sees_the_twins_it_is_about() -> None:
    """The check above would pass vacuously if it found no twins; these are known ones."""
    twins = _twins()
    assert {"plan", "search", "estimate", "memory", "collectives", "nvml"} <= set(twins)
    assert "validate" not in twins  # trace.integrity was trace.validate, a different concept

"""The repository paths the documentation's commands name exist: a transcript that names a moved
test file stops working for the reader who copies it (docs/trace.md's six `trace` commands named
`tests/fixtures/traces/trace_filter` after the traces moved under `tests/data/shared/`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# a path into the repository's own folders, as a command line names it
_PATH = re.compile(r"(?<![\w./-])((?:tests|examples|benchmarks)/[\w./-]*[\w/])")
_COMMAND = ("$ lightspeed", "lightspeed ", "$ python", "python benchmarks")


def _commands() -> list[tuple[str, int, str]]:
    """(document, line, path) for each repository path on a command line of README.md and
    docs/*.md (docs/benchmarks.md is a log of past sessions' runs, kept as they ran)."""
    found = []
    for document in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        if document.name == "benchmarks.md":
            continue
        for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip().startswith(_COMMAND):
                found += [(document.name, number, path) for path in _PATH.findall(line)]
    return found


def test_the_documents_name_paths_on_their_command_lines() -> None:
    assert len(_commands()) >= 20  # the pattern still finds the commands' paths


@pytest.mark.parametrize(("document", "line", "path"), _commands(), ids=str)
def test_each_path_a_command_names_exists(document: str, line: int, path: str) -> None:
    assert (ROOT / path.rstrip("/")).exists(), f"{document}:{line} names {path}, which the repository lacks"

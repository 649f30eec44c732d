"""docs/plan-files.md shows the file its first command writes with ``--save-config``: the sample
had kept a ``micro_batch_size = 1`` line the command no longer writes (the field's default is
settled when the plan runs, so a saved plan leaves it out)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

DOCUMENT = Path(__file__).resolve().parent.parent / "docs" / "plan-files.md"


def _block(text: str, language: str) -> str:
    """The first fenced block of ``language`` in ``text``."""
    match = re.search(rf"^```{language}\n(.*?)^```$", text, re.DOTALL | re.MULTILINE)
    assert match is not None, f"docs/plan-files.md has no ```{language} block"
    return match.group(1)


def _first_command(text: str) -> list[str]:
    """The words of the first command of the first bash block (backslash continuations joined)."""
    joined = _block(text, "bash").replace("\\\n", " ")
    return shlex.split(joined.splitlines()[0], comments=True)


def test_the_first_command_is_a_saved_plan() -> None:
    words = _first_command(DOCUMENT.read_text(encoding="utf-8"))
    assert words[:3] == ["lightspeed", "plan", "train"]
    assert words[words.index("--save-config") + 1] == "llama405b.toml"


def test_the_sample_is_the_file_the_first_command_writes(run_cli: Any, tmp_path: Path) -> None:
    text = DOCUMENT.read_text(encoding="utf-8")
    words = _first_command(text)
    saved = tmp_path / "llama405b.toml"
    words[words.index("--save-config") + 1] = str(saved)
    result = run_cli(*words[1:])
    assert result.code == 0, result.err
    assert saved.read_text(encoding="utf-8") == _block(text, "toml")

"""Every complete ``lightspeed`` command the README shows runs and answers (exit 0, output
on stdout), so the front page cannot rot. Commands with placeholders (``...``,
``RUN_DIR``, ``BASELINE``) and the tour (tested in tests/cli/test_tour.py) are left
out; ``../shared`` stands for the shared data folder."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PLACEHOLDERS = re.compile(
    r"\.\.\.|\b[A-Z][A-Z_]{2,}\b|my-cluster\.toml|result_0\.txt|base\.json|load\.json|train\.py|report\.sqlite|ranks/"
)
SKIPPED_COMMANDS = ("tour", "calibrate")  # the tour has its own tests; calibrate runs minutes


def _readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    inline = re.findall(r"`(lightspeed [^`]+)`", text)
    blocks = "\n".join(re.findall(r"```bash\n(.*?)```", text, re.S)).replace("\\\n", " ")
    lines = [line.split("  #")[0].strip() for line in blocks.splitlines()]
    commands = [*inline, *(line for line in lines if line.startswith("lightspeed "))]
    seen: dict[str, None] = {}
    for command in commands:
        if PLACEHOLDERS.search(command) or command.split()[1] in SKIPPED_COMMANDS:
            continue
        seen.setdefault(" ".join(command.split()), None)
    return list(seen)


COMMANDS = _readme_commands()


def test_the_readme_shows_enough_complete_commands() -> None:
    assert len(COMMANDS) >= 20, COMMANDS


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs(command: str, run_cli, shared: Path, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(REPO / "examples")
    args = [arg.replace("../shared", str(shared)) for arg in shlex.split(command)[1:]]
    if args[0] == "results":  # reading a store never creates one: the README's reader has saved results
        from lightspeed.store import open_store

        open_store(create=True).close()
    result = run_cli(*args)
    assert result.code == 0, f"{command}: exit {result.code}: {result.err.strip()[-400:]}"
    assert result.out.strip(), command
    assert "Traceback" not in result.err

"""The tour ends with three commands a user runs next on their own model, cluster and trace;
each one works as shown once its placeholder names a real file."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from lightspeed.tour import NEXT_COMMANDS

REPO = Path(__file__).resolve().parents[2]


def test_three_next_commands_cover_a_model_a_cluster_and_a_trace() -> None:
    assert len(NEXT_COMMANDS) == 3
    assert [command.subject for command in NEXT_COMMANDS] == ["model", "cluster", "trace"]
    assert all(command.command.startswith("lightspeed ") and command.why for command in NEXT_COMMANDS)


@pytest.mark.parametrize("index", range(3))
def test_each_next_command_runs_on_real_inputs(run_cli, shared: Path, index: int) -> None:  # type: ignore[no-untyped-def]
    real = {
        "path/to/config.json": str(REPO / "tests" / "fixtures" / "hf_configs" / "llama-3-8b" / "config.json"),
        "path/to/traces/": str(shared / "data" / "traces" / "trace_filter"),
    }
    args = [real.get(arg, arg) for arg in shlex.split(NEXT_COMMANDS[index].command)[1:]]
    result = run_cli(*args, "--json")
    assert result.code == 0, result.err

"""simulate with an SLO but no load says on stderr that the run is offline (every request at time
zero) and how to give a load; with a load, or searching the highest rate, it says nothing of it."""

from __future__ import annotations

from typing import Any

import pytest

BASE = (
    "simulate",
    "--model",
    "llama-3-8b",
    "--system",
    "dgx-h100",
    "--gpus",
    "1",
    "--precision",
    "fp8",
    "--isl",
    "500",
    "--osl",
    "50",
    "--requests",
    "20",
    "--slo",
    "ttft=300ms,tpot=20ms",
)


def test_an_slo_run_with_no_load_says_it_is_offline(run_cli: Any) -> None:
    result = run_cli(*BASE)
    assert result.code == 0, result.err
    assert "the run is offline" in result.err
    assert "--arrival-rate" in result.err


@pytest.mark.parametrize("load", [("--arrival-rate", "5"), ("--concurrency", "4"), ("--offline",)])
def test_a_run_with_a_load_has_no_offline_note(run_cli: Any, load: tuple[str, ...]) -> None:
    result = run_cli(*BASE, *load)
    assert result.code == 0, result.err
    assert "the run is offline" not in result.err

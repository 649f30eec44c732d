"""-v, --log-level and LIGHTSPEED_LOG: the decisions go to stderr, stdout stays the same."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error

PLAN = ("plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--tp", "2", "--global-batch", "64")
OVERRIDE = Path(__file__).resolve().parents[2] / "examples" / "catalog" / "h100-600w.toml"


@pytest.fixture(autouse=True)
def _quiet_after() -> Any:
    yield
    logging.getLogger("lightspeed").setLevel(logging.WARNING)


def test_verbose_names_the_profile_and_leaves_stdout_alone(run_cli: Any) -> None:
    quiet = run_cli(*PLAN, "--json")
    loud = run_cli("-v", *PLAN, "--json")
    assert quiet.code == loud.code == 0
    assert loud.out == quiet.out
    assert quiet.err == ""
    assert "lightspeed: INFO: training stack profile published-median (the default)" in loud.err


def test_the_environment_sets_the_level(run_cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTSPEED_LOG", "info")
    result = run_cli("plan", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--precision", "auto")
    assert result.code == 0, result.err
    assert "serving stack profile trtllm-2025 (the default)" in result.err
    assert "precision auto: fp8" in result.err


def test_catalog_overrides_are_named(run_cli: Any) -> None:
    result = run_cli("--catalog", str(OVERRIDE), "--log-level", "info", "hw", "show", "h100-sxm")
    assert result.code == 0, result.err
    assert f"catalog and model files added: {OVERRIDE}" in result.err
    assert "catalog: " in result.err
    assert "adds accelerator" in result.err or "replaces accelerator" in result.err


def test_a_bad_level_is_one_line(run_cli: Any) -> None:
    one_line_error(run_cli("--log-level", "loud", "hw", "list"), "--log-level", "loud")

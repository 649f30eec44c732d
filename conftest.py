"""Fixtures for every test, the docstring examples under src/ included."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Every test and docstring example writes its store under a fresh LIGHTSPEED_HOME,
    never into the user's real one (nor into a shared one named by LIGHTSPEED_STORE)."""
    monkeypatch.setenv("LIGHTSPEED_HOME", str(tmp_path_factory.mktemp("lightspeed-home")))
    monkeypatch.delenv("LIGHTSPEED_CATALOG", raising=False)
    monkeypatch.delenv("LIGHTSPEED_STORE", raising=False)  # never the team's shared store
    monkeypatch.setenv("COLUMNS", "160")
    # the CLI reads large traces on idle cores unless told; tests read them here (deterministic
    # timing on a busy CI machine; tests/trace/test_parallel_read.py asks for workers itself)
    monkeypatch.setenv("LIGHTSPEED_PARSE_WORKERS", "0")
    return

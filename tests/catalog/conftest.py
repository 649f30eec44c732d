"""Catalog test helpers: the shipped catalog (loaded once) and a writer for user TOML files."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from lightspeed.catalog import Catalog, load_catalog


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    """The shipped catalog (records are frozen, so one load serves every test)."""
    return load_catalog()


@pytest.fixture
def write_toml(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write ``text`` (dedented) to ``tmp_path/name`` and return the path."""

    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
        return path

    return _write

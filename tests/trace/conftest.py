"""Fixtures of the trace tests: writing small traces to a temporary folder."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

WriteTrace = Callable[..., Path]


@pytest.fixture
def write_trace(tmp_path: Path) -> WriteTrace:
    """Write a trace document to ``tmp_path/name`` (gzip when the name ends in .gz)."""

    def _write(name: str, content: dict[str, Any] | list[Any] | str | bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        data = (
            content
            if isinstance(content, bytes)
            else (content if isinstance(content, str) else json.dumps(content)).encode()
        )
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
        return path

    return _write


@pytest.fixture
def shared_root() -> Path | None:
    """The ../shared folder when present (real traces not copied into fixtures), else None."""
    import os

    root = Path(os.environ.get("LIGHTSPEED_SHARED", Path(__file__).resolve().parents[2].parent / "shared"))
    return root if root.is_dir() else None

"""A workloads file's precision is checked on read; store messages name the store, not ':memory:'."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error

WORKLOADS = """kind = "mig-workloads"
[[services]]
name = "chat"
model = "llama-3-8b"
precision = "fp7"
input_tokens = 1024
output_tokens = 256
requests_per_s = 4.0
max_ttft_ms = 500
max_tpot_ms = 50
"""


def test_an_unknown_precision_in_a_workloads_file_is_one_short_message(run_cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    path.write_text(WORKLOADS, encoding="utf-8")
    line = one_line_error(
        run_cli("mig", "plan", "--gpu", "h100-sxm", "--workloads", str(path)),
        "w.toml",
        "'chat'",
        "services[0].precision",
        "'fp7'",
    )
    assert line.count("fp7") == 1
    assert len(line) < 300


def test_a_missing_run_names_the_store_not_memory(
    run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "results.sqlite"
    monkeypatch.setenv("LIGHTSPEED_STORE", str(store))
    line = one_line_error(run_cli("report", "--from", "run:nope"), "no run 'nope'", str(store))
    assert ":memory:" not in line

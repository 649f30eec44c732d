"""``lightspeed bench`` and its results store: a store that cannot be opened fails before anything is
timed, and one that fails to take the results after the run fails only after they are shown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.bench import BenchResult, make_result
from lightspeed.cli import bench as cli_bench

pytest.importorskip("torch")

GARBAGE = b"garbage\n"  # what `echo garbage > store.sqlite` leaves: no SQLite header


def _launch() -> BenchResult:
    return make_result(
        suite="launch", name="dispatch", dtype=None, num_ops_per_sample=100, samples=[2e-6], unit="s",
        best="min", sol=None, sol_note="", correct=True, device="cpu", sol_device="local cpu",
    )  # fmt: skip


@pytest.mark.parametrize("json_flag", [(), ("--json",)])
def test_a_bad_store_fails_before_anything_is_timed(  # type: ignore[no-untyped-def]
    run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, json_flag: tuple[str, ...]
) -> None:
    store = tmp_path / "g.sqlite"
    store.write_bytes(GARBAGE)
    monkeypatch.setenv("LIGHTSPEED_STORE", str(store))
    timed: list[dict[str, Any]] = []

    def fake_launch(**kwargs: Any) -> list[BenchResult]:
        timed.append(kwargs)
        return [_launch()]

    monkeypatch.setattr(cli_bench, "run_launch", fake_launch)
    result = run_cli("bench", "launch", "--quick", "--device", "cpu", *json_flag)
    one_line_error(result, str(store))
    assert timed == []  # refused before the suite ran
    assert result.out == ""
    assert store.read_bytes() == GARBAGE  # not another program's file overwritten


def test_no_save_does_not_open_the_store(  # type: ignore[no-untyped-def]
    run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    store = tmp_path / "g.sqlite"
    store.write_bytes(GARBAGE)
    monkeypatch.setenv("LIGHTSPEED_STORE", str(store))
    monkeypatch.setattr(cli_bench, "run_launch", lambda **_: [_launch()])
    result = run_cli("bench", "launch", "--quick", "--device", "cpu", "--no-save", "--json")
    assert result.code == 0, result.err
    assert [record["name"] for record in json.loads(result.out)] == ["dispatch"]


@pytest.mark.parametrize("as_json", [False, True])
def test_a_store_that_fails_after_the_run_comes_after_the_results(  # type: ignore[no-untyped-def]
    run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, as_json: bool
) -> None:
    store = tmp_path / "results.sqlite"
    monkeypatch.setenv("LIGHTSPEED_STORE", str(store))

    def launch_that_breaks_the_store(**_: Any) -> list[BenchResult]:
        # the store was fine when the run began; something overwrote it while the suite ran
        for path in tmp_path.glob("results.sqlite*"):
            path.unlink()
        store.write_bytes(GARBAGE)
        return [_launch()]

    monkeypatch.setattr(cli_bench, "run_launch", launch_that_breaks_the_store)
    result = run_cli("bench", "launch", "--quick", "--device", "cpu", *(("--json",) if as_json else ()))
    one_line_error(result, str(store))
    if as_json:  # `bench --json > current.json` keeps what was measured
        assert [record["name"] for record in json.loads(result.out)] == ["dispatch"]
    else:
        assert "dispatch" in result.out
        assert "saved as run" not in result.out

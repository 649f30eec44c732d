"""``lightspeed results``: what list, show and export say when they show less than asked for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.store import NewRecord, open_store


def _add(path: Path, kind: str = "benchmark", records: list[NewRecord] | None = None) -> str:
    with open_store(path) as store:
        return store.add_records(
            kind=kind,
            fingerprint={"host_name": "h"},
            records=records or [NewRecord(name="triad", metric="bytes_per_s", value=1.0, unit="B/s")],
        )


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "r.sqlite"
    monkeypatch.setenv("LIGHTSPEED_STORE", str(path))
    return path


def _text(out: str) -> str:
    return " ".join(out.split())


# -- 7: filters that exclude every run ------------------------------------------------------------


def test_filters_that_match_nothing_say_the_filters_excluded_the_runs(store_path: Path, run_cli: Any) -> None:
    _add(store_path)
    out = _text(run_cli("results", "list", "--kind", "monitor", "--where", "suite=membw").out)
    assert "no run matches --kind monitor --where suite=membw" in out
    assert "the filters excluded" in out
    assert "--all" not in out  # --all shows nothing more here: it adds only incomplete runs


def test_only_incomplete_runs_point_at_all(store_path: Path, run_cli: Any) -> None:
    with open_store(store_path) as store:
        store.start_run(kind="goodput", fingerprint={})
    out = _text(run_cli("results", "list").out)
    assert "no complete run yet" in out
    assert "'lightspeed results list --all'" in out
    assert "--all" in _text(run_cli("results", "list", "--kind", "goodput").out)


# -- 8: more runs than --limit --------------------------------------------------------------------


def test_list_says_how_many_runs_it_left_out(store_path: Path, run_cli: Any) -> None:
    for _ in range(7):
        _add(store_path)
    table = _text(run_cli("results", "list", "--limit", "3").out)
    assert "3 of 7 runs" in table
    assert "--limit 7" in table
    listed = run_cli("results", "list", "--limit", "3", "--json")
    assert len(json.loads(listed.out)) == 3  # the JSON stays a list of runs
    assert "3 of 7 runs" in listed.err
    everything = run_cli("results", "list", "--limit", "7")
    assert " of 7 runs" not in _text(everything.out)
    assert run_cli("results", "list", "--limit", "7", "--json").err == ""


# -- 10: export with a --kind or --name that the runs named do not have ---------------------------


def test_export_refuses_a_kind_or_name_the_run_does_not_have(store_path: Path, run_cli: Any) -> None:
    run_id = _add(store_path)
    one_line_error(run_cli("results", "export", run_id, "--kind", "prediction"), run_id, "benchmark")
    line = one_line_error(run_cli("results", "export", run_id, "--name", "typo"), "'typo'", run_id)
    assert "'triad'" in line  # the names it has
    one_line_error(run_cli("results", "export", "--name", "typo"), "'typo'")
    exported = run_cli("results", "export", run_id, "--name", "triad")
    assert exported.code == 0
    assert [record["name"] for record in json.loads(exported.out)] == ["triad"]
    # a --where that excludes the records is a filter, not a typo: an empty list
    assert json.loads(run_cli("results", "export", run_id, "--where", "suite=none").out) == []


# -- 11: dimensionless values ---------------------------------------------------------------------


def test_show_writes_a_fraction_as_a_percent_and_a_ratio_bare(store_path: Path, run_cli: Any) -> None:
    run_id = _add(
        store_path,
        kind="goodput",
        records=[
            NewRecord(name="tiny-gpt", metric="goodput_fraction", value=0.01422, unit="1"),
            NewRecord(name="H800 vs H100 fp64", metric="ratio", value=0.03077, unit="1"),
            NewRecord(name="gpu0", metric="sm_active", value=0.5, unit="ratio"),
        ],
    )
    out = run_cli("results", "show", run_id).out
    rows = {
        line.split("│")[1].strip(): line.split("│")[3].strip()
        for line in out.splitlines()
        if line.count("│") > 4
    }
    assert rows["tiny-gpt"] == "1.42%"  # 0.01422 = 1.422%
    assert rows["H800 vs H100 fp64"] == "0.03077"  # no bare unit '1'
    assert rows["gpu0"] == "50.00%"


# -- 12: a prefix of many runs --------------------------------------------------------------------


def test_an_ambiguous_prefix_says_how_many_runs_it_matches(store_path: Path, run_cli: Any) -> None:
    ids = [_add(store_path) for _ in range(7)]
    prefix = ids[0][:4]  # the year: every run of this test
    line = one_line_error(run_cli("results", "show", prefix), "matches 7 runs", "first 5:")
    assert sum(run_id in line for run_id in ids) == 5
    two = one_line_error(run_cli("results", "export", prefix), "matches 7 runs")
    assert "first 5" in two


def test_compare_names_how_many_runs_an_ambiguous_prefix_matches(store_path: Path, run_cli: Any) -> None:
    # the store's own refusal (compare run:PREFIX, push) counted at most 6 and listed 5 without a count
    ids = [_add(store_path) for _ in range(7)]
    refused = run_cli("compare", f"run:{ids[0][:4]}", f"run:{ids[-1]}")
    line = one_line_error(refused, "matches 7 runs", "first 5:")
    assert sum(run_id in line for run_id in ids) == 5

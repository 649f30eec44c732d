"""Round 15, helper D: the results store, the regression gate and the doctor's store check."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from lightspeed.doctor import check_postgres
from lightspeed.errors import UserInputError
from lightspeed.gate import load_metric_samples, samples_from_records
from lightspeed.store import NewRecord, open_store
from lightspeed.units import unit_direction

GPU = "NVIDIA H100 80GB HBM3"


def _latency_run(location: str | Path, value_us: float) -> str:
    """A run of one latency record in microseconds (µs), its direction not stored."""
    samples = [value_us * factor for factor in (0.99, 1.0, 1.01, 0.995, 1.005, 1.0, 0.998, 1.002)]
    record = NewRecord(
        name="allreduce lat",
        metric="latency",
        value=value_us,
        unit="µs",
        sol=5.0,
        payload={"samples": samples},
    )
    with open_store(location) as store:
        return store.add_records(kind="benchmark", records=[record], fingerprint={"host_name": "n1"})


# --- 1. µs and d are durations: lower is better (needs the units.py edit in the report) ---------


@pytest.mark.parametrize("unit", ["µs", "d", "µs/token", "d/step"])
def test_micro_seconds_and_days_are_durations(unit: str) -> None:
    assert unit_direction(unit) is True


def test_compare_of_a_doubled_latency_in_micro_seconds_is_a_regression(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    location = tmp_path / "results.sqlite"
    fast, slow = _latency_run(location, 10.0), _latency_run(location, 20.0)
    (series,) = load_metric_samples(f"run:{slow}", store_path=location)
    assert (series.lower_is_better, series.direction_assumed) == (True, False)
    monkeypatch.setenv("LIGHTSPEED_STORE", str(location))
    result = run_cli("compare", f"run:{fast}", f"run:{slow}")
    assert result.code == 1, result.out + result.err  # 10 µs -> 20 µs: twice as slow
    assert "improvement" not in result.out
    shown = run_cli("results", "show", fast)
    assert "50.0%" in shown.out  # SOL 5 µs / 10 µs reached: half the speed of light


# --- 2. --where on a list field matches by membership, alike on both backends --------------------


def _gpu_runs(location: str) -> dict[str, str]:
    ids = {}
    with open_store(location) as store:
        for label, gpus, payload in (
            ("h100", [GPU, GPU], {"ranks": [0, 1], "tags": ["nightly"]}),
            ("mixed", ["NVIDIA A100-SXM4-80GB", GPU], {"ranks": [2], "tags": [["nightly"]]}),
            ("a100", ["NVIDIA A100-SXM4-80GB"], {"ranks": 0, "tags": {"nightly": 1}}),
        ):
            record = NewRecord(name="step", metric="step_time_s", value=1.0, unit="s", payload=payload)
            ids[label] = store.add_records(
                kind="benchmark", records=[record], label=label, fingerprint={"gpus": gpus, "host_name": "n1"}
            )
    return ids


def _labels(location: str, *where: str) -> set[str]:
    with open_store(location, create=False) as store:
        return {run.label for run in store.runs(where=where)}


def test_where_on_a_list_matches_its_items_on_both_backends(store_url: str) -> None:
    _gpu_runs(store_url)
    assert _labels(store_url, f"env.gpus={GPU}") == {"h100", "mixed"}
    assert _labels(store_url, f"gpus={GPU}") == {"h100", "mixed"}  # payload or environment
    assert _labels(store_url, "env.gpus=H100") == set()  # an item is compared whole
    assert _labels(store_url, "ranks=0") == {"h100", "a100"}  # an item, or the value itself
    assert _labels(store_url, 'ranks="0"') == set()  # typed: the text "0" is not the number 0
    assert _labels(store_url, "ranks=2") == {"mixed"}
    assert _labels(store_url, "tags=nightly") == {"h100"}  # not a list nested in it, nor an object's key
    with open_store(store_url, create=False) as store:
        records = store.records(where=["ranks=1"])
    assert [record.payload["ranks"] for record in records] == [[0, 1]]


def test_where_on_gpus_in_the_cli(run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    location = str(tmp_path / "results.sqlite")
    ids = _gpu_runs(location)
    monkeypatch.setenv("LIGHTSPEED_STORE", location)
    result = run_cli("results", "list", "--where", f"env.gpus={GPU}", "--json")
    assert result.code == 0, result.err
    assert {run["run_id"] for run in json.loads(result.out)} == {ids["h100"], ids["mixed"]}


# --- 5. numbers compare by value, alike on both backends ------------------------------------------


def test_where_compares_numbers_by_value_on_both_backends(store_url: str) -> None:
    with open_store(store_url) as store:
        for label, tp in (("float", 1e20), ("integer", 10**20), ("big", 2**60)):
            record = NewRecord(name="step", metric="step_time_s", value=1.0, unit="s", payload={"tp": tp})
            store.add_records(kind="prediction", records=[record], label=label, fingerprint={})
    # 1e20 is exactly 10^20 (= 2^20 * 5^20, and 5^20 < 2^53), stored as the text 1e+20
    assert _labels(store_url, "tp=100000000000000000000") == {"float", "integer"}
    assert _labels(store_url, "tp=1e20") == {"float", "integer"}
    assert _labels(store_url, "tp=100000000000000000001") == set()  # its nearest double is 1e20, not it
    # 2^60 = 1152921504606846976 is stored as the integer's digits: found by them, not by a neighbour
    assert _labels(store_url, "tp=1152921504606846976") == {"big"}
    assert _labels(store_url, "tp=1152921504606846977") == set()


# --- 3. an incomplete run ------------------------------------------------------------------------


def _incomplete_run(location: Path) -> str:
    with open_store(location) as store:
        run_id = store.start_run(kind="benchmark", fingerprint={"host_name": "n1"})
        record = NewRecord(
            name="step", metric="step_time_s", value=1.0, unit="s", payload={"samples": [1.0, 1.1]}
        )
        store.append_records(run_id, [record])
    return run_id


def test_compare_of_an_incomplete_run_says_it_is_incomplete(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    location = tmp_path / "results.sqlite"
    run_id = _incomplete_run(location)
    with pytest.raises(UserInputError, match=f"run:{run_id} is incomplete: its writer has not finished"):
        load_metric_samples(f"run:{run_id}", store_path=location)
    monkeypatch.setenv("LIGHTSPEED_STORE", str(location))
    result = run_cli("compare", f"run:{run_id}", f"run:{run_id}")
    assert result.code == 2
    assert "is incomplete" in result.err
    assert "wait for it to finish" in result.err
    assert "no record with a finite value" not in result.err
    assert "Traceback" not in result.err
    shown = run_cli("results", "show", run_id)
    assert shown.code == 0, shown.err
    assert "INCOMPLETE" in shown.out


def test_a_complete_run_is_not_called_incomplete(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    location = tmp_path / "results.sqlite"
    run_id = _latency_run(location, 10.0)
    monkeypatch.setenv("LIGHTSPEED_STORE", str(location))
    assert "INCOMPLETE" not in run_cli("results", "show", run_id).out


# --- 4. the doctor reports a store lightspeed refuses ---------------------------------------------


def test_doctor_reports_a_file_that_is_not_a_store(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    store = tmp_path / "c.sqlite"
    store.write_text("garbage\n")
    check = check_postgres(str(store))
    assert check.status == "unreachable"
    assert "which lightspeed refuses" in check.detail
    assert "not a readable lightspeed store" in check.detail
    assert store.read_text() == "garbage\n"  # left as it is
    monkeypatch.setenv("LIGHTSPEED_STORE", str(store))
    result = run_cli("doctor", "--json")
    assert result.code == 0, result.err  # the doctor reports; it does not fail
    (found,) = [item for item in json.loads(result.out)["checks"] if item["name"] == "PostgreSQL"]
    assert found["status"] == "unreachable"


def test_doctor_reports_a_store_with_a_newer_schema(tmp_path: Path) -> None:
    store = tmp_path / "future.sqlite"
    connection = sqlite3.connect(str(store))  # a schema-99 store: a far later lightspeed wrote it
    connection.execute("PRAGMA user_version = 99")
    connection.close()
    check = check_postgres(str(store))
    assert check.status == "unreachable"
    assert "which lightspeed refuses" in check.detail
    assert "newer than this lightspeed" in check.detail


def test_doctor_passes_a_readable_store_and_an_empty_file_and_creates_nothing(tmp_path: Path) -> None:
    readable = tmp_path / "results.sqlite"
    _latency_run(readable, 10.0)
    assert check_postgres(str(readable)).status == "not configured"
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")  # the first write makes the tables
    assert check_postgres(str(empty)).status == "not configured"
    assert empty.read_bytes() == b""


# --- 6. entries of one input that cannot be pooled --------------------------------------------------


def _sample_file(path: Path, entries: list[dict[str, object]]) -> Path:
    path.write_text(json.dumps(entries))
    return path


def test_pooling_entries_of_one_file_names_that_file_once(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    one = _sample_file(
        tmp_path / "one.json",
        [{"metric": "t", "unit": "s", "lower_is_better": True, "samples": [1, 1.1, 1.2]}],
    )
    units = _sample_file(
        tmp_path / "dup1.json",
        [
            {"metric": "t", "unit": "s", "lower_is_better": True, "samples": [1, 1.1, 1.2, 1.0]},
            {"metric": "t", "unit": "ms", "lower_is_better": True, "samples": [1000, 1100, 1050, 990]},
        ],
    )
    directions = _sample_file(
        tmp_path / "dup2.json",
        [
            {"metric": "t", "unit": "s", "lower_is_better": True, "samples": [1, 1.1, 1.2, 1.0]},
            {"metric": "t", "unit": "s", "lower_is_better": False, "samples": [1, 1.1, 1.05, 0.99]},
        ],
    )
    result = run_cli("compare", str(units), str(one))
    assert result.code == 2
    assert (
        f"in one entry of the baseline input ({units}) but in 'ms' in another entry of that same input"
        in result.err
    )
    assert "current run" not in result.err
    result = run_cli("compare", str(one), str(directions))
    assert result.code == 2
    assert f"lower_is_better=True in one entry of the current input ({directions})" in result.err
    assert "False in another entry of that same input" in result.err


def test_two_series_of_two_runs_still_name_baseline_and_current(tmp_path: Path) -> None:
    from lightspeed.gate import compare_samples

    seconds = samples_from_records(
        [NewRecord(name="t", metric="t", value=1.0, unit="s", payload={"samples": [1.0, 1.1]})],
        source="a.json",
    )[0]
    millis = samples_from_records(
        [NewRecord(name="t", metric="t", value=1.0, unit="ms", payload={"samples": [1.0, 1.1]})],
        source="b.json",
    )[0]
    with pytest.raises(
        UserInputError, match=r"in the baseline \(a.json\) but in 'ms' in the current run \(b.json\)"
    ):
        compare_samples(baseline=seconds, current=millis)


# --- 7. push refuses the same store however its path is spelled -----------------------------------


@pytest.mark.parametrize("spelling", ["dotdot", "link", "relative"])
def test_push_to_the_same_store_spelled_another_way_is_refused(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    home.mkdir()
    store = home / "results.sqlite"
    _latency_run(store, 10.0)
    (tmp_path / "x").mkdir()
    (tmp_path / "link.sqlite").symlink_to(store)
    monkeypatch.chdir(tmp_path)
    target = {
        "dotdot": str(tmp_path / "x" / ".." / "home" / "results.sqlite"),
        "link": str(tmp_path / "link.sqlite"),
        "relative": "home/results.sqlite",
    }[spelling]
    monkeypatch.setenv("LIGHTSPEED_STORE", str(store))
    result = run_cli("results", "push", "--to", target)
    assert result.code == 2
    assert "--to and --from are the same store" in result.err
    assert "already there" not in result.out


def test_push_to_another_store_still_copies(run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    store = tmp_path / "results.sqlite"
    run_id = _latency_run(store, 10.0)
    monkeypatch.setenv("LIGHTSPEED_STORE", str(store))
    result = run_cli("results", "push", "--to", str(tmp_path / "team.sqlite"))
    assert result.code == 0, result.err
    with open_store(tmp_path / "team.sqlite", create=False) as team:
        assert team.run(run_id).run_id == run_id

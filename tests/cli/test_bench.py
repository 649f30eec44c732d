"""``lightspeed bench``: JSON contract, storage, and bad input (exit 2, one line, nothing stored)."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.catalog import read_cpu_info
from lightspeed.store import open_store

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

KEYS = {"suite", "name", "dtype", "size", "size_bytes", "value", "unit", "sol", "fraction_of_sol", "stats"}
KEYS |= {"correct"}


def test_membw_json_contract_and_store(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "bench", "membw", "--device", "cpu", "--quick", "--array-size", "1MiB",
        "--sol-device", "xeon-platinum-8480c", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    records = json.loads(result.out)
    assert [record["name"] for record in records] == [
        "stream copy",
        "stream scale",
        "stream add",
        "stream triad",
    ]
    for record in records:
        assert set(record) >= KEYS
        assert set(record["stats"]) == {"min", "median", "max"}
        # the named record's DDR5: 8 channels x 4800 MT/s x 8 B = 307.2 GB/s a socket (ark.intel.com),
        # times this machine's sockets
        socket_bytes_per_s = 8 * 4800e6 * 8
        assert record["sol"] == pytest.approx(read_cpu_info().num_sockets * socket_bytes_per_s)
        assert record["fraction_of_sol"] == pytest.approx(record["value"] / record["sol"])
        assert record["correct"] is True
    with open_store() as store:
        (run,) = store.runs()
        stored = store.records(run_id=run.run_id)
    assert run.label == "membw"
    assert [record.name for record in stored][-1] == "membw stream triad fp64 1048576 B"
    assert stored[-1].fingerprint["num_logical_cpus"] >= 1


@pytest.mark.slow
def test_table_output_and_roofline(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plot = tmp_path / "roof.png"
    result = run_cli(
        "bench", "gemm", "--model", "llama-3-8b", "--tp", "8", "--tokens", "16", "--quick",
        "--no-save", "--plot", str(plot), "--device", "cpu", "--sol-device", "xeon-platinum-8480c",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "llama-3-8b mlp down tp=8" in result.out
    assert "best fp32 shape" in result.out
    assert plot.is_file()
    assert not plot.with_suffix(".svg").exists()  # a suffix writes its format only (round 15)
    with open_store() as store:
        assert store.runs() == []


def test_copy_without_gpu_is_refused(run_cli) -> None:  # type: ignore[no-untyped-def]
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    result = run_cli("bench", "copy")
    one_line_error(result)
    assert "needs a CUDA GPU" in result.err
    with open_store() as store:
        assert store.runs(include_incomplete=True) == []


@pytest.mark.parametrize(("dtype", "message"), [("tf32", "tf32"), ("int3", "unsupported GEMM dtype")])
def test_bad_dtype_is_refused(run_cli, dtype: str, message: str) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("bench", "gemm", "--device", "cpu", "--dtype", dtype)
    one_line_error(result)
    assert message in result.err


def test_unknown_suite_and_misplaced_option(run_cli) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("bench", "nvlink"))
    result = run_cli("bench", "membw", "--dtype", "bf16")
    one_line_error(result)
    assert "gemm suite only" in result.err


def test_missing_torch_names_the_extra(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "torch", None)  # an import of torch now fails, as without it
    result = run_cli("bench", "launch")
    one_line_error(result)
    assert "pip install 'lightspeed[bench]'" in result.err


@pytest.mark.slow
def test_world_that_cannot_connect(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for key, value in {
        "RANK": "1",
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
    }.items():
        monkeypatch.setenv(key, value)
    result = run_cli("bench", "collectives", "--device", "cpu", "--quick", "--timeout", "2")
    one_line_error(result)
    assert "could not join" in result.err
    with open_store() as store:
        assert store.runs(include_incomplete=True) == []


def test_unwritable_store_saves_nothing(run_cli, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("LIGHTSPEED_HOME", str(blocker / "home"))
    result = run_cli("bench", "launch", "--quick")
    one_line_error(result)
    assert "LIGHTSPEED_HOME" in result.err


def test_full_store_is_one_line(run_cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    from lightspeed.store import database

    def full_disk(*args, **kwargs):  # type: ignore[no-untyped-def]
        # What SQLite raises when the disk fills mid-transaction (after the run row was written).
        raise sqlite3.OperationalError("database or disk is full")

    original = database.ResultsStore.__dict__["_insert_records"]
    monkeypatch.setattr(database.ResultsStore, "_insert_records", staticmethod(full_disk))
    result = run_cli("bench", "launch", "--quick")
    one_line_error(result)
    assert "is full" in result.err
    monkeypatch.setattr(database.ResultsStore, "_insert_records", original)
    with open_store() as store:
        assert store.runs(include_incomplete=True) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # --tp without --model used to run the whole default sweep (190 s) as if it were not there
        (["gemm", "--tp", "3"], "--tp: only with --model NAME"),
        (
            ["gemm", "--tp", "3", "--model", "llama-3-8b"],
            "tp=3 does not divide the 4,096 rows of the attention out",
        ),
        (["gemm", "--array-size", "1MiB"], "--array-size: only with the membw suite"),
        (["membw", "--collective", "all_reduce"], "--collective: only with the collectives suite"),
    ],
)
def test_options_the_suite_would_ignore_are_refused_at_once(run_cli, args: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("bench", *args, "--no-save"), message)

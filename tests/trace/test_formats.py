"""Which format a file is, and the one-line error of a file handed to the wrong reader: it says what
the file is and which command reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.errors import TraceError
from lightspeed.tour.render import SAMPLE_NCU_CSV
from lightspeed.trace import detect_format, load_trace, read_ncu

MLLOG = ':::MLLOG {"key": "run_start", "value": null, "time_ms": 1}\n'


def _mlperf_log(shared: Path) -> Path:
    folder = shared / "data" / "mlperf" / "training_v4.0" / "NVIDIA" / "results" / "h200_ngc24.04_nemo"
    return folder / "llama2_70b_lora" / "result_0.txt"


def test_an_mlperf_log_is_told_apart(shared: Path, tmp_path: Path) -> None:
    assert detect_format(_mlperf_log(shared)) == "mlperf-log"  # starts with :::SYSJSON, then :::MLLOG
    log = tmp_path / "log.txt"
    log.write_text("training starts\n" + MLLOG)
    assert detect_format(log) == "mlperf-log"


def test_ncu_output_after_program_json_is_still_ncu(tmp_path: Path) -> None:
    # ncu --csv writes to the program's stdout: a program that prints JSON first is still ncu's table
    path = tmp_path / "kernels.csv"
    path.write_text('{"config": 1}\n' + SAMPLE_NCU_CSV.read_text(encoding="utf-8"), encoding="utf-8")
    assert detect_format(path) == "ncu-csv"
    assert len(read_ncu(path).launches) == 1


def test_read_ncu_names_an_mlperf_log_and_its_command(shared: Path) -> None:
    log = _mlperf_log(shared)
    with pytest.raises(TraceError) as caught:
        read_ncu(log)
    assert str(caught.value) == (
        f"{log}: this is an MLPerf Training result log, not Nsight Compute CSV output (ncu --csv); "
        f"fix: read it with 'lightspeed goodput report {log}'"
    )


def test_read_ncu_names_a_kineto_trace(tmp_path: Path) -> None:
    trace = tmp_path / "rank-0.json"
    trace.write_text('{"traceEvents": []}')
    with pytest.raises(TraceError, match=r"this is a PyTorch profiler \(Kineto\) trace") as caught:
        read_ncu(trace)
    assert f"'lightspeed trace summary {trace}'" in str(caught.value)
    assert f"'lightspeed kernels report NCU.csv --trace {trace}'" in str(caught.value)


def test_read_ncu_keeps_its_own_error_for_text_it_cannot_place(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just some text\n")
    with pytest.raises(TraceError, match="no Nsight Compute CSV header"):
        read_ncu(path)


def test_load_trace_names_an_mlperf_log(tmp_path: Path) -> None:
    log = tmp_path / "result_0.txt"
    log.write_text(MLLOG)
    with pytest.raises(TraceError, match="MLPerf Training result log, not a profiler trace") as caught:
        load_trace(log)
    assert f"'lightspeed goodput report {log}'" in str(caught.value)

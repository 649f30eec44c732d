"""JSON that is no profiler's (a gate sample file, a capture that does not open with its header) is
not called a PyTorch profiler (Kineto) trace: the monitor's capture reader says what is wrong."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.trace import detect_format

SAMPLE_OBJECT = {"metric": "step_time_s", "unit": "s", "lower_is_better": True, "samples": [0.52, 0.51]}


def _sample_file(path: Path, *, as_list: bool) -> Path:
    """A gate sample file (docs/regression-gate.md): one metric object, or a list of them."""
    path.write_text(json.dumps([SAMPLE_OBJECT] if as_list else SAMPLE_OBJECT, indent=2) + "\n")
    return path


def _capture_opening_with_a_sample(path: Path) -> Path:
    path.write_text('{"type":"sample"}\n')
    return path


def _compact_sample_file(path: Path) -> Path:
    path.write_text(json.dumps(SAMPLE_OBJECT) + "\n")
    return path


NOT_A_CAPTURE = "not a lightspeed monitor capture"
NOT_A_START = "the first line is not a capture_start"


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda folder: _sample_file(folder / "base.json", as_list=False), NOT_A_CAPTURE),
        (lambda folder: _sample_file(folder / "base-list.json", as_list=True), NOT_A_CAPTURE),
        (lambda folder: _compact_sample_file(folder / "one-line.json"), NOT_A_START),
        (lambda folder: _capture_opening_with_a_sample(folder / "capbad.jsonl"), NOT_A_START),
    ],
    ids=["sample-object", "sample-list", "sample-one-line", "capture-first-line-a-sample"],
)
@pytest.mark.parametrize("how", ["report", "replay"])
def test_json_that_is_not_a_capture_is_not_called_a_kineto_trace(  # type: ignore[no-untyped-def]
    run_cli, tmp_path: Path, make, words: str, how: str
) -> None:
    path = make(tmp_path)
    args = ("monitor", "report", str(path))
    if how == "replay":
        args = ("monitor", "serve", "--port", "19466", "--replay", str(path))
    line = one_line_error(run_cli(*args), str(path), words)
    assert "Kineto" not in line
    assert "trace summary" not in line  # a command that would fail on it


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # what torch.profiler writes: schemaVersion and deviceProperties before the events
        ("kineto.json", '{\n  "schemaVersion": 1,\n  "deviceProperties": [],\n  "traceEvents": []\n}\n'),
        ("legacy.json", '{"traceEvents": [{"ph": "X", "name": "k", "ts": 1, "dur": 2}]}'),
        ("events.json", '[{"ph": "X", "name": "k", "ts": 1, "dur": 2, "pid": 0, "tid": 0}]'),
    ],
)
def test_kineto_json_is_still_told_by_its_keys(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert detect_format(path, unknown="") == "kineto"


def test_gzip_is_still_kineto(tmp_path: Path) -> None:
    path = tmp_path / "rank-0.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    assert detect_format(path, unknown="") == "kineto"


@pytest.mark.parametrize("as_list", [False, True])
def test_a_sample_file_is_no_profilers(tmp_path: Path, as_list: bool) -> None:
    path = _sample_file(tmp_path / "base.json", as_list=as_list)
    assert detect_format(path, unknown="") == ""
    assert detect_format(path) == "kineto"  # the trace reader's default: its own errors say what is wrong

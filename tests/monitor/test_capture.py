"""The capture file: written by the sampler's writer, read back as untrusted input."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from lightspeed.errors import DataFileError
from lightspeed.goodput import TruncatedLogWarning
from lightspeed.monitor import CaptureWriter, DeviceInfo, Note, read_capture


def test_hand_written_capture_reads_back_with_gaps_as_nan(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = make_capture(
        tmp_path / "c.jsonl",
        [{"gpu0": {"power_w": 300.0}}, {"gpu0": {"power_w": 310.0, "gpu_util_ratio": 0.5}}, {"host": {}}],
        interval_s=0.5,
    )
    capture = read_capture(path)
    assert capture.num_samples == 3
    np.testing.assert_allclose(capture.times_s, [0.5, 1.0, 1.5])  # sample i at (i + 1) x 0.5 s
    power = capture.values("gpu0", "power_w")
    assert power is not None
    assert power[:2].tolist() == [300.0, 310.0]
    assert math.isnan(power[2])
    util = capture.values("gpu0", "gpu_util_ratio")
    assert util is not None
    assert math.isnan(util[0])
    assert util[1] == 0.5
    assert capture.values("gpu0", "energy_j") is None
    assert capture.complete
    assert capture.device("gpu0") is not None
    assert capture.device("gpu0").name == "NVIDIA H100 80GB HBM3"


def test_writer_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    writer = CaptureWriter(path)
    device = DeviceInfo(device_id="host", kind="host", name="n", backend="psutil", details={"num_cpus": 4})
    writer.start(
        t_ns=10**18, host="n", pid=3, interval_s=0.1, backends=("host",), devices=(device,), meta={"a": 1}
    )
    writer.sample(10**18 + 10**8, {"host": {"cpu_util_ratio": 0.25, "net_tx_bytes_per_s": None}})
    writer.note(10**18 + 10**8, Note(device="host", metric="net_tx_bytes_per_s", text="no value"))
    writer.sample(10**18 + 2 * 10**8, {"host": {"cpu_util_ratio": 0.75}})
    writer.end(10**18 + 3 * 10**8, num_samples=2, num_late=1)
    writer.close()
    capture = read_capture(path)
    assert capture.values("host", "cpu_util_ratio").tolist() == [0.25, 0.75]  # type: ignore[union-attr]
    assert capture.values("host", "net_tx_bytes_per_s") is None  # None is left out, not written as 0
    assert capture.notes[0].metric == "net_tx_bytes_per_s"
    assert capture.num_late == 1
    assert capture.devices[0].details == {"num_cpus": 4}
    assert capture.meta == {"a": 1}
    with pytest.raises(FileExistsError):
        CaptureWriter(path)  # never overwrites another capture


def test_line_cut_by_a_crash_is_skipped_with_a_warning(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = make_capture(tmp_path / "c.jsonl", [{"host": {"cpu_util_ratio": 0.1}}], end=False)
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"type": "sample", "t_ns": 17')
    with pytest.warns(TruncatedLogWarning, match=r"c.jsonl:3: skipped a line cut short"):
        capture = read_capture(path)
    assert capture.num_samples == 1
    assert not capture.complete


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda lines: [lines[0], "garbage", *lines[1:]], r":2: not a JSON object"),
        (lambda lines: [lines[0].replace('"v": 1', '"v": 2'), *lines[1:]], r":1: capture version 2 is not 1"),
        (lambda lines: lines[1:], r":1: the first line is not a capture_start"),
        (lambda lines: [lines[0], lines[2], lines[1]], r":3: sample time goes backwards"),
        (lambda lines: [lines[0], lines[1].replace("0.1", '"x"')], r":2: a counter must be a finite number"),
        (
            lambda lines: [lines[0], lines[1].replace('"host"', '"gpu9"')],
            r":2: sample of a device the header",
        ),
        (lambda lines: [lines[0].replace('"interval_s": 1.0', '"interval_s": -1')], r"interval_s"),
        (lambda lines: [lines[0], lines[0]], r":2: a second capture_start"),
        # -500% CPU used to be accepted; a time beyond int64 was an OverflowError traceback
        (
            lambda lines: [lines[0], lines[1].replace("0.1", "-5")],
            r":2: cpu_util_ratio = -5 \(-500%\) is outside its range 0 to 1.*field 'd.host.cpu_util_ratio'",
        ),
        (
            lambda lines: [lines[0], lines[1].replace("0.1", "1.5")],
            r":2: cpu_util_ratio = 1.5 \(150%\) is outside",
        ),
        (
            lambda lines: [lines[0], re.sub(r'"t_ns": ?\d+', f'"t_ns": {2**64}', lines[1])],
            r":2: expected a whole number from 0 to 9,223,372,036,854,775,807 \(int64\); field 't_ns'",
        ),
    ],
)
def test_malformed_captures_name_the_line(make_capture, tmp_path: Path, edit, message: str) -> None:  # type: ignore[no-untyped-def]
    path = make_capture(
        tmp_path / "c.jsonl",
        [{"host": {"cpu_util_ratio": 0.1}}, {"host": {"cpu_util_ratio": 0.2}}],
        end=False,
    )
    lines = path.read_text().splitlines()
    path.write_text("\n".join(edit(lines)) + "\n")
    with pytest.raises(DataFileError, match=message):
        read_capture(path)


def test_empty_and_missing_files(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(DataFileError, match="empty file"):
        read_capture(tmp_path / "empty.jsonl")
    with pytest.raises(DataFileError, match=r"no such file \(expected a monitor capture"):
        read_capture(tmp_path / "nope.jsonl")


def test_summary_json_leaves_the_arrays_out(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    capture = read_capture(make_capture(tmp_path / "c.jsonl", [{"gpu0": {"power_w": 1.0}}]))
    summary = capture.to_dict()
    assert summary["num_samples"] == 1
    assert summary["metrics"] == {"gpu0": ["power_w"]}
    assert "series" not in summary

"""Round 16 fixes of the monitor's rules: a straggler is compared with the other GPUs only, and a
communication_bound finding with no goodput run joined says so and starts no earlier than t=0.

Every expected value is worked out by hand in the test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import load_catalog
from lightspeed.monitor import diagnose, read_capture

from .conftest import NS  # type: ignore[import-not-found]

CATALOG = load_catalog()
MAX_CLOCK_HZ = 1.98e9


def _gpu(index: int) -> dict[str, Any]:
    return {
        "device_id": f"gpu{index}",
        "kind": "gpu",
        "name": "NVIDIA H100 80GB HBM3",
        "backend": "nvml",
        "index": index,
    }


def _clocks(clocks_hz: list[float]) -> list[dict[str, Any]]:
    return [
        {f"gpu{i}": {"gpu_util_ratio": 0.9, "sm_clock_hz": clock} for i, clock in enumerate(clocks_hz)}
        for _ in range(10)
    ]


def test_a_slow_gpu_of_two_is_compared_with_its_peer(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # gpu1 at 85% of gpu0's clock. Against the median of both (1.8315 GHz) it would be 91.9%, above
    # the 90% threshold; against its peer alone it is 85% < 90%.
    slow_hz = 0.85 * MAX_CLOCK_HZ
    path = make_capture(tmp_path / "c.jsonl", _clocks([MAX_CLOCK_HZ, slow_hz]), devices=[_gpu(0), _gpu(1)])
    (finding,) = diagnose(captures=[read_capture(path)]).findings
    assert finding.rule == "straggler"
    assert finding.device.endswith(":gpu1")
    assert finding.evidence[0].observed == slow_hz
    assert finding.evidence[0].threshold == pytest.approx(0.9 * MAX_CLOCK_HZ)  # 1782 MHz
    assert "1683 MHz, 85.0% of the other GPU's 1980 MHz" in finding.message


def test_the_straggler_message_names_the_median_of_the_others(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # others: 1.98, 1.90 GHz -> median 1.94 GHz; 1.5 / 1.94 = 77.3%
    path = make_capture(
        tmp_path / "c.jsonl", _clocks([1.98e9, 1.90e9, 1.5e9]), devices=[_gpu(0), _gpu(1), _gpu(2)]
    )
    (finding,) = diagnose(captures=[read_capture(path)]).findings
    assert finding.device.endswith(":gpu2")
    assert "77.3% of the median of the other 2 GPUs' 1940 MHz" in finding.message
    assert finding.evidence[0].threshold == pytest.approx(0.9 * 1.94e9)


def test_communication_bound_without_a_run_starts_at_the_capture(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # H100 SXM NVLink: 450 GB/s per direction; every sample sends 400 GB/s (88.9%). The first
    # sample comes 0.5 s into the capture, less than one 1 s interval: its period would start at
    # t=-0.5 s, before the capture; the finding starts at t=0.
    samples = [{"gpu0": {"gpu_util_ratio": 0.6, "nvlink_tx_bytes_per_s": 4.0e11}} for _ in range(10)]
    path = make_capture(tmp_path / "c.jsonl", samples, devices=[_gpu(0)])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[1]["t_ns"] = lines[0]["t_ns"] + NS // 2
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (finding,) = diagnose(captures=[read_capture(path)], catalog=CATALOG).findings
    assert finding.rule == "communication_bound"
    assert finding.evidence[0].window_start_s == 0.0
    assert "in 100.0% of the samples (threshold" in finding.message
    assert "goodput run" not in finding.message
    assert "t=0.0..10.0 s" in finding.message

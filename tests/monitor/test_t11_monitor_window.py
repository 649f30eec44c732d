"""Findings quote windows inside the capture: a stretch's first sample describes the interval
before it, which can reach back before the capture began (t=0)."""

from __future__ import annotations

from pathlib import Path

from lightspeed.monitor.findings import capture_window, fact


def test_evidence_window_starts_no_earlier_than_the_capture() -> None:
    # a 0.2 s sampler: the first sample, at t=0.0, describes -0.2..0.0, before anything was captured
    evidence = fact("gpu_util_ratio", "vm:gpu0", (-0.2, 20.4), 0.0, 0.1, comparison="<")
    assert (evidence.window_start_s, evidence.window_end_s) == (0.0, 20.4)


def test_window_inside_the_capture_is_kept() -> None:
    assert capture_window((32.4, 42.4)) == (32.4, 42.4)


def test_a_finding_from_the_first_sample_starts_at_the_capture(run_cli) -> None:  # type: ignore[no-untyped-def]
    # the H200 capture idles from its first sample (t=0.0, 0.2 s after the sampler started): the
    # finding's stretch is 0.0..20.4 s, 20.4 s long, not 20.6 s from t=-0.2 s
    capture = Path(__file__).parents[1] / "fixtures" / "h200-train" / "monitor" / "capture-vm-597.jsonl"
    result = run_cli("monitor", "report", str(capture))
    assert result.code == 0, result.err
    assert "t=-" not in result.out
    assert "20.4 s from t=0.0 s" in result.out

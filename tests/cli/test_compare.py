"""``lightspeed compare``: the regression gate's exit codes, table, JSON and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from expect import one_line_error


def _sample_file(tmp_path: Path, name: str, samples: object, **overrides: object) -> Path:
    payload = {"metric": "step_time_s", "unit": "s", "lower_is_better": True, "samples": samples, **overrides}
    path = tmp_path / name
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def _normal(seed: int, mean: float, sd: float, count: int = 20) -> list[float]:
    return [float(v) for v in np.random.default_rng(seed).normal(mean, sd, count)]


def test_regression_exits_1_with_table(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base = _sample_file(tmp_path, "base.json", _normal(1, 0.50, 0.01))
    cur = _sample_file(tmp_path, "cur.json", _normal(2, 0.56, 0.01))
    result = run_cli("compare", str(base), str(cur))
    assert result.code == 1, result.err
    assert "step_time_s" in result.out
    assert "regression" in result.out
    assert "FAIL" in result.out


def test_no_regression_exits_0(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base = _sample_file(tmp_path, "base.json", _normal(1, 0.50, 0.05))
    cur = _sample_file(tmp_path, "cur.json", _normal(2, 0.50, 0.05))
    result = run_cli("compare", str(base), str(cur))
    assert result.code == 0, result.err
    assert "PASS" in result.out


def test_threshold_and_json(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base = _sample_file(tmp_path, "base.json", _normal(1, 1.00, 0.005))
    cur = _sample_file(tmp_path, "cur.json", _normal(2, 1.03, 0.005))  # +3%
    loose = run_cli("compare", str(base), str(cur), "--json")
    assert loose.code == 0
    payload = json.loads(loose.out)
    (item,) = payload["comparisons"]
    assert item["verdict"] == "unchanged"
    assert item["change_fraction"] == pytest.approx(0.03, abs=0.01)
    assert payload["num_regressions"] == 0
    strict = run_cli("compare", str(base), str(cur), "--threshold", "1%", "--json")
    assert strict.code == 1
    assert json.loads(strict.out)["comparisons"][0]["verdict"] == "regression"


def test_warmup_option(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 16 slow warm-up steps then 15 normal ones: the median is a warm-up step until they are dropped.
    base = _sample_file(tmp_path, "base.json", _normal(1, 1.0, 0.01, 32))
    cur = _sample_file(tmp_path, "cur.json", [9.0] * 16 + _normal(2, 1.0, 0.01, 15))
    assert run_cli("compare", str(base), str(cur)).code == 1
    assert run_cli("compare", str(base), str(cur), "--warmup", "16").code == 0
    in_file = _sample_file(tmp_path, "cur-warm.json", [9.0] * 16 + _normal(2, 1.0, 0.01, 15), warmup=16)
    assert run_cli("compare", str(base), str(in_file)).code == 0


def test_metric_selection(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    both = [
        {"metric": "step_time_s", "unit": "s", "lower_is_better": True, "samples": _normal(1, 1.0, 0.01)},
        {
            "metric": "tokens_per_s",
            "unit": "tokens/s",
            "lower_is_better": False,
            "samples": _normal(2, 100, 1),
        },
    ]
    base = tmp_path / "base.json"
    base.write_text(json.dumps(both))
    cur = tmp_path / "cur.json"
    both[1]["samples"] = _normal(3, 80, 1)  # throughput dropped 20%
    cur.write_text(json.dumps(both))
    assert run_cli("compare", str(base), str(cur)).code == 1
    assert run_cli("compare", str(base), str(cur), "--metric", "step_time_s").code == 0
    missing = run_cli("compare", str(base), str(cur), "--metric", "loss")
    assert missing.code == 2
    assert "loss" in missing.err


def test_bad_inputs_exit_2_with_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good = _sample_file(tmp_path, "good.json", [1.0, 1.1, 1.2])
    other_unit = _sample_file(tmp_path, "ms.json", [1000.0, 1100.0], unit="ms")
    other_metric = _sample_file(tmp_path, "tps.json", [5.0], metric="tokens_per_s")
    empty = _sample_file(tmp_path, "empty.json", [])
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    one_line_error(run_cli("compare", str(good), str(other_unit)), "'s'", "'ms'")
    one_line_error(run_cli("compare", str(good), str(other_metric)), "share no metric")
    one_line_error(run_cli("compare", str(good), str(empty)), "samples")
    one_line_error(run_cli("compare", str(good), str(broken)), "not valid JSON")
    one_line_error(run_cli("compare", str(good), str(tmp_path / "nope.json")), "no such file")
    one_line_error(run_cli("compare", str(good), str(good), "--threshold", "abc"), "percentage")
    one_line_error(run_cli("compare", str(good), str(good), "--warmup", "3"), "nothing is left")
    one_line_error(run_cli("compare", str(good)), "CURRENT")


def test_untrusted_metric_names_do_not_break_the_table(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    name = "[/bold][red]step[/]"
    base = _sample_file(tmp_path, "base.json", _normal(1, 1.0, 0.01), metric=name)
    cur = _sample_file(tmp_path, "cur.json", _normal(2, 1.0, 0.01), metric=name)
    result = run_cli("compare", str(base), str(cur))
    assert result.code == 0, result.err
    assert "[red]step" in result.out


def test_compare_systems_is_dispatched(run_cli) -> None:  # type: ignore[no-untyped-def]
    import importlib.util

    result = run_cli("compare", "systems", "--help")
    if importlib.util.find_spec("lightspeed.cli.compare_systems") is None:
        one_line_error(result, "compare systems", "inference engine")
    else:
        assert result.code == 0
        assert "Usage: lightspeed compare systems" in result.out


def test_help_mentions_exit_codes(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("compare", "--help")
    assert result.code == 0
    assert "1 regression" in result.out


def test_compare_goodput_runs_and_traces(run_cli, tmp_path: Path, write_step_trace) -> None:  # type: ignore[no-untyped-def]
    from lightspeed.goodput import Tracker

    def trace(name: str, step_us: list[int]) -> Path:
        return write_step_trace(tmp_path / name, step_us)

    base = trace("a.json", [int(v * 1e6) for v in _normal(1, 0.10, 0.001, 12)])
    cur = trace("b.json", [int(v * 1e6) for v in _normal(2, 0.13, 0.001, 12)])
    result = run_cli("compare", str(base), str(cur), "--json")
    assert result.code == 1, result.err
    assert json.loads(result.out)["comparisons"][0]["num_warmup_current"] == 1
    run_dir = tmp_path / "run"
    with Tracker(run_dir, flush_interval_s=0.05) as tracker:
        clock_ns = tracker.now_ns()
        for duration_s in _normal(3, 0.10, 0.001, 12):
            tracker.record_step(start_ns=clock_ns, end_ns=clock_ns + int(duration_s * 1e9))
            clock_ns += int(duration_s * 1e9)
    same = run_cli("compare", str(base), str(run_dir))  # a trace against a goodput run: both step times
    assert same.code == 0, same.err


def test_a_negative_sample_is_refused_naming_it(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # step times of -1 s used to be compared as if they were measurements
    good, negative = tmp_path / "good.json", tmp_path / "negative.json"
    for path, samples in ((good, [1.0, 1.1, 0.9]), (negative, [1.0, -2.0, 0.9])):
        path.write_text(
            json.dumps({"metric": "step_time_s", "unit": "s", "lower_is_better": True, "samples": samples})
        )
    one_line_error(
        run_cli("compare", str(good), str(negative)), "negative.json", "negative sample", "samples[1]"
    )

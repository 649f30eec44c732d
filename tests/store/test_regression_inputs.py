"""Regression-gate inputs from the results store, goodput run folders and profiler traces."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lightspeed.errors import DataFileError, StoreError, UserInputError
from lightspeed.gate import compare_runs, load_metric_samples
from lightspeed.goodput import Tracker
from lightspeed.store import NewRecord, open_store

FINGERPRINT = {"host_name": "test-host"}


def _bench_run(store_path: Path, flop_per_s: list[float], step_s: float) -> str:
    with open_store(store_path) as store:
        return store.add_records(
            kind="benchmark",
            fingerprint=FINGERPRINT,
            records=[
                NewRecord(
                    name="gemm fp32 1024",
                    metric="flop_per_s",
                    value=float(np.median(flop_per_s)),
                    unit="FLOP/s",
                    sol=1e12,
                    payload={"samples": flop_per_s},
                ),
                NewRecord(name="step", metric="step_time_s", value=step_s, unit="s"),
            ],
        )


def test_store_runs_give_samples_per_name_and_metric(tmp_path: Path) -> None:
    store_path = tmp_path / "results.sqlite"
    rng = np.random.default_rng(0)
    first = _bench_run(store_path, list(rng.normal(100e9, 1e9, 12)), 0.5)
    series = {s.metric: s for s in load_metric_samples(f"run:{first}", store_path=store_path)}
    gemm = series["gemm fp32 1024 [flop_per_s]"]
    assert len(gemm.samples) == 12  # the repetitions in the payload, not the one headline value
    assert gemm.lower_is_better is False  # a rate
    assert gemm.unit == "FLOP/s"
    step = series["step [step_time_s]"]
    assert step.samples == (0.5,)
    assert step.lower_is_better is True  # a time
    assert gemm.source == f"run:{first}"


def test_store_throughput_drop_is_a_regression(tmp_path: Path) -> None:
    store_path = tmp_path / "results.sqlite"
    rng = np.random.default_rng(1)
    base = _bench_run(store_path, list(rng.normal(100e9, 1e9, 12)), 0.5)
    cur = _bench_run(store_path, list(rng.normal(80e9, 1e9, 12)), 0.5)
    result = compare_runs(
        baseline=load_metric_samples(base, store_path=store_path),  # a bare run id, no "run:"
        current=load_metric_samples("run:latest", store_path=store_path),
        metrics=["gemm fp32 1024 [flop_per_s]"],
    )
    assert result.num_regressions == 1
    assert result.comparisons[0].change_fraction == pytest.approx(-0.2, abs=0.03)
    assert result.current_source == f"run:{cur}"


def test_unknown_source_names_the_accepted_kinds(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="neither a file, a folder nor a run"):
        load_metric_samples("nothing-here", store_path=tmp_path / "results.sqlite")
    with pytest.raises(StoreError, match="does not exist"):  # a store is read, never created
        load_metric_samples("run:abc", store_path=tmp_path / "results.sqlite")
    assert not (tmp_path / "results.sqlite").exists()
    with open_store(tmp_path / "results.sqlite"):  # an empty store
        pass
    with pytest.raises(UserInputError, match="no run"):
        load_metric_samples("run:abc", store_path=tmp_path / "results.sqlite")


def _goodput_run(run_dir: Path, step_s: list[float], rank: int = 0, world_size: int = 1) -> None:
    with Tracker(run_dir, rank=rank, world_size=world_size, flush_interval_s=0.05) as tracker:
        clock_ns = tracker.now_ns()
        for duration_s in step_s:
            end_ns = clock_ns + int(duration_s * 1e9)
            tracker.record_step(start_ns=clock_ns, end_ns=end_ns, tokens=1024)
            clock_ns = end_ns


def test_goodput_run_folder_gives_step_times_without_warmup(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    _goodput_run(run_dir, [3.0, 0.50, 0.52, 0.51])
    (series,) = load_metric_samples(run_dir)
    assert series.metric == "step_time_s"
    assert series.samples == pytest.approx((3.0, 0.50, 0.52, 0.51), abs=1e-6)
    assert series.num_warmup == 1
    assert series.measured() == pytest.approx((0.50, 0.52, 0.51), abs=1e-6)


def test_goodput_step_is_its_slowest_rank(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    _goodput_run(run_dir, [1.0, 0.5, 0.5], rank=0, world_size=2)
    _goodput_run(run_dir, [1.0, 0.5, 0.9], rank=1, world_size=2)
    (series,) = load_metric_samples(run_dir)
    assert series.samples == pytest.approx((1.0, 0.5, 0.9), abs=1e-6)


def test_goodput_slowdown_fails_the_gate(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    _goodput_run(tmp_path / "base", [2.0, *rng.normal(0.20, 0.005, 15)])
    _goodput_run(tmp_path / "cur", [2.0, *rng.normal(0.24, 0.005, 15)])
    result = compare_runs(
        baseline=load_metric_samples(tmp_path / "base"), current=load_metric_samples(tmp_path / "cur")
    )
    assert result.comparisons[0].verdict == "regression"
    assert result.comparisons[0].num_current == 15


def test_metric_history_picks_the_most_run_metric_and_flags_regressions(tmp_path: Path) -> None:
    from lightspeed.gate import metric_history

    store_path = tmp_path / "results.sqlite"
    rng = np.random.default_rng(4)
    for mean in (100e9, 100e9, 70e9):  # the third run lost 30% of its FLOP/s
        _bench_run(store_path, list(rng.normal(mean, 0.5e9, 10)), 0.5)
    with open_store(store_path) as store:
        store.add_records(
            kind="benchmark",
            fingerprint=FINGERPRINT,
            records=[NewRecord(name="once", metric="x", value=1.0, unit="1")],
        )
        history = metric_history(store=store, name="gemm fp32 1024")
        assert history.metric == "flop_per_s"
        assert [p.verdict for p in history.points] == ["first run", "unchanged", "regression"]
        assert history.points[2].value == pytest.approx(70e9, rel=0.01)
        assert history.points[0].num_samples == 10
        assert history.points[0].sol == 1e12
        chosen = metric_history(store=store)  # most runs: the gemm and the step (3 each), not "once"
        assert chosen.name in {"gemm fp32 1024", "step"}
        assert len(chosen.points) == 3
        step = metric_history(store=store, name="step")  # one value per run, all 0.5 s
        assert [p.verdict for p in step.points] == ["first run", "unchanged", "unchanged"]
        with pytest.raises(UserInputError, match="no record"):
            metric_history(store=store, name="missing")


def test_metric_history_prefers_measurements_on_ties(tmp_path: Path) -> None:
    from lightspeed.gate import metric_history

    with open_store(tmp_path / "s.sqlite") as store:
        store.add_records(
            kind="benchmark",
            fingerprint=FINGERPRINT,
            records=[NewRecord(name="measured", metric="step_time_s", value=1.0, unit="s")],
        )
        store.add_records(
            kind="prediction",
            fingerprint=FINGERPRINT,
            records=[NewRecord(name="predicted", metric="step_time_s", value=2.0, unit="s")],
        )
        assert metric_history(store=store).name == "measured"  # both in one run; the newer is a prediction


def test_trace_step_times_from_profiler_steps(tmp_path: Path, write_step_trace) -> None:
    trace = write_step_trace(tmp_path / "t.json", [900_000, 100_000, 110_000, 105_000, 100_000])
    (series,) = load_metric_samples(trace)
    assert series.metric == "step_time_s"
    assert series.samples == pytest.approx((0.9, 0.1, 0.11, 0.105))  # the last profiler step is left out
    assert series.num_warmup == 1
    (every,) = load_metric_samples(trace, include_last_step=True)
    assert every.samples == pytest.approx((0.9, 0.1, 0.11, 0.105, 0.1))


def test_the_profilers_empty_last_step_does_not_halve_the_median(tmp_path: Path, write_step_trace) -> None:
    """torch.profiler stops inside its last step: that step is a few microseconds, not a step. Kept,
    it pulls the median of an even count halfway down and the interval to absurd widths; it is
    left out as every trace analysis leaves it out (HTA's convention)."""
    base = write_step_trace(tmp_path / "a.json", [900_000, 100_000, 101_000, 99_000, 100_000, 5])
    current = write_step_trace(tmp_path / "b.json", [900_000, 100_000, 99_000, 101_000, 5])
    (samples,) = load_metric_samples(current)
    assert samples.samples == pytest.approx((0.9, 0.1, 0.099, 0.101))  # no 5e-6 s step
    result = compare_runs(baseline=load_metric_samples(base), current=load_metric_samples(current))
    (comparison,) = result.comparisons
    # after the warm-up step: baseline 0.100, 0.101, 0.099, 0.100 and current 0.100, 0.099, 0.101, so
    # both medians are 0.100 s; kept, the 5 us step made the current median (0.099 + 0.1) / 2 and
    # the interval -99.99% .. +1,989,900%
    assert comparison.current_median == pytest.approx(0.1)
    assert comparison.baseline_median == pytest.approx(0.1)
    assert -0.05 < comparison.ci_low_fraction <= 0 <= comparison.ci_high_fraction < 0.05
    assert comparison.verdict == "unchanged"
    (two,) = load_metric_samples(write_step_trace(tmp_path / "c.json", [900_000, 100_000, 5]))
    assert two.samples == pytest.approx((0.9, 0.1))  # the median of the steps after warm-up is 0.1, not 0.05


def test_trace_folder_step_is_its_slowest_rank(tmp_path: Path, write_step_trace) -> None:
    folder = tmp_path / "ranks"
    folder.mkdir()
    write_step_trace(folder / "rank-0.json", [100_000, 100_000, 100_000, 100_000], rank=0)
    write_step_trace(folder / "rank-1.json", [100_000, 150_000, 100_000, 3], rank=1)
    (series,) = load_metric_samples(folder)
    assert series.samples == pytest.approx((0.1, 0.15, 0.1))


def test_trace_slowdown_fails_the_gate_and_a_trace_without_steps_is_an_error(
    tmp_path: Path, write_step_trace
) -> None:
    rng = np.random.default_rng(8)
    base = write_step_trace(tmp_path / "a.json", [int(v) for v in rng.normal(100_000, 1_000, 16)])
    cur = write_step_trace(tmp_path / "b.json", [int(v) for v in rng.normal(120_000, 1_000, 16)])
    result = compare_runs(baseline=load_metric_samples(base), current=load_metric_samples(cur))
    assert result.comparisons[0].verdict == "regression"
    no_steps = tmp_path / "none.json"
    no_steps.write_text(
        json.dumps(
            {
                "schemaVersion": 1,
                "traceEvents": [
                    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}
                ],
            }
        )
    )
    with pytest.raises(UserInputError, match="ProfilerStep"):
        load_metric_samples(no_steps)


def test_bench_json_output_is_a_gate_input(tmp_path: Path) -> None:
    from lightspeed.bench import make_result

    def bench_file(name: str, samples: list[float]) -> Path:
        result = make_result(
            suite="membw",
            name="stream triad",
            dtype="fp64",
            size_bytes=2**27,
            samples=samples,
            unit="B/s",
            best="max",
            sol=5e10,
            sol_note="",
            correct=True,
            details={},
        )
        path = tmp_path / name  # what 'lightspeed bench membw --json' prints
        path.write_text(json.dumps([{**result.to_dict(), "device": "cpu"}]))
        return path

    rng = np.random.default_rng(9)
    (series,) = load_metric_samples(bench_file("a.json", list(rng.normal(20e9, 0.2e9, 10))))
    assert series.unit == "B/s"
    assert series.lower_is_better is False
    assert len(series.samples) == 10
    slower = bench_file("b.json", list(rng.normal(15e9, 0.2e9, 10)))
    result = compare_runs(baseline=[series], current=load_metric_samples(slower))
    assert result.num_regressions == 1
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps([{**json.loads(slower.read_text())[0], "size": "big"}]))
    with pytest.raises(DataFileError, match="malformed"):
        load_metric_samples(broken)


def test_a_trace_left_with_only_its_warm_up_step_is_refused(tmp_path: Path, write_step_trace) -> None:
    """Two profiled steps: the first is warm-up and the last is cut by the profiler, so nothing
    steady is left; the gate used to judge the warm-up step alone (n=1, median 1 ms) without a word."""
    two = write_step_trace(tmp_path / "two.json", [1_000, 3_000])
    with pytest.raises(UserInputError, match=r"2 profiled step\(s\): the first is warm-up and the last"):
        load_metric_samples(two)
    (kept,) = load_metric_samples(two, include_last_step=True)  # the last kept: one steady sample
    assert kept.measured() == pytest.approx((0.003,))
    one = write_step_trace(tmp_path / "one.json", [1_000])
    with pytest.raises(UserInputError, match="1 profiled step"):
        load_metric_samples(one, include_last_step=True)


def test_a_goodput_run_of_one_step_is_refused_not_judged_on_its_warm_up(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    _goodput_run(run_dir, [3.0])
    with pytest.raises(UserInputError, match="one completed step, its warm-up"):
        load_metric_samples(run_dir)

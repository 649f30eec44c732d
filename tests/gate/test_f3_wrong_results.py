"""A benchmark result that failed its correctness check is no measurement: the gate refuses it
(one line, exit 2, naming the result) instead of passing a 3x "faster" wrong kernel."""

from __future__ import annotations

import json
from pathlib import Path

from expect import one_line_error
from lightspeed.gate import metric_history
from lightspeed.store import NewRecord, open_store


def _bench_json(run_cli, folder: Path) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    """A real quick benchmark (the CPU launch suite) and the same result made 3x faster and wrong."""
    produced = run_cli("bench", "launch", "--quick", "--no-save", "--json")
    assert produced.code == 0, produced.err
    results = json.loads(produced.out)
    base = folder / "base.json"
    base.write_text(json.dumps(results), encoding="utf-8")
    for result in results:
        result["samples"] = [sample / 3 for sample in result["samples"]]
        result["value"] /= 3
        result["correct"] = False
    wrong = folder / "wrong.json"
    wrong.write_text(json.dumps(results), encoding="utf-8")
    return base, wrong


def test_a_wrong_benchmark_result_is_refused_not_counted(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base, wrong = _bench_json(run_cli, tmp_path)
    line = one_line_error(run_cli("compare", str(base), str(wrong)), "launch dispatch", "correct")
    assert str(wrong) in line
    # the other way round too: a wrong baseline proves nothing either
    one_line_error(run_cli("compare", str(wrong), str(base)), "failed its correctness check")
    # a correct pair still compares
    assert run_cli("compare", str(base), str(base)).code == 0


def test_correct_must_be_true_or_false_in_a_bench_file(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base, wrong = _bench_json(run_cli, tmp_path)
    results = json.loads(wrong.read_text(encoding="utf-8"))
    results[0]["correct"] = "false"  # bool("false") is True: it must not pass as correct
    wrong.write_text(json.dumps(results), encoding="utf-8")
    one_line_error(run_cli("compare", str(base), str(wrong)), "correct", "true or false")


def _store_run(*, correct: bool, scale: float) -> str:
    samples = [1e-6 * scale * (1 + 0.01 * index) for index in range(5)]
    with open_store() as store:
        return store.add_records(
            kind="benchmark",
            fingerprint={"host_name": "h"},
            records=[
                NewRecord(
                    name="launch dispatch",
                    metric="seconds",
                    value=samples[0],
                    unit="s",
                    payload={"samples": samples, "correct": correct, "lower_is_better": True},
                )
            ],
        )


def test_a_stored_wrong_result_is_refused_and_left_out_of_history(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good = _store_run(correct=True, scale=1.0)
    wrong = _store_run(correct=False, scale=1 / 3)
    line = one_line_error(run_cli("compare", f"run:{good}", f"run:{wrong}"), f"run:{wrong}", "correct")
    assert "launch dispatch" in line
    exported = tmp_path / "wrong-export.json"
    assert run_cli("results", "export", wrong, "--output", str(exported)).code == 0
    one_line_error(run_cli("compare", f"run:{good}", str(exported)), "failed its correctness check")
    with open_store() as store:
        history = metric_history(store=store, name="launch dispatch", metric="seconds")
    assert [point.run_id for point in history.points] == [good]

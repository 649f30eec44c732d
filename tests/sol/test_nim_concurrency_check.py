"""Out of sample: TTFT and ITL at a concurrency against NVIDIA NIM's published table
(benchmarks/nim_concurrency_check.py; Llama 3.3 70B on 2 H100 FP8, 1 to 250 users, never fitted
on). Issue 27 asks for TTFT rows at a concurrency within 20% each; the figures are in
docs/benchmarks.md."""

from __future__ import annotations

from types import ModuleType

from scripts import load_script


def _benchmark() -> ModuleType:
    return load_script("benchmarks/nim_concurrency_check.py")


def test_ttft_and_itl_at_every_published_concurrency_land_within_the_issues_bounds() -> None:
    module = _benchmark()
    rows = module.rows()
    assert [int(row["concurrency"]) for row in rows] == [1, 5, 25, 50, 100, 150, 200, 250]
    for row in rows:
        entry = module.predict(row)
        assert abs(entry["error"]["ttft_ms"]) <= 0.20, entry
        assert abs(entry["error"]["itl_ms"]) <= 0.15, entry

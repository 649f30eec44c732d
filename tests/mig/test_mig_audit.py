"""MIG plan output an expert check found misleading: time-shared rows' capacity-point latencies shown
as if they were the GPU's at the requested rate, and a memory refusal that named only the weights."""

from __future__ import annotations

import re
from pathlib import Path

from lightspeed.catalog import load_catalog
from lightspeed.mig import MigService, plan_mig
from lightspeed.sol.core.hardware import load_runtime_overheads
from lightspeed.workload import load_models

SMALL = """schema_version = 1
kind = "mig-workloads"
""" + "".join(
    f"""
[[services]]
name = "a{index}"
model = "llama-3.1-8b"
precision = "fp8"
input_tokens = 1024
output_tokens = 256
requests_per_s = 0.5
max_ttft_ms = 2000
max_tpot_ms = 100
"""
    for index in range(3)
)


def test_capacity_point_latencies_are_marked_in_the_table(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    """Three 8B services at 0.5 req/s: MIG rows are predicted at the requested rate and shown plainly;
    the shared whole-GPU and time-sharing rows keep the 5% share's stretched capacity-point values,
    which are marked '<=' and explained under their table."""
    workloads = tmp_path / "small.toml"
    workloads.write_text(SMALL, encoding="utf-8")
    result = run_cli("mig", "plan", "--workloads", str(workloads), "--gpu", "h100-sxm")
    assert result.code == 0, result.err
    rows = [line for line in result.out.splitlines() if line.startswith("│ a")]
    sliced = [row for row in rows if "1g.20gb" in row]
    shared = [row for row in rows if "shared" in row]
    assert sliced
    assert shared
    assert not any("<=" in row for row in sliced)
    assert all(row.count("<=") == 2 for row in shared)  # TTFT and TPOT
    text = " ".join(result.out.split())
    assert "<=: TTFT/TPOT at the capacity point (an upper bound), not at the requested rate" in text
    assert text.count("<=: TTFT/TPOT") == 2  # under the whole-gpu and time-sharing tables, not under mig


def test_the_time_sharing_refusal_names_the_weights_and_the_runtime_reserve() -> None:
    catalog = load_catalog()
    h100 = catalog.accelerator("h100-sxm")
    big = MigService("big", "llama-3-70b", "fp8", 1024, 256, 1.0, 2.0, 0.1)
    small = MigService("small", "llama-3.1-8b", "fp8", 1024, 256, 1.0, 2.0, 0.1)
    plan = plan_mig(services=[big, small], accelerator=h100, catalog=catalog, models=load_models())
    reason = plan.strategy("time-sharing").reason
    reserve_gb = load_runtime_overheads().reserved_of(h100.memory_device_bytes) / 1e9
    match = re.search(
        r"weights of the 2 models \(([\d.]+) GB, each loaded once\) and the runtime reserve \(([\d.]+) GB\) "
        r"exceed one GPU's ([\d.]+) GB",
        reason,
    )
    assert match, reason
    weights, reserve, device = (float(group) for group in match.groups())
    assert reserve == round(reserve_gb, 1)
    assert device == round(h100.memory_device_bytes / 1e9, 1)
    assert weights < device < weights + reserve  # the weights alone fit: the reserve is what tips it

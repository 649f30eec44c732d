"""How far a simulated run from an empty deployment is from the steady state it should measure.

Usage:
    python benchmarks/steady_state_check.py [--out benchmarks/results/steady_state_check.json]

A sustained rate (LoadGen's ten-minute Server runs, a capacity at an SLO, a latency-load
curve) is a steady-state question; a run of a few thousand requests from empty is mostly its
ramp-up. For Llama 3 8B on one H100 (FP8, 500/200 tokens) at 80-98% of its saturation rate this
prints the median TPOT of (a) the run from empty, (b) the same run after the warm-up
``steady_state_workload`` adds (what the deployment holds at once, unmeasured) and (c) runs 4 to
32 times as long after warm-ups as long: the stationary value, which near capacity itself
fluctuates by tens of percent. Then the highest rate meeting an SLO with and without the warm-up
(``max_rate_at_slo(..., steady=False)``) on the README's Llama 3 70B example and on the 8B one.
The peer is the simulator's own long runs and the deployments' saturation rate in the same run.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

from lightspeed.catalog import load_catalog
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import (
    ArrivalProcess,
    LengthDistribution,
    ServiceLevel,
    ServingWorkload,
    SimulatedDeployment,
    max_rate_at_slo,
    saturation_rate,
    simulate_deployment,
    simulated_deployment,
    steady_state_workload,
)
from lightspeed.workload import load_models

FRACTIONS = (0.8, 0.9, 0.95, 0.98)
LONG_RUNS = (4, 8, 16, 32)  # warm-up and measured requests, times the held count each


def _deployment(model: str, tp: int) -> SimulatedDeployment:
    return simulated_deployment(
        model=load_models().get(model),
        cluster=load_catalog().cluster("dgx-h100", num_accelerators=tp),
        plan=InferencePlan(tp=tp, precision="fp8"),
    )


def _lengths(isl: int, osl: int, count: int) -> ServingWorkload:
    return ServingWorkload(
        ArrivalProcess.offline(), LengthDistribution.fixed(isl), LengthDistribution.fixed(osl), count
    )


def convergence() -> list[dict[str, float]]:
    """Median TPOT from empty, after the warm-up and in long runs, at each fraction of saturation."""
    deployment = _deployment("llama-3-8b", 1)
    lengths = _lengths(500, 200, 1000)
    ceiling = saturation_rate(deployment, lengths)
    rows = []
    for fraction in FRACTIONS:
        workload = replace(lengths, arrivals=ArrivalProcess.poisson(fraction * ceiling))
        steady = steady_state_workload(deployment, workload)
        held = steady.warmup_requests
        row = {
            "fraction": fraction,
            "rate_per_s": fraction * ceiling,
            "cold_tpot_p50_s": simulate_deployment(deployment, workload).tpot.p50_s,
            "warm_tpot_p50_s": simulate_deployment(deployment, steady).tpot.p50_s,
            "warmup_requests": held,
        }
        for times in LONG_RUNS:
            long = replace(workload, num_requests=2 * times * held, warmup_requests=times * held)
            row[f"long_x{times}_tpot_p50_s"] = simulate_deployment(deployment, long).tpot.p50_s
        rows.append(row)
    return rows


def capacities() -> list[dict[str, float | str]]:
    """The highest rate meeting an SLO from empty and at the steady state."""
    cases = [
        ("llama-3-70b", 8, 2000, 200, ServiceLevel(ttft_s=0.5, tpot_s=0.03)),
        ("llama-3-8b", 1, 500, 200, ServiceLevel(ttft_s=0.3, tpot_s=0.02)),
    ]
    rows: list[dict[str, float | str]] = []
    for model, tp, isl, osl, slo in cases:
        deployment = _deployment(model, tp)
        workload = _lengths(isl, osl, 500)
        start = time.perf_counter()
        steady = max_rate_at_slo(deployment, workload=workload, slo=slo)
        steady_s = time.perf_counter() - start
        cold = max_rate_at_slo(deployment, workload=workload, slo=slo, steady=False)
        rows.append(
            {
                "case": f"{model} tp={tp} fp8 {isl}/{osl}, {slo.describe()}",
                "cold_max_rate_per_s": cold.max_rate_per_s,
                "steady_max_rate_per_s": steady.max_rate_per_s,
                "saturation_rate_per_s": steady.saturation_rate_per_s,
                "steady_search_s": steady_s,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/steady_state_check.json"))
    args = parser.parse_args()
    runs, searches = convergence(), capacities()
    print("| share of saturation | from empty | after the warm-up | x4 | x8 | x16 | x32 |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for row in runs:
        longs = " | ".join(f"{row[f'long_x{times}_tpot_p50_s'] * 1e3:.1f}" for times in LONG_RUNS)
        print(
            f"| {row['fraction']:.0%} | {row['cold_tpot_p50_s'] * 1e3:.1f} | "
            f"{row['warm_tpot_p50_s'] * 1e3:.1f} | {longs} |"
        )
    print("\n| deployment | from empty | steady state | saturation |")
    print("|---|---:|---:|---:|")
    for search in searches:
        print(
            f"| {search['case']} | {float(search['cold_max_rate_per_s']):.2f} | "
            f"{float(search['steady_max_rate_per_s']):.2f} | {float(search['saturation_rate_per_s']):.2f} |"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"runs": runs, "capacities": searches}, indent=2))
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()

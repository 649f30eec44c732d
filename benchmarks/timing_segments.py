"""Attention-DP cost lookups: segments of 32 batch sizes against whole rows, in one run.

Usage:
    python benchmarks/timing_segments.py [--repeats 2] [--out benchmarks/results/timing_segments.json]

With attention data parallelism the simulator looks every batch shape up whole, and a run meets
thousands of shapes, each at a few batch sizes near the busiest rank's. The shipped timer
(``lightspeed.sol.serve.timing``) evaluates a miss for ``EXACT_SEGMENT`` (32) batch sizes around
it; the baseline, run here in the same process, evaluates the whole row of 513 as the timer did
before (``EXACT_SEGMENT`` set to the row length). The deployment is the one MLPerf's DeepSeek-R1
Offline rows run: DeepSeek-R1 (``deepseek-v3``) in NVFP4 with an FP8 KV cache on eight B200 as
DEP8 (attention DP 8, EP 8) under ``trtllm-2025``, at its steady state (``steady_state_rates``:
runs of about 14,000 and 28,000 waiting requests). Both must give the same tokens/s to the last
digit; the CPU seconds and cost evaluations of each are reported (median of ``--repeats``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from lightspeed.catalog import load_catalog
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import load_mlperf_workload, simulated_deployment, steady_state_rates, timing
from lightspeed.workload import load_models

WHOLE_ROW = timing.INITIAL_ROW + 1


def measure(segment: int, repeats: int) -> dict[str, Any]:
    """CPU seconds (median), cost evaluations and the steady Offline rate with ``segment`` batch
    sizes evaluated a miss."""
    shipped = timing.EXACT_SEGMENT
    timing.EXACT_SEGMENT = segment
    try:
        catalog, models = load_catalog(), load_models()
        workload = load_mlperf_workload("deepseek-r1").workload("offline", num_requests=800)
        plan = InferencePlan(tp=1, ep=8, dp_attention=8, precision="nvfp4", kv_precision="fp8")
        cpu: list[float] = []
        rate, evaluations = 0.0, 0
        for _ in range(repeats):
            deployment = simulated_deployment(
                model=models.get("deepseek-v3"),
                cluster=catalog.cluster("dgx-b200"),
                plan=plan,
                serving="trtllm-2025",
            )
            started = time.process_time()
            rate = steady_state_rates(deployment, workload).output_tokens_per_s
            cpu.append(time.process_time() - started)
            evaluations = deployment.timer.evaluations
    finally:
        timing.EXACT_SEGMENT = shipped
    return {
        "segment": segment,
        "cpu_s": statistics.median(cpu),
        "evaluations": evaluations,
        "tokens_per_s": rate,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/timing_segments.json"))
    args = parser.parse_args()
    results = {
        "segments": measure(timing.EXACT_SEGMENT, args.repeats),
        "whole_rows": measure(WHOLE_ROW, args.repeats),
    }
    same = results["segments"]["tokens_per_s"] == results["whole_rows"]["tokens_per_s"]
    results["same_figure"] = same
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    for name in ("segments", "whole_rows"):
        row = results[name]
        print(
            f"{name} ({row['segment']} batch sizes a miss): {row['cpu_s']:.1f} s of CPU, "
            f"{row['evaluations']:,} cost evaluations, {row['tokens_per_s']:,.3f} tokens/s"
        )
    print(f"same figure: {same}; wrote {args.out}")
    if not same:
        raise SystemExit("the two lookups disagree")


if __name__ == "__main__":
    main()

"""Out-of-sample check: MLPerf Inference v5.1 LLM results on one 8-accelerator node.

Usage:
    python benchmarks/mlperf_check.py [--out benchmarks/results/mlperf_check.json]

``benchmarks/data/mlperf-v5.1.tsv`` holds, per accelerator, the median of the closed-division,
one-node, eight-accelerator submissions: Llama 2 70B Offline and Server (H200 SXM, B200, MI300X,
MI325X) and Llama 3.1 405B Offline (H200 SXM, B200) (read from the MLCommons v5.1 results table as
openshift-psap/performance-dashboard republishes it; each row lists its submission IDs). None of
these rows is fitted on. The script predicts them with ``validate`` (the MLPerf workload's
dataset lengths, the TP split with the most simulated Offline throughput, Server at the highest
Poisson rate whose p99 TTFT and TPOT meet the limits) and prints the error of each.
MLPerf submissions are tuned best runs; the serving profiles stand for the median published
stack, so a negative error is the expected direction.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from lightspeed.catalog import load_catalog
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.workload import load_models

TABLE = Path(__file__).parent / "data" / "mlperf-v5.1.tsv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/mlperf_check.json"))
    args = parser.parse_args()
    report = validate_published(
        path=TABLE, catalog=load_catalog(), models=load_models(), infer=inference_predictor()
    )
    errors = {
        row.id: row.predicted / row.measured - 1.0
        for row in report.rows
        if row.predicted is not None and row.measured
    }
    rows = [
        {
            "id": row.id,
            "status": row.status,
            "measured": row.measured,
            "predicted": row.predicted,
            "error": errors.get(row.id),
            "plan": row.plan,
            "stack": row.stack,
        }
        for row in report.rows
    ]
    result = {
        "table": str(TABLE),
        "rows": rows,
        "num_refused": sum(1 for row in report.rows if row.status != "ok"),
        "median_error": statistics.median(errors.values()),
        "median_abs_error": statistics.median(abs(error) for error in errors.values()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    print("| row | measured tok/s | predicted | error | stack |")
    print("|---|---:|---:|---:|---|")
    for row in report.rows:
        error = errors.get(row.id)
        shown = "refused" if error is None else f"{error:+.1%}"
        predicted = "-" if row.predicted is None else f"{row.predicted:,.0f}"
        print(f"| {row.id} | {row.measured:,.0f} | {predicted} | {shown} | {row.stack} |")
    print(
        f"median error {result['median_error']:+.1%}, median |error| {result['median_abs_error']:.1%}, "
        f"refused {result['num_refused']}"
    )
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()

"""Out-of-sample check: TTFT, ITL and throughput at a concurrency, against NVIDIA NIM's published table.

Usage:
    python benchmarks/nim_concurrency_check.py [--out benchmarks/results/nim_concurrency_check.json]

``benchmarks/data/nim-llm-benchmarking.tsv`` holds NVIDIA NIM's benchmarking table for
Llama 3.3 70B (NIM 1.8.0, TensorRT-LLM backend) on 2 H100 in FP8 with TP 2, 5,000-token prompts
and 500-token outputs, measured with AIPerf at 1 to 250 concurrent users: mean TTFT, ITL and
output tokens/s. None of it was fitted on. Each row is simulated as the benchmark runs it: a
closed loop of that many users (10 requests per user, at least 200), on the serving profile NIM
1.8.0 ships (``sol/data/stacks.toml``, ``[serving_package.nim]``: its TensorRT-LLM profiles run
pre-compiled engines, trtllm-2024), the first wave of users left out as warm-up (``--warmup`` =
the concurrency: the published means are steady-state figures, which a run whose users all start at once only
reaches after its first wave; the page does not state its own warm-up). The script prints one
line per row and writes the figures to ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
from pathlib import Path
from typing import Any

from lightspeed.catalog import load_catalog
from lightspeed.sol import InferencePlan
from lightspeed.sol.core.serving_packages import package_serving_stack
from lightspeed.sol.core.serving_stacks import ServingStack
from lightspeed.sol.serve import ArrivalProcess, LengthDistribution, ServingWorkload, simulate
from lightspeed.workload import load_models

TABLE = Path(__file__).parent / "data" / "nim-llm-benchmarking.tsv"
RESULTS = Path(__file__).parent / "results" / "nim_concurrency_check.json"
RELEASE = "NVIDIA NIM for LLMs 1.8.0"  # the table's container (its header)
YEAR = 2025
REQUESTS_PER_USER = 10
MIN_REQUESTS = 200


def rows(table: Path = TABLE) -> list[dict[str, str]]:
    """The table's rows (comment lines skipped)."""
    lines = [line for line in table.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


def _serving() -> ServingStack:
    """The serving profile the table's NIM release ships."""
    packaged = package_serving_stack(RELEASE, YEAR)
    assert packaged is not None, f"{RELEASE} ships no known serving profile"
    return packaged[0]


def predict(row: dict[str, str]) -> dict[str, Any]:
    """One row simulated (see the module docstring), with the signed errors of its three figures."""
    users = int(row["concurrency"])
    workload = ServingWorkload(
        arrivals=ArrivalProcess.closed(users),
        input_lengths=LengthDistribution.fixed(int(row["isl"])),
        output_lengths=LengthDistribution.fixed(int(row["osl"])),
        num_requests=max(REQUESTS_PER_USER * users, MIN_REQUESTS),
        warmup_requests=users,
    )
    result = simulate(
        model=load_models().get(row["model"]),
        cluster=load_catalog().resolve_cluster(row["system"]),
        plan=InferencePlan(tp=int(row["tp"]), precision=row["precision"]),
        workload=workload,
        num_gpus=int(row["gpus"]),
        serving=_serving(),
    )
    predicted = {
        "ttft_ms": result.ttft.mean_s * 1e3,
        "itl_ms": result.itl.mean_s * 1e3,
        "output_tokens_per_s": result.output_tokens_per_s,
    }
    return {
        "concurrency": users,
        "measured": {key: float(row[key]) for key in predicted},
        "predicted": predicted,
        "error": {key: predicted[key] / float(row[key]) - 1.0 for key in predicted},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    results = [predict(row) for row in rows()]
    for entry in results:
        error = entry["error"]
        print(
            f"{entry['concurrency']:>4} users  TTFT {entry['measured']['ttft_ms']:>9.1f} ms -> "
            f"{entry['predicted']['ttft_ms']:>9.1f} ({error['ttft_ms']:+.1%})  ITL "
            f"{entry['measured']['itl_ms']:.2f} -> {entry['predicted']['itl_ms']:.2f} "
            f"({error['itl_ms']:+.1%})  "
            f"tokens/s {entry['measured']['output_tokens_per_s']:.0f} -> "
            f"{entry['predicted']['output_tokens_per_s']:.0f} ({error['output_tokens_per_s']:+.1%})"
        )
    for key in ("ttft_ms", "itl_ms", "output_tokens_per_s"):
        errors = [abs(entry["error"][key]) for entry in results]
        print(f"{key}: median |error| {statistics.median(errors):.1%}, max {max(errors):.1%}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Seed claim 12: 72 GPUs as one GB200 NVL72 rack against 9 x 8 H100 over InfiniBand NDR.

    python examples/seed_nvl72_vs_infiniband.py [--json]

The seed says: per-GPU bandwidth 1.8 TB/s vs 20-80 GB/s, small-message latency
1-2 us vs 5-10 us or more, collective overhead a few % vs tens of %. The first
two come from the catalog and the collective model (a group spanning all 72
GPUs); the third from the best plan of two workloads on each system: training
Llama 3 70B (global batch 288 x 4,096 tokens, bf16) and serving GPT-MoE-1.8T
(FP8 on both, 2,048/512 tokens, TTFT <= 2 s, TPOT <= 50 ms), where the share is
the time the step or decode iteration spends in communication that the plan
does not hide.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from lightspeed.catalog import load_catalog
from lightspeed.report import render_fabric_comparison, render_system_comparison
from lightspeed.sol import ServingLoad, compare_systems, fabric_comparison
from lightspeed.workload import load_models

SYSTEMS = ("gb200-nvl72", "9xdgx-h100@ib-ndr")
SEED = {
    "bandwidth_bytes_per_s": {"nvl72": 1.8e12, "infiniband": (20e9, 80e9)},
    "latency_s": {"nvl72": (1e-6, 2e-6), "infiniband": (5e-6, 10e-6)},
    "overhead_share": {"nvl72": "a few %", "infiniband": "tens of %"},
}


def scenario() -> dict[str, Any]:
    """Fabric figures and the two workloads' comparisons."""
    catalog, models = load_catalog(), load_models()
    clusters = [catalog.resolve_cluster(name) for name in SYSTEMS]
    training = compare_systems(
        model=models.get("llama-3-70b"),
        clusters=clusters,
        workload="train",
        options={"global_batch": 288, "seq_len": 4096},
    )
    serving = compare_systems(
        model=models.get("gpt-moe-1.8t"),
        clusters=clusters,
        workload="infer",
        precisions=["fp8"],
        options={"load": ServingLoad(2048, 512), "max_ttft_s": 2.0, "max_tpot_s": 0.05},
    )
    return {"fabric": fabric_comparison(clusters), "training": training, "serving": serving, "seed": SEED}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = scenario()
    if args.json:
        print(
            json.dumps(
                {
                    "fabric": [item.to_dict() for item in result["fabric"]],
                    "training": result["training"].to_dict(),
                    "serving": result["serving"].to_dict(),
                    "seed": SEED,
                },
                indent=2,
            )
        )
        return
    render_fabric_comparison(result["fabric"])
    render_system_comparison(result["training"])
    render_system_comparison(result["serving"])


if __name__ == "__main__":
    main()

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
from lightspeed.sol import fabric_comparison
from lightspeed.tour.scenarios import (
    NVL72_VS_INFINIBAND,
    SEED_FABRIC_CLAIMS,
    nvl72_vs_infiniband_serving,
    nvl72_vs_infiniband_training,
)
from lightspeed.workload import load_models

SYSTEMS = NVL72_VS_INFINIBAND
SEED = SEED_FABRIC_CLAIMS


def scenario() -> dict[str, Any]:
    """Fabric figures and the two workloads' comparisons."""
    catalog, models = load_catalog(), load_models()
    clusters = [catalog.resolve_cluster(name) for name in SYSTEMS]
    return {
        "fabric": fabric_comparison(clusters),
        "training": nvl72_vs_infiniband_training(catalog, models),
        "serving": nvl72_vs_infiniband_serving(catalog, models),
        "seed": SEED,
    }


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

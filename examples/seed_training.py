"""The seed's training scenarios, predicted by lightspeed (issue 3).

Run: ``python examples/seed_training.py [--json]``

1. DeepSeek-V3 on 2,048 H800 (FP8, PP16, EP64, DualPipe): GPU-hours for 14.8T
   tokens vs the 2.664M DeepSeek reports (technical report, Table 1).
2. The same plan on H100 SXM vs H800 SXM: what the NVLink cut (900 -> 400 GB/s)
   costs with DualPipe's all-to-all overlap and without it.
3. Llama-3 405B on 8,192 and 16,384 H100 (8K, and 131K with CP16): predicted vs
   the 430 / 400 / 380 TFLOP/s per GPU (43 / 41 / 38% BF16 MFU) Meta reports
   (Llama 3 paper, Table 4).

The plans and published figures live in ``lightspeed.tour.scenarios`` (the tour
and the tests use them too); this script prints them.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from lightspeed.catalog import Catalog, load_catalog
from lightspeed.tour.scenarios import (
    DEEPSEEK_PRETRAIN_GPU_HOURS,
    deepseek_v3_training,
    llama3_405b_training,
    nvlink_cut,
)
from lightspeed.workload import ModelRegistry, load_models

LLAMA3_TFLOPS = (430, 400, 380)  # Llama 3 paper, Table 4: TFLOP/s per GPU of the three runs


def summary(catalog: Catalog, models: ModelRegistry) -> dict[str, Any]:
    """Every scenario's headline numbers as plain data."""
    deepseek = deepseek_v3_training(catalog, models)
    cuts = [nvlink_cut(catalog, models, ep) for ep in (64, 8)]
    llama = llama3_405b_training(catalog, models)
    return {
        "deepseek_v3": {
            "predicted_gpu_hours": deepseek.gpu_hours,
            "reported_gpu_hours": DEEPSEEK_PRETRAIN_GPU_HOURS,
            "step_time_s": deepseek.step_time_s,
            "memory_per_gpu_bytes": deepseek.memory_per_gpu_bytes,
            "fits": deepseek.fits,
            "bound": deepseek.bound,
        },
        "nvlink_cut": [
            {
                "plan": cut.plan,
                "cost_with_overlap": cut.cost_with_overlap,
                "cost_without_overlap": cut.cost_without_overlap,
            }
            for cut in cuts
        ],
        "llama3_405b": [
            {
                "num_gpus": e.num_gpus,
                "seq_len": e.plan.seq_len,
                "predicted_mfu": e.mfu,
                "reported_mfu": reported,
                "predicted_tflop_per_s_per_gpu": e.tflop_per_s_per_gpu,
                "reported_tflop_per_s_per_gpu": tflops,
                "memory_per_gpu_bytes": e.memory_per_gpu_bytes,
                "fits": e.fits,
                "bound": e.bound,
            }
            for (e, reported), tflops in zip(llama, LLAMA3_TFLOPS, strict=True)
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="The seed's training scenarios")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = summary(load_catalog(), load_models())
    if args.json:
        print(json.dumps(result, indent=2))
        return
    deepseek = result["deepseek_v3"]
    print(
        f"DeepSeek-V3 on 2,048 H800: {deepseek['predicted_gpu_hours'] / 1e6:.2f}M GPU-hours predicted "
        f"for 14.8T tokens vs {deepseek['reported_gpu_hours'] / 1e6:.3f}M reported; "
        f"{deepseek['memory_per_gpu_bytes'] / 2**30:.1f} GiB per GPU "
        f"({'fits' if deepseek['fits'] else 'does not fit'}); "
        f"{deepseek['bound']}"
    )
    for cut in result["nvlink_cut"]:
        print(
            f"NVLink 900 -> 400 GB/s (H100 -> H800), {cut['plan']}: "
            f"{cut['cost_with_overlap']:+.1%} step time with DualPipe overlap, "
            f"{cut['cost_without_overlap']:+.1%} without"
        )
    for run in result["llama3_405b"]:
        print(
            f"Llama-3 405B on {run['num_gpus']:,} H100 at {run['seq_len']:,} tokens: "
            f"{run['predicted_tflop_per_s_per_gpu']:.0f} TFLOP/s per GPU (MFU {run['predicted_mfu']:.1%}) "
            f"predicted vs {run['reported_tflop_per_s_per_gpu']} ({run['reported_mfu']:.0%}) reported; "
            f"{run['memory_per_gpu_bytes'] / 2**30:.1f} GiB per GPU; {run['bound']}"
        )


if __name__ == "__main__":
    main()

"""Seed claim 10: GPT-MoE-1.8T served on one GB200 NVL72 (FP4) against 8 x HGX H100 (FP8).

    python examples/seed_inference_gpt_moe.py [--plan-family tp-ep-pp|wide-ep] [--json]

NVIDIA's comparison: 32,768 input and 1,024 output tokens per request, first
token within 5 s, 50 ms between tokens, per-GPU throughput; NVIDIA claims
~30x, the seed quotes ~3.4 (H100) vs ~150 (GB200) tokens/s per GPU. For each
system this searches every deployment (TP/EP/PP per replica, replicas, batch,
prefill/decode pools) under those bounds, then splits the ratio into factors
(tensor cores, FP4, HBM, the NVLink domain) by changing one thing at a time.

NVIDIA does not publish the model's attention. The catalog's GPT-MoE-1.8T
assumes 120 MHA heads, so each token's KV cache is 2.3 MB in FP8; ``--what-if
-gqa`` reruns everything with 8 KV heads to show how much the answer depends on it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from lightspeed.catalog import load_catalog
from lightspeed.report import make_console, render_ratio_decomposition, render_system_comparison
from lightspeed.tour.scenarios import (
    NVIDIA_GPT_MOE_RATIO,
    NVIDIA_GPT_MOE_TOKENS_PER_S_PER_GPU,
    gpt_moe_comparison,
    gpt_moe_decomposition,
)
from lightspeed.workload import AttentionSpec, TransformerSpec, load_models

NVIDIA_H100_PER_GPU = NVIDIA_GPT_MOE_TOKENS_PER_S_PER_GPU["h100"]
NVIDIA_GB200_PER_GPU = NVIDIA_GPT_MOE_TOKENS_PER_S_PER_GPU["gb200"]
NVIDIA_RATIO = NVIDIA_GPT_MOE_RATIO


def model(what_if_gqa: bool = False) -> TransformerSpec:
    """The catalog's GPT-MoE-1.8T, or the same with 8 KV heads (a what-if, not NVIDIA's spec)."""
    spec = load_models().get("gpt-moe-1.8t")
    if not what_if_gqa:
        return spec
    heads = spec.attention.num_heads
    return dataclasses.replace(
        spec, name="gpt-moe-1.8t-gqa8", attention=AttentionSpec("gqa", heads, 8, spec.attention.head_dim)
    )


def scenario(plan_family: str = "tp-ep-pp", what_if_gqa: bool = False) -> dict[str, Any]:
    """The comparison of both systems and the factor decomposition of their ratio."""
    catalog = load_catalog()
    spec = model(what_if_gqa)
    comparison = gpt_moe_comparison(catalog, spec, plan_family)
    decomposition = gpt_moe_decomposition(catalog, spec, plan_family)
    h100, gb200 = (result.throughput_tokens_per_s_per_gpu for result in comparison.results)
    return {
        "model": spec.name,
        "plan_family": plan_family,
        "h100_tokens_per_s_per_gpu": h100,
        "gb200_tokens_per_s_per_gpu": gb200,
        "ratio": gb200 / h100,
        "nvidia": {"h100": NVIDIA_H100_PER_GPU, "gb200": NVIDIA_GB200_PER_GPU, "ratio": NVIDIA_RATIO},
        "comparison": comparison,
        "decomposition": decomposition,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan-family", choices=("tp-ep-pp", "wide-ep"), default="tp-ep-pp")
    parser.add_argument(
        "--what-if-gqa", action="store_true", help="8 KV heads instead of 120 (not NVIDIA's spec)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = scenario(args.plan_family, args.what_if_gqa)
    if args.json:
        print(
            json.dumps(
                {
                    key: value.to_dict() if hasattr(value, "to_dict") else value
                    for key, value in result.items()
                },
                indent=2,
            )
        )
        return
    render_system_comparison(result["comparison"])
    render_ratio_decomposition(result["decomposition"])
    console = make_console()
    console.print(
        f"model: H100 {result['h100_tokens_per_s_per_gpu']:.1f} vs "
        f"GB200 {result['gb200_tokens_per_s_per_gpu']:.1f} "
        f"tokens/s per GPU = {result['ratio']:.1f}x; NVIDIA: {NVIDIA_H100_PER_GPU} vs {NVIDIA_GB200_PER_GPU} "
        f"(~{NVIDIA_RATIO:.0f}x)"
    )


if __name__ == "__main__":
    main()

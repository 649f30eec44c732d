"""Seed claim 10: GPT-MoE-1.8T served on one GB200 NVL72 (FP4) against 8 x HGX H100 (FP8).

    python examples/seed_inference_gpt_moe.py [--plan-family tp-ep-pp|wide-ep] [--json]

NVIDIA's comparison: 32,768 input and 1,024 output tokens per request, first
token within 5 s, 50 ms between tokens, per-GPU throughput. The seed reads
~3.4 (H100) and ~150 (GB200) tokens/s per GPU off NVIDIA's chart, which is
150 / 3.4 = 44x; NVIDIA's headline says 30x, a separate figure. For each
system this searches every deployment (TP/EP/PP per replica, replicas, batch,
prefill/decode pools) under those bounds, then splits the ratio into
order-independent (Shapley) factors: tensor cores, FP4, HBM and the NVLink
domain, every combination of them searched once.

NVIDIA does not publish the model's attention. The catalog's GPT-MoE-1.8T
assumes 120 MHA heads, so each token's KV cache is 2.3 MB in FP8; the
decomposition is repeated with GQA (8 KV heads) and an MLA-like latent to show
how much the answer depends on that assumption.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from lightspeed.catalog import load_catalog
from lightspeed.report import (
    make_console,
    render_attention_sensitivity,
    render_ratio_decomposition,
    render_system_comparison,
)
from lightspeed.tour.scenarios import (
    NVIDIA_GPT_MOE_HEADLINE_RATIO,
    NVIDIA_GPT_MOE_TOKENS_PER_S_PER_GPU,
    gpt_moe_attention_sensitivity,
    gpt_moe_comparison,
    gpt_moe_decomposition,
)
from lightspeed.units import format_significant, quotient_of_shown
from lightspeed.workload import load_models

NVIDIA_H100_PER_GPU = NVIDIA_GPT_MOE_TOKENS_PER_S_PER_GPU["h100"]
NVIDIA_GB200_PER_GPU = NVIDIA_GPT_MOE_TOKENS_PER_S_PER_GPU["gb200"]


def scenario(plan_family: str = "tp-ep-pp") -> dict[str, Any]:
    """Both systems' best deployments, the ratio's factors, and the factors under each attention."""
    catalog = load_catalog()
    spec = load_models().get("gpt-moe-1.8t")
    comparison = gpt_moe_comparison(catalog, spec, plan_family)
    h100, gb200 = (result.throughput_tokens_per_s_per_gpu for result in comparison.results)
    return {
        "model": spec.name,
        "plan_family": plan_family,
        "h100_tokens_per_s_per_gpu": h100,
        "gb200_tokens_per_s_per_gpu": gb200,
        "ratio": gb200 / h100,
        "nvidia": {
            "h100": NVIDIA_H100_PER_GPU,
            "gb200": NVIDIA_GB200_PER_GPU,
            "ratio": NVIDIA_GB200_PER_GPU / NVIDIA_H100_PER_GPU,
            "headline_ratio": NVIDIA_GPT_MOE_HEADLINE_RATIO,
        },
        "comparison": comparison,
        "decomposition": gpt_moe_decomposition(catalog, spec, plan_family),
        "attention_sensitivity": gpt_moe_attention_sensitivity(catalog, spec, plan_family),
    }


def summary(result: dict[str, Any]) -> str:
    """The last line: every ratio is the quotient of the figures printed beside it."""
    h100, gb200 = (format_significant(result[f"{key}_tokens_per_s_per_gpu"]) for key in ("h100", "gb200"))
    seed_h100, seed_gb200 = f"{NVIDIA_H100_PER_GPU:g}", f"{NVIDIA_GB200_PER_GPU:g}"
    return (
        f"model: H100 {h100} vs GB200 {gb200} tokens/s per GPU = {quotient_of_shown(gb200, h100):.1f}x; "
        f"seed: {seed_h100} vs {seed_gb200} = {quotient_of_shown(seed_gb200, seed_h100):.0f}x; "
        f"NVIDIA's headline: {NVIDIA_GPT_MOE_HEADLINE_RATIO:g}x (not the quotient of the seed's figures)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan-family", choices=("tp-ep-pp", "wide-ep"), default="tp-ep-pp")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = scenario(args.plan_family)
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
    render_attention_sensitivity(result["attention_sensitivity"])
    make_console().print(summary(result))


if __name__ == "__main__":
    main()

"""The seed's scenarios, predicted with the library (issues 3 and 4).

Shared by ``examples/seed_training.py``, the tour and the tests, so that the
plans and the published figures they are checked against live in one place:

* DeepSeek-V3 on 2,048 H800 (FP8, PP16, EP64, DualPipe): GPU-hours for 14.8T
  tokens vs the 2.664M DeepSeek reports (technical report, Table 1);
* the same plan on H100 SXM vs H800 SXM: what the NVLink cut (900 -> 400 GB/s)
  costs with DualPipe's all-to-all overlap and without it;
* Llama-3 405B on 8,192 and 16,384 H100 vs the 38-43% BF16 MFU Meta reports
  (Llama 3 paper, Table 4);
* GPT-MoE-1.8T served on one GB200 NVL72 (NVFP4) vs 8 x HGX H100 (FP8) under
  NVIDIA's bounds, and the ratio split into factors (seed claim 10);
* 72 GPUs as an NVL72 rack vs 9 x 8 H100 over InfiniBand (seed claim 12).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from lightspeed.catalog import Catalog
from lightspeed.records import Record
from lightspeed.sol.decomposition import (
    AttentionSensitivity,
    RatioDecomposition,
    attention_sensitivity,
    decompose_ratio,
)
from lightspeed.sol.infer.plan import ServingLoad
from lightspeed.sol.systems import SystemComparison, compare_systems
from lightspeed.sol.train.estimate import estimate_training
from lightspeed.sol.train.plan import TrainingPlan
from lightspeed.sol.train.result import TrainingEstimate
from lightspeed.workload import ModelRegistry, TransformerSpec

DEEPSEEK_PRETRAIN_GPU_HOURS = 2.664e6  # H800 GPU-hours of DeepSeek-V3 pre-training on 14.8T tokens
DEEPSEEK_STACK = "deepseek-2024"  # its own stack: FP8 caching, norm/MLA up-projection recompute, BF16 moments
# Meta names no framework: the default profile (the median of published runs), as for any such row
LLAMA3_STACK: str | None = None
DEEPSEEK_TOKENS = 14.8e12
# (GPUs, CP, DP, sequence length, sequences per DP replica, reported BF16 MFU): Llama 3 paper, Table 4.
LLAMA3_RUNS = (
    (8192, 1, 64, 8192, 32, 0.43),
    (16384, 1, 128, 8192, 16, 0.41),
    (16384, 16, 8, 131072, 16, 0.38),
)

DEEPSEEK_PLAN = TrainingPlan(
    tp=1,
    pp=16,
    dp=128,
    ep=64,
    schedule="dualpipe",
    zero_stage=1,
    micro_batch_size=1,
    global_batch_size=15360,
    seq_len=4096,
    precision="fp8",
    recompute="selective",
    uneven_pipeline=True,
)


@dataclass(frozen=True)
class NvlinkCut(Record):
    """Step time of one plan on H100 and H800, with and without all-to-all overlap."""

    plan: str
    h100_overlap_s: float
    h800_overlap_s: float
    h100_no_overlap_s: float
    h800_no_overlap_s: float

    @property
    def cost_with_overlap(self) -> float:
        """How much slower H800 is than H100 with DualPipe's overlap."""
        return self.h800_overlap_s / self.h100_overlap_s - 1.0

    @property
    def cost_without_overlap(self) -> float:
        """How much slower H800 is than H100 when the all-to-all is exposed."""
        return self.h800_no_overlap_s / self.h100_no_overlap_s - 1.0


DEEPSEEK_SYSTEM: Final = "hgx-h800"  # the catalog system of DeepSeek-V3's 2,048 H800


def deepseek_v3_training(catalog: Catalog, models: ModelRegistry) -> TrainingEstimate:
    """DeepSeek-V3's pre-training plan on 2,048 H800, with 14.8T tokens to train."""
    cluster = catalog.cluster(DEEPSEEK_SYSTEM, num_accelerators=2048)
    return estimate_training(
        model=models.get("deepseek-v3"),
        cluster=cluster,
        plan=DEEPSEEK_PLAN,
        num_tokens=DEEPSEEK_TOKENS,
        stack=DEEPSEEK_STACK,
    )


def nvlink_cut(catalog: Catalog, models: ModelRegistry, ep: int = 64) -> NvlinkCut:
    """One plan on DGX H100 and HGX H800 (identical but for NVLink 900 vs 400 GB/s).

    ``ep=64`` is DeepSeek's plan (experts over 8 nodes: the all-to-all rides
    InfiniBand); ``ep=8`` keeps experts inside a node, where NVLink carries it.
    """
    model = models.get("deepseek-v3")
    steps = {}
    for system in ("dgx-h100", "hgx-h800"):
        cluster = catalog.cluster(system, num_accelerators=2048)
        for overlap in (True, False):
            plan = DEEPSEEK_PLAN.with_changes(ep=ep, ep_overlap=overlap)
            estimate = estimate_training(model=model, cluster=cluster, plan=plan, stack=DEEPSEEK_STACK)
            steps[(system, overlap)] = estimate.step_time_s
    return NvlinkCut(
        plan=f"EP{ep}",
        h100_overlap_s=steps[("dgx-h100", True)],
        h800_overlap_s=steps[("hgx-h800", True)],
        h100_no_overlap_s=steps[("dgx-h100", False)],
        h800_no_overlap_s=steps[("hgx-h800", False)],
    )


def llama3_405b_training(catalog: Catalog, models: ModelRegistry) -> list[tuple[TrainingEstimate, float]]:
    """Meta's three Table 4 configurations, each with its reported MFU."""
    model = models.get("llama-3-405b")
    results = []
    for gpus, cp, dp, seq_len, per_replica, reported in LLAMA3_RUNS:
        plan = TrainingPlan(
            tp=8,
            pp=16,
            cp=cp,
            dp=dp,
            vpp=6,
            micro_batch_size=1,
            global_batch_size=per_replica * dp,
            seq_len=seq_len,
            recompute="selective",
            uneven_pipeline=True,
        )
        cluster = catalog.cluster("dgx-h100", num_accelerators=gpus)
        estimate = estimate_training(
            model=model, cluster=cluster, plan=plan, flop_convention="6N+attention", stack=LLAMA3_STACK
        )
        results.append((estimate, reported))
    return results


# --- Inference and system scenarios (seed claims 10 and 12) -------------------------------------

# Seed claim 12: 72 GPUs either way, one NVL72 rack or 9 x 8 H100 over InfiniBand NDR.
NVL72_VS_INFINIBAND = ("gb200-nvl72", "9xdgx-h100@ib-ndr")
# its per-GPU bandwidth and small-message latency, a figure or a (low, high) range, per side
SeedFigure = float | tuple[float, float]
SEED_FABRIC_BANDWIDTH_BYTES_PER_S: dict[str, SeedFigure] = {"nvl72": 1.8e12, "infiniband": (20e9, 80e9)}
SEED_FABRIC_LATENCY_S: dict[str, SeedFigure] = {"nvl72": (1e-6, 2e-6), "infiniband": (5e-6, 10e-6)}
# the seed's whole claim, as the example prints it (the figures above and its words on overhead)
SEED_FABRIC_CLAIMS: dict[str, object] = {
    "bandwidth_bytes_per_s": SEED_FABRIC_BANDWIDTH_BYTES_PER_S,
    "latency_s": SEED_FABRIC_LATENCY_S,
    "overhead_share": {"nvl72": "a few %", "infiniband": "tens of %"},
}
# Seed claim 10: NVIDIA's GPT-MoE-1.8T comparison ("8x eight-way HGX H100 air-cooled" vs one
# GB200 NVL72): 32,768 input / 1,024 output tokens, TTFT <= 5 s, 50 ms between tokens.
GPT_MOE_SYSTEMS = ("8xdgx-h100@ib-ndr", "gb200-nvl72")
GPT_MOE_PRECISIONS = ("fp8", "nvfp4")
# The seed's reading of NVIDIA's chart (3.4 and 150 tokens/s per GPU: 150 / 3.4 = 44x) and NVIDIA's
# headline ("30x faster real-time LLM inference"), a separate claim: not the quotient of the two
NVIDIA_GPT_MOE_TOKENS_PER_S_PER_GPU = {"h100": 3.4, "gb200": 150.0}
NVIDIA_GPT_MOE_HEADLINE_RATIO = 30.0


def gpt_moe_serving_options(plan_family: str = "tp-ep-pp") -> dict[str, Any]:
    """NVIDIA's load and latency bounds for the GPT-MoE-1.8T comparison."""
    return {
        "load": ServingLoad(input_tokens=32768, output_tokens=1024),
        "max_ttft_s": 5.0,
        "max_tpot_s": 0.050,
        "disaggregated": True,
        "plan_family": plan_family,
    }


def gpt_moe_comparison(
    catalog: Catalog, model: TransformerSpec, plan_family: str = "tp-ep-pp"
) -> SystemComparison:
    """The best deployment of ``model`` on 8 x HGX H100 (FP8) and on one GB200 NVL72 (NVFP4)."""
    clusters = [catalog.resolve_cluster(name) for name in GPT_MOE_SYSTEMS]
    return compare_systems(
        model=model,
        clusters=clusters,
        workload="infer",
        precisions=list(GPT_MOE_PRECISIONS),
        options=gpt_moe_serving_options(plan_family),
    )


def _gpt_moe_ends(catalog: Catalog, model: TransformerSpec, plan_family: str) -> dict[str, Any]:
    """The keywords of a decomposition of the GB200/H100 ratio under NVIDIA's bounds."""
    baseline, target = (catalog.resolve_cluster(name) for name in GPT_MOE_SYSTEMS)
    return {
        "model": model,
        "baseline": baseline,
        "target": target,
        "baseline_precision": GPT_MOE_PRECISIONS[0],
        "target_precision": GPT_MOE_PRECISIONS[1],
        "options": gpt_moe_serving_options(plan_family),
    }


def gpt_moe_decomposition(
    catalog: Catalog, model: TransformerSpec, plan_family: str = "tp-ep-pp"
) -> RatioDecomposition:
    """The GB200/H100 ratio split into order-independent (Shapley) factors."""
    return decompose_ratio(**_gpt_moe_ends(catalog, model, plan_family))


def gpt_moe_attention_sensitivity(
    catalog: Catalog, model: TransformerSpec, plan_family: str = "tp-ep-pp"
) -> AttentionSensitivity:
    """The decomposition again with MHA, GQA (8 KV heads) and an MLA-like latent: NVIDIA does not
    publish GPT-MoE-1.8T's attention, and the catalogue's 120 MHA heads make it KV-bound."""
    return attention_sensitivity(**_gpt_moe_ends(catalog, model, plan_family))


def nvl72_vs_infiniband_training(catalog: Catalog, models: ModelRegistry) -> SystemComparison:
    """The best Llama-3 70B training plan on each 72-GPU system (batch 288 x 4,096 tokens)."""
    clusters = [catalog.resolve_cluster(name) for name in NVL72_VS_INFINIBAND]
    return compare_systems(
        model=models.get("llama-3-70b"),
        clusters=clusters,
        workload="train",
        options={"global_batch": 288, "seq_len": 4096},
    )


def nvl72_vs_infiniband_serving(catalog: Catalog, models: ModelRegistry) -> SystemComparison:
    """The best GPT-MoE-1.8T FP8 serving plan on each 72-GPU system (2,048/512 tokens)."""
    clusters = [catalog.resolve_cluster(name) for name in NVL72_VS_INFINIBAND]
    return compare_systems(
        model=models.get("gpt-moe-1.8t"),
        clusters=clusters,
        workload="infer",
        precisions=["fp8"],
        options={"load": ServingLoad(2048, 512), "max_ttft_s": 2.0, "max_tpot_s": 0.05},
    )

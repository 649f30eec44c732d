"""The seed's training scenarios, predicted with the library (issue 3).

Shared by ``examples/seed_training.py``, the tour and the tests, so that the
plans and the published figures they are checked against live in one place:

* DeepSeek-V3 on 2,048 H800 (FP8, PP16, EP64, DualPipe): GPU-hours for 14.8T
  tokens vs the 2.664M DeepSeek reports (technical report, Table 1);
* the same plan on H100 SXM vs H800 SXM: what the NVLink cut (900 -> 400 GB/s)
  costs with DualPipe's all-to-all overlap and without it;
* Llama-3 405B on 8,192 and 16,384 H100 vs the 38-43% BF16 MFU Meta reports
  (Llama 3 paper, Table 4).
"""

from __future__ import annotations

from dataclasses import dataclass

from lightspeed.catalog import Catalog
from lightspeed.records import Record
from lightspeed.sol.estimate import TrainEstimate, estimate_training
from lightspeed.sol.plan import TrainingPlan
from lightspeed.workload import ModelRegistry

DEEPSEEK_PRETRAIN_GPU_HOURS = 2.664e6  # H800 GPU-hours of DeepSeek-V3 pre-training on 14.8T tokens
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


def deepseek_v3_training(catalog: Catalog, models: ModelRegistry) -> TrainEstimate:
    """DeepSeek-V3's pre-training plan on 2,048 H800, with 14.8T tokens to train."""
    cluster = catalog.cluster("hgx-h800", num_accelerators=2048)
    return estimate_training(
        model=models.get("deepseek-v3"), cluster=cluster, plan=DEEPSEEK_PLAN, num_tokens=DEEPSEEK_TOKENS
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
            steps[(system, overlap)] = estimate_training(model=model, cluster=cluster, plan=plan).step_time_s
    return NvlinkCut(
        plan=f"EP{ep}",
        h100_overlap_s=steps[("dgx-h100", True)],
        h800_overlap_s=steps[("hgx-h800", True)],
        h100_no_overlap_s=steps[("dgx-h100", False)],
        h800_no_overlap_s=steps[("hgx-h800", False)],
    )


def llama3_405b_training(catalog: Catalog, models: ModelRegistry) -> list[tuple[TrainEstimate, float]]:
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
            recompute="partial",
            uneven_pipeline=True,
            tp_overlap=True,
        )
        cluster = catalog.cluster("dgx-h100", num_accelerators=gpus)
        estimate = estimate_training(model=model, cluster=cluster, plan=plan, flop_convention="6N+attention")
        results.append((estimate, reported))
    return results

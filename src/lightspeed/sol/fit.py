"""When a plan does not fit in memory: say by how much, and find one that does."""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from lightspeed.catalog import Cluster
from lightspeed.errors import InvalidPlanError
from lightspeed.sol.hardware import Hardware
from lightspeed.units import format_bytes
from lightspeed.workload import TransformerSpec

if TYPE_CHECKING:
    from lightspeed.sol.estimate import TrainEstimate


def raise_not_fitting(
    estimate: TrainEstimate, model: TransformerSpec, cluster: Cluster, hardware: Hardware
) -> NoReturn:
    """Raise :class:`InvalidPlanError` naming the biggest memory parts and the best fitting plan."""
    from lightspeed.sol.search import search_training

    parts = sorted(estimate.memory_bytes.items(), key=lambda item: item[1], reverse=True)
    largest = ", ".join(f"{name} {format_bytes(value)}" for name, value in parts[:3])
    plan = estimate.plan
    message = (
        f"plan does not fit: {format_bytes(estimate.memory_per_gpu_bytes)} per GPU needed, "
        f"{format_bytes(hardware.usable_memory_bytes)} usable on {hardware.accelerator.name} ({largest})"
    )
    result = search_training(
        model=model,
        cluster=cluster,
        global_batch_size=plan.global_batch_size,
        seq_len=plan.seq_len,
        precision=plan.precision,
        top=1,
        max_tp=cluster.system.scale_up_domain_size,
    )
    best = result.plans[0] if result.plans else None
    if best is not None and best.fits:
        alternative = best.plan
        message += (
            f"; a plan that fits: --tp {alternative.tp} --pp {alternative.pp} --dp {alternative.dp} "
            f"--cp {alternative.cp} --vpp {alternative.vpp} --zero {alternative.zero_stage} "
            f"--micro-batch {alternative.micro_batch_size} --recompute {alternative.recompute} "
            f"({format_bytes(best.memory_per_gpu_bytes)} per GPU)"
        )
    else:
        message += f"; no plan on {cluster.num_accelerators} GPUs fits: use more GPUs or a smaller model"
    raise InvalidPlanError(message)

"""``estimate_training``: one plan on one cluster, with its breakdown and bound.

>>> from lightspeed.catalog import load_catalog
>>> from lightspeed.workload import load_models
>>> catalog, models = load_catalog(), load_models()
>>> cluster = catalog.cluster("dgx-h100", num_accelerators=64)
>>> plan = TrainingPlan(tp=8, dp=8, micro_batch_size=1, global_batch_size=64, seq_len=8192)
>>> estimate = estimate_training(model=models.get("llama-3-70b"), cluster=cluster, plan=plan)
>>> 0.2 < estimate.mfu < 0.7
True

The training engine's twin of :mod:`lightspeed.sol.infer.estimate` (the same concept for serving).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import replace
from typing import NoReturn

from lightspeed.catalog import Cluster
from lightspeed.errors import PlanDoesNotFitError
from lightspeed.limits import check_kind
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.hardware import Hardware, hardware_for
from lightspeed.sol.core.stacks import Stack, load_stack
from lightspeed.sol.train.batch import split_batch
from lightspeed.sol.train.grid import grid_from_plans
from lightspeed.sol.train.plan import TrainingPlan, validate_plan, validate_plan_gpus
from lightspeed.sol.train.result import (
    DEFAULT_FLOP_CONVENTION,
    TrainingEstimate,
    check_gpu_count,
    estimate_from_arrays,
)
from lightspeed.sol.train.search import search_training
from lightspeed.sol.train.step import evaluate_grid
from lightspeed.units import format_memory
from lightspeed.workload import TransformerSpec, check_context

LOG = logging.getLogger(__name__)

# The settings of a plan that a "plan that fits" suggestion names, in this order: every parallel
# dimension (``ep`` for mixture-of-experts models), then what else changes the memory.
SUGGESTED_SETTINGS = (
    "tp",
    "pp",
    "dp",
    "cp",
    "ep",
    "vpp",
    "schedule",
    "zero_stage",
    "micro_batch_size",
    "recompute",
)


def _check_arguments(model: object, cluster: object, plan: object) -> None:
    """A name where the engine takes the thing itself is refused in one line saying how to make it."""
    check_kind("model", model, TransformerSpec, "lightspeed.model('llama-3-70b')")
    check_kind("cluster", cluster, Cluster, "lightspeed.cluster('dgx-h100', num_gpus=64)")
    check_kind("plan", plan, TrainingPlan, "lightspeed.TrainingPlan(global_batch_size=256, seq_len=8192)")


def estimate_training(
    *,
    model: TransformerSpec,
    cluster: Cluster,
    plan: TrainingPlan,
    efficiency: EfficiencyModel | None = None,
    flop_convention: str = DEFAULT_FLOP_CONVENTION,
    num_tokens: float | None = None,
    check_fit: bool = False,
    sharp: bool = False,
    num_gpus: int | None = None,
    stack: str | Stack | None = None,
    free_settings: Collection[str] = (),
) -> TrainingEstimate:
    """Predict one training plan on ``cluster`` (see :class:`TrainingEstimate`).

    Raises :class:`~lightspeed.errors.InvalidPlanError` if the plan cannot exist
    on ``cluster``, or, with ``check_fit=True``, if it does not fit in memory.
    ``sharp=True`` models in-network reduction on the scale-out switches.
    ``stack`` names the software profile (``sol/data/stacks.toml``; default the
    current one): its kernels, overlaps and recompute policy fill what the plan
    leaves ``None``. ``num_gpus`` (the GPUs a user asked for) must be the plan's GPU
    count exactly, else :class:`~lightspeed.errors.PlanMismatchError` names the
    data-parallel size that makes it. ``free_settings`` (of ``tp``, ``pp``, ``cp``,
    ``dp``, ``micro_batch_size``) are those the caller left to the tool: when the
    global batch does not split over the replicas they are searched for the closest
    plan whose batch does (:func:`~lightspeed.sol.train.batch.split_batch`), and the
    estimate's assumptions say what was chosen.
    """
    _check_arguments(model, cluster, plan)
    if num_gpus is not None:
        validate_plan_gpus(plan, num_gpus)
    requested = plan  # the settings a "plan that fits" keeps: overlaps, attention, gradient precision ...
    profile = stack if isinstance(stack, Stack) else load_stack(stack)
    LOG.debug("estimate on the %s stack profile", profile.name)
    plan = plan.resolved(profile)
    check_gpu_count(plan, cluster)
    split = split_batch(plan, model, free=free_settings, stack=profile) if free_settings else None
    plan = split.plan if split is not None else plan
    validate_plan(plan, model, stack=profile)
    context = check_context(model, plan.seq_len)  # a note past the context (validate_plan refused a table's)
    hardware = hardware_for(cluster, plan.precision, efficiency, sharp, profile)
    arrays = evaluate_grid(grid_from_plans([plan]), model, hardware, plan.seq_len)
    estimate = estimate_from_arrays(
        arrays=arrays,
        index=0,
        model=model,
        hardware=hardware,
        plan=plan,
        flop_convention=flop_convention,
        num_tokens=num_tokens,
    )
    if split is not None and split.note:
        estimate = replace(estimate, assumptions=(split.note, *estimate.assumptions))
    if context:
        estimate = replace(estimate, assumptions=(*context, *estimate.assumptions))
    if check_fit and not estimate.fits:
        raise_not_fitting(
            estimate, model, cluster, hardware, template=requested, efficiency=efficiency, sharp=sharp
        )
    return estimate


def raise_not_fitting(
    estimate: TrainingEstimate,
    model: TransformerSpec,
    cluster: Cluster,
    hardware: Hardware,
    *,
    template: TrainingPlan | None = None,
    efficiency: EfficiencyModel | None = None,
    sharp: bool = False,
) -> NoReturn:
    """Raise :class:`PlanDoesNotFitError` naming the biggest memory parts and the best fitting plan:
    the fastest that fits on the plan's GPUs under its schedule (interleaving searched through vpp),
    with the settings of ``template`` not searched (overlaps, attention, gradient precision, expert
    imbalance), ``efficiency`` and ``sharp`` as the estimate had them, so that it runs as written."""
    parts = sorted(estimate.memory_bytes.items(), key=lambda item: item[1], reverse=True)
    largest = ", ".join(f"{name} {format_memory(value)}" for name, value in parts[:3])
    plan = estimate.plan
    message = (
        f"plan does not fit: {format_memory(estimate.memory_per_gpu_bytes)} per GPU needed, "
        f"{format_memory(hardware.usable_memory_bytes)} usable on {hardware.accelerator.name} ({largest})"
    )
    schedule = "1f1b" if plan.effective_schedule == "interleaved" else plan.schedule
    result = search_training(
        model=model,
        cluster=cluster,
        global_batch_size=plan.global_batch_size,
        seq_len=plan.seq_len,
        precision=plan.precision,
        top=1,
        template=template or plan,
        efficiency=efficiency,
        schedules=(schedule,),
        max_tp=max(cluster.system.scale_up_domain_size, plan.tp),
        sharp=sharp,
        num_gpus=plan.num_gpus,
        stack=hardware.stack,
        require_fit=False,  # the leanest plan is what the message offers, fitting or not
    )
    best = result.plans[0] if result.plans else None
    if best is None or not best.fits:
        named = "" if schedule == "1f1b" else f" with the {schedule} schedule"
        raise PlanDoesNotFitError(
            message,
            nearest_plan=None,
            no_fit_hint=f"no plan on {plan.num_gpus} GPUs{named} fits: use more GPUs"
            + (", another schedule" if named else "")
            + " or a smaller model",
        )
    raise PlanDoesNotFitError(
        message,
        nearest_plan=suggested_settings(best.plan, model),
        nearest_memory_bytes=best.memory_per_gpu_bytes,
    )


def suggested_settings(plan: TrainingPlan, model: TransformerSpec) -> dict[str, int | str | bool]:
    """The settings that reproduce ``plan`` from the command line: every parallel dimension (EP for
    MoE models), the pipeline schedule, ZeRO stage, micro-batch and recomputation, and uneven stages
    when it needs them.

    >>> from lightspeed.workload import load_models
    >>> suggested_settings(TrainingPlan(tp=8, ep=8, dp=8), load_models().get("mixtral-8x7b"))["ep"]
    8
    """
    names = [name for name in SUGGESTED_SETTINGS if name != "ep" or model.moe is not None]
    settings: dict[str, int | str | bool] = {name: getattr(plan, name) for name in names}
    settings["schedule"] = plan.effective_schedule  # 1F1B with vpp > 1 is interleaved
    if plan.uneven_pipeline or model.num_layers % (plan.pp * plan.vpp):
        settings["uneven_pipeline"] = True
    return settings

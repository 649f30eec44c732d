"""MoE expert load: record it, read it, synthesize it, describe its skew, balance it, and cost it.

One home for the concept: :mod:`~lightspeed.moe.load` (load files from lightspeed and other
frameworks), :mod:`~lightspeed.moe.recorder` (record the router's choices from a PyTorch
model), :mod:`~lightspeed.moe.synthetic`, :mod:`~lightspeed.moe.skew` (how skewed, which
experts are hot, what redundant experts buy), :mod:`~lightspeed.moe.placement` (redundant
experts over nodes and GPUs, EPLB's problem), :mod:`~lightspeed.moe.holdout` (a placement
scored on a later window) and :mod:`~lightspeed.moe.effect` (a measured load
in the engines' predictions). The physics the engines need (a busiest-GPU factor per layout,
dispatch copies per node) stays in :mod:`lightspeed.sol.core.experts`. Rendering is in
:mod:`lightspeed.report.moe`, the command group in :mod:`lightspeed.cli.moe`.

>>> from lightspeed.moe import balance_experts, synthetic_load
>>> load = synthetic_load(num_layers=4, num_experts=32, distribution="zipf", skew=1.0, num_tokens=8192)
>>> placement = balance_experts(load=load.array(), num_replicas=40, num_gpus=8)
>>> placement.overall_gpu_load_max_over_mean < 1.1
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.moe.effect import (
        ExpertLoadBalance,
        ExpertLoadEffect,
        expert_load_balance,
        inference_load_effect,
        inference_plan_with_load,
        plan_with_load,
        training_load_effect,
    )
    from lightspeed.moe.holdout import HoldoutScore, holdout_score
    from lightspeed.moe.load import (
        ExpertLoad,
        combine_loads,
        expert_load_document,
        expert_load_from_array,
        read_expert_load,
        read_expert_loads,
        split_steps,
        write_expert_load,
    )
    from lightspeed.moe.placement import ExpertPlacement, balance_experts
    from lightspeed.moe.recorder import ExpertLoadRecorder, find_routers
    from lightspeed.moe.skew import (
        HotExpert,
        LayerSkew,
        LoadStats,
        ReplicaEffect,
        default_replicas,
        load_stats,
    )
    from lightspeed.moe.synthetic import DISTRIBUTIONS, synthetic_load

__all__ = [
    "DISTRIBUTIONS",
    "ExpertLoad",
    "ExpertLoadBalance",
    "ExpertLoadEffect",
    "ExpertLoadRecorder",
    "ExpertPlacement",
    "HoldoutScore",
    "HotExpert",
    "LayerSkew",
    "LoadStats",
    "ReplicaEffect",
    "balance_experts",
    "combine_loads",
    "default_replicas",
    "expert_load_balance",
    "expert_load_document",
    "expert_load_from_array",
    "find_routers",
    "holdout_score",
    "inference_load_effect",
    "inference_plan_with_load",
    "load_stats",
    "plan_with_load",
    "read_expert_load",
    "read_expert_loads",
    "split_steps",
    "synthetic_load",
    "training_load_effect",
    "write_expert_load",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)

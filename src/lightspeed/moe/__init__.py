"""MoE expert load: record it from a PyTorch model, read it from other frameworks, synthesize it,
describe its skew, and balance it (the placement itself lives in :mod:`lightspeed.sol.experts`,
re-exported here).

>>> from lightspeed.moe import balance_experts, synthetic_load
>>> load = synthetic_load(num_layers=4, num_experts=32, distribution="zipf", skew=1.0, num_tokens=8192)
>>> placement = balance_experts(load=load.array(), num_replicas=40, num_gpus=8)
>>> placement.overall_gpu_load_max_over_mean < 1.1
True
"""

from __future__ import annotations

from lightspeed.moe.load import (
    ExpertLoad,
    combine_loads,
    expert_load_document,
    expert_load_from_array,
    read_expert_load,
    write_expert_load,
)
from lightspeed.moe.recorder import ExpertLoadRecorder, find_routers
from lightspeed.moe.stats import HotExpert, LayerSkew, LoadStats, ReplicaEffect, default_replicas, load_stats
from lightspeed.moe.synthetic import DISTRIBUTIONS, synthetic_load
from lightspeed.sol.experts import ExpertPlacement, balance_experts

__all__ = [
    "DISTRIBUTIONS",
    "ExpertLoad",
    "ExpertLoadRecorder",
    "ExpertPlacement",
    "HotExpert",
    "LayerSkew",
    "LoadStats",
    "ReplicaEffect",
    "balance_experts",
    "combine_loads",
    "default_replicas",
    "expert_load_document",
    "expert_load_from_array",
    "find_routers",
    "load_stats",
    "read_expert_load",
    "synthetic_load",
    "write_expert_load",
]

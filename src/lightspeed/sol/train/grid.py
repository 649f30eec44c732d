"""Plans as columns: the vectorized form the engine evaluates.

The engine never loops over plan objects. A :class:`PlanGrid` holds one numpy
array per plan field; a single plan is a grid of length one, so ``plan
train`` and ``search train`` run exactly the same code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt

from lightspeed.sol.core.stacks import load_stack
from lightspeed.sol.train.plan import (
    ATTENTION_IMPLEMENTATIONS,
    EP_DISPATCHERS,
    NODE_DEDUPE_DISPATCHERS,
    RECOMPUTE,
    SCHEDULES,
    TrainingPlan,
)

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

SCHEDULE_CODES = {name: code for code, name in enumerate(SCHEDULES)}
RECOMPUTE_CODES = {name: code for code, name in enumerate(RECOMPUTE)}
ATTENTION_CODES = {name: code for code, name in enumerate(ATTENTION_IMPLEMENTATIONS)}
DISPATCHER_CODES = {name: code for code, name in enumerate(EP_DISPATCHERS)}


def dispatcher_code(plan: TrainingPlan) -> float:
    """The code of a resolved plan's MoE dispatcher (its stack decided it when the plan did not)."""
    assert plan.ep_dispatcher is not None, "resolve the plan against its stack first"
    return float(DISPATCHER_CODES[plan.ep_dispatcher])


@dataclass(frozen=True)
class PlanGrid:
    """Plan fields as aligned arrays (floats for arithmetic, bools for switches).

    ``schedule``, ``recompute`` and ``attention`` hold codes into ``SCHEDULES``,
    ``RECOMPUTE`` and ``ATTENTION_IMPLEMENTATIONS``; ``schedule`` is the effective
    schedule (1F1B with vpp > 1 is interleaved). Plans are resolved against their
    stack first (:meth:`TrainingPlan.resolved`).
    ``physical_experts`` is 0 where a plan has no redundant experts. ``bf16_start`` and
    ``bf16_end`` count the layers at the model's ends an FP8 or FP4 plan keeps in BF16;
    ``dispatcher`` holds codes into ``EP_DISPATCHERS``.
    """

    tp: FloatArray
    pp: FloatArray
    dp: FloatArray
    ep: FloatArray
    cp: FloatArray
    vpp: FloatArray
    zero_stage: FloatArray
    micro_batch_size: FloatArray
    global_batch_size: FloatArray
    schedule: FloatArray
    recompute: FloatArray
    sequence_parallel: BoolArray
    attention: FloatArray
    dropout: BoolArray
    dp_overlap: BoolArray
    tp_overlap: BoolArray
    ep_overlap: BoolArray
    grad_bytes: FloatArray
    expert_imbalance: FloatArray
    uneven_pipeline: BoolArray
    physical_experts: FloatArray
    etp: FloatArray
    bf16_start: FloatArray
    bf16_end: FloatArray
    dispatcher: FloatArray

    def __len__(self) -> int:
        return int(self.tp.shape[0])

    @property
    def ep_dedupe(self) -> BoolArray:
        """Which plans dispatch a token once per destination node (DeepEP, HybridEP)."""
        return np.isin(self.dispatcher, [DISPATCHER_CODES[name] for name in NODE_DEDUPE_DISPATCHERS])

    @property
    def unfused_attention(self) -> BoolArray:
        """Which plans materialize the score matrix (pre-FlashAttention)."""
        return np.asarray(self.attention == ATTENTION_CODES["unfused"])

    def uses_recompute(self, name: str) -> BoolArray:
        """Which plans recompute with policy ``name``."""
        return np.asarray(self.recompute == RECOMPUTE_CODES[name])

    @property
    def num_microbatches(self) -> FloatArray:
        """Micro-batches per pipeline per step."""
        return np.floor(self.global_batch_size / (self.dp * self.micro_batch_size))

    @property
    def num_gpus(self) -> FloatArray:
        """GPUs each plan occupies."""
        return self.tp * self.cp * self.dp * self.pp

    def bf16_layers_in(self, first: FloatArray | float, count: FloatArray, num_layers: int) -> FloatArray:
        """How many of the layers ``[first, first + count)`` each plan keeps in BF16: the model's
        first ``bf16_start`` and last ``bf16_end`` of its ``num_layers``.

        >>> grid = grid_from_plans([TrainingPlan(precision="nvfp4", bf16_layers_start=1, bf16_layers_end=14)])
        >>> grid.bf16_layers_in(0.0, np.array([22.0]), 88), grid.bf16_layers_in(66.0, np.array([22.0]), 88)
        (array([1.]), array([14.]))
        """
        stop = first + count
        end_begin = num_layers - self.bf16_end
        in_start = np.clip(np.minimum(self.bf16_start, stop) - first, 0.0, count)
        in_end = np.clip(stop - np.maximum(end_begin, first), 0.0, count)
        in_both = np.clip(np.minimum(self.bf16_start, stop) - np.maximum(end_begin, first), 0.0, count)
        return np.asarray(in_start + in_end - in_both, dtype=np.float64)

    def select(self, mask: BoolArray | npt.NDArray[np.int64]) -> PlanGrid:
        """The plans where ``mask`` is true (or at the given indices)."""
        return PlanGrid(**{f.name: getattr(self, f.name)[mask] for f in fields(self)})

    def is_schedule(self, *names: str) -> BoolArray:
        """Which plans use one of the named schedules."""
        return np.isin(self.schedule, [SCHEDULE_CODES[name] for name in names])

    def plan_at(
        self, index: int, *, seq_len: int, precision: str, dropout: bool | None = None
    ) -> TrainingPlan:
        """The :class:`TrainingPlan` of row ``index``."""
        schedule = SCHEDULES[int(self.schedule[index])]
        return TrainingPlan(
            tp=int(self.tp[index]),
            pp=int(self.pp[index]),
            dp=int(self.dp[index]),
            ep=int(self.ep[index]),
            cp=int(self.cp[index]),
            vpp=int(self.vpp[index]),
            zero_stage=int(self.zero_stage[index]),
            schedule=schedule,
            micro_batch_size=int(self.micro_batch_size[index]),
            global_batch_size=int(self.global_batch_size[index]),
            seq_len=seq_len,
            precision=precision,
            recompute=RECOMPUTE[int(self.recompute[index])],
            attention_impl=ATTENTION_IMPLEMENTATIONS[int(self.attention[index])],
            dropout=bool(self.dropout[index]) if dropout is None else dropout,
            sequence_parallel=bool(self.sequence_parallel[index]),
            dp_overlap=bool(self.dp_overlap[index]),
            tp_overlap=bool(self.tp_overlap[index]),
            ep_overlap=bool(self.ep_overlap[index]),
            grad_reduce_precision="fp32" if self.grad_bytes[index] == 4.0 else "bf16",
            expert_imbalance=float(self.expert_imbalance[index]),
            uneven_pipeline=bool(self.uneven_pipeline[index]),
            num_physical_experts=int(self.physical_experts[index]) or None,
            etp=int(self.etp[index]),
            bf16_layers_start=int(self.bf16_start[index]),
            bf16_layers_end=int(self.bf16_end[index]),
            ep_dispatcher=EP_DISPATCHERS[int(self.dispatcher[index])],
        )


def grid_from_plans(plans: Sequence[TrainingPlan]) -> PlanGrid:
    """Columns of a list of plans (all must share seq_len and precision); fields left to the
    stack are filled from the default stack (the engines resolve against their own first)."""
    assert plans, "at least one plan"
    assert len({(p.seq_len, p.precision) for p in plans}) == 1, "one seq_len and precision per grid"
    if not all(p.is_resolved for p in plans):
        stack = load_stack()
        plans = [p if p.is_resolved else p.resolved(stack) for p in plans]

    def column(values: list[Any], dtype: type = np.float64) -> Any:
        return np.asarray(values, dtype=dtype)

    return PlanGrid(
        tp=column([p.tp for p in plans]),
        pp=column([p.pp for p in plans]),
        dp=column([p.dp for p in plans]),
        ep=column([p.ep for p in plans]),
        cp=column([p.cp for p in plans]),
        vpp=column([p.vpp for p in plans]),
        zero_stage=column([p.zero_stage for p in plans]),
        micro_batch_size=column([p.micro_batch_size for p in plans]),
        global_batch_size=column([p.global_batch_size for p in plans]),
        schedule=column([SCHEDULE_CODES[p.effective_schedule] for p in plans]),
        recompute=column([RECOMPUTE_CODES[p.recompute] for p in plans]),
        sequence_parallel=column([p.uses_sequence_parallel for p in plans], bool),
        attention=column([ATTENTION_CODES[p.attention_impl or "flash"] for p in plans]),
        dropout=column([p.dropout for p in plans], bool),
        dp_overlap=column([p.dp_overlap for p in plans], bool),
        tp_overlap=column([p.tp_overlap for p in plans], bool),
        ep_overlap=column([p.overlaps_ep for p in plans], bool),
        grad_bytes=column([4.0 if p.grad_reduce_precision == "fp32" else 2.0 for p in plans]),
        expert_imbalance=column([p.expert_imbalance for p in plans]),
        uneven_pipeline=column([p.uneven_pipeline for p in plans], bool),
        physical_experts=column([p.num_physical_experts or 0 for p in plans]),
        etp=column([p.etp for p in plans]),
        bf16_start=column([p.bf16_layers_start for p in plans]),
        bf16_end=column([p.bf16_layers_end for p in plans]),
        dispatcher=column([dispatcher_code(p) for p in plans]),
    )

"""The space a serving search evaluates: every replica shape (TP, attention data parallelism,
EP, PP) whose GPUs tile the cluster, with prefill and decode pool splits, held as columns
(:class:`ShapeColumns`), and each shape's batches from a ladder up to its KV-cache limit.

:mod:`lightspeed.sol.infer.search` evaluates these points and picks the best and the frontier.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from lightspeed.sol.core.experts import ExpertBalance, expert_nodes
from lightspeed.sol.core.factors import divisors
from lightspeed.workload import TransformerSpec

BATCH_LADDER = (
    1,
    2,
    4,
    8,
    12,
    16,
    24,
    32,
    48,
    64,
    96,
    128,
    192,
    256,
    384,
    512,
    768,
    1024,
    1536,
    2048,
    3072,
    4096,
)
MAX_PIPELINE = 16

Stage = tuple[int, int, int, int]  # one replica's (tp, dp_attention, ep, pp)


@dataclass(frozen=True)
class ShapeColumns:
    """Replica shapes (one row per shape) as columns; a prefill replica's degrees where the pools
    are split (the decode replica's own where they share a shape, and when aggregated)."""

    tp: np.ndarray
    dp_attention: np.ndarray
    ep: np.ndarray
    pp: np.ndarray
    prefill: np.ndarray  # prefill replicas (0: aggregated)
    decode: np.ndarray  # decode replicas, or all replicas when aggregated
    prefill_tp: np.ndarray
    prefill_dp_attention: np.ndarray
    prefill_ep: np.ndarray
    prefill_pp: np.ndarray
    expert_imbalance: np.ndarray  # busiest GPU's routed-expert load over the mean
    physical_experts: np.ndarray  # routed experts with replicas (0: the model's own)

    def select(self, index: np.ndarray) -> ShapeColumns:
        return ShapeColumns(*(getattr(self, name)[index] for name in self.__dataclass_fields__))

    @property
    def prefill_stage(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """A prefill replica's (tp, pp, ep, dp_attention), as :class:`PoolSplit` takes them."""
        return self.prefill_tp, self.prefill_pp, self.prefill_ep, self.prefill_dp_attention

    @property
    def own_prefill_shape(self) -> np.ndarray:
        """Whether a point's prefill replicas differ from its decode replicas."""
        differs = (
            (self.prefill_tp != self.tp)
            | (self.prefill_dp_attention != self.dp_attention)
            | (self.prefill_ep != self.ep)
            | (self.prefill_pp != self.pp)
        )
        return np.asarray((self.prefill > 0) & differs)


def _tp_values(model: TransformerSpec, num_gpus: int, max_tp: int) -> list[int]:
    heads, kv_heads = model.attention.num_heads, model.attention.num_kv_heads
    values = []
    for tp in divisors(heads):
        if tp > max_tp or num_gpus % tp:
            continue
        if model.attention.kind != "mla" and kv_heads % tp and tp % kv_heads:
            continue
        values.append(tp)
    return values


def _expert_values(model: TransformerSpec, stage_gpus: int) -> list[int]:
    if model.moe is None:
        return [1]
    moe = model.moe
    return [
        ep
        for ep in divisors(stage_gpus)
        if moe.num_routed_experts % ep == 0 and moe.expert_ffn_hidden_size % (stage_gpus // ep) == 0
    ]


def replica_stages(
    model: TransformerSpec, num_gpus: int, max_tp: int, attention_dp: bool = True
) -> list[Stage]:
    """Every (tp, dp_attention, ep, pp) of one replica whose GPUs divide ``num_gpus``."""
    stages: list[Stage] = []
    attention_groups = divisors(num_gpus) if model.moe is not None and attention_dp else [1]
    for tp in _tp_values(model, num_gpus, max_tp):
        for dp in attention_groups:
            stage = tp * dp
            if num_gpus % stage:
                continue
            for pp in divisors(num_gpus // stage):
                if pp > min(model.num_layers, MAX_PIPELINE):
                    continue
                stages.extend((tp, dp, ep, pp) for ep in _expert_values(model, stage))
    return stages


def _stage_gpus(stage: Stage) -> int:
    tp, dp, _, pp = stage
    return tp * dp * pp


def replica_shapes(
    model: TransformerSpec,
    num_gpus: int,
    max_tp: int,
    split_pools: bool,
    *,
    attention_dp: bool = True,
    prefill_stages: Sequence[Stage] = (),
) -> list[tuple[int, ...]]:
    """Every (tp, dp_attention, ep, pp, prefill replicas, decode replicas, prefill tp,
    dp_attention, ep, pp) that tiles ``num_gpus``: one replica shape for every replica, and with
    ``split_pools`` prefill and decode pools, the prefill replicas of the decode replicas' shape
    and of the first of ``prefill_stages`` (in the caller's order of preference: the prefill
    front's, most prompts per GPU first) that tiles the GPUs the decode pool leaves. The pool's
    size is fixed by what decode leaves, so its rate grows with its prompts per GPU: the first that
    tiles is the best there (the space grows at most twofold, not by the front's length)."""
    shapes: list[tuple[int, ...]] = []
    for stage in replica_stages(model, num_gpus, max_tp, attention_dp):
        gpus = _stage_gpus(stage)
        replicas = num_gpus // gpus
        shapes.append((*stage, 0, replicas, *stage))
        if not split_pools:
            continue
        for decode in range(replicas - 1, 0, -1):
            left = num_gpus - decode * gpus
            shapes.append((*stage, left // gpus, decode, *stage))
            other = next(
                (other for other in prefill_stages if left % _stage_gpus(other) == 0 and other != stage), None
            )
            if other is not None:
                shapes.append((*stage, left // _stage_gpus(other), decode, *other))
    return shapes


def shape_columns(shapes: list[tuple[int, ...]]) -> ShapeColumns:
    """The rows of :func:`replica_shapes` as columns, with no expert imbalance or placement yet."""
    array = np.asarray(shapes, dtype=np.float64).reshape(-1, 10)
    tp, dp, ep, pp, prefill, decode, prefill_tp, prefill_dp, prefill_ep, prefill_pp = array.T
    zeros = np.zeros(len(array))
    # expert imbalance 0: the routing skew at each shape's EP size
    return ShapeColumns(
        tp, dp, ep, pp, prefill, decode, prefill_tp, prefill_dp, prefill_ep, prefill_pp, zeros, zeros
    )


def with_expert_balance(
    shapes: ShapeColumns, balance: ExpertBalance | None, domain_size: int
) -> ShapeColumns:
    """Shapes whose EP size splits the balance's replicas, each with its expert imbalance."""
    if balance is None:
        return shapes
    physical = balance.num_physical_experts
    if physical:
        shapes = shapes.select(np.flatnonzero(np.mod(physical, shapes.ep) == 0))
    stage = shapes.tp * shapes.dp_attention
    nodes = expert_nodes(shapes.ep, stage / shapes.ep, domain_size)  # an expert's TP slices sit together
    imbalance = balance.imbalance(ep=shapes.ep, num_nodes=nodes, pp=shapes.pp, vpp=np.ones_like(shapes.pp))
    return replace(
        shapes,
        expert_imbalance=np.asarray(imbalance, dtype=np.float64),
        physical_experts=np.where(shapes.ep > 1, float(physical or 0), 0.0),  # EP 1: nothing to place
    )


def batch_points(shapes: ShapeColumns, max_sequences: np.ndarray) -> tuple[ShapeColumns, np.ndarray]:
    """Each shape with every batch of the ladder it holds, plus its KV-limited maximum."""
    ladder = np.asarray(BATCH_LADDER, dtype=np.float64)
    rows, batches = [], []
    for index, limit in enumerate(max_sequences):
        if limit < 1:
            continue
        chosen = np.unique(np.append(ladder[ladder < limit], min(limit, ladder[-1])))
        rows.extend([index] * chosen.size)
        batches.append(chosen)
    if not rows:
        return shapes.select(np.asarray([], dtype=np.int64)), np.asarray([])
    return shapes.select(np.asarray(rows)), np.concatenate(batches)


__all__ = [
    "BATCH_LADDER",
    "MAX_PIPELINE",
    "ShapeColumns",
    "Stage",
    "batch_points",
    "replica_shapes",
    "replica_stages",
    "shape_columns",
    "with_expert_balance",
]

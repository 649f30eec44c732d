"""Search every training plan of a model on a cluster, vectorized over the plan space.

The plan space is the cartesian product of TP, CP, PP, EP, VPP, micro-batch,
recomputation, ZeRO stage and schedule; DP follows from the GPU count. Invalid
combinations are masked with array arithmetic, the rest evaluated by the same
:func:`~lightspeed.sol.train.step.evaluate_grid` that ``plan train`` uses, and
ranked by throughput among the plans that fit in memory.

The training engine's twin of :mod:`lightspeed.sol.infer.search` (the same concept for serving).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

import numpy as np

from lightspeed.catalog import Cluster
from lightspeed.errors import InvalidPlanError, PlanDoesNotFitError
from lightspeed.limits import MAX_ROWS, MAX_SEQ_LEN, MAX_SEQUENCES, check_kind, check_whole
from lightspeed.records import Record
from lightspeed.sol.core import collectives
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.experts import ExpertBalance, expert_nodes
from lightspeed.sol.core.factors import powers_of_two
from lightspeed.sol.core.hardware import Hardware, hardware_for
from lightspeed.sol.core.stacks import Stack, load_stack
from lightspeed.sol.core.uncertainty import model_interval
from lightspeed.sol.train.grid import (
    ATTENTION_CODES,
    RECOMPUTE_CODES,
    SCHEDULE_CODES,
    PlanGrid,
    dispatcher_code,
    grid_from_plans,
)
from lightspeed.sol.train.memory import refused_by_stack
from lightspeed.sol.train.plan import SCHEDULES, TrainingPlan, check_cluster_gpus, validate_plan
from lightspeed.sol.train.ranking import (
    PlanComparison,
    compare,
    compare_plan_reason,
    margin_over_runner_up,
    tie_indices,
    tolerance_of,
)
from lightspeed.sol.train.recipes import bf16_layers_note
from lightspeed.sol.train.result import (
    DEFAULT_FLOP_CONVENTION,
    TrainingEstimate,
    dispatcher_note,
    estimate_from_arrays,
    part_label,
)
from lightspeed.sol.train.step import BREAKDOWN_PARTS, StepArrays, evaluate_grid
from lightspeed.units import format_memory
from lightspeed.workload import TransformerSpec, check_context

CHUNK_PLANS = 262_144
DEFAULT_MICRO_BATCHES = (1, 2, 4, 8, 16)
DEFAULT_VPPS = (1, 2, 3, 4, 6, 8)
DEFAULT_CPS = (1, 2, 4, 8, 16)
DEFAULT_ZERO_STAGES = (0, 1, 2, 3)


@dataclass(frozen=True)
class SearchSpace(Record):
    """Values each plan field may take (DP is derived from the GPU count)."""

    tp: tuple[int, ...]
    cp: tuple[int, ...]
    pp: tuple[int, ...]
    ep: tuple[int, ...]
    vpp: tuple[int, ...]
    micro_batch: tuple[int, ...]
    recompute: tuple[str, ...]
    zero_stage: tuple[int, ...]
    schedules: tuple[str, ...]
    expert_tensor_parallel: tuple[bool, ...] = (False,)  # True: experts split over the TP group

    @property
    def size(self) -> int:
        """Combinations before validity filtering."""
        sizes = (
            self.tp,
            self.cp,
            self.pp,
            self.ep,
            self.vpp,
            self.micro_batch,
            self.recompute,
            self.zero_stage,
            self.schedules,
            self.expert_tensor_parallel,
        )
        return int(np.prod([len(values) for values in sizes]))


@dataclass(frozen=True)
class SearchResult(Record):
    """Ranked plans (best first), counts, timing, and why the best wins.

    ``margin_over_runner_up`` is the second-fastest fitting plan's step over
    the best's, minus one; ``tolerance`` the relative difference the model
    cannot resolve (half its 80% error band); ``ties`` the fitting plans within
    it, simplest first (the one to start from); ``compared`` the plan the
    caller named, ranked against the rest (``compared_refused`` instead says why that plan cannot
    run, its fix in ``--compare-plan`` syntax); ``notes`` what the search decided that
    the caller did not ask for (a calibration from another device applied by force), a sequence
    above the model's context, and how many plans the stack refuses, per reason.
    """

    model: str
    system: str
    num_gpus: int
    num_plans_evaluated: int
    num_plans_fitting: int
    elapsed_s: float
    plans: tuple[TrainingEstimate, ...]
    why_best: tuple[str, ...]
    margin_over_runner_up: float | None = None
    tolerance: float = 0.0
    ties: tuple[TrainingEstimate, ...] = ()
    compared: PlanComparison | None = None
    notes: tuple[str, ...] = ()
    compared_refused: str | None = None

    @property
    def plans_per_s(self) -> float:
        """Search throughput."""
        return self.num_plans_evaluated / max(self.elapsed_s, 1e-9)


def default_schedules(stack: Stack) -> tuple[str, ...]:
    """The schedules a search tries unless told: 1F1B (interleaved through vpp), and the stack's
    own where it has one.

    >>> default_schedules(load_stack("deepseek-2024"))
    ('1f1b', 'dualpipe')
    """
    own = stack.own_pipeline_schedule  # sol/data/stacks.toml
    return ("1f1b",) if own is None or not stack.runs_schedule(own) else ("1f1b", own)


def _schedules_note(schedules: Sequence[str]) -> str:
    """Which pipeline schedules the search tried (interleaving through vpp under 1F1B)."""
    names = ", ".join(schedules)
    return f"schedules searched: {names} (interleaved through vpp); others with --schedules"


def default_space(
    model: TransformerSpec,
    num_gpus: int,
    seq_len: int,
    schedules: tuple[str, ...] = ("1f1b",),
    max_tp: int | None = None,
    *,
    stack: Stack | None = None,
) -> SearchSpace:
    """Every TP/CP/PP/EP/VPP/micro-batch/recompute/ZeRO value worth trying (CP only on stacks that have it).

    ``max_tp`` caps tensor parallelism (the CLI passes the scale-up domain size:
    TP across the scale-out network is a known anti-pattern unless asked for).
    Recomputation tries the policies the stack has (its ``selective`` is
    Megatron's or torchtitan's per-op one).
    """
    profile = stack or load_stack()
    recompute = ("none", profile.selective_recompute, "partial", "full")
    heads = model.attention.num_heads
    tp_limit = min(64, num_gpus, max_tp or num_gpus)
    # a recurrent mixer's heads split in whole groups (Mamba-2) or query/key heads (Gated DeltaNet)
    units = model.recurrent.split_unit[0] if model.recurrent is not None else heads
    tp = tuple(t for t in powers_of_two(tp_limit) if heads % t == 0 and units % t == 0)
    cp = tuple(
        c
        for c in DEFAULT_CPS
        if c <= num_gpus and (c == 1 or (seq_len % (2 * c) == 0 and profile.context_parallel))
    )
    max_pp = min(model.num_layers, 128, num_gpus) if profile.pipeline_parallel else 1
    pp = tuple(p for p in range(1, max_pp + 1) if num_gpus % p == 0)
    ep: tuple[int, ...] = (1,)
    if model.moe is not None:
        experts = model.moe.num_routed_experts
        ep = tuple(e for e in range(1, min(experts, num_gpus) + 1) if experts % e == 0 and num_gpus % e == 0)
    return SearchSpace(
        expert_tensor_parallel=(False, True) if model.moe is not None else (False,),
        tp=tp,
        cp=cp,
        pp=pp,
        ep=ep,
        vpp=DEFAULT_VPPS,
        micro_batch=DEFAULT_MICRO_BATCHES,
        recompute=recompute,
        zero_stage=DEFAULT_ZERO_STAGES,
        schedules=schedules,
    )


def _product(space: SearchSpace) -> dict[str, np.ndarray]:
    axes = [
        np.asarray(space.tp, float),
        np.asarray(space.cp, float),
        np.asarray(space.pp, float),
        np.asarray(space.ep, float),
        np.asarray(space.vpp, float),
        np.asarray(space.micro_batch, float),
        np.asarray([RECOMPUTE_CODES[r] for r in space.recompute], float),
        np.asarray(space.zero_stage, float),
        np.asarray([SCHEDULE_CODES[s] for s in space.schedules], float),
        np.asarray(space.expert_tensor_parallel, float),
    ]
    mesh = np.meshgrid(*axes, indexing="ij")
    names = ("tp", "cp", "pp", "ep", "vpp", "mb", "recompute", "zero", "schedule", "etp_is_tp")
    return {
        name: np.asarray(grid, dtype=np.float64).reshape(-1) for name, grid in zip(names, mesh, strict=True)
    }


def _valid(
    columns: dict[str, np.ndarray],
    model: TransformerSpec,
    num_gpus: int,
    batch: int,
    seq_len: int,
) -> np.ndarray:
    """Which plans of ``columns`` can exist, the stack's refusals aside (:func:`_stack_refusals`)."""
    tp, cp, pp, ep, vpp, mb = (columns[k] for k in ("tp", "cp", "pp", "ep", "vpp", "mb"))
    dp = num_gpus / (tp * cp * pp)
    ok = (dp == np.floor(dp)) & (dp >= 1)
    dp = np.maximum(np.floor(dp), 1.0)
    per_replica = batch / dp
    ok &= (per_replica == np.floor(per_replica)) & (np.mod(per_replica, mb) == 0)
    microbatches = np.floor(per_replica / mb)
    heads, kv = model.attention.num_heads, model.attention.num_kv_heads
    ok &= (np.mod(heads, tp) == 0) & (np.mod(model.ffn_hidden_size, tp) == 0)
    if model.attention.kind != "mla":
        ok &= (np.mod(kv, tp) == 0) | (np.mod(tp, kv) == 0)
    layers = model.num_layers
    ok &= pp * vpp <= layers  # uneven splits are allowed: the last stage gives up the shortfall (step.py)
    ok &= (vpp == 1) | ((pp > 1) & (np.mod(microbatches, pp) == 0))
    dual = np.isin(columns["schedule"], [SCHEDULE_CODES["dualpipe"], SCHEDULE_CODES["dualpipev"]])
    ok &= ~dual | ((np.mod(pp, 2) == 0) & (microbatches >= 2 * pp))
    plain = columns["schedule"] == SCHEDULE_CODES["1f1b"]
    ok &= plain | (pp > 1)  # the other schedules order pipeline stages
    ok &= plain | (vpp == 1)  # virtual chunks interleave under 1F1B only (validate_plan's rule)
    ok &= (cp == 1) | (np.mod(seq_len, 2 * cp) == 0)
    etp = _etp(columns)
    if model.moe is None:
        ok &= (ep == 1) & (etp == 1)
    else:
        ok &= (np.mod(model.moe.num_routed_experts, ep) == 0) & (np.mod(tp * cp * dp, ep * etp) == 0)
        # expert tensor parallelism over the TP group: only where TP splits anything and the
        # expert size divides
        ok &= (columns["etp_is_tp"] == 0) | ((tp > 1) & (np.mod(model.moe.expert_ffn_hidden_size, tp) == 0))
    return np.asarray(ok, dtype=bool)


def _etp(columns: dict[str, np.ndarray]) -> np.ndarray:
    """Expert tensor parallel size per plan: the TP size where the experts are split over it."""
    return np.where(columns["etp_is_tp"] > 0, columns["tp"], 1.0)


@dataclass(frozen=True)
class _Experts:
    """How a search sets each plan's expert imbalance: from a balance, or the template's scalar."""

    balance: ExpertBalance | None
    domain_size: int

    def imbalance(self, columns: dict[str, np.ndarray], template: TrainingPlan) -> np.ndarray:
        if self.balance is None:
            return np.full(columns["tp"].shape[0], template.expert_imbalance)
        nodes = expert_nodes(columns["ep"], columns["tp"] * columns["cp"], self.domain_size)
        return np.asarray(
            self.balance.imbalance(ep=columns["ep"], num_nodes=nodes, pp=columns["pp"], vpp=columns["vpp"]),
            dtype=np.float64,
        )

    def physical(self, columns: dict[str, np.ndarray], template: TrainingPlan) -> np.ndarray:
        """Physical experts per plan; a plan without expert parallelism has no replicas to place."""
        if self.balance is None:
            return np.full(columns["tp"].shape[0], float(template.num_physical_experts or 0))
        return np.where(columns["ep"] > 1, float(self.balance.num_physical_experts or 0), 0.0)


def _grid(
    columns: dict[str, np.ndarray],
    template: TrainingPlan,
    num_gpus: int,
    layers: int,
    experts: _Experts | None = None,
) -> PlanGrid:
    size = columns["tp"].shape[0]
    experts = experts or _Experts(None, 1)

    def full(value: float | bool) -> np.ndarray:
        return np.full(size, value)

    tp, cp, pp, vpp = columns["tp"], columns["cp"], columns["pp"], columns["vpp"]
    return PlanGrid(
        tp=tp,
        pp=pp,
        dp=np.floor(num_gpus / (tp * cp * pp)),
        ep=columns["ep"],
        cp=cp,
        vpp=vpp,
        zero_stage=columns["zero"],
        micro_batch_size=columns["mb"],
        global_batch_size=full(float(template.global_batch_size)),
        schedule=_effective_schedules(columns),
        recompute=columns["recompute"],
        sequence_parallel=(tp > 1) & bool(template.sequence_parallel),
        attention=full(float(ATTENTION_CODES[template.attention_impl or "flash"])),
        dropout=full(bool(template.dropout)),
        dp_overlap=full(bool(template.dp_overlap)),
        tp_overlap=full(bool(template.tp_overlap)),
        ep_overlap=np.where(
            np.isin(columns["schedule"], [SCHEDULE_CODES["dualpipe"], SCHEDULE_CODES["dualpipev"]]),
            True,
            bool(template.ep_overlap),
        ),
        grad_bytes=full(4.0 if template.grad_reduce_precision == "fp32" else 2.0),
        expert_imbalance=experts.imbalance(columns, template),
        uneven_pipeline=np.mod(layers, pp * vpp) != 0,
        physical_experts=experts.physical(columns, template),
        etp=_etp(columns),
        bf16_start=full(float(template.bf16_layers_start)),
        bf16_end=full(float(template.bf16_layers_end)),
        dispatcher=full(dispatcher_code(template)),
    )


def _search_notes(hardware: Hardware, base: TrainingPlan, model: TransformerSpec) -> tuple[str, ...]:
    """What the search decided that the caller did not ask for: a calibration from another device,
    the layers a recipe keeps in BF16, a dispatch that sends a token once per node."""
    notes = (
        hardware.calibration_note,
        bf16_layers_note(base, model),
        dispatcher_note(base, model),
        _straddling_sizes_note(hardware),
    )
    return tuple(note for note in notes if note)


def _straddling_sizes_note(hardware: Hardware) -> str:
    """On scale-up domains whose size is no power of two (72-GPU racks), the power-of-two TP and EP
    sizes searched above it do not tile a domain: say that they are priced as the copies that
    straddle two domains (:func:`collectives.straddle_note`)."""
    fabric = hardware.fabric
    domain = fabric.scale_up.domain_size
    if fabric.scale_out is None or domain & (domain - 1) == 0 or collectives.fabric_ranks(fabric) <= domain:
        return ""
    return (
        f"TP and EP sizes that do not tile the {domain}-GPU scale-up domain (e.g. tp=16) are searched and "
        "priced at the cost of their copies that straddle two domains"
    )


def _describe(plan: TrainingPlan) -> str:
    parts = [f"tp={plan.tp}", f"pp={plan.pp}", f"dp={plan.dp}"]
    parts += [
        f"{name}={value}"
        for name, value in (("ep", plan.ep), ("etp", plan.etp), ("cp", plan.cp), ("vpp", plan.vpp))
        if value > 1
    ]
    parts += [f"zero={plan.zero_stage}", f"mb={plan.micro_batch_size}", f"recompute={plan.recompute}"]
    if plan.effective_schedule not in ("1f1b", "interleaved"):
        parts.append(plan.effective_schedule)
    return " ".join(parts)


def why_best(plans: tuple[TrainingEstimate, ...], hardware: Hardware) -> tuple[str, ...]:
    """One sentence per runner-up: by how much the best is faster, and which parts make it: the two
    parts that differ most, then the rest together, so that the parts add up to the difference."""
    if not plans:
        return ()
    best = plans[0]
    sentences = []
    for rank, other in enumerate(plans[1:3], start=2):
        gain = other.step_time_s / best.step_time_s - 1.0
        difference = best.step_time_s - other.step_time_s
        deltas = sorted(
            ((name, best.breakdown_s[name] - other.breakdown_s[name]) for name in BREAKDOWN_PARTS),
            key=lambda item: abs(item[1]),
            reverse=True,
        )
        named = [(name, delta) for name, delta in deltas[:2] if abs(delta) > 0]
        reasons = [f"{part_label(name, best.plan, hardware)} {delta:+.3g} s" for name, delta in named]
        rest = difference - sum(delta for _, delta in named)
        if named and abs(rest) > 1e-9 * max(best.step_time_s, 1e-30):
            reasons.append(f"the other parts {rest:+.3g} s")
        sentences.append(
            f"beats #{rank} ({_describe(other.plan)}) by {gain:.1%} per step ({difference:+.3g} s): "
            + (", ".join(reasons) or "identical")
        )
    return tuple(sentences)


def _evaluate_chunks(
    columns: dict[str, np.ndarray],
    template: TrainingPlan,
    model: TransformerSpec,
    hardware: Hardware,
    *,
    num_gpus: int,
    experts: _Experts,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(step time, memory per GPU, share of layers fully recomputed) of every plan."""
    steps, memories, fractions = [], [], []
    size = columns["tp"].shape[0]
    for start in range(0, size, CHUNK_PLANS):
        chunk = {name: values[start : start + CHUNK_PLANS] for name, values in columns.items()}
        grid = _grid(chunk, template, num_gpus, model.num_layers, experts)
        arrays = evaluate_grid(grid, model, hardware, template.seq_len)
        steps.append(np.asarray(arrays.step_time_s))
        memories.append(np.asarray(arrays.memory.total_bytes))
        fractions.append(np.asarray(arrays.memory.recompute_fraction))
    return np.concatenate(steps), np.concatenate(memories), np.concatenate(fractions)


def _partial_twins(
    recompute: np.ndarray, fraction: np.ndarray, policies: Sequence[str]
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Which plans to keep (``recompute``: their policy codes, ``fraction``: the share of layers each
    recomputes whole), and a note on those merged. 'partial' recomputation that recomputes no layer
    is the same plan as 'none', and one that recomputes every layer the same as 'full' (the same step
    and memory, to the byte): where that policy is searched too, the plan is listed once, as it,
    like ZeRO over a single replica (:func:`_zero_without_replicas`)."""
    partial = recompute == RECOMPUTE_CODES["partial"]
    keep = np.ones(recompute.shape, dtype=bool)
    merged = []
    for twin, share in (("none", 0.0), ("full", 1.0)):
        same = partial & (fraction == share) if twin in policies else np.zeros_like(keep)
        keep &= ~same
        if same.any():
            every = "no layer" if share == 0.0 else "every layer"
            merged.append(f"{int(same.sum()):,} as recompute={twin} (partial recomputes {every} there)")
    if not merged:
        return keep, ()
    return keep, (
        f"recompute=partial merged where it is the same plan as another policy (same step and memory): "
        f"{', '.join(merged)}",
    )


def _check_schedules(schedules: tuple[str, ...]) -> None:
    for schedule in schedules:
        if schedule not in SCHEDULE_CODES or schedule == "interleaved":
            raise InvalidPlanError(
                f"schedule {schedule!r} is not one of 1f1b, gpipe, zb1p, dualpipe, dualpipev "
                "(interleaving is searched through vpp)"
            )


def _valid_columns(
    space: SearchSpace,
    model: TransformerSpec,
    num_gpus: int,
    global_batch_size: int,
    seq_len: int,
    *,
    stack: Stack,
    num_physical_experts: int | None = None,
) -> tuple[dict[str, np.ndarray], tuple[str, ...]]:
    """The plan space as columns, invalid combinations removed, and a note per reason the stack
    refused some (:func:`_stack_refusals`); an error if none is left."""
    columns = _product(space)
    valid = _valid(columns, model, num_gpus, global_batch_size, seq_len)
    if num_physical_experts:
        valid &= np.mod(num_physical_experts, columns["ep"]) == 0  # replicas split evenly over EP
    columns = {name: values[valid] for name, values in columns.items()}
    refused = refused_by_stack(stack, columns["zero"], columns["pp"])  # validate_plan says why
    notes = _stack_refusals(stack, columns["zero"][refused], columns["pp"][refused])
    columns = {name: values[~refused] for name, values in columns.items()}
    schedules = _effective_schedules(columns)
    unscheduled = (columns["pp"] > 1) & ~np.isin(
        schedules, [SCHEDULE_CODES[s] for s in stack.pipeline_schedules]
    )
    notes = (*notes, *_schedule_refusals(stack, schedules[unscheduled]))
    columns = {name: values[~unscheduled] for name, values in columns.items()}
    unsharded = _zero_without_replicas(columns, model, num_gpus)
    columns = {name: values[~unsharded] for name, values in columns.items()}
    if columns["tp"].size == 0:
        raise InvalidPlanError(
            f"no valid plan for {model.name} on {num_gpus} GPUs with global batch {global_batch_size} "
            f"under stack {stack.name}: no combination of the degrees tried splits the batch over its "
            "data-parallel replicas, divides the model's heads and layers and is one the stack runs; "
            "try a global batch that is a multiple of the GPU count, or widen the search space"
        )
    return columns, notes


def _effective_schedules(columns: dict[str, np.ndarray]) -> np.ndarray:
    """Each plan's schedule code, 1F1B over virtual chunks (vpp > 1) counted as interleaved."""
    interleaved = (columns["vpp"] > 1) & (columns["schedule"] == SCHEDULE_CODES["1f1b"])
    return np.where(interleaved, float(SCHEDULE_CODES["interleaved"]), columns["schedule"])


def _schedule_refusals(stack: Stack, schedules: np.ndarray) -> tuple[str, ...]:
    """One note for the plans left out because the stack's framework does not run their pipeline
    schedule (``schedules``: their codes), as :func:`_stack_refusals` notes the ZeRO stages."""
    if schedules.size == 0:
        return ()
    names = sorted({SCHEDULES[int(code)] for code in schedules}, key=SCHEDULES.index)
    plans = "plan" if schedules.size == 1 else "plans"
    return (
        f"{schedules.size:,} {plans} with the {'/'.join(names)} schedule left out: {stack.display_name} "
        f"runs only {', '.join(stack.pipeline_schedules)} pipelines (stack {stack.name})",
    )


def _zero_without_replicas(
    columns: dict[str, np.ndarray], model: TransformerSpec, num_gpus: int
) -> np.ndarray:
    """Plans whose ZeRO stage shards over no replica (dp x cp = 1, and for a MoE model one expert
    replica too), beside the lowest stage searched with the same pipeline: ZeRO at dp=1 is no
    sharding, so those are one plan, listed once (as the lowest stage)."""
    tp, cp, pp, ep = (columns[key] for key in ("tp", "cp", "pp", "ep"))
    dp = np.floor(num_gpus / (tp * cp * pp))
    alone = dp * cp == 1
    if model.moe is not None:
        alone &= tp * cp * dp / (ep * _etp(columns)) == 1
    zero, pipelined = columns["zero"], pp > 1
    lowest = np.zeros_like(zero)
    for flag in (False, True):
        stages = zero[pipelined == flag]
        if stages.size:
            lowest[pipelined == flag] = stages.min()
    return np.asarray(alone & (zero != lowest), dtype=bool)


def _stack_refusals(stack: Stack, zero_stage: np.ndarray, pp: np.ndarray) -> tuple[str, ...]:
    """One note per reason the stack refuses plans the search left out (``zero_stage`` and ``pp``
    of those plans): how many, with which ZeRO stages and pipelines, and why (the reason's first
    clause, as ``plan train`` gives it whole)."""
    groups: dict[str, list[tuple[int, bool, int]]] = {}
    for stage in sorted({int(value) for value in zero_stage}):
        for pipeline in (False, True):
            count = int(np.sum((zero_stage == stage) & ((pp > 1) == pipeline)))
            if count:
                reason = stack.sharding_rule(stage, pipeline=pipeline).refused.split(";")[0].strip()
                groups.setdefault(reason, []).append((stage, pipeline, count))
    notes = []
    for reason, rows in groups.items():
        stages = sorted({stage for stage, _, _ in rows})
        # the pipeline is named only where the stack runs the same stages without (or with) one
        refused = {
            pipeline
            for stage in stages
            for pipeline in (False, True)
            if not stack.sharding_rule(stage, pipeline=pipeline).allowed
        }
        where = "" if len(refused) == 2 else (" and pp>1" if True in refused else " and pp=1")
        count = sum(count for _, _, count in rows)
        plans = "plan" if count == 1 else "plans"
        zero = "/".join(str(stage) for stage in stages)
        notes.append(f"{count:,} {plans} with ZeRO-{zero}{where} left out: {reason} (stack {stack.name})")
    return tuple(notes)


def search_training(
    *,
    model: TransformerSpec,
    cluster: Cluster,
    global_batch_size: int,
    seq_len: int,
    precision: str = "bf16",
    top: int = 5,
    space: SearchSpace | None = None,
    template: TrainingPlan | None = None,
    efficiency: EfficiencyModel | None = None,
    flop_convention: str = DEFAULT_FLOP_CONVENTION,
    num_tokens: float | None = None,
    schedules: tuple[str, ...] | None = None,
    max_tp: int | None = None,
    sharp: bool = False,
    num_gpus: int | None = None,
    require_fit: bool = True,
    expert_balance: ExpertBalance | None = None,
    stack: str | Stack | None = None,
    compare_plan: TrainingPlan | None = None,
) -> SearchResult:
    """Every valid plan of ``model`` on ``cluster``, best ``top`` first (fitting plans first).

    ``template`` carries the settings not searched (overlap flags, attention
    implementation, gradient precision; ``None`` fields take the ``stack``'s
    defaults); ``space`` restricts the values tried. ``compare_plan`` (its batch,
    sequence and precision are the search's) is ranked against the rest.
    ``num_gpus`` (the GPUs a user asked for; default: the whole cluster) may be part of a
    single node only. The defaults are ``lightspeed search train``'s: ``max_tp`` ``None`` keeps
    tensor parallelism within the scale-up domain (NVLink; pass ``cluster.num_accelerators`` to let
    it cross nodes), and with ``require_fit`` (default) a search where no plan fits raises
    :class:`~lightspeed.errors.PlanDoesNotFitError` instead of ranking plans that cannot run
    (``require_fit=False`` ranks them, fitting plans first).
    ``expert_balance`` gives each plan the expert imbalance of its EP layout (and
    its redundant experts) instead of the template's scalar. ``schedules`` ``None`` tries
    :func:`default_schedules` of the stack.
    """
    started = time.perf_counter()
    check_kind("model", model, TransformerSpec, "lightspeed.model('llama-3-70b')")
    check_kind("cluster", cluster, Cluster, "lightspeed.cluster('dgx-h100', num_gpus=8)")
    global_batch_size = check_whole(
        "global_batch_size", global_batch_size, maximum=MAX_SEQUENCES, error=InvalidPlanError
    )
    seq_len = check_whole("seq_len", seq_len, maximum=MAX_SEQ_LEN, error=InvalidPlanError)
    check_whole("top", top, maximum=MAX_ROWS, error=InvalidPlanError)
    context = check_context(model, seq_len)  # a learned position table cannot run past its end
    num_gpus = _searched_gpus(cluster, num_gpus)
    profile = stack if isinstance(stack, Stack) else load_stack(stack)
    schedules = default_schedules(profile) if schedules is None else schedules
    _check_schedules(schedules)
    max_tp = cluster.system.scale_up_domain_size if max_tp is None else max_tp
    space = space or default_space(model, num_gpus, seq_len, schedules, max_tp, stack=profile)
    template = template or TrainingPlan()
    sequence_parallel = (
        profile.sequence_parallel if template.sequence_parallel is None else template.sequence_parallel
    )
    base = (
        template.with_changes(global_batch_size=global_batch_size, seq_len=seq_len, precision=precision)
        .resolved(profile)
        .with_changes(sequence_parallel=sequence_parallel)  # "on whenever TP > 1" for the searched TPs
    )
    hardware = hardware_for(cluster, precision, efficiency, sharp, profile)
    experts = _Experts(expert_balance, hardware.domain_size)
    named_plan = None if compare_plan is None else _named_plan(compare_plan, base, model, num_gpus, profile)
    physical = expert_balance.num_physical_experts if expert_balance else base.num_physical_experts
    columns, refusals = _valid_columns(
        space, model, num_gpus, global_batch_size, seq_len, stack=profile, num_physical_experts=physical
    )
    steps, memory, fractions = _evaluate_chunks(
        columns, base, model, hardware, num_gpus=num_gpus, experts=experts
    )
    distinct, merged = _partial_twins(columns["recompute"], fractions, space.recompute)
    columns = {name: values[distinct] for name, values in columns.items()}
    steps, memory = steps[distinct], memory[distinct]
    fits = memory <= hardware.usable_memory_bytes
    order = np.lexsort((memory, steps, ~fits))[: max(top, 3)]  # fitting first, then fastest, then leanest
    if require_fit and not fits.any():
        _raise_none_fits(model, cluster, num_gpus, float(memory.min()), hardware.usable_memory_bytes)
    band = model_interval("train", model, hardware.accelerator.architecture)
    tolerance = tolerance_of(band)
    tied = tie_indices(columns, steps, fits, tolerance)
    ctx = _Context(base, model, hardware, num_gpus, flop_convention, num_tokens, experts)
    plans = _estimates(ctx, columns, order)
    ties = _estimates(ctx, columns, tied) if tied.size else ()
    compared = None
    shown = [*plans[:top], *ties]
    if named_plan is not None:
        named = _named_estimate(ctx, named_plan)
        compared = compare(named, steps, fits, tolerance)
        shown.append(named)
    return SearchResult(
        model=model.name,
        system=cluster.name,
        num_gpus=num_gpus,
        num_plans_evaluated=int(steps.size),
        num_plans_fitting=int(fits.sum()),
        elapsed_s=time.perf_counter() - started,
        plans=plans[:top],
        why_best=why_best(plans, hardware),
        margin_over_runner_up=margin_over_runner_up(steps, fits),
        tolerance=tolerance,
        ties=ties,
        compared=compared,
        notes=(
            *context,
            _schedules_note(space.schedules),
            *_search_notes(hardware, base, model),
            *refusals,
            *merged,
            *_uneven_note(shown, model),
        ),
    )


def _uneven_note(plans: Sequence[TrainingEstimate], model: TransformerSpec) -> tuple[str, ...]:
    """A note where a plan shown runs stages of unequal layers (``*`` after its schedule):
    ``plan train`` takes such a plan with ``--uneven-pipeline``."""
    uneven = [estimate.plan for estimate in plans if estimate.plan.uneven_pipeline]
    if not uneven:
        return ()
    first = uneven[0]
    where = _uneven_where(first, model.num_layers)
    return (
        f"* uneven stages: pp x vpp does not divide the {model.num_layers} layers of {model.name} "
        f"(pp={first.pp} vpp={first.vpp}: {first.pp * first.vpp} chunks), so {where}; "
        "plan train runs such a plan with --uneven-pipeline (Megatron's account-for-embedding/loss splits)",
    )


def _uneven_where(plan: TrainingPlan, num_layers: int) -> str:
    """Where an uneven split's missing layers go: inside equal stages where pp divides the layers
    (their virtual chunks differ: 80 layers on pp=2 vpp=6 are 40 a stage), else off the end stages."""
    if num_layers % plan.pp == 0:
        return f"each stage holds {num_layers // plan.pp} layers in virtual chunks of unequal size"
    return "the end stages (embedding, head and loss) take fewer layers"


@dataclass(frozen=True)
class _Context:
    base: TrainingPlan
    model: TransformerSpec
    hardware: Hardware
    num_gpus: int
    flop_convention: str
    num_tokens: float | None
    experts: _Experts


def _estimates(
    ctx: _Context, columns: dict[str, np.ndarray], indices: np.ndarray
) -> tuple[TrainingEstimate, ...]:
    """Whole estimates of the plans at ``indices`` of the searched columns."""
    chosen = {name: values[indices] for name, values in columns.items()}
    grid = _grid(chosen, ctx.base, ctx.num_gpus, ctx.model.num_layers, ctx.experts)
    arrays = evaluate_grid(grid, ctx.model, ctx.hardware, ctx.base.seq_len)
    return tuple(
        _estimate(
            arrays,
            index,
            grid=grid,
            base=ctx.base,
            model=ctx.model,
            hardware=ctx.hardware,
            flop_convention=ctx.flop_convention,
            num_tokens=ctx.num_tokens,
        )
        for index in range(len(indices))
    )


def _named_plan(
    plan: TrainingPlan, base: TrainingPlan, model: TransformerSpec, num_gpus: int, stack: Stack
) -> TrainingPlan:
    """A plan the caller names, on the search's batch, sequence, precision and stack (uneven stages
    allowed as in the search, e.g. Llama 3 405B's 126 layers on PP16 x VPP6), checked before the
    search: one that cannot run is bad input, its fix in ``--compare-plan`` syntax."""
    named = plan.with_changes(
        global_batch_size=base.global_batch_size,
        seq_len=base.seq_len,
        precision=base.precision,
        bf16_layers_start=base.bf16_layers_start,
        bf16_layers_end=base.bf16_layers_end,
        ep_dispatcher=plan.ep_dispatcher or base.ep_dispatcher,
        uneven_pipeline=plan.uneven_pipeline or model.num_layers % (plan.pp * plan.vpp) != 0,
    ).resolved(stack)
    try:
        validate_plan(named, model, num_gpus, stack=stack)
    except InvalidPlanError as error:
        raise InvalidPlanError(f"--compare-plan: {compare_plan_reason(error)}") from error
    return named


def _named_estimate(ctx: _Context, named: TrainingPlan) -> TrainingEstimate:
    """The estimate of a plan the caller names, checked by :func:`_named_plan`."""
    arrays = evaluate_grid(grid_from_plans([named]), ctx.model, ctx.hardware, named.seq_len)
    return estimate_from_arrays(
        arrays=arrays,
        index=0,
        model=ctx.model,
        hardware=ctx.hardware,
        plan=named,
        flop_convention=ctx.flop_convention,
        num_tokens=ctx.num_tokens,
    )


def _searched_gpus(cluster: Cluster, num_gpus: int | None) -> int:
    """The GPU count to plan for: the request, which must be the cluster or part of one node
    (:func:`~lightspeed.sol.train.plan.check_cluster_gpus`, the check ``plan train`` makes)."""
    if num_gpus is None:
        return cluster.num_accelerators
    check_cluster_gpus(num_gpus, cluster)
    return num_gpus


def _raise_none_fits(
    model: TransformerSpec, cluster: Cluster, num_gpus: int, leanest_bytes: float, usable_bytes: float
) -> NoReturn:
    raise PlanDoesNotFitError(
        f"no plan of {model.name} on {num_gpus} GPUs of {cluster.name} fits: the leanest needs "
        f"{format_memory(leanest_bytes)} per GPU, {format_memory(usable_bytes)} usable",
        nearest_plan=None,
        no_fit_hint=f"use about {math.ceil(leanest_bytes / usable_bytes)}x the GPUs or a smaller model",
    )


def _estimate(
    arrays: StepArrays,
    index: int,
    *,
    grid: PlanGrid,
    base: TrainingPlan,
    model: TransformerSpec,
    hardware: Hardware,
    flop_convention: str,
    num_tokens: float | None,
) -> TrainingEstimate:
    plan = grid.plan_at(index, seq_len=base.seq_len, precision=base.precision)
    return estimate_from_arrays(
        arrays=arrays,
        index=index,
        model=model,
        hardware=hardware,
        plan=plan,
        flop_convention=flop_convention,
        num_tokens=num_tokens,
    )


__all__ = ["SearchResult", "SearchSpace", "default_schedules", "default_space", "search_training", "why_best"]

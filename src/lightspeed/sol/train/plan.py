"""Parallel training plans: what runs where, and whether it can exist.

A :class:`TrainingPlan` names the degree of each kind of parallelism and the
choices that change cost: ZeRO stage, pipeline schedule, micro-batch,
activation recomputation, overlap of communication with compute. Ranks are
laid out in Megatron-Core's default order ``tp-cp-ep-dp-pp``: tensor parallel
innermost (consecutive ranks, inside a node), pipeline outermost.

>>> plan = TrainingPlan(tp=8, pp=16, dp=64, micro_batch_size=1, global_batch_size=2048, seq_len=8192)
>>> plan.num_gpus, plan.num_microbatches
(8192, 32)

The training engine's twin of :mod:`lightspeed.sol.infer.plan` (the same concept for serving).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from lightspeed.catalog import Cluster
from lightspeed.errors import InvalidPlanError, PlanMismatchError
from lightspeed.limits import MAX_ACCELERATORS, MAX_SEQ_LEN, MAX_SEQUENCES, check_whole
from lightspeed.records import Record
from lightspeed.sol.core.factors import divisors, nearest
from lightspeed.sol.core.stacks import PIPELINE_SCHEDULES, Stack, load_stack
from lightspeed.units import compute_precision
from lightspeed.workload import TransformerSpec, check_context

SCHEDULES: Final = PIPELINE_SCHEDULES
RECOMPUTE: Final = ("none", "selective", "op", "partial", "full")
ATTENTION_IMPLEMENTATIONS: Final = ("flash", "flash2", "unfused")
# Megatron-Core's MoE token dispatchers: `alltoall` sends a copy per (token, expert); the flex
# dispatcher's DeepEP and HybridEP backends send a token once per destination node
EP_DISPATCHERS: Final = ("alltoall", "deepep", "hybridep")
NODE_DEDUPE_DISPATCHERS: Final = ("deepep", "hybridep")
TRAINING_PRECISIONS: Final = ("fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "mxfp8", "nvfp4", "mxfp4")
GRAD_PRECISIONS: Final = ("fp32", "bf16")


@dataclass(frozen=True)
class TrainingPlan(Record):
    """A parallel training configuration (degrees are counts of GPUs).

    ``global_batch_size`` and ``micro_batch_size`` count sequences of
    ``seq_len`` tokens. ``vpp`` is the number of virtual pipeline chunks per
    GPU (interleaved 1F1B). ``zero_stage`` 3 is FSDP full sharding.
    Overlap flags say whether that communication can hide behind compute;
    ``ep_overlap=None`` means "only with DualPipe/DualPipeV", which overlap
    all-to-all with the paired micro-batch's compute by design.
    ``recompute="partial"`` recomputes the fewest whole layers per stage that make
    the plan fit (Megatron's ``--recompute-method block``); ``"selective"`` is
    Megatron's: core attention with unfused attention (the score matrix is not kept,
    Korthikanti et al. 2022), and with fused attention the memory-bound modules (norms,
    activation functions, MLA up-projections: Megatron-Core ``--recompute-modules
    layernorm moe_act mla_up_proj``, DeepSeek-V3 section 3.3); ``"op"`` is torchtitan's
    per-op policy (the same plus every other matmul). ``expert_imbalance`` multiplies
    the busiest GPU's expert work (1.0 = perfectly balanced routing;
    :mod:`lightspeed.moe.effect` derives it from a recorded load).
    ``num_physical_experts`` counts the routed experts with their redundant replicas
    over the EP group (``None``: no replicas); each replica holds weights, gradients and
    optimizer state like the expert it copies. ``attention_impl`` is ``flash`` (the best
    fused kernel of the device), ``flash2`` (FlashAttention-2) or ``unfused`` (pre-FlashAttention
    frameworks: softmax over the full score matrix in memory);
    ``dropout=True`` adds hidden and attention dropout. Fields left ``None`` (attention,
    dropout, overlaps) take the software stack's defaults (:meth:`resolved`).
    ``uneven_pipeline`` allows layers not divisible by the pipeline size (the last
    stages get fewer layers, as Llama 3 405B did). ``etp`` splits each routed expert's
    weights over that many GPUs (Megatron-Core's expert tensor parallelism: the expert-parallel
    group is ``ep x etp`` GPUs, each holding ``1/etp`` of its ``E/ep`` experts and computing it
    for the tokens of its ``etp`` neighbours). ``bf16_layers_start`` and ``bf16_layers_end``
    are the transformer layers at the model's start and end an FP8 or FP4 run keeps in BF16
    (Megatron's ``--num-layers-at-start-in-bf16`` / ``--num-layers-at-end-in-bf16``).
    ``ep_dispatcher`` is the MoE token dispatcher (``EP_DISPATCHERS``; ``None``: the stack's).
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    cp: int = 1
    vpp: int = 1
    zero_stage: int = 1
    schedule: str = "1f1b"
    micro_batch_size: int = 1
    global_batch_size: int = 1
    seq_len: int = 4096
    precision: str = "bf16"
    recompute: str = "none"
    sequence_parallel: bool | None = None
    attention_impl: str | None = None
    dropout: bool | None = None
    dp_overlap: bool | None = None
    tp_overlap: bool | None = None
    ep_overlap: bool | None = None
    grad_reduce_precision: str = "fp32"
    expert_imbalance: float = 1.0
    uneven_pipeline: bool = False
    num_physical_experts: int | None = None
    etp: int = 1
    bf16_layers_start: int = 0
    bf16_layers_end: int = 0
    ep_dispatcher: str | None = None

    def __post_init__(self) -> None:
        self._check_counts()
        _check_choice("schedule", self.schedule, SCHEDULES)
        _check_choice("recompute", self.recompute, RECOMPUTE)
        if self.attention_impl is not None:
            _check_choice("attention_impl", self.attention_impl, ATTENTION_IMPLEMENTATIONS)
        if self.ep_dispatcher is not None:
            _check_choice("ep_dispatcher", self.ep_dispatcher, EP_DISPATCHERS)
        _check_choice("precision", self.precision, TRAINING_PRECISIONS)
        _check_choice("grad_reduce_precision", self.grad_reduce_precision, GRAD_PRECISIONS)
        if not self.expert_imbalance >= 1.0:
            raise InvalidPlanError("expert_imbalance is a slowdown factor and must be >= 1.0")
        if (self.bf16_layers_start or self.bf16_layers_end) and self.compute_precision not in ("fp8", "fp4"):
            raise InvalidPlanError(
                f"layers kept in BF16 ({self.bf16_layers_start}:{self.bf16_layers_end}) need an FP8 or FP4 "
                f"run; a {self.precision} run has none to keep: drop --bf16-layers or choose --precision fp8"
            )

    def _check_counts(self) -> None:
        """Every count a whole number within its bound (:mod:`lightspeed.limits`): ``tp=1.5``,
        ``tp=True``, ``tp="8"`` and ``seq_len=10**30`` are refused with one line."""
        for label in ("tp", "pp", "dp", "ep", "etp", "cp", "vpp"):
            check_whole(label, getattr(self, label), maximum=MAX_ACCELERATORS, error=InvalidPlanError)
        for label in ("micro_batch_size", "global_batch_size"):
            check_whole(label, getattr(self, label), maximum=MAX_SEQUENCES, error=InvalidPlanError)
        check_whole("seq_len", self.seq_len, maximum=MAX_SEQ_LEN, error=InvalidPlanError)
        check_whole("zero_stage", self.zero_stage, minimum=0, maximum=3, error=InvalidPlanError)
        if self.num_physical_experts is not None:
            check_whole(
                "num_physical_experts",
                self.num_physical_experts,
                maximum=MAX_ACCELERATORS,
                error=InvalidPlanError,
            )
        for label in ("bf16_layers_start", "bf16_layers_end"):
            check_whole(
                label, getattr(self, label), minimum=0, maximum=MAX_ACCELERATORS, error=InvalidPlanError
            )

    @property
    def num_gpus(self) -> int:
        """GPUs the plan occupies: tp x cp x dp x pp (EP is carved out of tp x cp x dp)."""
        return self.tp * self.cp * self.dp * self.pp

    @property
    def num_microbatches(self) -> int:
        """Micro-batches each pipeline processes per step (gradient accumulation steps x 1)."""
        return self.global_batch_size // (self.dp * self.micro_batch_size)

    @property
    def tokens_per_step(self) -> int:
        """Tokens the whole job processes per optimizer step."""
        return self.global_batch_size * self.seq_len

    @property
    def uses_sequence_parallel(self) -> bool:
        """Megatron sequence parallelism (on by default whenever TP > 1)."""
        return self.tp > 1 if self.sequence_parallel is None else self.sequence_parallel and self.tp > 1

    @property
    def effective_schedule(self) -> str:
        """The schedule, with 1F1B upgraded to interleaved when vpp > 1."""
        if self.vpp > 1 and self.schedule == "1f1b":
            return "interleaved"
        return self.schedule

    @property
    def overlaps_ep(self) -> bool:
        """Whether EP all-to-all hides behind compute."""
        if self.ep_overlap is None:
            return self.effective_schedule in ("dualpipe", "dualpipev")
        return self.ep_overlap

    @property
    def compute_precision(self) -> str:
        """The catalog compute row the GEMMs run on (``bf16``, ``fp8`` ...)."""
        return compute_precision(self.precision)

    @property
    def is_resolved(self) -> bool:
        """Whether every stack-dependent field has a value."""
        return None not in (
            self.attention_impl,
            self.dropout,
            self.dp_overlap,
            self.tp_overlap,
            self.ep_dispatcher,
        )

    def resolved(self, stack: Stack) -> TrainingPlan:
        """This plan with the fields left ``None`` taken from ``stack``, sequence parallelism and
        EP overlap stated (``True``/``False``), and ``selective`` read as the stack means it."""
        recompute = stack.selective_recompute if self.recompute == "selective" else self.recompute
        return replace(
            self,
            attention_impl=self.attention_impl if self.attention_impl is not None else stack.attention,
            dropout=self.dropout if self.dropout is not None else stack.dropout,
            dp_overlap=self.dp_overlap if self.dp_overlap is not None else stack.dp_overlap,
            tp_overlap=self.tp_overlap if self.tp_overlap is not None else stack.tp_overlap,
            sequence_parallel=self.uses_sequence_parallel
            if self.sequence_parallel is not None
            else stack.sequence_parallel and self.tp > 1,
            ep_overlap=self.overlaps_ep,
            recompute=recompute,
            ep_dispatcher=self.ep_dispatcher or ("deepep" if stack.ep_node_dedupe else "alltoall"),
        )

    def with_changes(self, **changes: object) -> TrainingPlan:
        """A copy with some fields replaced."""
        return replace(self, **changes)  # type: ignore[arg-type]


def data_parallel_degree(num_gpus: int, *, tp: int, pp: int, cp: int, dp: int | None = None) -> int:
    """The DP degree of a plan on ``num_gpus`` GPUs: ``dp`` when given, else what fills them.

    >>> data_parallel_degree(64, tp=8, pp=2, cp=1)
    4
    """
    if dp is not None:
        return dp
    other = tp * pp * cp
    if num_gpus % other:
        raise InvalidPlanError(
            f"{num_gpus} GPUs do not split into tp x pp x cp = {other}; "
            "choose degrees whose product divides it"
        )
    return num_gpus // other


def _check_choice(label: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise InvalidPlanError(f"{label} {value!r} is not one of {', '.join(allowed)}")


def validate_plan(
    plan: TrainingPlan, model: TransformerSpec, num_gpus: int | None = None, *, stack: Stack | None = None
) -> None:
    """Raise :class:`InvalidPlanError` with the reason and a valid alternative if the
    plan cannot run ``model`` (on ``num_gpus`` GPUs when given) under ``stack``'s
    framework (default: the current profile): its parallelisms and memory rules, and a sequence
    past the end of a learned position table (:func:`~lightspeed.workload.check_context`)."""
    profile = stack or load_stack()
    check_context(model, plan.seq_len)  # a learned position table cannot run past its end
    _check_gpus(plan, num_gpus)
    _check_tensor_parallel(plan, model)
    _check_pipeline(plan, model)
    _check_batch(plan)
    _check_experts(plan, model)
    _check_context_parallel(plan)
    _check_bf16_layers(plan, model)
    _check_stack(plan, profile)


def _check_bf16_layers(plan: TrainingPlan, model: TransformerSpec) -> None:
    kept = plan.bf16_layers_start + plan.bf16_layers_end
    if kept > model.num_layers:
        raise InvalidPlanError(
            f"bf16 layers {plan.bf16_layers_start}:{plan.bf16_layers_end} keep {kept} layers of "
            f"{model.name}'s {model.num_layers}; keep at most {model.num_layers} (or train in bf16)"
        )


def _check_stack(plan: TrainingPlan, stack: Stack) -> None:
    """Refuse what the stack's framework cannot run: a parallelism or pipeline schedule it lacks
    (DeepSpeed's pipeline engine runs 1F1B only), a ZeRO stage its memory rules refuse
    (DeepSpeed's pipeline engine and ZeRO-2/3, FSDP and ZeRO-1, ...)."""
    if plan.pp > 1 and not stack.pipeline_parallel:
        raise InvalidPlanError(
            f"pp={plan.pp}: {stack.display_name} has no pipeline parallelism; use --pp 1 or another --stack"
        )
    schedule = plan.effective_schedule
    if plan.pp > 1 and not stack.runs_schedule(schedule):
        raise InvalidPlanError(
            f"schedule {schedule}{f' (vpp={plan.vpp})' if plan.vpp > 1 else ''}: {stack.display_name} "
            f"runs only {', '.join(stack.pipeline_schedules)} pipelines; use --schedule "
            f"{stack.pipeline_schedules[0]} --vpp 1 or another --stack"
        )
    if plan.cp > 1 and not stack.context_parallel:
        raise InvalidPlanError(
            f"cp={plan.cp}: {stack.display_name} has no context parallelism; use --cp 1 or another --stack"
        )
    rule = stack.sharding_rule(plan.zero_stage, pipeline=plan.pp > 1)
    if rule.refused:
        where = f" with pp={plan.pp}" if plan.pp > 1 else ""
        raise InvalidPlanError(
            f"zero_stage {plan.zero_stage}{where} under stack {stack.name} ({stack.sharding.display_name}): "
            f"{rule.refused}"
        )


def validate_plan_gpus(plan: TrainingPlan, num_gpus: int) -> None:
    """Raise :class:`InvalidPlanError` unless the plan uses exactly ``num_gpus`` GPUs."""
    _check_gpus(plan, num_gpus)


def fits_cluster(num_gpus: int, cluster: Cluster) -> bool:
    """Whether a job may use ``num_gpus`` GPUs of ``cluster``: all of them, or any part of a single
    node (a node's GPUs need not split evenly: 6 of 8 run a plan of tp=2 dp=3)."""
    total = cluster.num_accelerators
    return num_gpus == total or (cluster.num_nodes == 1 and num_gpus < total)


def check_cluster_gpus(num_gpus: int, cluster: Cluster) -> None:
    """Raise :class:`PlanMismatchError` unless :func:`fits_cluster`, naming the count that runs:
    the whole cluster (a cluster of several nodes runs on all of them)."""
    if fits_cluster(num_gpus, cluster):
        return
    per_node, total = cluster.system.num_accelerators, cluster.num_accelerators
    if num_gpus % per_node:
        problem = (
            f"{num_gpus} GPUs are not a whole number of {cluster.system.name} nodes ({per_node} GPUs each)"
        )
    else:
        problem = (
            f"{num_gpus} GPUs are not the {total} of {cluster.name}: "
            "a job takes the whole cluster or part of one node"
        )
    raise PlanMismatchError(problem, nearest_plan={"gpus": total})


def _check_gpus(plan: TrainingPlan, num_gpus: int | None) -> None:
    if num_gpus is None or plan.num_gpus == num_gpus:
        return
    other = plan.tp * plan.cp * plan.pp
    raise PlanMismatchError(
        f"tp x cp x dp x pp = {plan.tp} x {plan.cp} x {plan.dp} x {plan.pp} = {plan.num_gpus} "
        f"GPUs, not the {num_gpus} requested",
        nearest_plan={"dp": num_gpus // other} if num_gpus % other == 0 else None,
        no_match_hint=f"tp x cp x pp = {other} does not divide {num_gpus}: choose degrees that do",
    )


def _check_tensor_parallel(plan: TrainingPlan, model: TransformerSpec) -> None:
    heads = model.attention.num_heads
    if heads % plan.tp:
        valid = [d for d in divisors(heads) if d <= 64]
        raise InvalidPlanError(
            f"tp={plan.tp} does not divide the {heads} attention heads of {model.name}; "
            f"try tp={nearest(plan.tp, valid)}"
        )
    kv_heads = model.attention.num_kv_heads
    if model.attention.kind != "mla" and kv_heads % plan.tp and plan.tp % kv_heads:
        raise InvalidPlanError(
            f"tp={plan.tp} neither divides nor is a multiple of the {kv_heads} KV heads of "
            f"{model.name}; try tp={nearest(plan.tp, divisors(kv_heads))}"
        )
    mixer = model.recurrent
    units, unit_name = mixer.split_unit if mixer is not None else (heads, "attention heads")
    if units % plan.tp:
        raise InvalidPlanError(
            f"tp={plan.tp} does not divide the {units} {unit_name} of {model.name} "
            f"(Megatron-Core gives each rank whole ones); try tp={nearest(plan.tp, divisors(units))}"
        )
    if model.ffn_hidden_size % plan.tp:
        raise InvalidPlanError(
            f"tp={plan.tp} does not divide the MLP size {model.ffn_hidden_size}; "
            f"try tp={nearest(plan.tp, [d for d in divisors(heads) if model.ffn_hidden_size % d == 0])}"
        )


# Chunks beyond the layers an uneven split may fill: Megatron's
# --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split count the
# embedding and the loss as a layer each (Megatron-Bridge's Llama 3.1 405B recipes: 126 layers on
# PP 16 x VPP 8 = 128 chunks).
_END_CHUNKS = 2


def _pipeline_sizes(plan: TrainingPlan, sizes: list[int]) -> list[int]:
    """The pipeline sizes among ``sizes`` that the plan's GPUs split into (they divide
    GPUs / (tp x cp)) and that are within a factor of two of its own pp (a much shorter pipeline
    rarely fits where the asked one was needed)."""
    width = plan.num_gpus // (plan.tp * plan.cp)
    return [p for p in sizes if width % p == 0 and plan.pp <= 2 * p and p <= 2 * plan.pp]


def _even_pipeline_fix(plan: TrainingPlan, model: TransformerSpec) -> str:
    """An even split near the plan's (``try pp=...; ``), or nothing where no pipeline size both
    divides the layers and splits the GPUs (then only uneven stages run it)."""
    layers = model.num_layers
    stages = _pipeline_sizes(plan, [d // plan.vpp for d in divisors(layers) if d % plan.vpp == 0])
    if stages:
        return f"try pp={nearest(plan.pp, stages)}, or "
    vpps = [v for v in divisors(layers) if layers % (v * plan.pp) == 0]
    if vpps and plan.vpp > 1:  # the plan's pp with other virtual chunks (126 layers, vpp=4)
        return f"no pp splits them into vpp={plan.vpp} chunks; try vpp={nearest(plan.vpp, vpps)}, or "
    plain = _pipeline_sizes(plan, divisors(layers))
    if plan.vpp > 1 and plain:
        return (
            f"no pp splits them into vpp={plan.vpp} chunks; try vpp=1 with pp={nearest(plan.pp, plain)}, or "
        )
    return ""


def _check_pipeline(plan: TrainingPlan, model: TransformerSpec) -> None:
    if plan.vpp > 1 and plan.pp == 1:
        raise InvalidPlanError(
            f"vpp={plan.vpp} splits each pipeline stage into virtual chunks and pp=1 has one stage, "
            "nothing to interleave: give pp=2 or more with it, or vpp=1"
        )
    chunks = plan.pp * plan.vpp
    most = model.num_layers + (_END_CHUNKS if plan.uneven_pipeline else 0)
    if chunks > most:
        if plan.uneven_pipeline:
            fix = " and its embedding and loss (uneven stages count them as a chunk each)"
        elif chunks <= model.num_layers + _END_CHUNKS:
            fix = "; allow uneven stages (--uneven-pipeline) to count its embedding and loss as a chunk each"
        else:
            fix = ""
        raise InvalidPlanError(
            f"pp x vpp = {chunks} pipeline chunks exceed the {model.num_layers} layers of {model.name}{fix}"
        )
    if model.num_layers % chunks and not plan.uneven_pipeline:
        raise InvalidPlanError(
            f"pp x vpp = {chunks} does not divide the {model.num_layers} layers of {model.name}; "
            f"{_even_pipeline_fix(plan, model)}allow uneven stages (--uneven-pipeline)"
        )
    _check_schedule(plan)
    schedule = plan.effective_schedule
    if schedule in ("dualpipe", "dualpipev"):
        if plan.pp % 2:
            raise InvalidPlanError(
                f"{schedule} needs an even pipeline size (got pp={plan.pp}); try pp={plan.pp + 1}"
            )
        if plan.num_microbatches < 2 * plan.pp:
            raise InvalidPlanError(
                f"{schedule} needs at least 2 x pp = {2 * plan.pp} micro-batches per step, "
                f"the plan has {plan.num_microbatches}; raise the global batch or lower pp"
            )
    if schedule == "interleaved" and plan.pp > 1 and plan.num_microbatches % plan.pp:
        raise InvalidPlanError(
            f"interleaved 1F1B needs the {plan.num_microbatches} micro-batches "
            f"to be a multiple of pp={plan.pp}"
        )


def _check_schedule(plan: TrainingPlan) -> None:
    """A schedule other than 1F1B needs pipeline stages to order; interleaving needs virtual chunks
    (Megatron runs its interleaved schedule only with a virtual pipeline size, and with one chunk a
    stage it would hold ``2p - 1`` micro-batches where 1F1B holds ``p``); the other schedules
    have no chunks to interleave (DualPipeV's two are its own)."""
    if plan.schedule != "1f1b" and plan.pp == 1:
        raise InvalidPlanError(
            f"schedule {plan.schedule} orders micro-batches over pipeline stages and pp=1 has one: "
            "give pp=2 or more with it, or schedule 1f1b"
        )
    if plan.schedule == "interleaved" and plan.vpp < 2:
        raise InvalidPlanError(
            f"the interleaved schedule needs vpp=2 or more virtual chunks per GPU (pp={plan.pp} vpp=1 is "
            "plain 1F1B): give vpp=2 or more, or schedule 1f1b"
        )
    if plan.vpp > 1 and plan.schedule not in ("1f1b", "interleaved"):
        raise InvalidPlanError(
            f"vpp={plan.vpp} interleaves virtual chunks, which only the interleaved schedule runs; "
            f"{plan.schedule} would ignore them: give vpp=1 with it, or schedule interleaved"
        )


def _check_batch(plan: TrainingPlan) -> None:
    per_replica, remainder = divmod(plan.global_batch_size, plan.dp)
    if remainder:
        raise InvalidPlanError(
            f"global batch {plan.global_batch_size} does not split over dp={plan.dp} replicas; "
            f"use a global batch that is a multiple of {plan.dp}, e.g. {plan.dp * max(1, per_replica)}"
        )
    if per_replica % plan.micro_batch_size:
        valid = divisors(per_replica)
        raise InvalidPlanError(
            f"micro-batch {plan.micro_batch_size} does not divide the {per_replica} sequences per "
            f"replica; try micro-batch size {nearest(plan.micro_batch_size, valid)}"
        )


def _check_experts(plan: TrainingPlan, model: TransformerSpec) -> None:
    if model.moe is None:
        for label, value in (("ep", plan.ep), ("etp", plan.etp)):
            if value > 1:
                raise InvalidPlanError(
                    f"{label}={value} needs a mixture-of-experts model; {model.name} is dense"
                )
        return
    _check_expert_tensor_parallel(plan, model.moe.expert_ffn_hidden_size)
    experts = model.moe.num_routed_experts
    if experts % plan.ep:
        raise InvalidPlanError(
            f"ep={plan.ep} does not divide the {experts} routed experts; "
            f"try ep={nearest(plan.ep, divisors(experts))}"
        )
    _check_replicas(plan.num_physical_experts, experts, plan.ep)
    group = plan.tp * plan.cp * plan.dp
    if group % (plan.ep * plan.etp):
        what = f"ep={plan.ep}" if plan.etp == 1 else f"ep x etp = {plan.ep} x {plan.etp}"
        raise InvalidPlanError(
            f"{what} must divide tp x cp x dp = {group} (experts are spread over the data-parallel ranks)"
        )


def _check_expert_tensor_parallel(plan: TrainingPlan, expert_ffn: int) -> None:
    if expert_ffn % plan.etp:
        raise InvalidPlanError(
            f"etp={plan.etp} does not divide the expert size {expert_ffn}; "
            f"try etp={nearest(plan.etp, [d for d in divisors(expert_ffn) if d <= 64])}"
        )


def _check_replicas(num_physical: int | None, num_experts: int, ep: int) -> None:
    if num_physical is None:
        return
    if num_physical < num_experts:
        raise InvalidPlanError(
            f"{num_physical} physical experts cannot hold the {num_experts} routed experts; "
            f"use at least {num_experts}"
        )
    if num_physical % ep:
        raise InvalidPlanError(
            f"{num_physical} physical experts do not split over ep={ep}; "
            f"use a multiple of {ep} (e.g. {-(-num_physical // ep) * ep})"
        )


def _check_context_parallel(plan: TrainingPlan) -> None:
    if plan.seq_len % (2 * plan.cp) and plan.cp > 1:
        raise InvalidPlanError(
            f"cp={plan.cp} needs seq_len divisible by 2 x cp = {2 * plan.cp} (load-balanced causal chunks)"
        )

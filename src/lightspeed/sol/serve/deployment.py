"""What the simulator needs of one deployment: ranks, KV blocks, caps, links, the timer.

Built from the same pieces as ``estimate_inference`` (plan checks, the memory
model, the serving stack, the fabric), so a simulated deployment is the one the
analytic model describes:

* **ranks**: each replica has ``dp_attention`` attention ranks (one otherwise),
  each with its own KV cache of ``kv_capacity_bytes / kv_bytes_per_token``
  tokens per GPU (``sol/infer/memory.py``), cut in blocks of ``block_tokens``;
* **caps per rank** (:class:`SchedulerConfig`): sequences (``max_num_seqs``,
  ``--max-running-requests``, ``max_batch_size``; default the plan's
  ``max_batch`` spread over the ranks, else the serving stack's published decode
  batch per rank, else only the KV cache), and tokens per iteration
  (``max_num_batched_tokens``, ``--chunked-prefill-size``, ``max_num_tokens``;
  default the ``prefill_chunk_tokens`` of ``sol/data/efficiency.toml``);
* **links**: swapping a preempted sequence moves its KV cache over the GPU's host
  link (the catalog's, PCIe 5 x16 on an H100 SXM); a disaggregated deployment
  moves each prompt's KV cache from the prefill pool to the decode pool over
  the fabric level the pools share (``sol/infer/serving.kv_transfer_s``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final

import numpy as np

from lightspeed.catalog import Cluster
from lightspeed.errors import InvalidPlanError, UserInputError
from lightspeed.records import Record
from lightspeed.sol.core import collectives
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.serving_stacks import KV_ALLOCATIONS, PREFILL_STEPS, ServingStack
from lightspeed.sol.infer.estimate import check_gpus, deployment_memory, pool_split
from lightspeed.sol.infer.inference_hardware import InferenceHardware, inference_hardware_for
from lightspeed.sol.infer.memory import MemoryArrays
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad, validate_inference_plan
from lightspeed.sol.serve.speculation import AcceptanceProcess
from lightspeed.sol.serve.timing import IterationTimer
from lightspeed.workload import (
    TransformerSpec,
    kv_bytes_per_token_at,
    kv_cache_bytes,
    kv_cache_reserved_bytes,
)

Array = Any
KV_POLICIES: Final = KV_ALLOCATIONS
PREEMPTION_MODES: Final = ("recompute", "swap")
ROUTERS: Final = ("least-loaded", "round-robin")
# vLLM's default KV block (``--block-size 16``, vllm/config.py CacheConfig)
DEFAULT_BLOCK_TOKENS: Final = 16
# vLLM V0's _DEFAULT_MAX_NUM_BATCHED_TOKENS (vllm/config.py SchedulerConfig): the token budget
# with chunked prefill on, and without it max(max_model_len, 2048): whole prompts in a step
V0_BATCHED_TOKENS: Final = 2048
LONG_CONTEXT: Final = 1 << 20  # tokens: past every local layer's span in the catalog


@dataclass(frozen=True)
class SchedulerConfig(Record):
    """The server's scheduler knobs (see the module docstring for the defaults).

    ``kv_policy`` (``None``: the serving stack's ``kv_allocation``, on-demand for vLLM,
    reserve otherwise): ``reserve`` holds a request's whole prompt + output in the KV
    cache from admission (TensorRT-LLM's default ``GUARANTEED_NO_EVICT``: no
    preemption); ``on-demand`` allocates blocks as sequences grow and preempts the
    most recently admitted one when the cache is full (vLLM, TensorRT-LLM's
    ``MAX_UTILIZATION``), by ``preemption``: ``recompute`` (drop its cache, prefill
    prompt and output again later) or ``swap`` (copy it to host memory and back).
    ``router`` places requests on replicas and on a replica's attention ranks.
    ``prefill_steps``: ``mixed`` (prompt tokens share a step with every running decode) or
    ``separate`` (a step that admits prompts runs no decode: the default of vLLM V0 and SGLang);
    ``None``: the serving stack's (:meth:`ServingStack.separate_prefill_steps`).
    """

    max_sequences_per_rank: int | None = None
    max_batched_tokens_per_rank: int | None = None
    block_tokens: int = DEFAULT_BLOCK_TOKENS
    kv_policy: str | None = None
    preemption: str = "recompute"
    router: str = "least-loaded"
    prefill_steps: str | None = None

    def __post_init__(self) -> None:
        for label, value, allowed in (
            ("KV policy", self.kv_policy or KV_POLICIES[0], KV_POLICIES),
            ("preemption", self.preemption, PREEMPTION_MODES),
            ("router", self.router, ROUTERS),
            ("prefill steps", self.prefill_steps or PREFILL_STEPS[0], PREFILL_STEPS),
        ):
            if value not in allowed:
                raise UserInputError(f"{label} {value!r} is not one of {', '.join(allowed)}")
        for label, number in (
            ("max sequences per rank", self.max_sequences_per_rank),
            ("max batched tokens per rank", self.max_batched_tokens_per_rank),
            ("block tokens", self.block_tokens),
        ):
            if number is not None and number < 1:
                raise UserInputError(f"{label} must be >= 1 (got {number})")


@dataclass(frozen=True)
class SimulatedPool:
    """What the engine needs of the replicas of one pool: their attention ranks, each rank's KV
    cache and caps, and the iteration timer of their shape."""

    num_ranks: int
    kv_tokens_per_rank: int
    max_sequences_per_rank: int
    max_batched_tokens_per_rank: int
    timer: IterationTimer
    state_tokens_per_sequence: float = 0.0  # a hybrid's Mamba-2 state, in tokens of the KV cache

    @property
    def query_tokens(self) -> float:
        """Tokens a decoding sequence runs a step (1, or the speculative draft plus one)."""
        return float(self.timer.query_tokens)


@dataclass(frozen=True)
class SimulatedDeployment:
    """One deployment as the simulator runs it (built by :func:`simulated_deployment`)."""

    model: TransformerSpec
    cluster_name: str
    plan: InferencePlan
    hardware: InferenceHardware
    scheduler: SchedulerConfig
    pool: SimulatedPool  # the (decode, or only) pool's ranks, KV cache, caps and timer
    kv_bytes_per_token_per_gpu: float
    separate_prefill: bool  # a step that runs prompts runs no decode (SchedulerConfig.prefill_steps)
    whole_prompts: bool  # a separate step admits a prompt only whole (vLLM V0), not in chunks
    kv_policy: str  # SchedulerConfig.kv_policy, or the serving stack's kv_allocation
    host_bytes_per_s: float
    transfer_gpus: float  # GPUs of a replica that each send their share of a prompt's KV cache
    transfer_crosses_domains: bool
    speculation: AcceptanceProcess | None
    prefill_pool: SimulatedPool | None = None  # a disaggregated prefill pool of its own shape

    @property
    def num_ranks(self) -> int:
        """Attention ranks of a (decode, or only) replica."""
        return self.pool.num_ranks

    @property
    def kv_tokens_per_rank(self) -> int:
        """KV cache of one such rank, in tokens."""
        return self.pool.kv_tokens_per_rank

    @property
    def max_sequences_per_rank(self) -> int:
        """Sequences one such rank admits."""
        return self.pool.max_sequences_per_rank

    @property
    def max_batched_tokens_per_rank(self) -> int:
        """Tokens one such rank runs an iteration."""
        return self.pool.max_batched_tokens_per_rank

    @property
    def timer(self) -> IterationTimer:
        """The iteration timer of the (decode, or only) replicas' shape."""
        return self.pool.timer

    @property
    def resolved_scheduler(self) -> SchedulerConfig:
        """The scheduler as it runs: the KV policy and prefill steps the user left to the serving
        stack filled in."""
        steps = PREFILL_STEPS[1] if self.separate_prefill else PREFILL_STEPS[0]
        return replace(self.scheduler, kv_policy=self.kv_policy, prefill_steps=steps)

    @property
    def serving_replicas(self) -> int:
        """Replicas that prefill and decode (0 when disaggregated)."""
        return 0 if self.plan.disaggregated is not None else self.plan.replicas

    @property
    def prefill_replicas(self) -> int:
        """Replicas that only prefill."""
        return self.plan.disaggregated[0] if self.plan.disaggregated is not None else 0

    @property
    def decode_replicas(self) -> int:
        """Replicas that only decode."""
        return self.plan.disaggregated[1] if self.plan.disaggregated is not None else 0

    def kv_transfer_s(self, input_tokens: Array) -> Array:
        """Seconds to move each prompt's KV cache between the pools (each GPU sends its share; local
        attention layers hold only their window or chunk of a long prompt)."""
        tokens = np.asarray(input_tokens, dtype=np.float64)
        held = kv_cache_bytes(self.model, self.hardware.precisions.kv_cache, tokens)
        size = held / max(self.transfer_gpus, 1.0)
        return collectives.send_recv_s(self.hardware.hardware.fabric, size, self.transfer_crosses_domains)

    @property
    def local_kv(self) -> bool:
        """Whether some layers hold only a window or chunk of a long context (Gemma 3, Mistral)."""
        kv = self.hardware.precisions.kv_cache
        return bool(
            kv_bytes_per_token_at(self.model, kv, LONG_CONTEXT) < kv_bytes_per_token_at(self.model, kv, 1)
        )

    def kv_equivalent_tokens(self, tokens: float) -> float:
        """KV cache a sequence of ``tokens`` holds now, in tokens of a short sequence (every layer
        holds every token): ``tokens`` itself unless local layers stop at their span (a chunked
        layer holds only the chunk the last token is in)."""
        kv = self.hardware.precisions.kv_cache
        return float(kv_cache_bytes(self.model, kv, tokens) / kv_bytes_per_token_at(self.model, kv, 1))

    def kv_reserved_tokens(self, tokens: float) -> float:
        """The most KV cache a sequence holds on its way to ``tokens`` (what a server that never
        evicts it must keep for it), in tokens of a short sequence: per layer ``tokens``, or
        ``min(tokens, span)`` for a window or chunk. Llama 4 Scout at 9,216 tokens: (12 x 9,216 +
        36 x 8,192) / 48 = 8,448, where what it holds at 9,216 is (12 x 9,216 + 36 x 1,024) / 48."""
        kv = self.hardware.precisions.kv_cache
        reserved = kv_cache_reserved_bytes(self.model, kv, tokens)
        return float(reserved / kv_bytes_per_token_at(self.model, kv, 1))

    def swap_s(self, tokens: float) -> float:
        """Seconds to copy ``tokens`` tokens of one sequence's KV cache over the host link."""
        return tokens * self.kv_bytes_per_token_per_gpu / self.host_bytes_per_s


def _host_bytes_per_s(cluster: Cluster) -> float:
    link = cluster.system.accelerator.host_link
    if link is None:
        raise UserInputError(
            f"{cluster.system.accelerator.name} has no host link in the catalog: swap preemption cannot "
            "be costed; use --preemption recompute"
        )
    return link.per_direction_bytes_per_s


def _check_sequence_caps(plan: InferencePlan, config: SchedulerConfig) -> None:
    """Refuse a cap on sequences per rank (``max_num_seqs``) beside a different cap per replica
    (the plan's ``max_batch``, spread over its attention ranks): they are one knob of the server
    under two names (vLLM's ``max_num_seqs``, SGLang's ``--max-running-requests``, TensorRT-LLM's
    ``max_batch_size``: each stack has one, the most sequences a rank's scheduler runs), so two
    different values are a mistake, and applying either one silently would hide it."""
    if config.max_sequences_per_rank is None or plan.max_batch is None:
        return
    per_rank = max(plan.max_batch // plan.dp_attention, 1)
    if config.max_sequences_per_rank == per_rank:
        return
    ranks = f" ({per_rank:,} per attention rank)" if plan.dp_attention > 1 else ""
    raise UserInputError(
        f"--max-num-seqs {config.max_sequences_per_rank:,} and --max-batch {plan.max_batch:,}{ranks} are "
        "the same cap on the sequences a rank runs (vLLM's max_num_seqs, TensorRT-LLM's max_batch_size) "
        "with different values: give one of them"
    )


def _max_sequences(plan: InferencePlan, config: SchedulerConfig, memory: MemoryArrays, kv_tokens: int) -> int:
    """Sequences one rank's scheduler admits: the user's cap, else the least of one KV block each
    and the server's defaults as the analytic engine applies them (its cap on sequences, a wide-EP
    recipe's decode batch under attention DP: ``memory.max_sequences``, per rank)."""
    if config.max_sequences_per_rank is not None:
        return config.max_sequences_per_rank
    if plan.max_batch is not None:
        return max(plan.max_batch // plan.dp_attention, 1)
    defaults = int(float(memory.max_sequences[0]) // plan.dp_attention)
    return max(min(kv_tokens // config.block_tokens, defaults), 1)  # every sequence holds a block


def _separate_prefill(
    config: SchedulerConfig, serving: ServingStack, model: TransformerSpec, cluster: Cluster
) -> bool:
    """Whether prompt steps run apart from decodes: the user's choice, else the serving stack's
    default for the model's context on the cluster's GPUs."""
    if config.prefill_steps is not None:
        return config.prefill_steps == "separate"
    vendor = cluster.system.accelerator.vendor
    return serving.separate_prefill_steps(model.max_seq_len, vendor, mla=model.attention.kind == "mla")


def _default_budget(hardware: InferenceHardware, model: TransformerSpec, *, separate: bool) -> int:
    """Tokens per step per rank when the user gives none: a whole-prompt server's (vLLM V0)
    max(context, 2,048) for its separate steps and 2,048 once it chunks; else the serving
    stack's prefill chunk for the GPU."""
    if not hardware.serving.whole_prompts:
        return hardware.parameters.prefill_chunk_tokens
    return max(model.max_seq_len, V0_BATCHED_TOKENS) if separate else V0_BATCHED_TOKENS


def simulated_deployment(
    *,
    model: TransformerSpec,
    cluster: Cluster,
    plan: InferencePlan,
    scheduler: SchedulerConfig | None = None,
    efficiency: EfficiencyModel | None = None,
    serving: str | ServingStack | None = None,
    speculation: AcceptanceProcess | None = None,
    num_gpus: int | None = None,
) -> SimulatedDeployment:
    """Check ``plan`` on ``cluster`` and size its ranks (see the module docstring).

    ``speculation`` defaults to the plan's :class:`SpeculativeDecoding` as a process with
    one acceptance rate.
    """
    config = scheduler or SchedulerConfig()
    validate_inference_plan(plan, model, num_gpus)
    _check_sequence_caps(plan, config)
    check_gpus(plan, cluster)
    hardware = inference_hardware_for(cluster, plan, efficiency, serving, model=model)
    if speculation is None and plan.speculative is not None:
        speculation = AcceptanceProcess.from_speculative(plan.speculative)
    elif speculation is not None and plan.speculative is None:  # the server as it runs speculation
        hardware = replace(hardware, serving=hardware.serving.for_speculation(True))
    separate = _separate_prefill(config, hardware.serving, model, cluster)
    whole = separate and hardware.serving.whole_prompts
    pool, per_token = _pool(model, hardware, plan, config, speculation, separate=separate)
    prefill_pool = None
    if plan.prefill_shape is not None:
        try:
            prefill_pool = _pool(model, hardware, plan.prefill_plan, config, speculation, separate=separate)[
                0
            ]
        except InvalidPlanError as error:
            raise InvalidPlanError(f"the prefill pool: {error}") from None
    transfer, crosses = 0.0, False
    if plan.disaggregated is not None:
        split = pool_split(plan, hardware, model, ServingLoad(1, 1))
        transfer = float(split.gpus_per_replica[0])
        crosses = bool(split.crosses_domains[0])
    return SimulatedDeployment(
        model=model,
        cluster_name=cluster.name,
        plan=plan,
        hardware=hardware,
        scheduler=config,
        pool=pool,
        kv_bytes_per_token_per_gpu=per_token,
        separate_prefill=separate,
        whole_prompts=whole,
        kv_policy=config.kv_policy or hardware.serving.kv_allocation,
        host_bytes_per_s=_host_bytes_per_s(cluster) if config.preemption == "swap" else 1.0,
        transfer_gpus=transfer,
        transfer_crosses_domains=crosses,
        speculation=speculation,
        prefill_pool=prefill_pool,
    )


def _pool(
    model: TransformerSpec,
    hardware: InferenceHardware,
    plan: InferencePlan,
    config: SchedulerConfig,
    speculation: AcceptanceProcess | None,
    *,
    separate: bool,
) -> tuple[SimulatedPool, float]:
    """(the pool of ``plan``'s replicas, KV bytes per token per GPU): each rank's KV cache in
    tokens, its caps and the timer of the plan's shape (see the module docstring)."""
    memory = deployment_memory(model, hardware, plan, ServingLoad(1, 1))
    per_token = float(memory.kv_bytes_per_token[0])
    if per_token <= 0 and model.recurrent is not None:
        raise InvalidPlanError(
            f"{model.name} has no attention blocks: the simulator's KV cache counts tokens of attention "
            "blocks, which this model keeps none of (only a state per sequence); predict it with plan infer"
        )
    kv_tokens = int(float(memory.kv_capacity_bytes[0]) / per_token) if per_token > 0 else 0
    if DEFAULT_BLOCK_TOKENS <= kv_tokens < config.block_tokens:  # the block, not the deployment
        raise InvalidPlanError(
            f"a KV block of {config.block_tokens:,} tokens (--block-size) is larger than the KV cache of "
            f"{kv_tokens:,} tokens per rank of {plan.describe()} ({hardware.hardware.accelerator.name}); "
            f"fix: set --block-size {DEFAULT_BLOCK_TOKENS} (the default) or at most {kv_tokens:,}"
        )
    if kv_tokens < config.block_tokens:
        raise InvalidPlanError(
            f"{model.name} leaves no KV cache on {plan.describe()} ({hardware.hardware.accelerator.name}): "
            "use more GPUs per replica or a lower precision"
        )
    max_sequences = _max_sequences(plan, config, memory, kv_tokens)
    budget = config.max_batched_tokens_per_rank or _default_budget(hardware, model, separate=separate)
    timer = IterationTimer(
        model=model, hardware=hardware, plan=plan, max_sequences=max_sequences, speculation=speculation
    )
    state = float(np.asarray(memory.state_bytes_per_sequence).reshape(-1)[0])
    pool = SimulatedPool(
        num_ranks=plan.dp_attention,
        kv_tokens_per_rank=kv_tokens,
        max_sequences_per_rank=max_sequences,
        max_batched_tokens_per_rank=budget,
        timer=timer,
        state_tokens_per_sequence=state / per_token if per_token > 0 else 0.0,
    )
    return pool, per_token


__all__ = [
    "DEFAULT_BLOCK_TOKENS",
    "KV_POLICIES",
    "PREEMPTION_MODES",
    "PREFILL_STEPS",
    "ROUTERS",
    "SchedulerConfig",
    "SimulatedDeployment",
    "SimulatedPool",
    "simulated_deployment",
]

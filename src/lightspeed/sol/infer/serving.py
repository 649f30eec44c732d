"""Serving steady state: TTFT, TPOT and throughput from iteration costs, vectorized.

**Continuous batching** (every replica prefills and decodes): a replica keeps
``B`` sequences in flight. With pipeline parallelism they travel as ``pp``
micro-batches; each stage iteration runs one of them, so a sequence advances
once per round of ``pp`` stage iterations. A request spends
``n = (output - 1) / tau + 1`` iterations in its slot (one prefill iteration,
then decode iterations of ``tau`` tokens: 1, or the expected accepted drafts
plus one under speculative decoding), so each of its decode iterations
carries ``(B - 1) / n`` prompts of the *other* requests beside the decoding
sequences: prefill rides along with decode and shares its weight reads, and a
request never pays for its own prompt twice. The routed experts an iteration
reads grow concavely with its tokens, so a MoE model's are priced as the
iterations run them: the decode tokens' own, plus each prompt chunk's (decode
and that chunk) amortized over the iterations it rides along
(``_folded_prefill_experts``), not a blend of a prompt's fraction into every
step. Then

* ``TPOT = pp x t_iteration / tau`` (plus ``k x draft_cost_fraction`` decode
  steps of drafting per iteration under speculation, the iteration's ``draft``
  part); one request in flight decodes alone;
* ``TTFT`` = half a round of waiting for the running iteration, then the
  prompt's chunks (``prefill_chunk_tokens`` each), one per round, beside the
  other sequences' decode;
* throughput per replica ``= B x output / (prefill + (output - 1) x TPOT)``:
  the slot is held for the request's prefill and its decode steps.

**Decode only** (``batching="decode"``): a decode pool measured on its own,
as the decode-side figures of disaggregated deployments are published:
``B`` sequences decode over ``ISL + OSL / 2`` tokens of context.

**Static batching** (a batch of ``B`` prompts prefilled together, then decoded
together until all finish: TensorRT-LLM's ``gptSessionBenchmark``): TTFT is the
batch's prefill, throughput ``B x output / (prefill + (output - 1) x TPOT)``.

**Disaggregated** ``P:D``: P replicas only prefill (prompts packed up to the
chunk budget), D only decode with ``B`` sequences each; the KV cache of each
prompt crosses the link between the pools (NVLink when both pools fit in one
scale-up domain, else the scale-out network), each GPU sending its shard. The
system serves ``min(P x prefill rate, D x decode rate)`` requests per second; a
prompt waits for the prefill iteration running as often as the prefill pool is
busy at that rate (``PrefillArrays.ttft_at``), so one request alone prefills at
once. A closed loop of users (``plan infer --concurrency``) keeps Little's law
over both pools: what the decode pool does not hold waits for a prefill
(:func:`lightspeed.sol.infer.estimate.estimate_inference`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from lightspeed.records import Record
from lightspeed.sol.core import collectives
from lightspeed.sol.infer.inference_hardware import InferenceHardware
from lightspeed.sol.infer.iteration import IterationCost, IterationGrid, iteration_cost, routed_experts_time_s
from lightspeed.sol.infer.per_gpu import stage_layers
from lightspeed.sol.infer.plan import ServingLoad, SpeculativeDecoding
from lightspeed.workload import TransformerSpec

Array = Any
BATCHING_MODES = ("continuous", "static", "decode")


@dataclass(frozen=True)
class Deployments:
    """Parallel degrees of many deployments, and the sequences in flight per (decode) replica;
    the busiest GPU's expert-load factor (0: the routing skew at the EP size) and the physical
    experts (0: the model's routed ones)."""

    tp: Array
    pp: Array
    ep: Array
    dp_attention: Array
    batch: Array
    expert_imbalance: Array = 0.0
    physical_experts: Array = 0.0

    def grid(self, *, group_prefill_tokens: Array | None = None, **work: Array) -> IterationGrid:
        """An iteration grid of these deployments doing ``work``; prompts spread evenly over
        the attention groups unless ``group_prefill_tokens`` says what the busiest one gets."""
        if group_prefill_tokens is None:
            group_prefill_tokens = work["prefill_tokens"] / self.dp_attention
        return IterationGrid(
            tp=self.tp,
            pp=self.pp,
            ep=self.ep,
            dp_attention=self.dp_attention,
            group_prefill_tokens=group_prefill_tokens,
            expert_imbalance=self.expert_imbalance,
            physical_experts=self.physical_experts,
            **work,
        )


@dataclass(frozen=True)
class ServingContext:
    """What every steady-state evaluation shares: the model, the hardware, the load, speculation."""

    model: TransformerSpec
    hardware: InferenceHardware
    load: ServingLoad
    speculative: SpeculativeDecoding | None = None

    def cost(self, grid: IterationGrid) -> IterationCost:
        """Breakdown of one stage iteration of ``grid``."""
        return iteration_cost(grid, self.model, self.hardware)


@dataclass(frozen=True)
class ServingArrays(Record):
    """Steady-state metrics per deployment: rates per replica for continuous and static
    batching, for the whole P:D deployment when disaggregated."""

    ttft_s: Array
    tpot_s: Array
    output_tokens_per_s: Array
    requests_per_s: Array
    iteration: IterationCost
    kv_transfer_s: Array


def _tau(speculative: SpeculativeDecoding | None) -> tuple[float, float]:
    """(tokens per decode iteration, query tokens per sequence)."""
    if speculative is None:
        return 1.0, 1.0
    return speculative.tokens_per_iteration, float(speculative.num_draft_tokens + 1)


def _work(
    deployments: Deployments,
    ctx: ServingContext,
    *,
    decode: Array = 0.0,
    query: float = 1.0,
    context: float = 0.0,
    prompt: Array = 0.0,
    requests: Array = 0.0,
    group_prompt: Array | None = None,
) -> IterationCost:
    """One stage iteration: ``decode`` sequences adding ``query`` tokens over ``context`` cached
    ones on average (spread over the request's output, ``ISL`` to ``ISL + OSL``), beside
    ``prompt`` prompt tokens of ``requests`` requests (causal: half the prompt attended)."""
    return ctx.cost(
        deployments.grid(
            decode_sequences=decode,
            query_tokens=query,
            decode_context=context,
            decode_context_span=float(ctx.load.output_tokens) if context > 0 else 0.0,
            prefill_tokens=prompt,
            prefill_context=ctx.load.input_tokens / 2.0,
            prefill_requests=requests,
            group_prefill_tokens=group_prompt,
        )
    )


def _draft_s(deployments: Deployments, micro: Array, context: float, ctx: ServingContext) -> Array:
    """Drafting time per iteration: k draft steps at a fraction of a plain decode step each."""
    speculative = ctx.speculative
    if speculative is None:
        return 0.0
    plain = _work(deployments, ctx, decode=micro, context=context).time_s
    return speculative.num_draft_tokens * speculative.draft_cost_fraction * plain


def _with_draft(cost: IterationCost, draft_s: Array) -> IterationCost:
    """``cost`` with the iteration's drafting as a part of its own (``draft``), so that the parts
    add up to the step a sequence waits for (0 without speculation)."""
    draft = np.broadcast_to(np.asarray(draft_s, dtype=np.float64), np.shape(cost.time_s)).copy()
    return IterationCost(parts={**cost.parts, "draft": draft})


def _routed_expert_s(
    deployments: Deployments, ctx: ServingContext, *, decode: Array, query: float, prompt: Array
) -> Array:
    """Seconds the stage's MoE layers spend on routed experts in an iteration of ``decode``
    sequences of ``query`` tokens beside ``prompt`` prompt tokens (0 for a dense model):
    :func:`~lightspeed.sol.infer.iteration.routed_experts_time_s` over the stage's MoE layers."""
    if ctx.model.moe is None:
        return np.zeros(np.shape(deployments.tp))
    grid = deployments.grid(
        decode_sequences=decode,
        query_tokens=query,
        decode_context=0.0,
        prefill_tokens=prompt,
        prefill_context=0.0,
        prefill_requests=0.0,
    )
    _, num_moe = stage_layers(ctx.model, deployments.pp)
    return num_moe * routed_experts_time_s(grid, ctx.model, ctx.hardware)


def _folded_prefill_experts(
    deployments: Deployments,
    ctx: ServingContext,
    steady: IterationCost,
    *,
    decode: Array,
    query: float,
    chunks_per_iteration: Array,
    chunk: float,
) -> IterationCost:
    """``steady`` (decode with ``chunks_per_iteration`` prompt chunks of ``chunk`` tokens spread
    over every iteration) with its routed-expert reads priced as the iterations run them.

    The experts a step reads grow concavely with its tokens (``1 - (1 - k/E)^tokens`` of them),
    so a blend of a fraction of a prompt into every decode step reads far more experts than the
    decode steps and the occasional step that carries a whole chunk do on average: at 4 sequences
    a DeepSeek-V3 decode step reaches ~12% of the experts, a step blending 15 prompt tokens
    into it ~45%, while one step in 66 carrying a 1,000-token chunk reaches them all. The decode
    steps' experts are priced from their own tokens, and each chunk's as one step of decode plus
    that chunk (the experts it adds), amortized over the steps it rides along: ``E(d) + c x
    (E(d + chunk) - E(d))``. Where chunks fill every step (``c >= 1``) the blend stands. The
    change goes to the weight reads (twice under two-batch overlap, which reads the layer's
    weights per micro-batch) and the fitted attention-DP slowdown scales it as it scales the
    layer. Dense models are unchanged (no routed experts)."""
    if ctx.model.moe is None:
        return steady
    blended = _routed_expert_s(
        deployments, ctx, decode=decode, query=query, prompt=chunks_per_iteration * chunk
    )
    alone = _routed_expert_s(deployments, ctx, decode=decode, query=query, prompt=0.0)
    with_chunk = _routed_expert_s(deployments, ctx, decode=decode, query=query, prompt=chunk)
    folded = alone + chunks_per_iteration * (with_chunk - alone)
    change = np.minimum(folded - blended, 0.0)
    serving = ctx.hardware.serving
    attention_dp = deployments.dp_attention > 1
    reads = change * np.where(attention_dp & serving.two_batch_overlap, 2.0, 1.0)
    pace = reads * np.where(attention_dp, 1.0 / serving.attention_dp_efficiency - 1.0, 0.0)
    parts = dict(steady.parts)
    parts["weight_reads"] = parts["weight_reads"] + reads
    parts["attention_dp_pace"] = parts["attention_dp_pace"] + pace
    return IterationCost(parts=parts)


def _chunks(input_tokens: int, inference_hardware: InferenceHardware) -> tuple[int, float]:
    """(number of prefill chunks of one prompt, tokens per chunk)."""
    count = -(-input_tokens // inference_hardware.parameters.prefill_chunk_tokens)
    return count, input_tokens / count


def _decoding(deployments: Deployments, ctx: ServingContext) -> tuple[Array, IterationCost, Array]:
    """(sequences per micro-batch, pure decode iteration with its drafting as the ``draft`` part,
    its time with drafting) at the batch."""
    _, query = _tau(ctx.speculative)
    micro = np.maximum(np.maximum(deployments.batch, 1.0) / deployments.pp, 1.0)
    context = ctx.load.input_tokens + ctx.load.output_tokens / 2.0
    decode = _work(deployments, ctx, decode=micro, query=query, context=context)
    draft = _draft_s(deployments, micro, context, ctx)
    return micro, _with_draft(decode, draft), decode.time_s + draft


def continuous(deployments: Deployments, ctx: ServingContext) -> ServingArrays:
    """Continuous batching with ``deployments.batch`` sequences in flight per replica.

    A request's decode steps carry the other requests' prefill (``(B - 1) / n``
    prompts per stage iteration, ``n`` the iterations a request holds its slot),
    never its own: at one request in flight TPOT is a decode-only step. The slot
    is held for the request's own prefill chunks (iterations no shorter than the
    steady one, which carries the others' work too) and its ``(OSL - 1) / tau``
    decode rounds, so a replica serves ``B / slot time`` requests per second.
    """
    tau, query = _tau(ctx.speculative)
    batch = np.maximum(deployments.batch, 1.0)
    pp = deployments.pp
    micro = np.maximum(batch / pp, 1.0)
    isl, osl = ctx.load.input_tokens, ctx.load.output_tokens
    count, chunk = _chunks(isl, ctx.hardware)
    slot_iterations = (osl - 1) / tau + count
    others = np.maximum(micro - 1.0, 0.0) / slot_iterations  # other requests' prompts per iteration
    context = isl + osl / 2.0
    blended = _work(
        deployments,
        ctx,
        decode=micro - others,
        query=query,
        context=context,
        prompt=others * isl,
        requests=others,
    )
    steady = _folded_prefill_experts(
        deployments,
        ctx,
        blended,
        decode=micro - others,
        query=query,
        chunks_per_iteration=others * count,
        chunk=chunk,
    )
    draft = _draft_s(deployments, micro - others, context, ctx)
    step = steady.time_s + draft
    own = _work(
        deployments,
        ctx,
        decode=micro - 1.0,
        query=query,
        context=context,
        prompt=chunk,
        requests=1.0 / count,
        group_prompt=chunk,
    ).time_s
    wait = np.where(batch > 1.0, pp * step / 2.0, 0.0)
    # A prompt's iterations are steady ones too: they also carry the others' decodes and prompts
    # (at one request in flight, only its own chunk). With few output tokens they set the rate.
    prefill = count * pp * np.maximum(own, step)
    tpot = pp * step / tau
    rate = deployments.batch / (prefill + (osl - 1) * tpot)
    return ServingArrays(
        ttft_s=wait + prefill,
        tpot_s=tpot,
        output_tokens_per_s=rate * osl,
        requests_per_s=rate,
        iteration=_with_draft(steady, draft),
        kv_transfer_s=np.zeros_like(step),
    )


def decode_only(deployments: Deployments, ctx: ServingContext) -> ServingArrays:
    """A decode pool measured on its own (the decode side of a disaggregated deployment):
    ``B`` sequences per replica decode over a context of ``ISL + OSL / 2``; TTFT is one round."""
    tau, _ = _tau(ctx.speculative)
    _, decode, step = _decoding(deployments, ctx)
    tpot = deployments.pp * step / tau
    osl = max(ctx.load.output_tokens, 1)
    rate = np.maximum(deployments.batch, 1.0) / (osl * tpot)
    return ServingArrays(
        ttft_s=tpot,
        tpot_s=tpot,
        output_tokens_per_s=rate * osl,
        requests_per_s=rate,
        iteration=decode,
        kv_transfer_s=np.zeros_like(step),
    )


def static(deployments: Deployments, ctx: ServingContext) -> ServingArrays:
    """A static batch of ``deployments.batch`` prompts: prefill all, then decode all."""
    tau, _ = _tau(ctx.speculative)
    batch = np.maximum(deployments.batch, 1.0)
    pp = deployments.pp
    isl, osl = ctx.load.input_tokens, ctx.load.output_tokens
    micro, decode, step = _decoding(deployments, ctx)
    group_prompt = np.ceil(micro / deployments.dp_attention) * isl
    prefill = _work(deployments, ctx, prompt=micro * isl, requests=micro, group_prompt=group_prompt).time_s
    ttft = (2.0 * pp - 1.0) * prefill
    tpot = pp * step / tau
    total = ttft + (osl - 1) * tpot
    return ServingArrays(
        ttft_s=ttft,
        tpot_s=tpot,
        output_tokens_per_s=batch * osl / total,
        requests_per_s=batch / total,
        iteration=decode,
        kv_transfer_s=np.zeros_like(step),
    )


@dataclass(frozen=True)
class PoolSplit(Record):
    """Replicas of each pool and how the KV cache travels between them."""

    prefill_replicas: Array
    decode_replicas: Array
    gpus_per_replica: Array
    kv_bytes_per_token_per_replica: Array
    crosses_domains: Array
    # a prefill replica's (tp, pp, ep, dp_attention) where they differ from the decode replicas':
    # one value for every deployment, or one each (a search's points)
    prefill_shape: tuple[Array, Array, Array, Array] | None = None

    def prefill_pool(self, deployments: Deployments) -> Deployments:
        """``deployments`` with a prefill replica's degrees (the same where the pools share them)."""
        if self.prefill_shape is None:
            return deployments
        tp, pp, ep, dp_attention = (np.full_like(deployments.tp, value) for value in self.prefill_shape)
        return replace(deployments, tp=tp, pp=pp, ep=ep, dp_attention=dp_attention)


def kv_transfer_s(split: PoolSplit, load: ServingLoad, inference_hardware: InferenceHardware) -> Array:
    """Seconds to move one prompt's KV cache from a prefill replica to a decode replica."""
    per_gpu = load.input_tokens * split.kv_bytes_per_token_per_replica / split.gpus_per_replica
    return collectives.send_recv_s(inference_hardware.hardware.fabric, per_gpu, split.crosses_domains)


@dataclass(frozen=True)
class PrefillArrays:
    """What one replica of a prefill pool does with the load's prompts, per deployment: requests
    it completes per second (``requests_per_s``, its prompts packed up to the chunk budget), and
    the iterations a prompt takes there: ``iteration_s`` a packed one, ``lone_s`` one holding
    only this prompt's chunk (the same where a prompt fills the budget), ``chunks`` of them, and
    ``pp`` stages for the pipeline's fill."""

    requests_per_s: Array
    iteration_s: Array
    lone_s: Array
    chunks: int
    pp: Array

    def ttft_at(self, utilization: Array) -> Array:
        """A prompt's time in the pool busy ``utilization`` of the time (0 to 1): an arrival
        finds an iteration running that often and waits half of it; its own iterations hold as
        many other prompts as the load packs into them (none on an idle pool), one after another
        through the pipeline's fill."""
        busy = np.clip(utilization, 0.0, 1.0)
        iteration = self.lone_s + busy * (self.iteration_s - self.lone_s)
        return busy * self.iteration_s / 2.0 + (self.chunks + self.pp - 1.0) * iteration

    @property
    def ttft_s(self) -> Array:
        """A prompt's time in a pool that is always busy: the bound that sizes pools and prunes
        prefill shapes (:func:`~lightspeed.sol.infer.search.prefill_front`)."""
        return self.ttft_at(1.0)


def prefill_pool_arrays(prefill_pool: Deployments, ctx: ServingContext) -> PrefillArrays:
    """:class:`PrefillArrays` of replicas of ``prefill_pool``'s degrees: prompts shorter than the
    chunk are packed into one iteration, a longer one takes its chunks one after another."""
    isl = ctx.load.input_tokens
    count, chunk = _chunks(isl, ctx.hardware)
    packed = max(1, ctx.hardware.parameters.prefill_chunk_tokens // isl) if count == 1 else 1
    group_prompt = np.ceil(packed / prefill_pool.dp_attention) * chunk
    prefill = _work(
        prefill_pool, ctx, prompt=packed * chunk, requests=packed / count, group_prompt=group_prompt
    ).time_s
    lone = prefill
    if packed > 1:
        lone = _work(prefill_pool, ctx, prompt=chunk, requests=1.0, group_prompt=chunk).time_s
    return PrefillArrays(
        requests_per_s=packed / (count * prefill),
        iteration_s=prefill,
        lone_s=lone,
        chunks=count,
        pp=prefill_pool.pp,
    )


def disaggregated(
    deployments: Deployments, ctx: ServingContext, split: PoolSplit, users: float | None = None
) -> ServingArrays:
    """Separate prefill and decode pools (see the module docstring); rates are per deployment.

    A prompt finds the prefill pool busy as often as it is at the rate served (arrivals from
    outside see the time average); with a closed loop of ``users``, as often as the other
    ``users - 1`` keep it busy (the arrival theorem of closed queueing networks: one user alone
    never waits for another's prompt)."""
    tau, _ = _tau(ctx.speculative)
    pp = deployments.pp
    osl = ctx.load.output_tokens
    _, decode, step = _decoding(deployments, ctx)
    tpot = pp * step / tau
    decode_rate = split.decode_replicas * deployments.batch / (max(osl - 1, 1) * tpot)
    prefill = prefill_pool_arrays(split.prefill_pool(deployments), ctx)
    capacity = split.prefill_replicas * prefill.requests_per_s
    rate = np.minimum(decode_rate, capacity)
    transfer = kv_transfer_s(split, ctx.load, ctx.hardware)
    # the decode pool takes the sequence at its next round (at once where nothing else decodes)
    wait = np.where(deployments.batch > 1.0, pp * step / 2.0, 0.0)
    busy = rate / capacity
    if users is not None:
        busy = busy * max(users - 1.0, 0.0) / max(users, 1.0)
    ttft = prefill.ttft_at(busy) + transfer + wait
    return ServingArrays(
        ttft_s=ttft,
        tpot_s=tpot,
        output_tokens_per_s=rate * osl,
        requests_per_s=rate,
        iteration=decode,
        kv_transfer_s=transfer,
    )


__all__ = [
    "BATCHING_MODES",
    "Deployments",
    "PoolSplit",
    "PrefillArrays",
    "ServingArrays",
    "ServingContext",
    "continuous",
    "decode_only",
    "disaggregated",
    "kv_transfer_s",
    "prefill_pool_arrays",
    "static",
]

"""Execution-time model of the simulator: ``sol/infer``'s iteration cost, cached by batch shape.

One simulated iteration of a replica is a round of its ``pp`` pipeline stages,
each running one micro-batch (``1 / pp`` of the sequences and prompt tokens, but
a prompt's chunk whole: the token budget is a micro-batch's, so a round takes
``pp`` budgets, and a lone prompt passes the stages one after another), so it
lasts ``pp`` stage iterations of :func:`~lightspeed.sol.infer.iteration.iteration_cost`
of its largest micro-batch (the analytic model's ``TPOT = pp x step`` too). Nothing
here adds a constant: the seconds are the engine's, evaluated on the shape the
scheduler formed.

Shapes are bucketed so that a run evaluates the cost model a few hundred times,
not once per iteration: mean decode context and prompt tokens to 1/16 of an
octave (within 2.2%), the prompts' attended context to 1/8 (4.4%; it only moves
prefill attention); decoding sequences are exact. A miss evaluates a whole row
(every decode count up to the rank's cap, at most 512; past it the next 512) in one
vectorized call; where every shape is looked up whole (below), a segment of 32 counts
around the batch (a run there meets thousands of shapes, each at few batch sizes: the
DeepSeek-R1 MLPerf Offline run on eight B200 with attention DP evaluates 6,400 segments,
to the same figure as whole rows in about two thirds of their CPU time:
``benchmarks/timing_segments.py``).

A decode-only iteration is one row lookup, its seconds then kept by shape (its
buckets and its exact decoding sequences), so most iterations cost one dict lookup.
An iteration with prompt tokens uses the engine's own additivity: its parts are sums
of per-operation times, so the time is the engine's launch and host time on top of
``busy`` = the row of its prompt tokens at a reference context, plus what its decode
context changes (from the decode rows), plus what its prompts' attended context
changes (prefill attention, computed per prompt bucket). Where the parts do not add (two-batch
overlap hides the all-to-all behind the rest) and with attention data
parallelism, every shape is looked up whole.

With attention data parallelism the shape is the busiest rank's: its decoding
sequences, their context and its prompt tokens set the attention work, the
whole stage's tokens the MoE layers' (the iteration waits for the slowest rank
at every MoE dispatch). Where requests land is thus simulated, and so is which
EP rank gets the most routed tokens (the routing skew of ``sol/core/routing.py``,
applied by the iteration cost); the serving stack's fitted
``attention_dp_efficiency`` still applies on top (as its own part of the iteration,
``attention_dp_pace``), because the two explain little of
it: on the published DeepSeek-R1 rows (I101, I102) the busiest rank's pace is 4-6%
below the even spread and the routing skew moves the fitted pace from 0.5125 to 0.5375
(``docs/serving.md``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lightspeed.sol.infer.inference_hardware import InferenceHardware
from lightspeed.sol.infer.iteration import IterationCost, IterationGrid, iteration_cost
from lightspeed.sol.infer.per_gpu import stage_kernels
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve.speculation import AcceptanceProcess
from lightspeed.workload import TransformerSpec

Array = Any
CONTEXT_PER_OCTAVE = 16
PROMPT_PER_OCTAVE = 16
PROMPT_CONTEXT_PER_OCTAVE = 8
INITIAL_ROW = 512  # decode counts per row, at most (a batch past it looks up the next segment)
EXACT_SEGMENT = 32  # ... where every shape is looked up whole: its many shapes each see few counts
REFERENCE_CONTEXT = 1024.0  # context of the prompt rows; the decode rows correct it
MAX_PROMPT_CONTEXT_BUCKET = 8 * 28  # attended contexts up to 2^28 tokens
_INVERSE_LN2 = 1.0 / math.log(2.0)


def bucket(value: float, per_octave: int) -> int:
    """0 for values below 1, else ``1 + round(log2(value) x per_octave)``."""
    if value < 1.0:
        return 0
    return int(math.log(value) * _INVERSE_LN2 * per_octave + 0.5) + 1


def stage_tokens(tokens: float, pp: int) -> float:
    """Tokens one pipeline stage holds per stage iteration: ``tokens / pp``, never below one token
    where there are any. A micro-batch of a fraction of a token does not exist: a round with fewer
    tokens than stages runs whole tokens through the stages one after another, each stage iteration
    on at least one token (0 where there are none)."""
    if tokens <= 0.0:
        return 0.0
    return max(tokens / pp, 1.0)


def bucket_center(index: int, per_octave: int) -> float:
    """The value a bucket stands for (0 for bucket 0)."""
    return 0.0 if index == 0 else 2.0 ** ((index - 1) / per_octave)


def _busy_s(cost: IterationCost) -> Array:
    """Seconds of a stage iteration's roofline work: everything but the kernels' fixed time and host time."""
    parts = cost.parts
    return cost.time_s - parts["launch"] - parts["host"]


class IterationTimer:
    """Seconds of one replica iteration for a batch shape (see the module docstring).

    ``max_sequences`` is the most sequences one attention rank decodes (the length of a row, up
    to :data:`INITIAL_ROW`; a batch past it looks up the next segment). ``lookups`` counts
    shapes asked, ``evaluations`` calls of the cost model.
    """

    def __init__(
        self,
        *,
        model: TransformerSpec,
        hardware: InferenceHardware,
        plan: InferencePlan,
        max_sequences: int,
        speculation: AcceptanceProcess | None = None,
    ) -> None:
        self.model = model
        self.hardware = hardware
        self.plan = plan
        self.pp = plan.pp
        self.ranks = plan.dp_attention
        self.query_tokens = 1.0 if speculation is None else float(speculation.num_draft_tokens + 1)
        self.draft_steps = (
            0.0 if speculation is None else speculation.num_draft_tokens * speculation.draft_cost_fraction
        )
        self.exact = self.ranks > 1 or self.hardware.serving.two_batch_overlap
        row_length = min(max(-(-max_sequences // self.pp), 1), INITIAL_ROW) + 1
        self.segment_length = EXACT_SEGMENT if self.exact else row_length
        # launch_and_host_s's constants for a round of pp stage iterations (it is homogeneous:
        # pp stage iterations of busy / pp take pp times its terms), applied per lookup in Python
        kernels = float(np.asarray(stage_kernels(model, float(self.pp))))
        serving = self.hardware.serving
        self.kernel_s = self.pp * kernels * self.hardware.floors.gpu_kernel_s
        # the host's issue of every kernel, paid where it issues them (ServingStack.issues_kernels:
        # every step without CUDA graphs, else a step with more prompt tokens than graphs cover)
        self.issue_s = self.pp * kernels * self.hardware.hardware.efficiency.kernel_launch_s
        self.serving = serving
        self.decode_issued = float(serving.issues_kernels(0.0, 1.0))
        self.host_s = self.pp * serving.iteration_overhead_s
        self.host_per_sequence_s = serving.host_per_sequence_s
        self.overlap = serving.overlap_scheduler
        self.reference_bucket = bucket(REFERENCE_CONTEXT, CONTEXT_PER_OCTAVE)
        # replica_s's kernel and issue seconds of a step without and with decoding sequences (these
        # run the draft steps' kernels too), derived once: seconds() asks them on every call
        decoding_kernels = 1.0 + self.draft_steps
        self._kernel_s = (self.kernel_s, self.kernel_s * decoding_kernels)
        self._issue_s = (self.issue_s, self.issue_s * decoding_kernels)
        self._issues_kernels = serving.issues_kernels
        self._rows: dict[tuple[int, ...], list[float]] = {}
        self._prompt_context: dict[int, tuple[list[float], int]] = {}
        # a decode-only iteration's seconds by (context bucket, stage-token bucket, decoding
        # sequences): the whole answer of most calls, looked up once bucketed
        self._decode_seconds: dict[tuple[int, int, int], float] = {}
        self.lookups = 0
        self.evaluations = 0

    def _grid(
        self,
        decode: Array,
        *,
        context: float,
        query: float,
        prefill: Array,
        prompt_context: Array,
        total_tokens: float | None = None,
    ) -> IterationGrid:
        plan = self.plan
        ones = np.ones(np.broadcast(decode, prefill, prompt_context).shape)
        group_decode = None
        if total_tokens is not None:  # decode = the busiest rank's; the stage's tokens are total_tokens
            group_decode = decode * ones
            decode = np.maximum(total_tokens - prefill, 0.0) / query
        return IterationGrid(
            tp=plan.tp * ones,
            pp=plan.pp * ones,
            ep=plan.ep * ones,
            dp_attention=plan.dp_attention * ones,
            decode_sequences=decode * ones,
            query_tokens=query * ones,
            decode_context=context * ones,
            prefill_tokens=prefill * ones,
            prefill_context=prompt_context * ones,
            prefill_requests=np.where(np.asarray(prefill) > 0, 1.0, 0.0) * ones,
            group_prefill_tokens=prefill * ones,
            expert_imbalance=(plan.expert_imbalance or 0.0) * ones,  # 0: the routing skew
            physical_experts=float(plan.num_physical_experts or 0) * ones,
            group_decode_sequences=group_decode,
            group_decode_context=None if group_decode is None else context * ones,
        )

    def _busy(self, grid: IterationGrid) -> Array:
        self.evaluations += 1
        with np.errstate(invalid="ignore", divide="ignore"):  # the empty batch of row 0
            return _busy_s(iteration_cost(grid, self.model, self.hardware)) * self.pp

    def _row(self, key: tuple[int, ...]) -> list[float]:
        """Busy seconds per replica iteration for ``self.segment_length`` decoding sequences per
        micro-batch from ``segment x self.segment_length`` on, at (context, prompt tokens, attended
        context, stage tokens, segment) buckets ``key`` (drafting included)."""
        context_bucket, prompt_bucket, prompt_context_bucket, total_bucket, segment = key
        context = bucket_center(context_bucket, CONTEXT_PER_OCTAVE)
        prefill = bucket_center(prompt_bucket, PROMPT_PER_OCTAVE)
        prompt_context = bucket_center(prompt_context_bucket, PROMPT_CONTEXT_PER_OCTAVE)
        total = bucket_center(total_bucket, PROMPT_PER_OCTAVE) if self.ranks > 1 else None
        first = segment * self.segment_length
        decode = np.arange(first, first + self.segment_length, dtype=np.float64)
        busy = self._busy(
            self._grid(
                decode,
                context=context,
                query=self.query_tokens,
                prefill=prefill,
                prompt_context=prompt_context,
                total_tokens=total,
            )
        )
        if self.draft_steps:
            plain_total = None if total is None else (total - prefill) / self.query_tokens
            drafts = self._busy(
                self._grid(
                    decode,
                    context=context,
                    query=1.0,
                    prefill=0.0,
                    prompt_context=0.0,
                    total_tokens=plain_total,
                )
            )
            # no decoding sequence, no draft: a prompt-only step's row 0 (an empty draft batch is
            # not a number)
            busy = busy + self.draft_steps * np.where(decode > 0, drafts, 0.0)
        return [float(value) for value in np.asarray(busy, dtype=np.float64)]

    def _lookup(self, key: tuple[int, ...], micro: int) -> float:
        segment, offset = divmod(micro, self.segment_length)
        at = (*key, segment)
        return (self._rows.get(at) or self._stored_row(at))[offset]

    def _stored_row(self, at: tuple[int, ...]) -> list[float]:
        """:meth:`_row` of ``at``, kept for the lookups after (a row is never empty)."""
        row = self._rows[at] = self._row(at)
        return row

    def _prompt_context_column(self, prompt_bucket: int) -> tuple[list[float], int]:
        """(busy seconds of a prompt bucket alone at every attended-context bucket, the bucket of
        its reference context: half the prompt)."""
        prefill = bucket_center(prompt_bucket, PROMPT_PER_OCTAVE)
        contexts = np.asarray(
            [bucket_center(index, PROMPT_CONTEXT_PER_OCTAVE) for index in range(MAX_PROMPT_CONTEXT_BUCKET)]
        )
        column = [
            float(value)
            for value in self._busy(
                self._grid(0.0, context=0.0, query=1.0, prefill=prefill, prompt_context=contexts)
            )
        ]
        entry = self._prompt_context[prompt_bucket] = (
            column,
            bucket(prefill / 2.0, PROMPT_CONTEXT_PER_OCTAVE),
        )
        return entry

    def seconds(
        self,
        decode_sequences: int,
        decode_context: float,
        prefill_tokens: float,
        prompt_context: float,
        total_tokens: float = 0.0,
    ) -> float:
        """One replica iteration: ``decode_sequences`` sequences (of the busiest rank) at a mean
        ``decode_context``, beside ``prefill_tokens`` prompt tokens attending ``prompt_context`` on
        average; ``total_tokens`` is the whole stage's token count (attention DP only). With
        pipeline stages ``prefill_tokens`` is what the round's largest micro-batch sets
        (``Engine._shape``: a prompt's chunk is never split over micro-batches)."""
        self.lookups += 1
        context = bucket(decode_context, CONTEXT_PER_OCTAVE) if decode_sequences else 0
        total = bucket(stage_tokens(total_tokens, self.pp), PROMPT_PER_OCTAVE) if self.ranks > 1 else 0
        micro = -(-decode_sequences // self.pp)  # decoding sequences per micro-batch
        key = None  # of a decode-only shape, whose seconds are kept
        if not prefill_tokens:
            decode_key = (context, total, decode_sequences)
            answer = self._decode_seconds.get(decode_key)
            if answer is not None:
                return answer
            key = decode_key
            busy = self._lookup((context, 0, 0, total), micro)
            issued = self.decode_issued
        else:
            stage_prefill = stage_tokens(prefill_tokens, self.pp)
            prompt = bucket(stage_prefill, PROMPT_PER_OCTAVE)
            if self.exact:
                at = (context, prompt, bucket(prompt_context, PROMPT_CONTEXT_PER_OCTAVE), total)
                busy = self._lookup(at, micro)
            else:
                busy = self._prompt_busy(micro, context, prompt, prompt_context)
            issued = float(self._issues_kernels(stage_prefill, micro + stage_prefill))
        seconds = self.replica_s(busy, float(decode_sequences), issued)
        if not 0.0 < seconds < math.inf:  # NaN fails both comparisons
            raise FloatingPointError(
                f"internal error: the iteration cost of {decode_sequences} decoding sequences at context "
                f"{decode_context:g}, {prefill_tokens:g} prompt tokens attending {prompt_context:g} and "
                f"{total_tokens:g} stage tokens (tp={self.plan.tp} pp={self.pp} dp_attention={self.ranks}) "
                f"is {seconds!r} s, not a positive number of seconds"
            )
        if key is not None:
            self._decode_seconds[key] = seconds
        return seconds

    def _prompt_busy(self, micro: int, context: int, prompt: int, prompt_context: float) -> float:
        """Busy seconds of an iteration with prompt tokens where the parts add (see the module):
        the prompt bucket ``prompt`` alone at its attended context, plus what ``micro`` decoding
        sequences per micro-batch at context bucket ``context`` add beside it."""
        entry = self._prompt_context.get(prompt) or self._prompt_context_column(prompt)
        column, half = entry
        busy = column[min(bucket(prompt_context, PROMPT_CONTEXT_PER_OCTAVE), MAX_PROMPT_CONTEXT_BUCKET - 1)]
        if micro:  # three rows at the same decode count: one segment, one offset
            segment, offset = divmod(micro, self.segment_length)
            reference, rows, stored = self.reference_bucket, self._rows, self._stored_row
            prompt_at = (reference, prompt, half, 0, segment)
            decode_at = (context, 0, 0, 0, segment)
            reference_at = (reference, 0, 0, 0, segment)
            busy += (
                (rows.get(prompt_at) or stored(prompt_at))[offset]
                - column[half]
                + (rows.get(decode_at) or stored(decode_at))[offset]
                - (rows.get(reference_at) or stored(reference_at))[offset]
            )
        return busy

    def replica_s(self, busy: float, sequences: float = 0.0, issued: float | None = None) -> float:
        """A replica iteration of ``busy`` roofline seconds (``pp`` stage iterations) over
        ``sequences`` decoding sequences (the busiest rank's) with the engine's kernel, launch and
        host time: :func:`~lightspeed.sol.infer.iteration.launch_and_host_s` on scalars
        (``tests/sol/serve/test_serve_timing.py`` holds the two equal). A step that decodes with
        drafts also runs the draft steps' kernels (``busy`` holds their roofline work), each at the
        fixed time and issue of a decode step's kernels times the draft cost fraction."""
        decoding = sequences > 0
        gpu = busy + self._kernel_s[decoding]
        host = self.host_s + self.host_per_sequence_s * sequences
        issue = self._issue_s[decoding] * (self.decode_issued if issued is None else issued)
        if self.overlap:
            return max(gpu, issue + host)
        return max(gpu, issue) + host


__all__ = ["IterationTimer", "bucket", "bucket_center", "stage_tokens"]

"""The event loop: requests through a router, replica schedulers and KV block pools.

Events are iteration ends of replicas and KV transfers between pools, in one
heap, merged with the (sorted) open-loop arrivals. A replica runs one
iteration at a time and forms the next at the end of the last
(continuous batching, Orca/vLLM/Sarathi-Serve):

1. **decode first**: every decoding sequence of every rank takes part (one
   token each, or a verify pass under speculation); with an on-demand KV
   cache, sequences that would overflow their rank's blocks preempt the most
   recently admitted ones first (recompute: back to the front of the queue;
   swap: copied to host memory, the copy time added to the iteration);
2. **prompts fill the token budget**: partly prefilled prompts continue in
   arrival order, then waiting requests are admitted while the rank's token
   budget, sequence cap and KV blocks allow (first come, first served: a
   request that does not fit stops admission, as vLLM's scheduler does), each
   placed on a rank by the router; a prompt longer than the budget left runs in
   chunks over several iterations (chunked prefill);
3. the iteration lasts what the execution-time model says for that shape.

With an **overlap scheduler** (``ServingStack.overlap_scheduler``: TensorRT-LLM's PyTorch
backend, SGLang from 0.3.6) the host forms and launches iteration n+1 while the GPU still runs
iteration n, and handles n's outputs after: a request that arrives while a step runs misses the
iteration already formed and joins the one after ("The optimization introduces one extra
decoding step", TensorRT-LLM docs/source/features/overlap-scheduler.md; SGLang pull request #2067,
"we delayed the processing of the first batch in favor of launching the kernels for the next batch
first"), so under load its first token comes about one step later than without. An iteration
formed when the replica was idle, or that would otherwise run nothing, takes every request waiting.

With **separate prefill steps** (``SimulatedDeployment.separate_prefill``: the
default schedulers of vLLM V0 and SGLang) a step that takes prompts takes them
alone: the whole budget is the prompts' (``whole_prompts``, vLLM V0: a prompt is
admitted only while it fits what is left; else chunks of it, SGLang), no decode
runs or advances in it, and the pause it makes is added to the next token gap of
every sequence it held back (the ITL, TPOT and end-to-end latency all see it).

No per-token state is kept: a replica counts its decode steps, and a decoding
sequence is (join step, context at join, passes left); its context, the rank's
context sum and KV use follow from the step count. A request's completion is a
heap entry keyed by the step it finishes on. Work per iteration is constant
plus a little per request that starts, finishes or moves.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from lightspeed.errors import InvalidPlanError
from lightspeed.sol.serve.deployment import SimulatedDeployment
from lightspeed.sol.serve.engine_state import (
    BALANCED_COLUMN,
    DECODE,
    DONE,
    PREFILL,
    QUEUE_COLUMN,
    QUEUE_PEAK_COLUMN,
    SECONDS_COLUMN,
    STEPS_COLUMN,
    SWAPPED,
    TRANSFER,
    WAITING,
    EngineOutput,
    RankState,
    ReplicaState,
)
from lightspeed.sol.serve.speculation import verify_passes
from lightspeed.sol.serve.workload import Requests

ITERATION_END, KV_ARRIVAL = 0, 1
# Preemptions a run may make per request before it is called thrashing: a deployment whose KV
# cache cannot hold the sequences it admits preempts each one over and over (a request is
# preempted a handful of times at most on a loaded real server); the run stops with the reason
# instead of simulating without end.
MAX_PREEMPTIONS_PER_REQUEST = 100


# The balanced attention-DP iteration is priced on one iteration of several ranks in this many (the
# first included): the speed-up is a ratio of sums, which a regular sample of the run estimates
BALANCE_SAMPLE_EVERY: Final = 8


class Engine:
    """One simulated run of ``deployment`` over ``requests`` (call :meth:`run` once)."""

    def __init__(self, deployment: SimulatedDeployment, requests: Requests, seed: int) -> None:
        self.deployment = deployment
        count = requests.num_requests
        self._read_scheduler(deployment)
        self.local_kv = deployment.local_kv  # admission sized by what local layers really hold
        speculation = deployment.speculation
        self.growth = 1.0 if speculation is None else speculation.expected_tokens_per_pass
        decode_tokens = np.maximum(requests.output_tokens - 1, 0)
        if speculation is None:
            passes = decode_tokens
        else:
            rng = np.random.Generator(np.random.PCG64([seed, 1]))
            passes = verify_passes(speculation, decode_tokens, rng)
        self.arrival = requests.arrival_s.tolist()
        self.input = requests.input_tokens.tolist()
        self.output = requests.output_tokens.tolist()
        self.passes_left = passes.tolist()
        self.prefill_length = self.input[:]
        self.prefill_done = requests.cached_tokens.tolist()
        self.first = [math.nan] * count
        self.finish = [math.nan] * count
        self.state = [WAITING] * count
        self.epoch = [0] * count
        self.join_step = [0] * count
        self.join_context = [0.0] * count
        self.replica_of = [0] * count
        self.entered = [0.0] * count  # when the request last reached a pool's queue
        self.held = [0.0] * count  # KV tokens held from admission (reserve) or for the prompt (on-demand)
        self.join_kv = [0.0] * count  # local layers: (KV at join - slope x join step), its slope
        self.join_slope = [0.0] * count
        self.reserved_cache: dict[float, float] = {}
        self.rank_for: list[RankState | None] = [None] * count
        self.transfer_s = (
            deployment.kv_transfer_s(requests.input_tokens).tolist() if deployment.plan.disaggregated else []
        )
        self.concurrency = requests.concurrency
        self.next_closed = requests.concurrency or 0
        self._build_replicas()
        self.events: list[tuple[float, int, int, int, int]] = []
        self.sequence = 0
        self.records: list[float] = []  # RECORD_WIDTH values per iteration, flat (one array at the end)

        self.num_waiting = 0
        # the waiting count integrated over time (request-seconds) up to queue_clock: an
        # iteration's queue is its mean over the iteration, the arrivals during it counted from
        # when they came (a snapshot when it is formed misses them: M/D/1's queue read ~22% low)
        self.queue_area = 0.0
        self.queue_clock = 0.0
        self.num_running = 0
        self.num_preemptions = 0
        self.num_swaps = 0
        self.prompt_tokens = 0.0  # of the iteration being formed
        self.balance = 1.0  # of the iteration being formed: mean tokens per rank over the busiest's
        # of the iteration being formed: its shape with the tokens spread evenly over the
        # attention-DP ranks (None with one rank; see _shape)
        self.even: tuple[int, float, float, float, float] | None = None
        self.balance_samples = 0  # iterations of several ranks formed (see _balanced_s)
        self.chunks: list[tuple[RankState, float, float]] = []  # (rank, tokens, attended context x tokens)

    def _read_scheduler(self, deployment: SimulatedDeployment) -> None:
        """The scheduler's switches and caps (see the module)."""
        config = deployment.scheduler
        self.reserve = deployment.kv_policy == "reserve"
        # an on-demand server admits a prompt only while a share of its blocks stays free (vLLM V0)
        watermark = 0.0 if self.reserve else deployment.hardware.serving.admission_watermark
        self.admit_below = 1.0 - watermark
        self.swap = config.preemption == "swap"
        self.round_robin = config.router == "round-robin"
        self.block = config.block_tokens
        self.separate = deployment.separate_prefill
        self.whole = deployment.whole_prompts
        # an overlap scheduler forms the next iteration while the GPU runs this one: a request
        # that comes meanwhile waits for the iteration after (see the module)
        self.ahead = deployment.timer.overlap

    def _build_replicas(self) -> None:
        deployment = self.deployment
        pool = deployment.pool
        if deployment.plan.disaggregated is None:
            self.front = [ReplicaState(i, "both", pool) for i in range(deployment.plan.replicas)]
            self.back = self.front
        else:
            prefill, decode = deployment.plan.disaggregated
            prefill_pool = deployment.prefill_pool or pool
            self.front = [ReplicaState(i, "prefill", prefill_pool) for i in range(prefill)]
            self.back = [ReplicaState(prefill + i, "decode", pool) for i in range(decode)]
        self.route_counter = {id(self.front): 0, id(self.back): 0}

    # --- the loop ---------------------------------------------------------------------------

    def run(self, horizon_s: float = math.inf) -> EngineOutput:
        """Simulate until every request has completed, or until ``horizon_s`` (later events are
        left undone: their requests stay in flight)."""
        arrival = self.arrival
        open_loop = self.concurrency is None
        # a closed loop starts min(users, requests) requests; each completion sends the next
        order = range(len(arrival)) if open_loop else range(min(self.concurrency or 0, len(arrival)))
        pointer, stop = 0, len(order)
        events = self.events
        while True:
            next_arrival = arrival[order[pointer]] if pointer < stop else math.inf
            if min(next_arrival, events[0][0] if events else math.inf) > horizon_s:
                break
            if events and events[0][0] <= next_arrival:
                time, _, kind, subject, version = heapq.heappop(events)
                self._advance(time)
                if kind == KV_ARRIVAL:
                    self._enter(subject, time, self.back)
                    continue
                replica = self._replica(subject)
                if version == replica.version:
                    self._end(replica, time)
            elif pointer < stop:
                self._advance(next_arrival)
                pointer = self._arrive_together(order, pointer, stop, next_arrival)
            else:
                break
        return self._output()

    def _advance(self, time: float) -> None:
        """Integrate the waiting count up to ``time`` (before anything at ``time`` changes it)."""
        self.queue_area += self.num_waiting * (time - self.queue_clock)
        self.queue_clock = time

    def _queue_area_at(self, time: float) -> float:
        """The waiting count's integral up to ``time`` (at or after the last event handled)."""
        return self.queue_area + self.num_waiting * (time - self.queue_clock)

    def _close_queue(self, replica: ReplicaState, time: float) -> None:
        """The running iteration of ``replica`` ends at ``time``: its queue becomes the mean over
        it (a Poisson arrival waits the rest of the iteration it comes in), its peak the more of
        the queue at its start and now (between the two only arrivals add to it)."""
        records, start = self.records, replica.record
        snapshot = records[start + QUEUE_COLUMN]
        seconds = time - replica.started
        if seconds > 0.0:
            records[start + QUEUE_COLUMN] = (self._queue_area_at(time) - replica.queue_area) / seconds
        records[start + QUEUE_PEAK_COLUMN] = max(snapshot, float(self.num_waiting))

    def _arrive_together(self, order: Sequence[int], pointer: int, stop: int, time: float) -> int:
        """Let in every request arriving at ``time``; the next pointer. An open loop's requests
        sent at the same instant (a trace's burst, every request at once, MLPerf Offline's one
        query) meet in one scheduling pass. A closed loop's users start one after another (a
        benchmark client opens its streams in turn, each request parsed and tokenized by the
        server's front end before the next), so an idle replica starts its first iteration on
        the first of them and the others wait for it: with identical requests the users then
        keep that offset, as they do on a real server, instead of running in lockstep."""
        arrival, touched = self.arrival, {}
        one_by_one = self.concurrency is not None
        while pointer < stop and arrival[order[pointer]] == time:
            replica = self._enter(order[pointer], time, self.front, start=one_by_one)
            if not one_by_one:
                touched[replica.index] = replica
            pointer += 1
        for replica in touched.values():
            self._wake(replica, time)
        return pointer

    def _replica(self, index: int) -> ReplicaState:
        front = self.front
        return front[index] if index < len(front) else self.back[index - len(front)]

    def _push(self, time: float, kind: int, subject: int, version: int = 0) -> None:
        self.sequence += 1
        heapq.heappush(self.events, (time, self.sequence, kind, subject, version))

    def _route(self, pool: list[ReplicaState]) -> ReplicaState:
        if len(pool) == 1:
            return pool[0]
        if self.round_robin:
            key = id(pool)
            counter = self.route_counter[key]
            self.route_counter[key] = counter + 1
            return pool[counter % len(pool)]
        return min(pool, key=lambda replica: replica.in_flight)

    def _enter(
        self, request: int, time: float, pool: list[ReplicaState], *, start: bool = True
    ) -> ReplicaState:
        """A request arrives at a pool (or its KV cache arrives at the decode pool); with ``start``,
        its replica starts an iteration if idle (or cuts a run of decode steps short)."""
        replica = self._route(pool)
        replica.in_flight += 1
        self.replica_of[request] = replica.index
        self.entered[request] = time
        replica.waiting.append(request)
        self.num_waiting += 1
        if start:
            self._wake(replica, time)
        return replica

    def _wake(self, replica: ReplicaState, time: float) -> None:
        """A request is waiting at ``replica``: start an iteration if it is idle, else cut its run
        of decode steps at the next step boundary."""
        if not replica.busy:
            self._start(replica, time)
        elif replica.stride > 1:
            self._split(replica, time)

    def _split(self, replica: ReplicaState, time: float) -> None:
        """Cut a run of decode steps at the first step boundary after ``time`` (a request has come)."""
        per_step = replica.duration / replica.stride
        done = max(math.ceil((time - replica.started) / per_step - 1e-9), 1)
        if done >= replica.stride:
            return
        records, start = self.records, replica.record
        records[start + BALANCED_COLUMN] *= done / replica.stride
        replica.stride = done
        replica.duration = done * per_step
        replica.version += 1
        self._push(replica.started + replica.duration, ITERATION_END, replica.index, replica.version)
        records[start + SECONDS_COLUMN] = replica.duration
        records[start + STEPS_COLUMN] = done

    # --- forming an iteration ---------------------------------------------------------------

    def _kv_used(self, rank: RankState, step: int) -> float:
        if self.reserve:
            return rank.used
        if self.local_kv:
            return rank.used + rank.kv_base + rank.kv_slope * step + rank.num_decoding * self.block / 2.0
        growth = self.growth
        return rank.used + rank.context_base + rank.num_decoding * (step * growth + self.block / 2.0)

    def _kv_growth(self, rank: RankState) -> float:
        """KV tokens a rank's decoding sequences add per step (on-demand)."""
        return rank.kv_slope if self.local_kv else rank.num_decoding * self.growth

    def _reserved(self, tokens: float) -> float:
        """The most KV (in tokens of a short sequence) a sequence holds on its way to ``tokens``:
        ``tokens`` unless local layers stop at their window or chunk."""
        if not self.local_kv:
            return tokens
        reserved = self.reserved_cache.get(tokens)
        if reserved is None:
            reserved = self.reserved_cache[tokens] = self.deployment.kv_reserved_tokens(tokens)
        return reserved

    def _start(self, replica: ReplicaState, time: float, formed_s: float | None = None) -> None:
        """Form and launch the next iteration of ``replica`` at ``time`` (idle if nothing to run)
        from the requests that had come by ``formed_s`` (default ``time``), when an overlap
        scheduler formed it; with nothing else to run it takes every request there."""
        extra_s = 0.0
        if not self.reserve:
            extra_s += self._make_room(replica)
        if self.swap:
            extra_s += self._resume_swapped(replica)
        budget = self._continue_prompts(replica)
        self._admit(replica, budget, time, time if formed_s is None else formed_s)
        shape = self._shape(replica, budget)
        if shape is None and formed_s is not None and replica.waiting:
            self._admit(replica, budget, time, time)
            shape = self._shape(replica, budget)
        if shape is None:
            replica.busy = False
            return
        duration = replica.seconds(*shape)
        steps = 0 if self.separate and self.chunks else 1  # a prompt-only step advances no decode
        # a queue whose first request found no room waits for a completion (a rank's room only
        # shrinks as its sequences decode), which ends a stretch anyway
        if not (self.chunks or extra_s or (replica.waiting and not replica.blocked)):
            steps, duration = self._stretch(replica, time, duration, shape)
        balanced_s = self._balanced_s(replica, steps, duration)
        duration += extra_s
        replica.busy = True
        replica.stride = steps
        replica.started = time
        replica.duration = duration
        replica.version += 1
        replica.record = len(self.records)
        replica.queue_area = self._queue_area_at(time)
        self._push(time + duration, ITERATION_END, replica.index, replica.version)
        self._record(replica, time, duration, steps, balanced_s + extra_s)

    def _balanced_s(self, replica: ReplicaState, steps: int, duration: float) -> float:
        """Seconds of the iteration being formed with its tokens spread evenly (:meth:`_even_shape`):
        its own with one rank; priced on every ``BALANCE_SAMPLE_EVERY``-th iteration of several
        ranks, the first included, NaN on the others (each pricing may evaluate a new shape's
        iteration cost: on every iteration it made an attention-DP run 1.75x slower)."""
        if self.even is None:
            return duration
        self.balance_samples += 1
        if (self.balance_samples - 1) % BALANCE_SAMPLE_EVERY:
            return math.nan
        return min(self._steps_s(replica, self.even, steps), duration)

    def _stretch(
        self, replica: ReplicaState, time: float, duration: float, shape: tuple[Any, ...]
    ) -> tuple[int, float]:
        """(decode steps, seconds) to run at once while nothing can change the batch: no prompt,
        nobody waiting, no completion before the next finish step, no arrival (or, when replicas
        feed each other, no event elsewhere) before it ends, no KV overflow. The steps' context
        grows linearly, so their time is the mean of the first and the last (trapezoid). A request
        that reaches the replica meanwhile cuts the run short (:meth:`_split`)."""
        finishing = replica.finishing
        if not finishing or (self.swap and any(rank.swapped for rank in replica.ranks)):
            return 1, duration
        limit = finishing[0][0] - replica.step
        if not self.reserve:
            step = replica.step
            for rank in replica.ranks:
                grow = self._kv_growth(rank)
                if grow > 0:
                    limit = min(limit, 1 + int((rank.capacity - self._kv_used(rank, step + 1)) // grow))
        if limit <= 1:
            return 1, duration
        return limit, self._steps_s(replica, shape, limit, duration)

    def _steps_s(
        self, replica: ReplicaState, shape: tuple[Any, ...], steps: int, first_s: float | None = None
    ) -> float:
        """Seconds of ``steps`` decode steps from ``shape`` (one step, or a prompt-only step, for
        ``steps`` under 2), its first step's ``first_s`` if known: the context grows linearly, so
        the steps take the mean of the first and the last (trapezoid)."""
        first = replica.seconds(*shape) if first_s is None else first_s
        if steps <= 1:
            return first
        decoding, context, prompt, attended, total = shape
        last = replica.seconds(decoding, context + (steps - 1) * self.growth, prompt, attended, total)
        return steps * (first + last) / 2.0

    def _continue_prompts(self, replica: ReplicaState) -> list[float]:
        """Token budget left per rank after decodes and the chunks of prompts in progress;
        fills ``replica.pending`` with the prompts this iteration completes and ``self.chunks``."""
        budgets = []
        self.chunks = []
        replica.pending = []
        budget, query = replica.max_batched_tokens, replica.query_tokens
        separate = self.separate
        for rank in replica.ranks:
            left = budget - (0.0 if separate else rank.num_decoding * query)
            for request in rank.prefilling:
                if left <= 0:
                    break
                left -= self._chunk(replica, rank, request, left)
            budgets.append(left)
        return budgets

    def _chunk(self, replica: ReplicaState, rank: RankState, request: int, left: float) -> float:
        done = self.prefill_done[request]
        tokens = min(self.prefill_length[request] - done, left, replica.max_chunk_tokens)
        if tokens <= 0:
            return 0.0
        self.prefill_done[request] = done + tokens
        self.chunks.append((rank, tokens, tokens * (done + tokens / 2.0)))
        if done + tokens >= self.prefill_length[request]:
            replica.pending.append((request, rank))
        return float(tokens)

    def _admission_need(self, replica: ReplicaState, request: int) -> float:
        """KV tokens (whole blocks) a request takes on admission: its prompt (on-demand), its
        prompt and output (reserve); a transferred sequence its context now (+ output: reserve);
        and a hybrid's Mamba-2 state, held whatever the length, in tokens of the cache. Local
        attention layers count the most they hold on the way to that length (:meth:`_reserved`:
        a whole chunk of a Llama 4 chunked layer once the length reaches it, not the few tokens
        of the chunk the last token starts)."""
        block = self.block
        if replica.role == "decode":
            tokens = self.input[request] + (self.output[request] if self.reserve else 1)
        elif self.reserve:
            tokens = self.prefill_length[request] + self.output[request]
        else:
            tokens = self.prefill_length[request]
        if self.local_kv:
            tokens = self._reserved(tokens)
        tokens += replica.state_tokens
        return float(-(-tokens // block) * block)

    def _pick_rank(
        self, replica: ReplicaState, budgets: list[float], need: float, prompt: float
    ) -> int | None:
        """The rank the router places a request on (``None``: no rank has room for it now); with
        whole-prompt steps a rank takes a ``prompt``-token prompt only whole, unless its budget
        is untouched (a prompt longer than the budget then runs in chunks: ``simulate`` refuses
        such a prompt before it runs, as vLLM V0 does)."""
        ranks, step, best = replica.ranks, replica.step, None
        transfer = replica.role == "decode"
        whole = self.whole and not transfer
        max_sequences, round_robin, admit_below = replica.max_sequences, self.round_robin, self.admit_below
        whole_prompt = min(prompt, replica.max_chunk_tokens) if whole else 0.0
        count = len(ranks)
        for offset in range(count):
            index = (replica.rank_pointer + offset) % count if round_robin else offset
            rank = ranks[index]
            if rank.num_sequences >= max_sequences or (budgets[index] <= 0 and not transfer):
                continue
            if whole and budgets[index] < whole_prompt:
                continue
            if self._kv_used(rank, step + 1) + need > rank.capacity * admit_below:
                continue
            if round_robin:
                replica.rank_pointer = index + 1
                return index
            if best is None or rank.num_sequences < ranks[best].num_sequences:
                best = index
        return best

    def _admit(self, replica: ReplicaState, budgets: list[float], time: float, formed_s: float) -> None:
        """Admit waiting requests in arrival order while a rank has room (see the module), those
        that had come by ``formed_s``."""
        waiting, entered = replica.waiting, self.entered
        replica.blocked = False
        while waiting:
            request = waiting[0]
            if entered[request] > formed_s:
                return
            need = self._admission_need(replica, request)
            prompt = self.prefill_length[request] - self.prefill_done[request]
            index = self._pick_rank(replica, budgets, need, prompt)
            if index is None:
                replica.blocked = True
                return
            rank = replica.ranks[index]
            waiting.popleft()
            self.num_waiting -= 1
            self.num_running += 1
            rank.num_sequences += 1
            rank.running.append(request)
            self.rank_for[request] = rank
            self.epoch[request] += 1
            if replica.role == "decode":
                if self.reserve:
                    rank.used += need
                    self.held[request] = need
                self._join(replica, rank, request, float(self.input[request] + 1))
                if math.isnan(self.first[request]):
                    self.first[request] = time
                continue
            rank.used += need
            self.held[request] = need
            self.state[request] = PREFILL
            rank.prefilling.append(request)
            if budgets[index] > 0:
                budgets[index] -= self._chunk(replica, rank, request, budgets[index])

    def _shape(
        self, replica: ReplicaState, budgets: list[float]
    ) -> tuple[int, float, float, float, float] | None:
        """(decoding sequences, their mean context, prompt tokens, prompts' attended context,
        stage tokens) of the busiest rank, or ``None`` when the replica has nothing to run.

        With ``pp`` pipeline stages the timer spreads the prompt tokens over the round's ``pp``
        micro-batches, but a prompt's chunk is never split (vLLM and TensorRT-LLM schedule it into
        one micro-batch), so the largest micro-batch holds at least the largest chunk: the prompt
        tokens given are at least ``pp`` x it. A lone prompt thus passes the stages one after
        another (its TTFT is its whole prefill, as the analytic model has it); a round of many
        chunks is the even spread."""
        ranks = replica.ranks
        query = replica.query_tokens
        step = replica.step * self.growth
        prompt = {id(rank): [0.0, 0.0] for rank in ranks} if len(ranks) > 1 else None
        total_prompt, total_weighted, largest = 0.0, 0.0, 0.0
        for rank, tokens, weighted in self.chunks:
            total_prompt += tokens
            total_weighted += weighted
            largest = max(largest, tokens)
            if prompt is not None:
                entry = prompt[id(rank)]
                entry[0] += tokens
                entry[1] += weighted
        self.prompt_tokens = total_prompt
        self.balance = 1.0
        self.even = None
        floor = replica.pp * largest if replica.pp > 1 else 0.0  # the largest chunk, whole
        if self.separate and total_prompt:
            return self._prompt_only_shape(ranks, prompt, total_prompt, total_weighted, floor)
        if len(ranks) == 1:
            rank = ranks[0]
            decoding = rank.num_decoding
            if not decoding and not total_prompt:
                return None
            context = (rank.context_base / decoding + step) if decoding else 0.0
            attended = total_weighted / total_prompt if total_prompt else 0.0
            return decoding, context, max(total_prompt, floor), attended, 0.0
        assert prompt is not None
        busiest = max(
            ranks,
            key=lambda rank: (
                prompt[id(rank)][0] + rank.num_decoding * query,
                rank.context_base + rank.num_decoding * step,
            ),
        )
        total = sum(rank.num_decoding for rank in ranks) * query + total_prompt
        if not total:
            return None
        # TensorRT-LLM's attention-DP balance ratio: the ranks' mean tokens over the busiest's
        self.balance = total / len(ranks) / (prompt[id(busiest)][0] + busiest.num_decoding * query)
        self.even = self._even_shape(ranks, step, (total_prompt, total_weighted, floor), total, decode=True)
        decoding = busiest.num_decoding
        context = (busiest.context_base / decoding + step) if decoding else 0.0
        tokens, weighted = prompt[id(busiest)]
        attended = weighted / tokens if tokens else 0.0
        return decoding, context, max(tokens, floor) if tokens else 0.0, attended, total

    def _prompt_only_shape(
        self,
        ranks: list[RankState],
        prompt: dict[int, list[float]] | None,
        total_prompt: float,
        total_weighted: float,
        floor: float,
    ) -> tuple[int, float, float, float, float]:
        """The shape of a separate prompt step: the busiest rank's prompt tokens (at least
        ``floor``: see :meth:`_shape`), no decode."""
        if prompt is None:
            return 0, 0.0, max(total_prompt, floor), total_weighted / total_prompt, 0.0
        tokens, weighted = max(prompt.values())
        self.balance = total_prompt / len(ranks) / tokens
        self.even = self._even_shape(
            ranks, 0.0, (total_prompt, total_weighted, floor), total_prompt, decode=False
        )
        return 0, 0.0, max(tokens, floor), weighted / tokens, total_prompt

    def _even_shape(
        self,
        ranks: list[RankState],
        step: float,
        prompts: tuple[float, float, float],
        total: float,
        *,
        decode: bool,
    ) -> tuple[int, float, float, float, float]:
        """The shape of the iteration being formed with its work spread over the attention-DP
        ranks as evenly as it can be: whole decoding sequences (the mean per rank rounded up: a
        rank cannot hold part of one) at the mean context of all of them (none with ``decode``
        false: a prompt-only step), and the prompt tokens (``prompts``: their sum, attended
        context x tokens, and the pipeline floor of :meth:`_shape`) over as many ranks as there
        are prompts (a prompt's KV cache lives on one rank; the chunks of several can be cut to
        any size); the MoE layers see the same ``total`` stage tokens. Its iteration cost is
        what perfect balance would take: the weights and experts are read whatever the tokens,
        so a lone sequence gains nothing (scaling the time by the balance ratio, TensorRT-LLM's
        "SOL TPS" bookkeeping, would have it 8x faster on 8 ranks)."""
        decoding = sum(rank.num_decoding for rank in ranks) if decode else 0
        context = sum(rank.context_base for rank in ranks) / decoding + step if decoding else 0.0
        prompt_tokens, weighted, floor = prompts
        if not prompt_tokens:
            return -(-decoding // len(ranks)), context, 0.0, 0.0, total
        spread = prompt_tokens / min(len(ranks), len(self.chunks))
        return -(-decoding // len(ranks)), context, max(spread, floor), weighted / prompt_tokens, total

    def _record(
        self, replica: ReplicaState, time: float, duration: float, steps: int, balanced_s: float
    ) -> None:
        """One row per iteration: start, seconds, decoding sequences, prompt tokens, waiting
        (when it is formed; the mean over it once it ends: :meth:`_close_queue`), running, the
        fullest rank's KV use, decode steps, attention-DP balance, the pause that prompt-only
        steps made just before it, how many of its sequences that pause held back, the most
        waiting (:meth:`_close_queue`) and its seconds at perfect attention-DP balance (columns of
        :class:`EngineOutput`)."""
        ranks = replica.ranks
        if len(ranks) == 1:
            rank = ranks[0]
            decoding: float = rank.num_decoding
            used = rank.used if self.reserve else self._kv_used(rank, replica.step)
            kv = used / rank.capacity
        else:
            decoding = sum(rank.num_decoding for rank in ranks)
            kv = max(self._kv_used(rank, replica.step) / rank.capacity for rank in ranks)
        pause = held = 0.0
        if not steps:  # a separate prompt step: its decodes wait for the next step
            replica.paused += duration if decoding else 0.0
            replica.paused_sequence_s += duration * decoding
            decoding = 0.0
        else:
            pause, replica.paused = replica.paused, 0.0
            held_s, replica.paused_sequence_s = replica.paused_sequence_s, 0.0
            held = min(held_s / pause, decoding) if pause > 0.0 else 0.0
        self.records.extend(
            (
                time,
                duration,
                decoding,
                self.prompt_tokens,
                self.num_waiting,
                self.num_running,
                kv,
                steps,
                self.balance,
                pause,
                held,
                self.num_waiting,
                balanced_s,
            )
        )

    # --- ending an iteration ----------------------------------------------------------------

    def _end(self, replica: ReplicaState, time: float) -> None:
        self._close_queue(replica, time)
        replica.step += replica.stride
        step = replica.step
        finishing = replica.finishing
        while finishing and finishing[0][0] <= step:
            _, epoch, request = heapq.heappop(finishing)
            if self.epoch[request] == epoch and self.state[request] == DECODE:
                self._leave_decode(request)
                self._complete(replica, request, time)
        for request, rank in replica.pending:
            self._prompt_done(replica, rank, request, time)
        replica.pending = []
        # an overlap scheduler formed this iteration when the GPU began the last step
        formed_s = time - replica.duration / max(replica.stride, 1) if self.ahead else None
        self._start(replica, time, formed_s)

    def _release(self, rank: RankState, request: int) -> None:
        rank.used -= self.held[request]
        self.held[request] = 0.0

    def _prompt_done(self, replica: ReplicaState, rank: RankState, request: int, time: float) -> None:
        rank.prefilling.remove(request)
        finished = self.passes_left[request] == 0
        # a prefill pool's prompt reaches its user when the decode pool takes it (after the KV
        # transfer), unless it needs no decode step at all
        if math.isnan(self.first[request]) and (finished or replica.role != "prefill"):
            self.first[request] = time
        if not self.reserve or finished or replica.role == "prefill":
            self._release(rank, request)
        if finished:
            rank.num_sequences -= 1
            self._complete(replica, request, time)
        elif replica.role == "prefill":
            rank.num_sequences -= 1
            self.num_running -= 1
            replica.in_flight -= 1
            self.state[request] = TRANSFER
            self._push(time + self.transfer_s[request], KV_ARRIVAL, request)
        else:
            self._join(replica, rank, request, float(self.prefill_length[request]))

    def _join(self, replica: ReplicaState, rank: RankState, request: int, context: float) -> None:
        """Start decoding ``request`` on ``rank`` with ``context`` tokens cached. With local
        attention layers its KV use starts at what it holds at most up to ``context``
        (:meth:`_reserved`, as its admission counted it) and grows by what a token adds: on every
        layer until the context passes the layers' window or chunk, then on the global layers
        only (a chunked layer stays within the whole chunk counted at the start: an upper bound)."""
        step = replica.step
        self.state[request] = DECODE
        self.join_step[request] = step
        self.join_context[request] = context
        rank.num_decoding += 1
        rank.context_base += context - step * self.growth
        if self.local_kv:
            start = self._reserved(context)
            slope = (self._reserved(context + 1.0) - start) * self.growth
            self.join_slope[request] = slope
            self.join_kv[request] = start - step * slope
            rank.kv_slope += slope
            rank.kv_base += self.join_kv[request]
        heapq.heappush(replica.finishing, (step + self.passes_left[request], self.epoch[request], request))

    def _leave_decode(self, request: int) -> RankState:
        rank = self.rank_for[request]
        assert rank is not None
        rank.num_decoding -= 1
        rank.num_sequences -= 1
        rank.context_base -= self.join_context[request] - self.join_step[request] * self.growth
        if self.local_kv:
            rank.kv_slope -= self.join_slope[request]
            rank.kv_base -= self.join_kv[request]
        self._release(rank, request)
        return rank

    def _complete(self, replica: ReplicaState, request: int, time: float) -> None:
        self.state[request] = DONE
        self.finish[request] = time
        self.num_running -= 1
        replica.in_flight -= 1
        if self.concurrency is not None and self.next_closed < len(self.arrival):
            follower = self.next_closed
            self.next_closed += 1
            self.arrival[follower] = time
            self._enter(follower, time, self.front)

    # --- preemption ---------------------------------------------------------------------------

    def _make_room(self, replica: ReplicaState) -> float:
        """Preempt the newest sequences of ranks whose decodes would overflow their KV pool."""
        extra_s = 0.0
        step = replica.step
        for rank in replica.ranks:
            while rank.num_decoding and self._kv_used(rank, step + 1) > rank.capacity:
                extra_s += self._preempt(replica, rank)
        return extra_s

    def _held(self, context: float) -> float:
        """KV a sequence of ``context`` tokens holds now (what a swap copies), in tokens of a short
        sequence."""
        return self.deployment.kv_equivalent_tokens(context) if self.local_kv else context

    def _preempt(self, replica: ReplicaState, rank: RankState) -> float:
        running = rank.running
        while running:
            victim = running.pop()
            state = self.state[victim]
            if state in (DECODE, PREFILL):
                break
        else:  # pragma: no cover - num_decoding > 0 means a running sequence exists
            raise AssertionError("no running sequence to preempt")
        self.num_preemptions += 1
        if self.num_preemptions > MAX_PREEMPTIONS_PER_REQUEST * len(self.arrival):
            raise InvalidPlanError(
                f"the deployment thrashes under this load: {self.num_preemptions:,} preemptions for "
                f"{len(self.arrival):,} requests, its KV cache ({rank.capacity:,.0f} tokens per rank) "
                "preempting what it admits before it can finish; give it more memory (more GPUs per "
                "replica, a lower precision) or cap the sequences it runs (--max-batch)"
            )
        self.epoch[victim] += 1
        if state == PREFILL:
            rank.prefilling.remove(victim)
            rank.num_sequences -= 1
            self._release(rank, victim)
            self.prefill_done[victim] = 0
            return self._requeue(replica, victim)
        done = replica.step - self.join_step[victim]
        context = self.join_context[victim] + done * self.growth
        self.passes_left[victim] -= done
        self._leave_decode(victim)
        if self.swap:
            self.num_swaps += 1
            self.state[victim] = SWAPPED
            self.join_context[victim] = context
            rank.swapped.append(victim)
            self.num_running -= 1
            return self.deployment.swap_s(self._held(context))
        self.prefill_length[victim] = round(context)
        self.prefill_done[victim] = 0
        return self._requeue(replica, victim)

    def _requeue(self, replica: ReplicaState, victim: int) -> float:
        self.state[victim] = WAITING
        replica.waiting.appendleft(victim)
        self.num_waiting += 1
        self.num_running -= 1
        return 0.0

    def _resume_swapped(self, replica: ReplicaState) -> float:
        extra_s = 0.0
        step = replica.step
        for rank in replica.ranks:
            while rank.swapped and rank.num_sequences < replica.max_sequences:
                request = rank.swapped[0]
                context = self.join_context[request]
                growth = self._kv_growth(rank) + self.growth + self.block
                if self._kv_used(rank, step + 1) + self._reserved(context) + growth > rank.capacity:
                    break
                rank.swapped.popleft()
                rank.num_sequences += 1
                rank.running.append(request)
                self.rank_for[request] = rank
                self.num_running += 1
                self.epoch[request] += 1
                self._join(replica, rank, request, context)
                extra_s += self.deployment.swap_s(self._held(context))
        return extra_s

    def waiting_requests(self) -> list[int]:
        """Requests that have arrived and wait for admission (or, in the decode pool, for a slot)."""
        return [request for replica in self._replicas() for request in replica.waiting]

    def _replicas(self) -> list[ReplicaState]:
        return self.front if self.back is self.front else [*self.front, *self.back]

    def _output(self) -> EngineOutput:
        for replica in self._replicas():  # iterations running at a horizon: the queue stays as it is
            if replica.busy:
                self._close_queue(replica, replica.started + replica.duration)
        timers = {id(r.pool.timer): r.pool.timer for r in (*self.front, *self.back)}
        return EngineOutput.from_records(
            self.records,
            (self.arrival, self.first, self.finish, self.input, self.output),
            num_in_flight=sum(1 for state in self.state if state not in (WAITING, DONE))
            + len(self.waiting_requests()),
            num_preemptions=self.num_preemptions,
            num_swaps=self.num_swaps,
            cost_evaluations=sum(timer.evaluations for timer in timers.values()),
        )


__all__ = ["Engine", "EngineOutput"]

"""What the serving engine's event loop keeps and hands back: each attention rank's KV pool and
sequences (:class:`RankState`), each replica's queue and running iteration
(:class:`ReplicaState`), the states a request passes through, and the raw per-request and
per-iteration outcome of a run (:class:`EngineOutput`).

:mod:`lightspeed.sol.serve.engine` runs the loop over them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from lightspeed.sol.serve.deployment import SimulatedPool

Array = Any
WAITING, PREFILL, DECODE, TRANSFER, SWAPPED, DONE = range(6)
RECORD_WIDTH = 13  # values per iteration record (see Engine._record): the iteration_* columns
# columns of a record the engine revisits after writing it (a run of decode steps cut short, the
# queue integrated when the iteration ends)
SECONDS_COLUMN, QUEUE_COLUMN, STEPS_COLUMN, QUEUE_PEAK_COLUMN, BALANCED_COLUMN = 1, 4, 7, 11, 12


@dataclass(frozen=True)
class EngineOutput:
    """Raw outcome of one run: per request and per iteration arrays (seconds, tokens)."""

    arrival_s: Array
    first_token_s: Array
    finish_s: Array
    input_tokens: Array
    output_tokens: Array
    iteration_start_s: Array
    iteration_s: Array
    iteration_decode_sequences: Array
    iteration_prefill_tokens: Array
    iteration_queue: Array  # requests waiting, mean over the iteration (arrivals during it counted)
    iteration_running: Array
    iteration_kv_use: Array
    iteration_steps: Array
    iteration_balance: Array
    iteration_pause_s: Array  # prompt-only steps just before this one that held its decodes back
    # how many of its decoding sequences that pause held back (sequence-seconds held / pause): a
    # sequence whose prompt ran in the pause waited only for the steps after its own
    iteration_paused_sequences: Array
    iteration_queue_peak: Array  # requests waiting at its start or its end, the more
    # seconds it would take with its tokens spread evenly over the attention-DP ranks (whole
    # sequences: Engine._shape), its own seconds without attention DP
    iteration_balanced_s: Array
    num_in_flight: int
    num_preemptions: int
    num_swaps: int
    cost_evaluations: int

    @classmethod
    def from_records(
        cls,
        records: list[float],
        per_request: tuple[list[float], list[float], list[float], list[int], list[int]],
        *,
        num_in_flight: int,
        num_preemptions: int,
        num_swaps: int,
        cost_evaluations: int,
    ) -> EngineOutput:
        """The outcome from a run's flat iteration records (:data:`RECORD_WIDTH` values each, the
        columns the engine writes per iteration) and its per-request lists (arrival, first token
        and finish times, input and output tokens)."""
        table = np.array(records, dtype=np.float64).reshape(-1, RECORD_WIDTH)
        columns = [table[:, column] for column in range(RECORD_WIDTH)]
        arrival, first, finish, inputs, outputs = per_request
        return cls(
            arrival_s=np.asarray(arrival, dtype=np.float64),
            first_token_s=np.asarray(first, dtype=np.float64),
            finish_s=np.asarray(finish, dtype=np.float64),
            input_tokens=np.asarray(inputs, dtype=np.int64),
            output_tokens=np.asarray(outputs, dtype=np.int64),
            iteration_start_s=columns[0],
            iteration_s=columns[1],
            iteration_decode_sequences=columns[2],
            iteration_prefill_tokens=columns[3],
            iteration_queue=columns[4],
            iteration_running=columns[5],
            iteration_kv_use=columns[6],
            iteration_steps=columns[7],
            iteration_balance=columns[8],
            iteration_pause_s=columns[9],
            iteration_paused_sequences=columns[10],
            iteration_queue_peak=columns[11],
            iteration_balanced_s=columns[12],
            num_in_flight=num_in_flight,
            num_preemptions=num_preemptions,
            num_swaps=num_swaps,
            cost_evaluations=cost_evaluations,
        )


class RankState:
    """One attention rank: its KV pool, decoding sequences (as sums) and prompts in progress."""

    __slots__ = (
        "capacity",
        "context_base",
        "kv_base",
        "kv_slope",
        "num_decoding",
        "num_sequences",
        "prefilling",
        "running",
        "swapped",
        "used",
    )

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0.0  # reserved tokens (reserve), or prompt blocks of prefilling requests (on-demand)
        self.num_decoding = 0
        self.num_sequences = 0
        self.context_base = 0.0  # sum of (context at join - join step x growth) of decoding sequences
        # local attention layers (on-demand): the decoding sequences' KV use is kv_base + kv_slope x
        # step, each sequence counted from what it holds at its join (see Engine._join)
        self.kv_base = 0.0
        self.kv_slope = 0.0
        self.prefilling: deque[int] = deque()
        self.running: list[int] = []  # admission order, for last-in-first-out preemption
        self.swapped: deque[int] = deque()


class ReplicaState:
    """One replica: its ranks, queue, running iteration and decode step (the scheduler's view)."""

    __slots__ = (
        "blocked",
        "busy",
        "duration",
        "finishing",
        "in_flight",
        "index",
        "max_batched_tokens",
        "max_chunk_tokens",
        "max_sequences",
        "paused",
        "paused_sequence_s",
        "pending",
        "pool",
        "pp",
        "query_tokens",
        "queue_area",
        "rank_pointer",
        "ranks",
        "record",
        "role",
        "seconds",
        "started",
        "state_tokens",
        "step",
        "stride",
        "version",
        "waiting",
    )

    def __init__(self, index: int, role: str, pool: SimulatedPool) -> None:
        self.index = index
        self.role = role  # "both", "prefill", "decode"
        self.pool = pool  # its ranks, KV cache, caps and iteration timer
        # the pool's figures the scheduler reads every iteration, read once
        self.seconds = pool.timer.seconds  # one iteration of a batch shape
        self.query_tokens = pool.query_tokens
        self.max_sequences = pool.max_sequences_per_rank
        # the token budget is a micro-batch's (vLLM's and TensorRT-LLM's per scheduled batch): a
        # round of pp stages runs pp micro-batches, so it takes pp budgets, and a prompt's chunk
        # fits one micro-batch
        self.pp = pool.timer.pp
        self.max_chunk_tokens = pool.max_batched_tokens_per_rank
        self.max_batched_tokens = pool.max_batched_tokens_per_rank * self.pp
        self.state_tokens = pool.state_tokens_per_sequence
        self.ranks = [RankState(pool.kv_tokens_per_rank) for _ in range(pool.num_ranks)]
        self.waiting: deque[int] = deque()
        self.blocked = False  # the first waiting request found no rank with room (see Engine._admit)
        self.step = 0
        self.finishing: list[tuple[int, int, int]] = []  # (finish step, epoch, request)
        self.busy = False
        self.in_flight = 0
        self.pending: list[tuple[int, RankState]] = []  # prompts that complete in the running iteration
        self.rank_pointer = 0  # the round-robin router's next rank
        self.paused = 0.0  # seconds of prompt-only steps since its decodes last ran (separate steps)
        self.paused_sequence_s = 0.0  # the same, summed over the decoding sequences each step held
        self.stride = 1  # decode steps the running iteration stands for
        self.started = 0.0  # when it started, how long it lasts, its record and event version
        self.duration = 0.0
        self.record = 0
        self.version = 0
        self.queue_area = 0.0  # the engine's queue integral (request-seconds) when it started


__all__ = [
    "BALANCED_COLUMN",
    "DECODE",
    "DONE",
    "PREFILL",
    "QUEUE_COLUMN",
    "QUEUE_PEAK_COLUMN",
    "RECORD_WIDTH",
    "SECONDS_COLUMN",
    "STEPS_COLUMN",
    "SWAPPED",
    "TRANSFER",
    "WAITING",
    "Array",
    "EngineOutput",
    "RankState",
    "ReplicaState",
]

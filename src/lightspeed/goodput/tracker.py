"""The tracker a training loop calls: steps, phases, job start and end.

>>> import tempfile
>>> from lightspeed.goodput import Tracker, read_run, build_ledger
>>> run_dir = tempfile.mkdtemp()
>>> with Tracker(run_dir, flush_interval_s=0.1) as tracker:
...     with tracker.init():
...         pass
...     for _ in range(3):
...         with tracker.step(tokens=1024):
...             pass
>>> build_ledger(run=read_run(run_dir)).steps.count
3

Recording an event costs two ``time.perf_counter_ns()`` calls and one queue
put on the caller's thread; the file is written by a background thread (see
:mod:`lightspeed.goodput.writer`). Job start is recorded when the tracker is
created and job end when it is closed (``with``, :meth:`Tracker.close`, or at
interpreter exit). A job restarted with the same ``run_dir`` appends a new
segment; a step index it repeats marks the progress lost since the last
checkpoint.
"""

from __future__ import annotations

import atexit
import bisect
import math
import numbers
import os
import socket
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TypeVar

from lightspeed.clock import clock_anchor_ns
from lightspeed.errors import LightspeedError, UserInputError
from lightspeed.extras import import_extra
from lightspeed.goodput.events import (
    FLUSH_PHASES,
    MONITOR_RUN_ENV,
    PHASES,
    TOKENS_SCOPES,
    TRACKERS_FOLDER,
    rank_file_name,
)
from lightspeed.goodput.feed import SinkFeed
from lightspeed.goodput.utilization import check_figures
from lightspeed.goodput.writer import ENCODER, EventWriter, plain_number
from lightspeed.records import JsonDict
from lightspeed.units import PRECISIONS

if TYPE_CHECKING:
    from lightspeed.goodput.sinks import MetricSink

_clock = time.perf_counter_ns
NS_PER_S: Final = 1_000_000_000
# How far a stamp given to record_step/record_phase may run ahead of now_ns(): room for a step's end
# built as its start plus a measured duration; a stamp from another clock (time.time_ns() is decades
# ahead of perf_counter_ns, a microsecond clock far behind the job start) is off by far more.
STAMP_AHEAD_TOLERANCE_NS: Final = 60 * NS_PER_S
# How long the constructor waits for the writer thread to put the job start on disk (a hung network
# file system must not hang the training forever; the job start is then written when the disk answers)
JOB_START_WRITE_TIMEOUT_S: Final = 30.0


class _Span:
    """A timed ``with`` block that records one event when it ends.

    ``phase`` is ``"step"`` for optimizer steps, else a phase name; the event
    is built as a tuple only at exit (see :mod:`lightspeed.goodput.writer`).
    """

    __slots__ = ("_name", "_phase", "_samples", "_start_ns", "_step", "_sync", "_tokens", "_tracker")

    def __init__(
        self,
        tracker: Tracker,
        phase: str,
        *,
        step: int,
        tokens: float = 0,
        samples: float = 0,
        name: str = "",
        sync: bool = False,
    ) -> None:
        self._tracker = tracker
        self._phase = phase
        self._step = step
        self._tokens = tokens
        self._samples = samples
        self._name = name
        self._sync = sync
        self._start_ns = 0

    def __enter__(self) -> _Span:
        if self._phase == "step":
            self._tracker._open_step(self._step)
        self._start_ns = _clock()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        tracker = self._tracker
        if self._phase == "step":
            tracker._step_open = None
        if self._sync and kind is None:
            tracker.synchronize()
        end_ns = _clock()
        if self._phase == "step":
            tracker._next_step = self._step + 1
            if kind is None:  # a step that raised may run again under its index (as the reader reads it)
                tracker._logged_steps.add(self._step)
            event: tuple[Any, ...] = (
                "step",
                self._step,
                self._start_ns,
                end_ns,
                self._tokens,
                self._samples,
                kind is not None,
            )
            tracker._append(event)
        else:
            tracker._append(("phase", self._phase, self._name, self._step, self._start_ns, end_ns))
            if self._phase in FLUSH_PHASES:
                tracker._writer.request_flush()


class _StepIndices:
    """A set of step indices kept as sorted, disjoint ranges ``[start, end)``: the million steps of
    a long run counted on from 0 are one range, not a million ints held in the training process.

    >>> indices = _StepIndices()
    >>> for index in (0, 1, 2, 7):
    ...     indices.add(index)
    >>> (2 in indices, 3 in indices, 7 in indices), indices.ranges()
    ((True, False, True), [(0, 3), (7, 8)])
    """

    __slots__ = ("_ends", "_starts")

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def __contains__(self, index: int) -> bool:
        position = bisect.bisect_right(self._starts, index) - 1  # the range starting at or before it
        return position >= 0 and index < self._ends[position]

    def add(self, index: int) -> None:
        """Add ``index``, joining the ranges it touches."""
        position = bisect.bisect_right(self._starts, index) - 1
        if position >= 0 and index < self._ends[position]:
            return
        joins_left = position >= 0 and self._ends[position] == index
        joins_right = position + 1 < len(self._starts) and self._starts[position + 1] == index + 1
        if joins_left and joins_right:
            self._ends[position] = self._ends.pop(position + 1)
            del self._starts[position + 1]
        elif joins_left:
            self._ends[position] = index + 1
        elif joins_right:
            self._starts[position + 1] = index
        else:
            self._starts.insert(position + 1, index)
            self._ends.insert(position + 1, index + 1)

    def ranges(self) -> list[tuple[int, int]]:
        """The ranges ``(start, end)``, end excluded, in order."""
        return list(zip(self._starts, self._ends, strict=True))


ItemT = TypeVar("ItemT")


class Tracker:
    """Record a training job's steps and phases into ``run_dir`` (one JSONL file per rank).

    ``model`` names a model of the workload registry (or give
    ``model_flop_per_token`` directly); ``system`` names a catalog accelerator
    or system; together with ``seq_len`` and ``precision`` they let the ledger
    compute MFU/HFU (``recompute``: none, selective or full activation
    recomputation; ``training="lora"`` for a frozen base model). ``rank`` and
    ``world_size`` default to the ``RANK`` and ``WORLD_SIZE`` environment
    variables (torchrun), else 0 and 1.
    ``tokens_scope="rank"`` means ``tokens=`` counts this rank's tokens (the run
    total is the sum over ranks); ``"global"`` means the whole job's tokens,
    logged by one rank. Events are flushed every ``flush_interval_s`` seconds
    and at the end of init, checkpoint, eval and custom phases; ``fsync=True``
    also forces them to the disk. ``sinks`` (:mod:`lightspeed.goodput.sinks`:
    TensorBoard, MLflow, W&B) receive each step's time, tokens/s, MFU (when
    ``model_flop_per_token`` and ``peak_flop_per_s`` are given) and the
    badput timed so far, from the writer thread; the tracker flushes them
    when it closes, the caller closes them.
    """

    def __init__(
        self,
        run_dir: str | Path,
        *,
        model: str | None = None,
        system: str | None = None,
        rank: int | None = None,
        world_size: int | None = None,
        num_nodes: int | None = None,
        num_accelerators: int | None = None,
        seq_len: int | None = None,
        precision: str = "bf16",
        recompute: str = "none",
        training: str = "full",
        model_flop_per_token: float | None = None,
        hardware_flop_per_token: float | None = None,
        peak_flop_per_s: float | None = None,
        sol_tokens_per_s_per_accelerator: float | None = None,
        tokens_scope: str = "rank",
        run_id: str | None = None,
        flush_interval_s: float = 1.0,
        fsync: bool = False,
        synchronize: Callable[[], None] | None = None,
        meta: JsonDict | None = None,
        sinks: Sequence[MetricSink] = (),
    ) -> None:
        self.rank, self.world_size = _check_ranks(
            _env_int("RANK", 0) if rank is None else rank,
            _env_int("WORLD_SIZE", 1) if world_size is None else world_size,
        )
        self.tokens_scope = tokens_scope
        _check_arguments(tokens_scope, flush_interval_s, recompute)
        _check_workload(precision=precision, training=training, seq_len=seq_len)
        check_figures(
            num_nodes=num_nodes,
            num_accelerators=num_accelerators,
            model_flop_per_token=model_flop_per_token,
            hardware_flop_per_token=hardware_flop_per_token,
            peak_flop_per_s=peak_flop_per_s,
            sol_tokens_per_s_per_accelerator=sol_tokens_per_s_per_accelerator,
        )
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / rank_file_name(self.rank)
        self.segment_id = uuid.uuid4().hex[:12]
        self._synchronize = synchronize
        self._next_step = 0
        self._logged_steps = _StepIndices()  # steps this segment logged without error: each only once
        self._step_open: int | None = None  # the index of the step whose ``with`` block is running
        self._closed = False
        # the latest end a caller stamped (record_step/record_phase): job_end is never before it
        self._latest_end_ns = 0
        start_ns = _clock()
        self._start_ns = start_ns  # the segment's job start: no event of this segment starts before it
        monitor_run = os.environ.get(MONITOR_RUN_ENV) or None
        anchor_ns = clock_anchor_ns()  # monitor run's anchor on its host: its samples line up
        self._feed = (
            SinkFeed(
                sinks,
                anchor_ns=anchor_ns,
                model_flop_per_token=model_flop_per_token,
                peak_flop_per_s=peak_flop_per_s,
                num_accelerators=1 if tokens_scope == "rank" else (num_accelerators or self.world_size),
            )
            if sinks
            else None
        )
        self._writer = EventWriter(
            path=self.path,
            run_id=run_id,
            segment_id=self.segment_id,
            anchor_ns=anchor_ns,
            flush_interval_s=flush_interval_s,
            fsync=fsync,
            announce_dir=Path(monitor_run) / TRACKERS_FOLDER if monitor_run else None,
            rank=self.rank,
            on_written=self._feed,
        )
        self._append = self._writer.append  # the hot path: one deque.append per event
        self._failure_raised = False
        workload = {
            "model": model,
            "system": system,
            "seq_len": seq_len,
            "precision": precision,
            "recompute": recompute,
            "training": training,
            "num_accelerators": num_accelerators,
            "model_flop_per_token": model_flop_per_token,
            "hardware_flop_per_token": hardware_flop_per_token,
            "peak_flop_per_s": peak_flop_per_s,
            "sol_tokens_per_s_per_accelerator": sol_tokens_per_s_per_accelerator,
        }
        fields = {
            "rank": self.rank,
            "world_size": self.world_size,
            "num_nodes": _plain(num_nodes) if num_nodes is not None else _default_num_nodes(self.world_size),
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "tokens_scope": tokens_scope,
            **{key: _plain(value) for key, value in workload.items() if value is not None},
            **({"monitor_run": str(Path(monitor_run).resolve())} if monitor_run else {}),
            "meta": _checked_meta(meta),
        }
        self._append(("job_start", start_ns, fields))
        self._writer.request_flush()
        # the job start is on disk before the training starts: a run whose writer fails later still
        # has the start of its log
        self._writer.wait_first_write(JOB_START_WRITE_TIMEOUT_S)
        _OPEN_TRACKERS.add(self)

    # -- recording -----------------------------------------------------------

    def step(
        self, *, tokens: float = 0, samples: float = 0, step: int | None = None, sync: bool = False
    ) -> _Span:
        """Time one optimizer step: ``with tracker.step(tokens=4096): ...``.

        ``step`` is the index of the step about to run (default: one after the
        previous). After restoring a checkpoint taken when steps ``0..n-1`` were
        done, pass ``step=n`` (or call :meth:`set_step`); steps that a later
        segment runs again are counted as wasted progress. ``sync=True`` waits
        for the device (``torch.cuda.synchronize``) before taking the end time.
        Entering a step inside another step's block, or one whose index this
        segment already logged (a step that raised may run again), raises
        :class:`UserInputError` before the block runs: the log stays readable.
        """
        index = self._next_step if step is None else step
        self._check_step(index, tokens=tokens, samples=samples)
        return _Span(self, "step", step=int(index), tokens=_plain(tokens), samples=_plain(samples), sync=sync)

    def init(self) -> _Span:
        """Time initialization (device setup, model build, compile)."""
        return self._phase("init")

    def data_wait(self) -> _Span:
        """Time a wait for the next batch (see also :meth:`wrap_loader`)."""
        return self._phase("data_wait")

    def checkpoint_save(self) -> _Span:
        """Time a checkpoint save the training loop waits for."""
        return self._phase("checkpoint_save")

    def checkpoint_restore(self, *, step: int | None = None) -> _Span:
        """Time a checkpoint restore; ``step`` is the index of the next step to run."""
        if step is not None:
            self.set_step(step)
        return self._phase("checkpoint_restore")

    def eval(self) -> _Span:
        """Time an evaluation pass."""
        return self._phase("eval")

    def badput(self, name: str) -> _Span:
        """Time custom named badput (garbage collection, profiling, a rebalance ...)."""
        if not isinstance(name, str) or not name:
            raise UserInputError(
                f"custom badput needs a non-empty name, e.g. tracker.badput('gc'), got {name!r}"
            )
        self._check_open("badput()")
        return _Span(self, "custom", step=self._next_step, name=name)

    def wrap_loader(self, iterable: Iterable[ItemT]) -> Iterator[ItemT]:
        """Yield from ``iterable`` and time every wait for the next item as a data stall."""
        iterator = iter(iterable)
        while True:
            start_ns = _clock()
            try:
                item = next(iterator)
            except StopIteration:
                return
            self.record_phase("data_wait", start_ns=start_ns, end_ns=_clock())
            yield item

    def set_step(self, step: int) -> None:
        """Set the index of the next step (after a checkpoint restore)."""
        if not _is_whole(step) or step < 0:
            raise UserInputError(f"step index must be a whole number >= 0, got {step!r}")
        self._next_step = int(step)

    def now_ns(self) -> int:
        """The tracker's clock (``time.perf_counter_ns``) for :meth:`record_step`/:meth:`record_phase`."""
        return _clock()

    def record_step(
        self, *, start_ns: int, end_ns: int, tokens: float = 0, samples: float = 0, step: int | None = None
    ) -> None:
        """Record a step timed elsewhere (framework callbacks) with :meth:`now_ns` stamps, taken after
        the tracker was created (the job start) and not ahead of the clock."""
        index = self._next_step if step is None else step
        self._check_step(index, tokens=tokens, samples=samples)
        self._check_stamps(start_ns, end_ns)
        self._check_step_free(index, call="record_step()")
        index, start_ns, end_ns = int(index), int(start_ns), int(end_ns)
        self._logged_steps.add(index)
        self._next_step = index + 1
        self._latest_end_ns = max(self._latest_end_ns, end_ns)
        self._append(("step", index, start_ns, end_ns, _plain(tokens), _plain(samples), False))

    def record_phase(self, phase: str, *, start_ns: int, end_ns: int, name: str | None = None) -> None:
        """Record a phase timed elsewhere (``phase`` is one of init, data_wait, ... custom)."""
        if phase not in PHASES:
            raise UserInputError(f"unknown phase {phase!r}; allowed: {', '.join(PHASES)}")
        if name is not None and not isinstance(name, str):
            raise UserInputError(f"record_phase(name=...) must be text, got {name!r}")
        self._check_open(f"record_phase({phase!r})")
        self._check_stamps(start_ns, end_ns)
        start_ns, end_ns = int(start_ns), int(end_ns)
        self._latest_end_ns = max(self._latest_end_ns, end_ns)
        self._append(("phase", phase, name or "", self._next_step, start_ns, end_ns))
        if phase in FLUSH_PHASES:
            self._writer.request_flush()

    def synchronize(self) -> None:
        """Wait for the device: the ``synchronize`` callable given, else ``torch.cuda.synchronize``."""
        if self._synchronize is None:
            self._synchronize = cuda_synchronizer()
        self._synchronize()

    # -- lifecycle -----------------------------------------------------------

    def close(self, status: str = "ok") -> None:
        """Record job end, flush and stop the writer (idempotent)."""
        if self._closed:
            return
        self._closed = True
        _OPEN_TRACKERS.discard(self)
        # stamps given to record_step may run ahead of the clock (by up to STAMP_AHEAD_TOLERANCE_NS: an
        # end built as a start plus a measured duration): the job ends after the last of them, as the
        # reader requires
        self._append(("job_end", max(_clock(), self._latest_end_ns), status))
        self._writer.close()
        if self._feed is not None:
            self._feed.flush()
        self._raise_writer_failure()

    @property
    def sink_error(self) -> str | None:
        """Why a sink stopped receiving figures (its library failed), or ``None``."""
        return self._feed.error if self._feed is not None else None

    @property
    def write_error(self) -> str | None:
        """Why the writer thread stopped writing (disk full, permissions), or ``None``."""
        return self._writer.error

    def __enter__(self) -> Tracker:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close("ok" if kind is None else "error")

    # -- internals -------------------------------------------------------------

    def _phase(self, phase: str) -> _Span:
        self._check_open(f"{phase}()")
        return _Span(self, phase, step=self._next_step)

    def _raise_writer_failure(self) -> None:
        """Raise, once, why the writer left an event out: a log missing events must not pass unseen."""
        failure = self._writer.failure
        if failure is None or self._failure_raised:
            return
        self._failure_raised = True
        raise LightspeedError(
            f"goodput tracker: {failure}; {self.path} holds the events before and after it; "
            "record steps and phases with plain numbers (int, float) and meta= with JSON values"
        )

    def _check_open(self, call: str) -> None:
        self._raise_writer_failure()
        if self._closed:
            raise UserInputError(
                f"{call} after the tracker was closed: its job end is written, so the event would be lost; "
                "open a new Tracker for a new job segment"
            )

    def _open_step(self, index: int) -> None:
        """Refuse, before its block runs, a step that would make the log unreadable; else mark it open."""
        self._check_step_free(index, call="tracker.step()")
        self._step_open = index

    def _check_step_free(self, index: int, *, call: str) -> None:
        """Refuse a step inside another step's block and an index this segment already logged: the
        reader refuses a segment that logs one step index twice, so the whole run would have no ledger."""
        if self._step_open is not None:
            raise UserInputError(
                f"{call} (step {index}) inside the block of step {self._step_open}: steps do not nest, "
                "each optimizer step is timed once, by one block; remove the inner tracker.step() (a helper "
                "called inside a step must not open one)"
            )
        if index in self._logged_steps:
            raise UserInputError(
                f"{call}: step {index} is already logged in this job segment and one segment logs each "
                "step index once; leave step= out to count steps on (or give each step its own index); "
                "to run steps again after restoring a checkpoint, close this Tracker and open a new one "
                "on the same run_dir (a new segment)"
            )

    def _check_stamps(self, start_ns: int, end_ns: int) -> None:
        """Refuse stamps the reader would refuse or misread: not whole, ending before they start,
        starting before this segment's job start, or ending ahead of :meth:`now_ns` (another clock)."""
        for name, value in (("start_ns", start_ns), ("end_ns", end_ns)):
            if not _is_whole(value):
                raise UserInputError(
                    f"{name} must be a whole number of ns from Tracker.now_ns(), got {value!r}"
                )
        if end_ns < start_ns:
            raise UserInputError(
                f"end_ns {end_ns} is before start_ns {start_ns}: "
                "take both stamps with Tracker.now_ns(), the start first"
            )
        if start_ns < self._start_ns:
            raise UserInputError(
                f"start_ns {start_ns} is {(self._start_ns - start_ns) / NS_PER_S:.3f} s before this "
                "tracker's job start: take stamps with Tracker.now_ns() (not another clock), after the "
                "Tracker is created"
            )
        now_ns = _clock()
        if end_ns > now_ns + STAMP_AHEAD_TOLERANCE_NS:
            raise UserInputError(
                f"end_ns {end_ns} is {(end_ns - now_ns) / NS_PER_S:.3f} s ahead of Tracker.now_ns() "
                f"{now_ns}: take stamps with Tracker.now_ns() (time.perf_counter_ns), not time.time_ns() "
                "or another clock"
            )

    def _check_step(self, index: int, *, tokens: float, samples: float) -> None:
        self._check_open("a step")
        if not _is_whole(index) or index < 0:
            raise UserInputError(f"step index must be a whole number >= 0, got {index!r}")
        for name, value in (("tokens", tokens), ("samples", samples)):
            if not _is_number(value) or not 0 <= value < math.inf:
                raise UserInputError(f"{name} must be a finite number >= 0, got {value!r}")


def cuda_synchronizer() -> Callable[[], None]:
    """``torch.cuda.synchronize`` when a CUDA device exists, else a no-op (CPU work is synchronous)."""
    torch = import_extra("torch", extra="bench", purpose="synchronizing the device at step end")
    if torch.cuda.is_available():
        sync: Callable[[], None] = torch.cuda.synchronize
        return sync
    return lambda: None


def _check_ranks(rank: object, world_size: object) -> tuple[int, int]:
    """``rank`` and ``world_size`` as ints: whole numbers (not bools), ``0 <= rank < world_size``."""
    size = _whole_argument("world_size", world_size, minimum=1)
    index = _whole_argument("rank", rank, minimum=0)
    if index >= size:
        raise UserInputError(
            f"rank {index} is not in 0..world_size-1 (world_size {size}); "
            "pass this process's rank and the job's number of ranks"
        )
    return index, size


def _whole_argument(name: str, value: object, *, minimum: int) -> int:
    """``value`` of the argument ``name`` as an int (NumPy's integers too), else one line naming it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < minimum:
        raise UserInputError(
            f"{name} must be a whole number >= {minimum}, got {value!r} ({type(value).__name__}); pass "
            f"an int, e.g. {name}=int(os.environ['{name.upper()}']), or leave it out to read it from the "
            "environment"
        )
    return int(value)


def _check_arguments(tokens_scope: str, flush_interval_s: float, recompute: str) -> None:
    if tokens_scope not in TOKENS_SCOPES:
        raise UserInputError(f"tokens_scope {tokens_scope!r} is not one of {', '.join(TOKENS_SCOPES)}")
    if not flush_interval_s > 0:
        raise UserInputError(f"flush_interval_s must be > 0 seconds, got {flush_interval_s}")
    if recompute not in ("none", "selective", "full"):
        raise UserInputError(f"recompute {recompute!r} is not one of none, selective, full")


def _check_workload(*, precision: str, training: str, seq_len: int | None) -> None:
    """Refuse what the ledger could not read back (the model name is checked there: the registry is not
    loaded in a training loop)."""
    if not isinstance(precision, str) or precision.strip().lower() not in PRECISIONS:
        raise UserInputError(f"unknown precision {precision!r}; allowed: {', '.join(PRECISIONS)}")
    if training not in ("full", "lora"):
        raise UserInputError(f"training {training!r} is not one of full, lora")
    if seq_len is not None and (not _is_whole(seq_len) or seq_len < 1):
        raise UserInputError(f"seq_len must be a whole number >= 1, got {seq_len!r}")


def _checked_meta(meta: JsonDict | None) -> JsonDict:
    """``meta`` as a dict the event log can hold, refused here (not lost on the writer thread) when a
    value is not JSON."""
    fields = dict(meta or {})
    try:
        ENCODER.encode(fields)
    except (TypeError, ValueError, OverflowError) as error:
        raise UserInputError(
            f"Tracker(meta=...) must hold JSON values (text, numbers, lists, dicts): {error}; "
            "convert the value (e.g. str(path))"
        ) from None
    return fields


def _plain(value: Any) -> Any:
    """A number of any numeric type as an ``int`` or ``float`` (NumPy's scalars are recorded as the
    numbers they hold); anything else as it is."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return value
    return plain_number(value)


def _is_whole(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else default


def _default_num_nodes(world_size: int) -> int:
    """Nodes of the job from torchrun's LOCAL_WORLD_SIZE (ranks per node), else 1."""
    local = _env_int("LOCAL_WORLD_SIZE", 0)
    return max(1, world_size // local) if local > 0 else 1


# Trackers still open at interpreter exit record job end with status "atexit".
_OPEN_TRACKERS: weakref.WeakSet[Tracker] = weakref.WeakSet()


@atexit.register
def _close_open_trackers() -> None:
    for tracker in list(_OPEN_TRACKERS):
        tracker.close("atexit")

"""What arrives at a serving deployment: when requests come and how long they are.

A :class:`ServingWorkload` pairs an :class:`ArrivalProcess` with two
:class:`LengthDistribution` (prompt and output tokens), or replays a
:class:`RequestTrace`. :func:`generate_requests` draws the requests with a seeded
generator (PCG64), so the same seed gives the same requests.

Arrival processes:

* ``poisson``: independent exponential gaps at ``rate_per_s`` (vLLM's
  ``benchmark_serving --request-rate``, MLPerf's Server scenario);
* ``gamma``: gamma-distributed gaps with the same mean and coefficient of
  variation ``cv`` (1 is Poisson, above 1 bursty: vLLM's ``--burstiness`` is
  ``1 / cv^2``);
* ``closed``: a fixed ``concurrency`` of users, each sending its next request
  the moment the last one completes (trtllm-bench's and vLLM's
  ``--max-concurrency``);
* ``offline``: every request at time zero (MLPerf's Offline scenario);
* ``trace``: arrival times and token counts read from a CSV or JSONL file.

>>> workload = ServingWorkload(arrivals=ArrivalProcess.poisson(2.0),
...     input_lengths=LengthDistribution.fixed(1000), output_lengths=LengthDistribution.uniform(100, 300),
...     num_requests=4)
>>> requests = generate_requests(workload, seed=1)
>>> requests.input_tokens.tolist(), bool((requests.output_tokens >= 100).all())
([1000, 1000, 1000, 1000], True)
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Final

import numpy as np

from lightspeed.datafile import check_nesting, read_text
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.files import excerpt
from lightspeed.limits import Bounds, check_kind, check_number, check_whole
from lightspeed.records import Record

ARRIVAL_KINDS: Final = ("poisson", "gamma", "closed", "offline", "trace")
RATE_ARRIVALS: Final = ("poisson", "gamma")  # arrivals at a rate, whatever the deployment does
LENGTH_KINDS: Final = ("fixed", "uniform", "lognormal", "empirical")
MAX_TRACE_REQUESTS: Final = 10_000_000
MAX_REQUEST_TOKENS: Final = 2**27  # the CLI's longest sequence (docs/limits.md)
# one request a century (docs/limits.md): slower arrivals' gaps run past any horizon, and a rate
# such as 4.9e-324 per s overflows its mean gap to infinity
MIN_ARRIVAL_RATE_PER_S: Final = 1.0 / (100 * 365.25 * 86400.0)
# A trace's arrival times are seconds. Unix time in seconds (1.7e9 in 2024) is read as written (the
# arrivals start at zero); in milliseconds (1.7e12), microseconds or nanoseconds it is a unit slip.
# At 1e10 s a float64 still resolves 2 us (2^-19 s), 500x finer than a ~1 ms decode step; at 1e17
# it resolves 16 s, and every latency came out 0 with an infinite token rate.
MAX_ARRIVAL_S: Final = 1e10
# From the first arrival to the last: over three years (no recorded serving trace runs a year;
# a longer span is a relative timestamp in ms or us). At 1e8 s a float64 resolves 15 ns.
MAX_TRACE_SPAN_S: Final = 1e8
_SECONDS_FIX: Final = (
    "write arrival times in seconds: divide timestamps in milliseconds by 1e3, in microseconds by 1e6, "
    "in nanoseconds by 1e9"
)
_MILLISECONDS_FIX: Final = (
    "a Mooncake trace's timestamp is milliseconds from the trace's start: write it so, or name the "
    "column arrival_s for seconds"
)
_TOKENS_FIX: Final = f"write token counts as whole numbers from 1 to {MAX_REQUEST_TOKENS:,}"
# a CSV trace whose columns are Mooncake's: Mooncake writes JSONL with timestamps in milliseconds,
# while a CSV trace's arrival times are seconds, and either reading is 1000x off for someone
_MOONCAKE_CSV_FIX: Final = (
    "name the column arrival_s and write it in seconds (milliseconds divided by 1e3), or write the "
    "trace as JSONL, Mooncake's format, whose timestamp is milliseconds"
)
Array = Any


def _positive(label: str, value: object) -> None:
    check_number(label, value, above=0.0)


@dataclass(frozen=True)
class ArrivalProcess(Record):
    """When requests arrive (see the module docstring for each ``kind``)."""

    kind: str = "offline"
    rate_per_s: float | None = None
    cv: float = 1.0
    concurrency: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ARRIVAL_KINDS:
            raise UserInputError(f"arrival process {self.kind!r} is not one of {', '.join(ARRIVAL_KINDS)}")
        if self.kind in ("poisson", "gamma"):
            if self.rate_per_s is None:
                raise UserInputError(f"{self.kind} arrivals need a rate (requests per second)")
            _positive("the arrival rate rate_per_s (requests per second)", self.rate_per_s)
            if self.rate_per_s < MIN_ARRIVAL_RATE_PER_S:
                raise UserInputError(
                    f"arrival rate {self.rate_per_s:g} per s is below one request a century "
                    f"({MIN_ARRIVAL_RATE_PER_S:.3g} per s): its requests would arrive past any horizon"
                )
        _positive("the coefficient of variation cv", self.cv)
        if self.kind == "closed":
            if self.concurrency is None:
                raise UserInputError("closed-loop arrivals need a concurrency of at least 1")
            check_whole("concurrency (closed-loop users, each with one request in flight)", self.concurrency)

    @classmethod
    def poisson(cls, rate_per_s: float) -> ArrivalProcess:
        """Exponential gaps at ``rate_per_s``."""
        return cls("poisson", rate_per_s=rate_per_s)

    @classmethod
    def gamma(cls, rate_per_s: float, cv: float) -> ArrivalProcess:
        """Gamma gaps at ``rate_per_s`` with coefficient of variation ``cv``."""
        return cls("gamma", rate_per_s=rate_per_s, cv=cv)

    @classmethod
    def closed(cls, concurrency: int) -> ArrivalProcess:
        """``concurrency`` users, each sending its next request when the last completes."""
        return cls("closed", concurrency=concurrency)

    @classmethod
    def offline(cls) -> ArrivalProcess:
        """Every request at time zero."""
        return cls("offline")

    def describe(self) -> str:
        """``Poisson 4 req/s``, ``closed loop, 64 in flight`` ..."""
        if self.kind == "poisson":
            return f"Poisson {self.rate_per_s:g} req/s"
        if self.kind == "gamma":
            return f"gamma {self.rate_per_s:g} req/s (CV {self.cv:g})"
        if self.kind == "closed":
            return f"closed loop, {self.concurrency} in flight"
        if self.kind == "trace":
            return "trace replay"
        return "offline (all at once)"


@dataclass(frozen=True)
class LengthDistribution(Record):
    """Token counts per request: ``fixed`` (``mean_tokens``), ``uniform`` (``minimum_tokens`` to
    ``maximum_tokens``), ``lognormal`` (``mean_tokens`` and ``std_tokens``, clipped to the
    bounds when given) or ``empirical`` (drawn from ``values``, e.g. a file of lengths)."""

    kind: str = "fixed"
    mean_tokens: float = 1024.0
    std_tokens: float = 0.0
    minimum_tokens: int = 1
    maximum_tokens: int = MAX_REQUEST_TOKENS
    values: tuple[int, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        if self.kind not in LENGTH_KINDS:
            raise UserInputError(f"length distribution {self.kind!r} is not one of {', '.join(LENGTH_KINDS)}")
        for label in ("minimum_tokens", "maximum_tokens"):
            check_whole(label, getattr(self, label), maximum=MAX_REQUEST_TOKENS)
        if not 1 <= self.minimum_tokens <= self.maximum_tokens <= MAX_REQUEST_TOKENS:
            raise UserInputError(
                f"token bounds {self.minimum_tokens}..{self.maximum_tokens} must satisfy "
                f"1 <= minimum <= maximum <= {MAX_REQUEST_TOKENS:,}"
            )
        if self.kind == "empirical" and not self.values:
            raise UserInputError("an empirical length distribution needs at least one value")
        if self.kind in ("fixed", "lognormal"):
            _positive("mean tokens", self.mean_tokens)
        if self.kind == "lognormal":
            _positive("token standard deviation", self.std_tokens)

    @classmethod
    def fixed(cls, tokens: int) -> LengthDistribution:
        """Every request ``tokens`` long (a whole number of tokens, as ``--isl``)."""
        whole = check_whole("tokens", tokens, maximum=MAX_REQUEST_TOKENS)
        return cls("fixed", mean_tokens=float(whole), minimum_tokens=1, maximum_tokens=whole)

    @classmethod
    def uniform(cls, minimum_tokens: int, maximum_tokens: int) -> LengthDistribution:
        """Uniform whole numbers from ``minimum_tokens`` to ``maximum_tokens`` (both included, as
        :meth:`sample` draws them): of ``n`` equally likely values, the standard deviation is
        ``sqrt((n^2 - 1) / 12)``.

        >>> round(LengthDistribution.uniform(100, 3000).std_tokens, 2)
        837.45
        """
        mean = (minimum_tokens + maximum_tokens) / 2.0
        count = maximum_tokens - minimum_tokens + 1
        return cls(
            "uniform",
            mean_tokens=mean,
            std_tokens=math.sqrt(max(count * count - 1, 0) / 12.0),
            minimum_tokens=minimum_tokens,
            maximum_tokens=maximum_tokens,
        )

    @classmethod
    def lognormal(
        cls, mean_tokens: float, std_tokens: float, minimum_tokens: int = 1, maximum_tokens: int | None = None
    ) -> LengthDistribution:
        """Log-normal with the given mean and standard deviation (of the tokens, not their log)."""
        return cls(
            "lognormal",
            mean_tokens=mean_tokens,
            std_tokens=std_tokens,
            minimum_tokens=minimum_tokens,
            maximum_tokens=maximum_tokens or MAX_REQUEST_TOKENS,
        )

    @classmethod
    def empirical(cls, values: tuple[int, ...] | list[int]) -> LengthDistribution:
        """Draw (with replacement) from observed lengths."""
        items = tuple(int(value) for value in values)
        if not items:
            raise UserInputError("an empirical length distribution needs at least one value")
        return cls(
            "empirical",
            mean_tokens=float(np.mean(items)),
            std_tokens=float(np.std(items)),
            minimum_tokens=max(min(items), 1),
            maximum_tokens=max(*items, 1),
            values=items,
        )

    @property
    def shortest_tokens(self) -> int:
        """The fewest tokens :meth:`sample` draws: a fixed length itself, else the lower bound
        draws are clipped to (1 for a log-normal without bounds).

        >>> fixed, uniform = LengthDistribution.fixed(500), LengthDistribution.uniform(100, 300)
        >>> fixed.shortest_tokens, uniform.shortest_tokens
        (500, 100)
        """
        if self.kind == "fixed":
            return round(self.mean_tokens)
        return max(self.minimum_tokens, 1)

    def sample(self, rng: np.random.Generator, count: int) -> Array:
        """``count`` lengths (int64), at least 1 each."""
        if self.kind == "fixed":
            drawn = np.full(count, round(self.mean_tokens), dtype=np.int64)
        elif self.kind == "uniform":
            drawn = rng.integers(self.minimum_tokens, self.maximum_tokens + 1, size=count)
        elif self.kind == "lognormal":
            sigma2 = math.log1p((self.std_tokens / self.mean_tokens) ** 2)
            mu = math.log(self.mean_tokens) - sigma2 / 2.0
            drawn = np.rint(rng.lognormal(mu, math.sqrt(sigma2), size=count)).astype(np.int64)
        else:
            drawn = rng.choice(np.asarray(self.values, dtype=np.int64), size=count)
        return np.clip(drawn, max(self.minimum_tokens, 1), self.maximum_tokens).astype(np.int64)

    def clipped(self) -> tuple[float, float]:
        """(share of draws clipped to the bounds, mean after clipping) of a log-normal distribution,
        from its closed form (a draw is rounded to whole tokens too, which moves the mean by less
        than a token): with ``ln X ~ N(mu, s^2)``, ``E[X; a <= X <= b] = e^(mu + s^2/2) (Phi(beta -
        s) - Phi(alpha - s))`` for ``alpha, beta`` the standardized log bounds."""
        sigma2 = math.log1p((self.std_tokens / self.mean_tokens) ** 2)
        sigma, mu = math.sqrt(sigma2), math.log(self.mean_tokens) - sigma2 / 2.0
        low, high = float(max(self.minimum_tokens, 1)), float(self.maximum_tokens)
        alpha, beta = ((math.log(bound) - mu) / sigma for bound in (low, high))
        below, above = _normal_cdf(alpha), 1.0 - _normal_cdf(beta)
        inside = self.mean_tokens * (_normal_cdf(beta - sigma) - _normal_cdf(alpha - sigma))
        return below + above, low * below + high * above + inside

    def describe(self) -> str:
        """``1000``, ``uniform 100-300``, ``lognormal mean 294 (sd 210)`` (with bounds: ``... before
        clipping to 1-1500: 16.9% clipped, mean 632 after``), ``empirical (24,576 values)``."""
        if self.kind == "fixed":
            return f"{self.mean_tokens:g}"
        if self.kind == "uniform":
            return f"uniform {self.minimum_tokens}-{self.maximum_tokens}"
        if self.kind == "lognormal":
            text = f"lognormal mean {self.mean_tokens:g} (sd {self.std_tokens:g})"
            if self.minimum_tokens <= 1 and self.maximum_tokens >= MAX_REQUEST_TOKENS:
                return text
            clipped_share, clipped_mean = self.clipped()
            return (
                f"{text} before clipping to {self.minimum_tokens}-{self.maximum_tokens}: "
                f"{clipped_share:.1%} clipped, mean {clipped_mean:,.0f} after"
            )
        return f"empirical mean {self.mean_tokens:.0f} ({len(self.values):,} values)"


def _normal_cdf(value: float) -> float:
    """The standard normal distribution function."""
    return 0.5 * math.erfc(-value / math.sqrt(2.0))


@dataclass(frozen=True)
class RequestTrace(Record):
    """Requests read from a file: arrival seconds (from the first), prompt and output tokens;
    ``arrival_unit``: the unit the file's arrival times were written in (``s``, or ``ms`` for
    Mooncake's ``timestamp``, :func:`load_request_trace`); ``num_out_of_order``: the file's rows
    that arrive before a row above them (the requests are kept sorted by arrival time)."""

    arrival_s: tuple[float, ...]
    input_tokens: tuple[int, ...]
    output_tokens: tuple[int, ...]
    path: str = ""
    arrival_unit: str = "s"
    num_out_of_order: int = 0

    def describe_arrivals(self) -> str:
        """How the file's arrival times were read, for a run's assumptions (empty for seconds
        written in order): Mooncake's milliseconds, and rows sorted by arrival time."""
        parts = []
        if self.arrival_unit == "ms":
            parts.append(
                "Mooncake's key set (timestamp, input_length, output_length), its timestamp read as "
                "milliseconds (Mooncake's and AIPerf's mooncake_trace unit)"
            )
        if self.num_out_of_order:
            parts.append(
                f"rows sorted by arrival time: {self.num_out_of_order:,} of {self.num_requests:,} were out "
                "of order (earlier than a row above them), and --requests N replays the first N to arrive"
            )
        return f"trace {self.path}: {'; '.join(parts)}" if parts else ""

    @property
    def num_requests(self) -> int:
        """Requests in the trace."""
        return len(self.arrival_s)

    def replayed_text(self, count: int) -> str:
        """``60 requests replayed from t.csv``, ``(the first 50 of its 60)`` when ``count`` is fewer."""
        cut = f" (the first {count:,} of its {self.num_requests:,})" if count < self.num_requests else ""
        return f"{count:,} requests replayed from {self.path}{cut}"


@dataclass(frozen=True)
class ServingWorkload(Record):
    """The requests of one simulated run (see the module docstring).

    ``prefix_hit_rate`` is the share of each prompt found in the prefix cache
    (vLLM's and SGLang's reported hit rate: cached prompt tokens over prompt
    tokens); those tokens are not prefilled. With a ``trace``, its requests are
    replayed (``num_requests`` of them at most) and the other fields are ignored.
    ``warmup_requests``: the first requests to arrive are simulated but left out of the
    latency, throughput and SLO figures (a steady-state measurement, as AIPerf's
    ``--warmup-request-count`` and other benchmarks' warm-up phases give).
    """

    # the one check of a prefix hit rate, from 0 up to but not including 1 (the last prompt token
    # always runs: it samples the first output token); --prefix-hit-rate takes its bounds from here
    PREFIX_HIT_RATE: ClassVar[Bounds] = Bounds(whole=False, minimum=0.0, below=1.0)

    arrivals: ArrivalProcess = field(default_factory=ArrivalProcess)
    input_lengths: LengthDistribution = field(default_factory=lambda: LengthDistribution.fixed(1024))
    output_lengths: LengthDistribution = field(default_factory=lambda: LengthDistribution.fixed(1024))
    num_requests: int = 1000
    prefix_hit_rate: float = 0.0
    trace: RequestTrace | None = None
    name: str = ""
    warmup_requests: int = 0

    def __post_init__(self) -> None:
        self._check_kinds()
        # the bounds of --requests and --warmup (docs/limits.md)
        check_whole("num_requests", self.num_requests, maximum=MAX_TRACE_REQUESTS)
        check_whole("warmup_requests", self.warmup_requests, minimum=0, maximum=MAX_TRACE_REQUESTS)
        try:
            self.PREFIX_HIT_RATE.check("prefix_hit_rate", self.prefix_hit_rate)
        except UserInputError as error:
            raise UserInputError(f"{error}: the prefix hit rate, the share of each prompt cached") from None
        if self.warmup_requests >= self.num_simulated:
            simulated = (
                f"--requests ({self.num_requests})"
                if self.trace is None or self.num_requests <= self.trace.num_requests
                else f"the {self.trace.num_requests:,} requests of the trace {self.trace.path}".rstrip()
            )
            raise UserInputError(
                f"--warmup {self.warmup_requests} must leave requests to measure: give fewer than "
                f"{simulated} (warmup_requests below num_requests from Python)"
            )

    def _check_kinds(self) -> None:
        """Refuse a field of another kind (a number where a distribution belongs, ``None``) at once,
        not when a simulation draws from it."""
        check_kind(
            "arrivals",
            self.arrivals,
            ArrivalProcess,
            "lightspeed.ArrivalProcess.poisson(4.0)",
            what="an ArrivalProcess",
        )
        for label in ("input_lengths", "output_lengths"):
            check_kind(
                label, getattr(self, label), LengthDistribution, "lightspeed.LengthDistribution.fixed(1024)"
            )
        check_kind("trace", self.trace, (RequestTrace, type(None)), "load_request_trace(path), or None")
        check_kind("name", self.name, str, "a label such as 'chat'", what="text")

    @property
    def num_simulated(self) -> int:
        """Requests simulated: ``num_requests``, or the trace's requests when it holds fewer."""
        return self.num_requests if self.trace is None else min(self.num_requests, self.trace.num_requests)

    def describe(self) -> str:
        """One line: count, arrivals and lengths (or the trace replayed), prefix hits, warm-up."""
        text = self._drawn_text() if self.trace is None else self.trace.replayed_text(self.num_simulated)
        if self.prefix_hit_rate:
            text += f", prefix cache hits {_share_text(self.prefix_hit_rate)}"
        if self.warmup_requests:
            text += f", the first {self.warmup_requests:,} not measured (warm-up)"
        return f"{self.name}: {text}" if self.name else text

    def _drawn_text(self) -> str:
        """``2,000 requests, Poisson 4 req/s, ISL 1000, OSL 200``."""
        return (
            f"{self.num_requests:,} requests, {self.arrivals.describe()}, "
            f"ISL {self.input_lengths.describe()}, OSL {self.output_lengths.describe()}"
        )


@dataclass(frozen=True)
class Requests:
    """The drawn requests as aligned arrays. ``arrival_s`` is NaN for closed-loop requests
    beyond the first ``concurrency`` (they arrive when an earlier one completes)."""

    arrival_s: Array
    input_tokens: Array
    output_tokens: Array
    cached_tokens: Array
    concurrency: int | None

    @property
    def num_requests(self) -> int:
        """Requests drawn."""
        return int(self.input_tokens.shape[0])


def _gaps(arrivals: ArrivalProcess, rng: np.random.Generator, count: int) -> Array:
    assert arrivals.rate_per_s is not None
    mean = 1.0 / arrivals.rate_per_s
    if arrivals.kind == "poisson":
        return rng.exponential(mean, size=count)
    shape = 1.0 / arrivals.cv**2
    return rng.gamma(shape, mean / shape, size=count)


def generate_requests(workload: ServingWorkload, *, seed: int = 0) -> Requests:
    """Draw the requests of ``workload`` (lengths first, then arrival gaps, from one seeded generator)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    if workload.trace is not None:
        trace = workload.trace
        count = min(workload.num_requests, trace.num_requests)
        arrival = np.asarray(trace.arrival_s[:count], dtype=np.float64)
        inputs = np.asarray(trace.input_tokens[:count], dtype=np.int64)
        outputs = np.asarray(trace.output_tokens[:count], dtype=np.int64)
        concurrency = None
    else:
        count = workload.num_requests
        inputs = workload.input_lengths.sample(rng, count)
        outputs = workload.output_lengths.sample(rng, count)
        arrival, concurrency = _arrival_times(workload.arrivals, rng, count)
    cached = np.floor(inputs * workload.prefix_hit_rate).astype(np.int64)
    cached = np.minimum(cached, inputs - 1)  # the last prompt token always runs: it samples the first token
    return Requests(arrival, inputs, outputs, cached, concurrency)


def _arrival_times(
    arrivals: ArrivalProcess, rng: np.random.Generator, count: int
) -> tuple[Array, int | None]:
    if arrivals.kind in ("poisson", "gamma"):
        gaps = _gaps(arrivals, rng, count)
        gaps[0] = 0.0  # the run starts with the first request
        return np.cumsum(gaps), None
    if arrivals.kind == "closed":
        assert arrivals.concurrency is not None
        times = np.full(count, np.nan)
        times[: arrivals.concurrency] = 0.0
        return times, arrivals.concurrency
    return np.zeros(count), None


# --- reading traces and length files ------------------------------------------------------------

_ARRIVAL_KEYS: Final = ("arrival_s", "arrival_time", "timestamp", "time_s", "time")
_INPUT_KEYS: Final = ("input_tokens", "input_length", "prompt_tokens", "isl", "input_len", "context_tokens")
_OUTPUT_KEYS: Final = ("output_tokens", "output_length", "generated_tokens", "osl", "output_len")
# Mooncake's traces (and AIPerf's and NVIDIA Dynamo's mooncake_trace format) write each request as
# {"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [...]}: a file whose arrival
# key is timestamp beside those two token keys has its timestamps in milliseconds
_MOONCAKE_KEYS: Final = frozenset({"timestamp", "input_length", "output_length"})
_MS_PER_S: Final = 1e3


def _pick(
    record: dict[str, Any],
    keys: tuple[str, ...],
    path: Path,
    line: int,
    *,
    fix: str = _TOKENS_FIX,
    maximum: float = math.inf,
    unit: str = "",
) -> float:
    """The first of ``keys`` in ``record``: a finite number from 0 to ``maximum`` (in ``unit``)."""
    for key in keys:
        if key in record and record[key] not in (None, ""):
            raw = record[key]
            if isinstance(raw, bool):  # JSON true is no count (Python's float(True) is 1.0)
                shown_bool = "true" if raw else "false"
                raise DataFileError(
                    path,
                    "not a number",
                    field=key,
                    value=shown_bool,
                    line=line,
                    fix="write a number, not true or false",
                )
            shown = raw if isinstance(raw, int | float) else excerpt(raw)
            try:
                value = float(raw)
            except (TypeError, ValueError):
                raise DataFileError(path, "not a number", field=key, value=shown, line=line) from None
            if math.isinf(value) and isinstance(raw, str) and not _written_infinite(raw):
                raise DataFileError(
                    path,
                    "a number too large for a 64-bit float (above 1.8e308)",
                    field=key,
                    value=shown,
                    line=line,
                    fix=fix,
                )
            if not math.isfinite(value) or value < 0:
                raise DataFileError(path, "must be a finite number >= 0", field=key, value=shown, line=line)
            if value > maximum:
                raise DataFileError(
                    path,
                    f"{value:g}{unit} is above the limit of {maximum:g}{unit}",
                    field=key,
                    line=line,
                    fix=fix,
                )
            return value
    empty = next((key for key in keys if key in record), None)
    if empty is not None:  # the column is there, this row's cell is not
        raise DataFileError(path, "an empty cell", field=empty, line=line, fix="give every request a value")
    raise _no_column(record, keys, path, line)


_LISTED_COLUMNS: Final = 8  # columns a message lists, then how many more


def _no_column(record: dict[Any, Any], keys: tuple[str, ...], path: Path, line: int) -> DataFileError:
    """A record with none of ``keys``: the error names where the columns are (a CSV's header,
    line 1; a JSONL object's own line) and lists those there; a trace's fix names the keys it
    reads, a length file's column (one key, ``file:PATH:COLUMN``) the columns it could pick."""
    present = [excerpt(str(key), 40) for key in record if key is not None]
    shown = ", ".join(present[:_LISTED_COLUMNS]) or "none"
    if len(present) > _LISTED_COLUMNS:
        shown += f" and {len(present) - _LISTED_COLUMNS:,} more"
    jsonl = _is_jsonl(path)
    where = f"the object holds the keys {shown}" if jsonl else f"the header names {shown}"
    if len(keys) > 1:
        fix = f"name the column one of {', '.join(keys)}"
    elif present:
        fix = f"pick a {'key' if jsonl else 'column'} it has, e.g. file:{path}:{present[0]}"
    else:
        fix = "give the file a header row naming its columns"
    return DataFileError(
        path, f"no {keys[0]} {'key' if jsonl else 'column'} ({where})", line=line if jsonl else 1, fix=fix
    )


def _written_infinite(text: str) -> bool:
    """Whether ``text`` spells infinity itself (``inf``), rather than a number too large for a float."""
    return text.strip().lower().lstrip("+-") in ("inf", "infinity")


def _json_number(text: str) -> float | str:
    """A JSON number of a trace as a float, or as its text where no float holds it: :func:`_pick`
    then says it is too large (``int()`` refuses over 4,300 digits, ``float()`` overflows)."""
    value = float(text)
    return value if math.isfinite(value) else text


def _is_jsonl(path: Path) -> bool:
    """Whether a trace or length file is read as JSONL (one object per line) rather than CSV."""
    return path.suffix.lower() in (".jsonl", ".json", ".ndjson")


def _records(path: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    """(line, record) of a CSV file with a header, or of a JSONL file (one object per line)."""
    if _is_jsonl(path):
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            check_nesting(line.encode("utf-8"), path=path, line=number)  # json recurses once a level
            try:
                record = json.loads(line, parse_int=_json_number, parse_float=_json_number)
            except json.JSONDecodeError as error:
                raise DataFileError(path, f"not a JSON object ({error.msg})", line=number) from None
            if not isinstance(record, dict):
                raise DataFileError(path, "each line must be a JSON object", line=number)
            rows.append((number, record))
        return rows
    reader = csv.DictReader(io.StringIO(text))
    try:
        rows = [(reader.line_num, dict(row)) for row in reader]
    except csv.Error as error:  # a cell over the csv module's 131,072 characters
        raise DataFileError(
            path,
            f"not a readable CSV table ({error})",
            line=reader.line_num + 1,
            fix="check that line's cells",
        ) from None
    columns = len(reader.fieldnames or ())
    for row_line, row in rows:
        cells = _cells(row, columns)
        if cells != columns:
            raise DataFileError(
                path,
                f"{cells} cells where the header names {columns} columns",
                line=row_line,
                fix="give each row one cell per column",
            )
    return rows


def _cells(row: dict[Any, Any], columns: int) -> int:
    """Cells in a row of :class:`csv.DictReader` (extra cells under the key ``None``, missing ones
    ``None`` values) whose header names ``columns`` columns."""
    extra = len(row.get(None) or ())
    missing = sum(1 for key, value in row.items() if key is not None and value is None)
    return columns + extra - missing


def _is_mooncake(records: list[tuple[int, dict[str, Any]]]) -> bool:
    """Whether a trace is in Mooncake's format (:data:`_MOONCAKE_KEYS`, no other arrival key): its
    timestamps are milliseconds."""
    keys = set(records[0][1])
    return keys >= _MOONCAKE_KEYS and not keys & (set(_ARRIVAL_KEYS) - {"timestamp"})


def _arrivals_per_s(path: Path, records: list[tuple[int, dict[str, Any]]]) -> float:
    """Arrival-time units a second in the trace at ``path``: 1000 for Mooncake's JSONL (its
    timestamps are milliseconds), 1 otherwise; a CSV with Mooncake's columns is refused, since
    Mooncake writes JSONL while a CSV trace's times are seconds (either reading is 1000x off for
    someone, as a converted Mooncake trace or a CSV written in seconds)."""
    if not _is_mooncake(records):
        return 1.0
    if _is_jsonl(path):
        return _MS_PER_S
    raise DataFileError(
        path,
        "the columns timestamp, input_length and output_length are Mooncake's, whose timestamp is "
        "milliseconds, but Mooncake writes JSONL and a CSV trace's arrival times are seconds",
        field="timestamp",
        line=1,
        fix=_MOONCAKE_CSV_FIX,
    )


def _file_path(path: object, example: str) -> Path:
    """``path`` (a :class:`~pathlib.Path` or its text) as a Path; anything else refused in one line."""
    hint = f"a file's path, e.g. {example!r}"
    check_kind("path", path, (str, os.PathLike), hint, what="a path or its text")
    return Path(path)  # type: ignore[arg-type]  # checked above


def load_request_trace(path: str | os.PathLike[str]) -> RequestTrace:
    """Read a trace of requests: CSV with a header, or JSONL, with an arrival time in seconds
    (``arrival_s``, ``timestamp`` ...), prompt tokens (``input_tokens``, ``prompt_tokens``, ``isl``
    ...) and output tokens (``output_tokens``, ``osl`` ...) per request; a JSONL trace in
    Mooncake's format (``timestamp``, ``input_length``, ``output_length``) has its timestamps in
    milliseconds, and a CSV with those columns is refused (:func:`_arrivals_per_s`). Arrivals are
    sorted and shifted to start at zero. ``path``: a :class:`~pathlib.Path` or its text."""
    path = _file_path(path, "trace.csv")
    records = _records(path, read_text(path, what="request trace"))
    if not records:
        raise DataFileError(path, "the trace holds no requests", fix="write one request per line")
    if len(records) > MAX_TRACE_REQUESTS:
        raise DataFileError(path, f"more than {MAX_TRACE_REQUESTS:,} requests", fix="split the trace")
    per_s = _arrivals_per_s(path, records)
    unit, fix = (" ms", _MILLISECONDS_FIX) if per_s != 1.0 else (" s", _SECONDS_FIX)
    arrival: list[float] = []
    inputs: list[int] = []
    outputs: list[int] = []
    for line, record in records:
        written = _pick(record, _ARRIVAL_KEYS, path, line, fix=fix, maximum=MAX_ARRIVAL_S * per_s, unit=unit)
        arrival.append(written / per_s)
        for keys, target in ((_INPUT_KEYS, inputs), (_OUTPUT_KEYS, outputs)):
            tokens = _pick(record, keys, path, line)
            if tokens < 1 or tokens > MAX_REQUEST_TOKENS or tokens != int(tokens):
                raise DataFileError(
                    path,
                    f"token counts must be whole numbers from 1 to {MAX_REQUEST_TOKENS:,}",
                    field=next((key for key in keys if key in record), keys[0]),  # as the file names it
                    value=tokens,
                    line=line,
                )
            target.append(int(tokens))
    times = np.asarray(arrival)
    order = np.argsort(times, kind="stable")
    start = min(arrival)
    if arrival[order[-1]] - start > MAX_TRACE_SPAN_S:
        raise DataFileError(
            path,
            f"the trace spans {arrival[order[-1]] - start:g} s from its first arrival to this one, above "
            f"the limit of {MAX_TRACE_SPAN_S:g} s (over 3 years)",
            line=records[order[-1]][0],
            fix=_SECONDS_FIX,
        )
    return RequestTrace(
        arrival_s=tuple(float(arrival[i] - start) for i in order),
        input_tokens=tuple(inputs[i] for i in order),
        output_tokens=tuple(outputs[i] for i in order),
        path=str(path),
        arrival_unit="ms" if per_s != 1.0 else "s",
        num_out_of_order=_num_out_of_order(times),
    )


def _num_out_of_order(times: np.ndarray) -> int:
    """Arrival times earlier than one written above them (10, 0, 5: two).

    >>> _num_out_of_order(np.array([10.0, 0.0, 5.0])), _num_out_of_order(np.array([0.0, 0.0, 1.0]))
    (2, 0)
    """
    if times.size < 2:
        return 0
    return int(np.count_nonzero(times[1:] < np.maximum.accumulate(times)[:-1]))


def _length(tokens: int, path: Path, line: int, column: str | None = None) -> int:
    """``tokens`` of a length file's ``line``, refused outside 1 to :data:`MAX_REQUEST_TOKENS`."""
    if not 1 <= tokens <= MAX_REQUEST_TOKENS:
        raise DataFileError(path, "out of range", field=column, value=tokens, line=line, fix=_TOKENS_FIX)
    return tokens


# a count written with thousands separators: 1,024 or 12,345,678 (groups of exactly three digits
# after the first); any other comma separates values, as on a CSV line
_GROUPED_COUNT: Final = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?")
_COLUMN_FIX: Final = "write one token count per line, or pick a CSV/JSONL column with file:PATH:COLUMN"


def load_lengths(path: str | os.PathLike[str], column: str | None = None) -> LengthDistribution:
    """An empirical distribution from a file of lengths (``path``: a :class:`~pathlib.Path` or its
    text): one whole number per line (``1,024`` grouped in thousands is 1024), or a CSV/JSONL
    column (``column``, e.g. ``input_tokens``)."""
    path = _file_path(path, "lengths.txt")
    text = read_text(path, what="length file")
    values = _plain_lengths(path, text) if column is None else _column_lengths(path, text, column)
    if not values:
        raise DataFileError(
            path,
            "holds no lengths",
            fix="write one token count per line (or a CSV/JSONL column, file:PATH:COLUMN)",
        )
    return LengthDistribution.empirical(values)


def _plain_lengths(path: Path, text: str) -> list[int]:
    """The counts of a file of one count per line (blank lines and ``#`` comments skipped)."""
    return [
        _line_length(line.strip(), path, number)
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.lstrip().startswith("#")
    ]


def _line_length(written: str, path: Path, line: int) -> int:
    """The count ``written`` on ``line`` of a plain length file; a comma that does not group
    thousands (``100,20``) makes it a line of several values, refused rather than run together."""
    digits = written
    if "," in written:
        if not _GROUPED_COUNT.fullmatch(written):
            raise DataFileError(
                path,
                "the line holds several comma-separated values, not one token count",
                value=excerpt(written),
                line=line,
                fix="write one count per line, or name a column of a CSV with a header row as "
                "file:PATH:COLUMN (e.g. file:lengths.csv:input_tokens)",
            )
        digits = written.replace(",", "")
    if len(digits) > 18 and digits.lstrip("+-").isdigit():  # int() refuses over 4,300 digits
        raise DataFileError(
            path,
            f"above the limit of {MAX_REQUEST_TOKENS:,}",
            value=excerpt(digits),
            line=line,
            fix=_TOKENS_FIX,
        )
    try:
        count = int(digits)
    except ValueError:
        raise DataFileError(
            path, "not a whole number", value=excerpt(written), line=line, fix=_COLUMN_FIX
        ) from None
    return _length(count, path, line)


def _column_lengths(path: Path, text: str, column: str) -> list[int]:
    """The counts in ``column`` of a CSV (with a header) or JSONL file."""
    values = []
    for row, record in _records(path, text):
        written_count = _pick(record, (column,), path, row)
        if written_count != int(written_count):
            raise DataFileError(
                path, "not a whole number", field=column, value=written_count, line=row, fix=_TOKENS_FIX
            )
        values.append(_length(int(written_count), path, row, column))
    return values


def _share_text(share: float) -> str:
    """A share below 1 as a percentage that never rounds up to 100% (or down to 0%).

    >>> _share_text(0.5), _share_text(0.999999), _share_text(0.0004)
    ('50%', '99.9999%', '0.04%')
    """
    whole = f"{share:.0%}"
    if whole not in ("100%", "0%"):
        return whole
    return f"{share * 100:.6g}%"


__all__ = [
    "ARRIVAL_KINDS",
    "LENGTH_KINDS",
    "RATE_ARRIVALS",
    "ArrivalProcess",
    "LengthDistribution",
    "RequestTrace",
    "Requests",
    "ServingWorkload",
    "generate_requests",
    "load_lengths",
    "load_request_trace",
]

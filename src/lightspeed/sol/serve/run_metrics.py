"""Metrics of a simulated run: latency percentiles, throughput, SLO goodput, time series.

* **TTFT**: arrival to first token; **TPOT**: ``(finish - first token) / (output - 1)``
  per request (vLLM's and trtllm-bench's definition); **ITL**: the gap between a
  sequence's successive streamed tokens (or speculative bursts), i.e. iteration
  times weighted by the sequences decoding in them; **E2E**: arrival to last token.
* **Throughput** over the run, first arrival to last completion (as
  trtllm-bench and MLPerf's LoadGen count it).
* **Goodput at an SLO** (DistServe, Zhong et al. OSDI 2024): a request is good if
  it meets both its TTFT and its TPOT limit; ``attainment`` is the share of
  good requests among every measured request that arrived during the run (one still
  waiting or decoding when a ``--horizon`` stops the run counts as missing the limit it
  has not met: no first token misses TTFT, not finished misses TPOT), ``goodput`` the
  requests per second that meet both limits: the attainment times the rate requests are offered
  at (``offered_requests_per_s``, :func:`offered_rate` of the measured requests' arrivals), at most
  the rate they are served at (``served_requests_per_s``, never above the offered rate: for
  requests arriving over time, the offered rate where the run kept up (settled), else the lower of
  it and the run's completions per second from its first arrival to its end, warm-up included; for
  a closed loop, the users over their mean latency while every user is busy, Little's law;
  otherwise completions over the run), so never more than the run served. A run that keeps up
  serves what it is offered, so its goodput is the attainment times that rate; one that falls
  behind is not penalised twice (its late requests count as misses in the attainment, and the
  served rate is what it completed): its goodput is the good requests per second of the arrivals'
  span, at most what it served, the rule
  :func:`~lightspeed.sol.serve.goodput_search.search_goodput` ranks a given rate by. Without an
  offered rate (a closed loop, whose users send as fast as they are served) the attainment times
  the served rate. MLPerf's Server
  scenario asks instead that the 99th percentiles of TTFT and TPOT meet the limits.
* **Time series** (queue length, running sequences, requests in flight, KV use)
  at up to :data:`MAX_SERIES_POINTS` times, each the mean over its slice of the run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from lightspeed.errors import UserInputError
from lightspeed.limits import check_kind, check_number
from lightspeed.records import JsonDict, Record

Array = Any
MAX_SERIES_POINTS: Final = 400
DISTSERVE_ATTAINMENT: Final = 0.9  # DistServe's goodput target: 90% of requests within both SLOs


@dataclass(frozen=True)
class LatencyStats(Record):
    """Mean and percentiles of one latency, seconds (NaN when no request has it)."""

    mean_s: float
    p50_s: float
    p90_s: float
    p99_s: float
    max_s: float

    @classmethod
    def of(cls, values: Array, weights: Array | None = None) -> LatencyStats:
        """Statistics of ``values`` (optionally weighted); NaN values are left out. Unweighted
        percentiles are numpy's linear interpolation between the two nearest values (TTFT, TPOT,
        E2E, as vLLM's benchmark computes them); weighted ones (ITL) the nearest rank, the smallest
        value whose cumulative weight reaches the percentile (:func:`weighted_percentile`), and the
        maximum is over the values of weight above 0."""
        data = np.asarray(values, dtype=np.float64)
        keep = np.isfinite(data)
        data = data[keep]
        if not data.size:
            return cls(*(math.nan,) * 5)
        if weights is None:
            p50, p90, p99 = np.percentile(data, (50.0, 90.0, 99.0))
            return cls(float(data.mean()), float(p50), float(p90), float(p99), float(data.max()))
        weight = np.asarray(weights, dtype=np.float64)[keep]
        order = np.argsort(data, kind="stable")
        data, weight = data[order], weight[order]
        total = weight.sum()
        if total <= 0:
            return cls(*(math.nan,) * 5)
        p50, p90, p99 = (_sorted_weighted_percentile(data, weight, q) for q in (50.0, 90.0, 99.0))
        # the largest value that counts: a weightless one (a prompt-only step: no token gap) is none
        return cls(float((data * weight).sum() / total), p50, p90, p99, float(data[weight > 0].max()))


def weighted_percentile(values: Array, weights: Array, percentile: float) -> float:
    """The ``percentile`` (0-100) of ``values`` each counted ``weights`` times: the smallest value
    whose cumulative weight reaches it (NaN values and no weight: NaN).

    >>> weighted_percentile(np.array([3.0, 1.0, 2.0]), np.array([1.0, 1.0, 2.0]), 50.0)
    2.0
    """
    data = np.asarray(values, dtype=np.float64)
    weight = np.asarray(weights, dtype=np.float64)
    keep = np.isfinite(data)
    data, weight = data[keep], weight[keep]
    order = np.argsort(data, kind="stable")
    if not data.size or weight.sum() <= 0:
        return math.nan
    return _sorted_weighted_percentile(data[order], weight[order], percentile)


def _sorted_weighted_percentile(data: Array, weight: Array, percentile: float) -> float:
    cumulative = np.cumsum(weight) / weight.sum()
    return float(data[min(int(np.searchsorted(cumulative, percentile / 100.0)), data.size - 1)])


@dataclass(frozen=True)
class ServiceLevel(Record):
    """Latency limits of an SLO and the share of requests that must meet both (DistServe: 90%);
    ``per_limit``: each limit met by that share on its own, the same requests or not (MLPerf
    LoadGen's rule: the 99th percentile of TTFT and of TPOT each within its limit)."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    attainment: float = DISTSERVE_ATTAINMENT
    per_limit: bool = False

    def __post_init__(self) -> None:
        if self.ttft_s is None and self.tpot_s is None:
            raise UserInputError("an SLO needs a TTFT or a TPOT limit (e.g. ttft=2s,tpot=50ms)")
        for label, value in (("TTFT", self.ttft_s), ("TPOT", self.tpot_s)):
            if value is not None:
                check_number(f"the {label} limit {label.lower()}_s (seconds)", value, above=0.0)
        check_number(
            "the SLO attainment (the share of requests that must meet it)",
            self.attainment,
            above=0.0,
            maximum=1.0,
        )
        check_kind("per_limit", self.per_limit, bool, "True or False")

    def describe(self) -> str:
        """``TTFT <= 2 s, TPOT <= 50 ms for 90% of requests`` (``..., each for 99% of requests``
        per limit)."""
        parts = []
        if self.ttft_s is not None:
            parts.append(f"TTFT <= {_seconds(self.ttft_s)}")
        if self.tpot_s is not None:
            parts.append(f"TPOT <= {_seconds(self.tpot_s)}")
        each = "each " if self.per_limit and len(parts) > 1 else ""
        return f"{', '.join(parts)} {each}for {share_text(self.attainment)} of requests"


def share_text(share: float) -> str:
    """A share as a percent with the digits it was given to (up to six significant): an SLO's
    attainment of 99.5% reads back as such, not rounded to a whole 100%.

    >>> share_text(0.9), share_text(0.995), share_text(0.9555), share_text(1.0)
    ('90%', '99.5%', '95.55%', '100%')
    """
    return f"{round(share * 100.0, 6):g}%"


def _seconds(value: float) -> str:
    return f"{value * 1e3:g} ms" if value < 1.0 else f"{value:g} s"


@dataclass(frozen=True)
class SloResult(Record):
    """How a run meets an SLO: shares of requests within each limit and within both, goodput
    (good requests per second, and per GPU: ``attainment`` times ``offered_requests_per_s``, at
    most ``served_requests_per_s``, the run's
    :attr:`~lightspeed.sol.serve.simulator.SimulationResult.served_requests_per_s`; the attainment
    times that where no offered rate is recorded), and whether the 99th percentiles meet the limits."""

    slo: ServiceLevel
    ttft_attainment: float
    tpot_attainment: float
    attainment: float
    goodput_requests_per_s: float
    goodput_requests_per_s_per_gpu: float
    meets: bool
    p99_meets: bool
    served_requests_per_s: float = math.nan  # the most the goodput can be (NaN: not recorded)
    offered_requests_per_s: float = math.nan  # the rate the goodput is a share of (NaN: not recorded)
    num_unscored: int = 0  # requests in flight at a horizon, neither met nor missed yet: not scored


def slo_result(
    slo: ServiceLevel,
    *,
    ttft_s: Array,
    tpot_s: Array,
    ttft: LatencyStats,
    tpot: LatencyStats,
    requests_per_s: float,
    num_gpus: int,
    finished: Array | None = None,
    offered_requests_per_s: float | None = None,
    undecided: Array | None = None,
) -> SloResult:
    """Score requests' TTFT and TPOT (aligned arrays over every request the run offered and
    measures; NaN TTFT: no first token yet, NaN TPOT: one output token or not finished) against
    ``slo``; ``finished`` marks the requests that completed (default: those with a first token).

    Every share is over all those requests, so each lies in [0, 1]: a request without a first token
    misses the TTFT limit, one not finished misses the TPOT limit (its TPOT is not known), and a
    finished one-token request has no TPOT to miss. Goodput is the attainment times the rate the
    requests were offered at (``offered_requests_per_s``, :func:`offered_rate` of their arrivals),
    at most the rate they are served at (``requests_per_s``): the good requests per second, each
    miss counted once (a run that falls behind leaves its late requests out of the served rate as
    well as the attainment); without an offered rate, the attainment times the served rate. The 99th
    percentiles meet the limits only where every request finished (a TPOT percentile of none: every
    output one token). ``undecided`` marks requests a run stopped at a horizon left in flight that
    have missed no limit yet (a first token in time, or none but not yet waited longer than the TTFT
    limit): they are left out of every share (``num_unscored``), as neither met nor missed (the goodput
    counts only the good requests seen, over every request offered); the SLO
    is ``meets`` only where it holds with each of them a miss (a horizon too short to tell says
    missed)."""
    ttft_s = np.asarray(ttft_s, dtype=np.float64)
    tpot_s = np.asarray(tpot_s, dtype=np.float64)
    done = np.isfinite(ttft_s) if finished is None else np.asarray(finished, dtype=bool)
    scored = np.ones(ttft_s.shape, dtype=bool) if undecided is None else ~np.asarray(undecided, dtype=bool)
    ttft_s, tpot_s, done = ttft_s[scored], tpot_s[scored], done[scored]
    count = max(int(ttft_s.size), 1)
    ttft_ok = np.isfinite(ttft_s) & (True if slo.ttft_s is None else ttft_s <= slo.ttft_s)
    tpot_ok = done & (True if slo.tpot_s is None else ~(tpot_s > slo.tpot_s))  # one token: no TPOT to miss
    good = ttft_ok & tpot_ok
    attainment = float(good.sum()) / count
    # the good requests over every one offered, those left in flight too: a good request is one seen
    # meeting both limits, so the goodput never counts more than the run showed
    unscored = int((~scored).sum())
    goodput = _goodput(attainment * count / (count + unscored), requests_per_s, offered_requests_per_s)
    # a percentile over the finished requests only says nothing of those left in flight
    all_done = bool(ttft_s.size) and bool(done.all())
    tpot_p99_ok = slo.tpot_s is None or not tpot.p99_s > slo.tpot_s  # NaN: every output one token
    p99 = all_done and (slo.ttft_s is None or ttft.p99_s <= slo.ttft_s) and tpot_p99_ok
    ttft_share, tpot_share = float(ttft_ok.sum()) / count, float(tpot_ok.sum()) / count
    met = min(ttft_share, tpot_share) if slo.per_limit else attainment
    met *= count / (count + unscored)  # met only if it holds with every unscored request a miss
    return SloResult(
        slo=slo,
        ttft_attainment=ttft_share,
        tpot_attainment=tpot_share,
        attainment=attainment,
        goodput_requests_per_s=goodput,
        goodput_requests_per_s_per_gpu=goodput / num_gpus,
        meets=met >= slo.attainment,
        p99_meets=bool(p99),
        served_requests_per_s=requests_per_s,
        offered_requests_per_s=math.nan if offered_requests_per_s is None else offered_requests_per_s,
        num_unscored=unscored,
    )


def _goodput(attainment: float, served_per_s: float, offered_per_s: float | None) -> float:
    """Good requests per second: ``attainment`` of the offered rate, at most the served rate
    (:func:`slo_result`).

    >>> _goodput(0.5, 30.0, 40.0), _goodput(0.5, 15.0, 40.0), _goodput(0.5, 30.0, None)
    (20.0, 15.0, 15.0)
    """
    if offered_per_s is None or not math.isfinite(offered_per_s):
        return attainment * served_per_s
    return min(attainment * offered_per_s, served_per_s)


def offered_rate(arrival_s: Array) -> float:
    """The rate requests arrive at: the arrivals after the first over the span from the first to
    the last (NaN for fewer than two, or all at once).

    >>> offered_rate(np.array([0.0, 1.0, 2.0, 4.0]))
    0.75
    """
    arrival = np.asarray(arrival_s, dtype=np.float64)
    arrival = arrival[np.isfinite(arrival)]
    if arrival.size < 2:
        return math.nan
    span = float(arrival.max() - arrival.min())
    return (arrival.size - 1) / span if span > 0 else math.nan


@dataclass(frozen=True)
class TimeSeries(Record):
    """The run over time (means over equal slices): requests waiting, sequences running,
    requests in flight (arrived, not completed) and the fullest rank's KV use (0-1)."""

    time_s: tuple[float, ...]
    queue_length: tuple[float, ...]
    running: tuple[float, ...]
    in_flight: tuple[float, ...]
    kv_use: tuple[float, ...]


def in_flight_mean(arrival_s: Array, finish_s: Array, start_s: float, end_s: float) -> float:
    """Time-averaged number of requests arrived and not completed over ``[start_s, end_s]``."""
    if end_s <= start_s:
        return 0.0
    begin = np.clip(arrival_s, start_s, end_s)
    finish = np.clip(np.where(np.isfinite(finish_s), finish_s, end_s), start_s, end_s)
    return float(np.maximum(finish - begin, 0.0).sum() / (end_s - start_s))


# A run is settled when the requests in flight grow (or shrink) between the two halves of its
# measured arrivals by at most this share of the requests that arrived in a half: runs at up to 80%
# of the saturation rate, measured after a warm-up as deep as the deployment's batch, stay within
# 2.3% (six seeds, Llama 3.1 8B and 70B on H100); 2,000 requests from an empty start 10% over
# saturation fall behind by 15-46%, 30% over by 29-60% (docs/serving.md, tests/sol/serve/test_settling.py).
SETTLED_BACKLOG: Final = 0.05
# Burstier arrivals than Poisson widen the threshold by their squared CV (Settling.backlog_threshold),
# up to this share: beyond it the noise of a run of a few thousand requests reaches the backlog of one
# over saturation, and only a longer run tells them apart
SETTLED_BACKLOG_MAX: Final = 0.2
# Fewer measured arrivals say nothing of settling: one request more in flight over a half moves the
# backlog share by 2 / arrivals, so below 2 / SETTLED_BACKLOG = 40 a single request reads as a backlog
MIN_SETTLING_ARRIVALS: Final = round(2 / SETTLED_BACKLOG)


@dataclass(frozen=True)
class Settling(Record):
    """Whether a run under arrivals at a rate reached its steady state while it was measured: the
    time-averaged requests in flight (arrived, not completed) over the first and the second half of
    the span of its ``measured_arrivals``. A deployment that keeps up holds about as many in both;
    one still filling its batch, or offered more than it serves (its queue growing without bound),
    holds more in the second: ``backlog_share``, that growth over the requests arriving in a half,
    is the share of the offered load it fell behind by, and its latencies are then those of a run
    too short to show it (a lower bound).

    ``first_half_arrived`` and ``second_half_arrived`` are the same time averages of the requests
    arrived (completed or not): their growth is what the requests in flight would grow by were none
    completed (completions only lower the second half's count more than the first's), so the growth
    in flight over the larger of it and the requests arriving in a half is a share of the arrivals,
    at most 1. Arrivals at an even pace grow it by about the requests arriving in a half, the
    measure the settling threshold was set on; arrivals bunched late grow it more, and a run that
    completed nothing over them read above 100% (NaN: not recorded, the half alone).

    ``first_half_queue`` and ``second_half_queue`` are the requests waiting for admission (not yet
    in a batch), averaged over the iterations' time in each half: a deployment offered more than it
    serves fills its batch and then queues the rest, so its queue grows (``falling_behind``); one
    whose requests in flight grow while none wait longer is still filling its batch (the run is too
    short for its steady state) but admits every request it is offered (NaN: not recorded).

    ``arrival_cv``: the coefficient of variation of the gaps between arrivals (1 for Poisson), which
    sets :attr:`backlog_threshold`."""

    first_half_in_flight: float
    second_half_in_flight: float
    measured_arrivals: int
    first_half_arrived: float = math.nan
    second_half_arrived: float = math.nan
    first_half_queue: float = math.nan
    second_half_queue: float = math.nan
    arrival_cv: float = 1.0

    @property
    def backlog_threshold(self) -> float:
        """The largest :attr:`backlog_share` either way of a run called settled: :data:`SETTLED_BACKLOG`
        times the arrivals' squared CV where that is above 1, at most :data:`SETTLED_BACKLOG_MAX`.

        A deployment that keeps up holds a number of requests that fluctuates about its mean, and
        the two halves' means differ by that noise, not by a backlog. The noise grows with the
        burstiness of the arrivals: Kingman's heavy-traffic queue is proportional to
        (ca^2 + cs^2) / 2, the arrivals' and the service's squared CVs, so where the service is
        steadier than the arrivals the queue and its excursions scale about as ca^2; and the count
        of arrivals in each half has a variance ca^2 times its mean (a renewal process, Cox 1962).
        Measured (Llama 3 8B FP8 on one H100, 500/200 tokens, 1,388 + 1,388 requests, six seeds):
        the largest backlog share at 50%, 60% and 70% of saturation was 0.7%, 1.0% and 1.7% with
        Poisson arrivals and 3.3%, 6.3% and 12.5% with CV 2, 5-7 times more (ca^2 = 4), so a fixed
        5% called runs at 70% of saturation unsettled by chance. Poisson arrivals (CV 1) keep the 5%
        the threshold was set at, and smoother ones keep it too (it also bounds a batch still
        filling). At CV 2 it is 20%, the most: runs 10% over saturation fell behind by 13.5% to 56%
        there, so a wider threshold would call some of them settled; a burstier run needs more
        requests (``--requests``) to settle.

        >>> [Settling(1.0, 1.0, 100, arrival_cv=cv).backlog_threshold for cv in (0.5, 1.0, 2.0, 3.0)]
        [0.05, 0.05, 0.2, 0.2]
        """
        widened = SETTLED_BACKLOG * max(self.arrival_cv, 1.0) ** 2
        return min(widened, SETTLED_BACKLOG_MAX)

    @property
    def backlog_share(self) -> float:
        """Growth of the requests in flight from the first half to the second, over the larger of the
        requests that arrived in a half and the growth of the requests arrived (negative: a backlog
        draining; at most 1, nothing completing)."""
        half = max(self.measured_arrivals / 2.0, 1.0)
        arrived = self.second_half_arrived - self.first_half_arrived
        if math.isfinite(arrived):
            half = max(half, arrived)
        return (self.second_half_in_flight - self.first_half_in_flight) / half

    @property
    def queue_growth_share(self) -> float:
        """Growth of the requests waiting for admission from the first half to the second, over the
        same requests as :attr:`backlog_share` (NaN: the queue not recorded)."""
        half = max(self.measured_arrivals / 2.0, 1.0)
        arrived = self.second_half_arrived - self.first_half_arrived
        if math.isfinite(arrived):
            half = max(half, arrived)
        return (self.second_half_queue - self.first_half_queue) / half

    @property
    def falling_behind(self) -> bool | None:
        """Whether the queue for admission grew by more than :data:`SETTLED_BACKLOG` of the arrivals
        (``None``: the queue not recorded). A run that did not settle without it was filling its
        batch: it served every request it was offered, at latencies that still grow."""
        growth = self.queue_growth_share
        return None if math.isnan(growth) else growth > SETTLED_BACKLOG

    @property
    def settled(self) -> bool:
        """The backlog within :attr:`backlog_threshold` of the arrivals either way
        (:data:`SETTLED_BACKLOG` for Poisson arrivals)."""
        return abs(self.backlog_share) <= self.backlog_threshold

    @property
    def kept_up(self) -> bool:
        """Whether the deployment served every request it was offered: it settled, or its queue for
        admission did not grow (its batch still filling, or a backlog draining)."""
        return self.settled or self.falling_behind is False

    def to_dict(self) -> JsonDict:
        return {
            **super().to_dict(),
            "backlog_share": self.backlog_share,
            "settled": self.settled,
            "queue_growth_share": self.queue_growth_share,
            "falling_behind": self.falling_behind,
        }

    def describe(self) -> str:
        """One line for a run that did not settle (empty for one that did)."""
        if self.settled:
            return ""
        first, second = self.first_half_in_flight, self.second_half_in_flight
        if second > first and self.falling_behind is False:
            return (
                f"not settled: requests in flight rose from {first:,.1f} over the first half of the measured "
                f"arrivals to {second:,.1f} over the second ({self.backlog_share:.0%} of the requests that "
                f"arrived) while the queue for admission held {self.first_half_queue:,.1f} then "
                f"{self.second_half_queue:,.1f}: the deployment admitted every request and was still filling "
                "its batch, so the run is too short for its steady state and these latencies are a lower "
                "bound (simulate more requests with --requests and --warmup)"
            )
        if second > first:
            queue = (
                f"; requests waiting for admission rose from {self.first_half_queue:,.1f} to "
                f"{self.second_half_queue:,.1f}"
                if self.falling_behind
                else ""
            )
            return (
                f"not settled: requests in flight rose from {first:,.1f} over the first half of the measured "
                f"arrivals to {second:,.1f} over the second, the deployment falling behind by "
                f"{self.backlog_share:.0%} of the requests that arrived (100%: none completing){queue}: "
                "the rate is at or above what it sustains, or the run is too short to fill its batch; these "
                "latencies are a lower bound "
                "(simulate more requests with --requests and --warmup, or find the rate it sustains with "
                "--max-rate-at-slo)"
            )
        return (
            f"not settled: requests in flight fell from {first:,.1f} over the first half of the measured "
            f"arrivals to {second:,.1f} over the second ({-self.backlog_share:.0%} of the requests that "
            "arrived), a backlog draining; simulate more requests (--requests) for settled percentiles"
        )


def settling(
    arrival_s: Array,
    finish_s: Array,
    measured_arrival_s: Array,
    *,
    queue: tuple[Array, Array, Array] | None = None,
    arrival_cv: float = 1.0,
) -> Settling | None:
    """:class:`Settling` of a run whose requests arrived at ``arrival_s`` and finished at
    ``finish_s`` (``inf``: not finished), measured over the span of ``measured_arrival_s``;
    ``None`` when that span is empty or holds fewer than :data:`MIN_SETTLING_ARRIVALS` arrivals.
    ``queue``: the iterations' starts, seconds and requests waiting, for the queue's growth;
    ``arrival_cv``: the CV of the arrivals' gaps (:attr:`Settling.backlog_threshold`)."""
    measured = measured_arrival_s[np.isfinite(measured_arrival_s)]
    if measured.size < max(MIN_SETTLING_ARRIVALS, 2):
        return None
    start, end = float(measured.min()), float(measured.max())
    if end <= start:
        return None
    middle = (start + end) / 2.0
    arrived = np.isfinite(arrival_s)
    arrivals, finishes = arrival_s[arrived], finish_s[arrived]
    never = np.full(arrivals.shape, np.inf)  # the requests arrived, as if none completed
    return Settling(
        first_half_in_flight=in_flight_mean(arrivals, finishes, start, middle),
        second_half_in_flight=in_flight_mean(arrivals, finishes, middle, end),
        measured_arrivals=int(measured.size),
        first_half_arrived=in_flight_mean(arrivals, never, start, middle),
        second_half_arrived=in_flight_mean(arrivals, never, middle, end),
        **_half_queues(queue, start, middle, end),
        arrival_cv=arrival_cv,
    )


def _half_queues(
    queue: tuple[Array, Array, Array] | None, start: float, middle: float, end: float
) -> dict[str, float]:
    """The mean requests waiting over the iterations' time in ``[start, middle]`` and in
    ``[middle, end]`` (:class:`Settling`; none without ``queue``, or where no iteration ran).

    >>> starts, seconds, waiting = np.array([0.0, 1.0, 2.0, 3.0]), np.ones(4), np.array([0.0, 2.0, 4.0, 6.0])
    >>> _half_queues((starts, seconds, waiting), 0.0, 2.0, 4.0)
    {'first_half_queue': 1.0, 'second_half_queue': 5.0}
    """
    if queue is None:
        return {}
    starts, seconds, waiting = queue
    edges = np.array([start, middle, end])
    busy = _held_integral(starts, starts + seconds, np.ones_like(waiting), edges)
    held = _held_integral(starts, starts + seconds, waiting, edges)
    if not (busy > 0).all():
        return {}
    first, second = held / busy
    return {"first_half_queue": float(first), "second_half_queue": float(second)}


def _slice_means(starts: Array, values: Array, durations: Array, edges: Array) -> tuple[float, ...]:
    """Per slice between ``edges``, the mean of ``values`` over the time their records cover in it
    (a record held from ``starts`` for ``durations``): a record spanning several slices counts in
    each by its overlap, so a merged run of iterations longer than a slice does not leave the
    slices after the one it starts in empty; a slice no record covers is 0 (nothing ran)."""
    ends = starts + durations
    covered = _held_integral(starts, ends, np.ones_like(values), edges)
    total = _held_integral(starts, ends, values, edges)
    means = np.divide(total, covered, out=np.zeros_like(total), where=covered > 1e-15)
    return tuple(float(value) for value in means)


def _held_integral(starts: Array, ends: Array, weights: Array, edges: Array) -> Array:
    """Per slice between ``edges``, the integral of the sum of ``weights`` of the records held
    then: ``sum_i w_i |[s_i, e_i) & slice|``, from ``sum_i w_i max(t - s_i, 0) - w_i max(t - e_i, 0)``
    at each edge (sorted sums, O((records + edges) log records))."""
    at_edges = _ramp_sum(starts, weights, edges) - _ramp_sum(ends, weights, edges)
    return np.asarray(np.diff(at_edges), dtype=np.float64)


def _ramp_sum(points: Array, weights: Array, at: Array) -> Array:
    """``sum_i weights_i max(at - points_i, 0)`` for each value of ``at``."""
    order = np.argsort(points, kind="stable")
    sorted_points, sorted_weights = points[order], weights[order]
    weight_before = np.concatenate([[0.0], np.cumsum(sorted_weights)])
    moment_before = np.concatenate([[0.0], np.cumsum(sorted_weights * sorted_points)])
    count = np.searchsorted(sorted_points, at, side="right")
    return np.asarray(at * weight_before[count] - moment_before[count], dtype=np.float64)


def time_series(
    *,
    arrival_s: Array,
    finish_s: Array,
    start_s: Array,
    duration_s: Array,
    queue: Array,
    running: Array,
    kv_use: Array,
    end_s: float,
) -> TimeSeries:
    """Slice the run into at most :data:`MAX_SERIES_POINTS` equal parts (see :class:`TimeSeries`)."""
    points = max(min(MAX_SERIES_POINTS, start_s.size), 1)
    edges = np.linspace(0.0, max(end_s, 1e-12), points + 1)
    weights = np.maximum(duration_s, 1e-12)
    events = np.concatenate([arrival_s, finish_s[np.isfinite(finish_s)]])
    steps = np.concatenate([np.ones(arrival_s.size), -np.ones(int(np.isfinite(finish_s).sum()))])
    order = np.argsort(events, kind="stable")
    count = np.cumsum(steps[order])
    at = np.searchsorted(events[order], edges[:-1] + np.diff(edges) / 2.0, side="right") - 1
    flight = np.where(at >= 0, count[np.maximum(at, 0)], 0.0)
    return TimeSeries(
        time_s=tuple(float(value) for value in edges[:-1]),
        queue_length=_slice_means(start_s, queue, weights, edges),
        running=_slice_means(start_s, running, weights, edges),
        in_flight=tuple(float(value) for value in flight),
        kv_use=_slice_means(start_s, kv_use, weights, edges),
    )


__all__ = [
    "DISTSERVE_ATTAINMENT",
    "MIN_SETTLING_ARRIVALS",
    "SETTLED_BACKLOG",
    "SETTLED_BACKLOG_MAX",
    "LatencyStats",
    "ServiceLevel",
    "Settling",
    "SloResult",
    "TimeSeries",
    "in_flight_mean",
    "offered_rate",
    "settling",
    "share_text",
    "slo_result",
    "time_series",
    "weighted_percentile",
]

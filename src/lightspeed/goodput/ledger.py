"""The goodput ledger: where a run's wall time went, and what it produced.

Wall time splits into productive step time and badput buckets that sum to the
total (:mod:`lightspeed.goodput.timeline`). Definitions follow Google's
ml-goodput-measurement where they apply:

- a step index repeated by a later job segment marks a restart: the earlier
  segment's steps from that index on are *wasted progress*;
- the gap between one segment's last event and the next segment's start is
  *recovery*;
- the first step of each segment beyond the ideal step time is *startup*
  (compilation, warm-up; Google's "program startup");
- time from a segment's start to its first step not timed otherwise is *init*.

Where lightspeed differs: steps are timed start to end (Google uses step-start
to step-start gaps), every timed data wait is a data stall (Google counts only
the first one after a start, assuming later loads overlap), and time no phase
covers is *other* rather than folded into the neighbouring step.

Multi-rank runs: each rank's timeline covers the run's whole span (its time
before its own start or after its own end is *other*); the headline buckets are
the mean over ranks, so they still sum to the total. Tokens add up over ranks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lightspeed.catalog import Catalog
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.goodput.events import BUCKETS, ETTR_LOSSES, PHASES, PRODUCTIVE
from lightspeed.goodput.reader import RankLog, RunLog, Segment, StepEvent, Workload, reference_rank
from lightspeed.goodput.skew import align_clocks
from lightspeed.goodput.step_times import StepStats, ideal_step_time, median_mad, robust_high, step_stats
from lightspeed.goodput.timeline import Interval, attribute, partition
from lightspeed.goodput.utilization import (
    DEFAULT_CONVENTION,
    Utilization,
    check_figures,
    figure_problem,
    utilization,
)
from lightspeed.records import JsonObject, Record
from lightspeed.workload import ModelRegistry


@dataclass(frozen=True)
class SegmentView(Record):
    """One job segment (process lifetime) of the lowest logged rank."""

    index: int
    start_s: float
    end_s: float
    status: str
    first_step: int | None
    last_step: int | None
    num_steps: int
    num_wasted_steps: int


@dataclass(frozen=True)
class RankView(Record):
    """One rank's ledger over the run's span, and whether it straggles."""

    rank: int
    total_s: float
    productive_s: float
    badput_s: Mapping[str, float]
    goodput_fraction: float
    tokens: float
    num_steps: int
    median_step_s: float | None
    median_start_lag_s: float | None
    straggler: bool
    reason: str = ""


@dataclass(frozen=True)
class Ledger(Record):
    """Goodput of one run (a tracker run directory or an MLPerf log).

    ``mfu``/``hfu`` divide useful model FLOPs by the whole wall time;
    ``step_mfu``/``step_hfu`` by productive step time only (what training
    frameworks print), so ``mfu = step_mfu * goodput_fraction``.
    ``efficiency`` is goodput tokens/s over the token-rate SOL
    (``sol_tokens_per_s``). ``ettr`` counts only restart, checkpoint and lost
    progress as lost (Kokolis et al. 2024); ``goodput_fraction`` counts every bucket.
    """

    source: str
    path: str
    run_id: str
    total_s: float
    productive_s: float
    badput_s: Mapping[str, float]
    custom_badput_s: Mapping[str, float]
    goodput_fraction: float
    ettr: float
    tokens: float | None
    samples: float | None
    wasted_tokens: float | None
    tokens_per_s: float | None
    productive_tokens_per_s: float | None
    samples_per_s: float | None
    sol_tokens_per_s: float | None
    efficiency: float | None
    mfu: float | None
    hfu: float | None
    step_mfu: float | None
    step_hfu: float | None
    utilization: Utilization
    steps: StepStats
    num_accelerators: int | None
    num_segments: int
    num_restarts: int
    num_failures: int
    segments: tuple[SegmentView, ...] = ()
    ranks: tuple[RankView, ...] = ()
    stragglers: tuple[int, ...] = ()
    partial: bool = False
    notes: tuple[str, ...] = ()
    details: JsonObject = field(default_factory=dict)


@dataclass(frozen=True)
class _RankResult:
    rank: int
    buckets: dict[str, float]
    custom: dict[str, float]
    tokens: float
    samples: float
    wasted_tokens: float
    durations: list[float]
    step_ids: list[int]
    starts: dict[tuple[int, int], float]
    segments: tuple[SegmentView, ...]
    intervals: tuple[Interval, ...] = ()
    productive_steps: tuple[StepEvent, ...] = ()
    wasted_steps: tuple[StepEvent, ...] = ()


@dataclass(frozen=True)
class RankTimeline(Record):
    """One rank's span cut into disjoint pieces ``(bucket, custom name, start_s, end_s)``
    labelled with the ledger bucket that wins each instant, and its steps split into
    productive and wasted ones (what a monitor needs to give each bucket and step its counters)."""

    rank: int
    pieces: tuple[Interval, ...]
    productive_steps: tuple[StepEvent, ...]
    wasted_steps: tuple[StepEvent, ...]


def bucket_timeline(*, run: RunLog) -> tuple[RankTimeline, ...]:
    """Per rank, the time pieces whose bucket totals are the ledger's (same rules, same span).

    >>> import tempfile
    >>> from lightspeed.goodput import Tracker, read_run
    >>> run_dir = tempfile.mkdtemp()
    >>> with Tracker(run_dir, flush_interval_s=0.1) as tracker:
    ...     with tracker.step(tokens=8):
    ...         pass
    >>> timeline = bucket_timeline(run=read_run(run_dir))
    >>> [piece[0] for piece in timeline[0].pieces if piece[0] == "productive"]
    ['productive']
    """
    run, _ = align_clocks(run)
    span_start, span_end = _span(run)
    timelines = []
    for rank in run.ranks:
        result = _rank_ledger(rank, span_start, span_end)
        timelines.append(
            RankTimeline(
                rank=rank.rank,
                pieces=tuple(partition(result.intervals, start_s=span_start, end_s=span_end)),
                productive_steps=result.productive_steps,
                wasted_steps=result.wasted_steps,
            )
        )
    return tuple(timelines)


def _span(run: RunLog) -> tuple[float, float]:
    span_start = min(segment.start_s for rank in run.ranks for segment in rank.segments)
    span_end = max(segment.end_s for rank in run.ranks for segment in rank.segments)
    return span_start, span_end


def build_ledger(
    *,
    run: RunLog,
    model: str | None = None,
    system: str | None = None,
    seq_len: int | None = None,
    precision: str | None = None,
    num_accelerators: int | None = None,
    model_flop_per_token: float | None = None,
    peak_flop_per_s: float | None = None,
    sol_tokens_per_s_per_accelerator: float | None = None,
    convention: str = DEFAULT_CONVENTION,
    catalog: Catalog | None = None,
    models: ModelRegistry | None = None,
) -> Ledger:
    """The ledger of a run read with :func:`~lightspeed.goodput.read_run`.

    Keyword arguments override what the tracker recorded at job start
    (``model``, ``system``, ``seq_len``, ``precision``, ``num_accelerators``,
    FLOP per token, peak FLOP/s per accelerator, token-rate SOL per
    accelerator). A ``model`` or ``seq_len`` given replaces the FLOP per token
    the job start recorded (counted from the model instead), a ``system`` or
    ``precision`` given replaces its recorded peak (the catalog's dense peak
    instead), unless those figures are given too; one that cannot (no model,
    or no device, to count from) is refused. ``convention`` names the
    workload's FLOP-counting convention (default ``6N+causal-attention``, the
    one ``plan train`` predicts MFU in). ``catalog``/``models`` default to the
    shipped catalog and model registry.
    """
    check_figures(
        num_accelerators=num_accelerators,
        model_flop_per_token=model_flop_per_token,
        peak_flop_per_s=peak_flop_per_s,
        sol_tokens_per_s_per_accelerator=sol_tokens_per_s_per_accelerator,
    )
    if num_accelerators is None:
        _check_logged_accelerators(run)
    workload = _override(
        run.workload,
        model=model,
        system=system,
        seq_len=seq_len,
        precision=precision,
        num_accelerators=num_accelerators,
        model_flop_per_token=model_flop_per_token,
        peak_flop_per_s=peak_flop_per_s,
        sol_tokens_per_s_per_accelerator=sol_tokens_per_s_per_accelerator,
    )
    workload = _recount_flops(run, workload, model=model, seq_len=seq_len, given=model_flop_per_token)
    workload = _repeak(run, workload, system=system, precision=precision, given=peak_flop_per_s)
    run, clock_notes = align_clocks(run)
    span_start, span_end = _span(run)
    results = [_rank_ledger(rank, span_start, span_end) for rank in run.ranks]
    return _assemble(
        replace(run, notes=(*run.notes, *clock_notes, *_sol_notes(workload))),
        workload,
        results,
        span_end - span_start,
        catalog=catalog,
        models=models,
        convention=convention,
    )


def _check_logged_accelerators(run: RunLog) -> None:
    """A job start that records ``num_accelerators`` below 1 is refused (it would divide MFU and the
    SOL by nothing): one line naming the first rank's file and its job start."""
    problem = figure_problem("num_accelerators", run.workload.num_accelerators)
    if problem:
        first = run.ranks[0]
        raise DataFileError(
            first.path,
            f"job_start: {problem}",
            line=first.segments[0].line,
            field="num_accelerators",
            fix="pass --num-accelerators N (or Tracker(num_accelerators=N) in the next run)",
        )


def _sol_notes(workload: Workload) -> tuple[str, ...]:
    """Why a token-rate SOL the job start recorded is not used (SOL efficiency left out)."""
    problem = figure_problem("sol_tokens_per_s_per_accelerator", workload.sol_tokens_per_s_per_accelerator)
    return (f"SOL efficiency n/a: the job start's {problem}",) if problem else ()


def _override(workload: Workload, **values: Any) -> Workload:
    return replace(workload, **{key: value for key, value in values.items() if value is not None})


def _recount_flops(
    run: RunLog, workload: Workload, *, model: str | None, seq_len: int | None, given: float | None
) -> Workload:
    """A model or sequence length given (and no FLOP per token) drops the FLOP per token the job start
    recorded, so MFU counts it from the model; with no model to count from, that is refused."""
    recorded = run.workload.model_flop_per_token
    if given is not None or recorded is None or (model is None and seq_len is None):
        return workload
    if workload.model is None:
        raise UserInputError(
            f"{run.path}: seq_len={seq_len} (--seq-len) changes nothing: the run recorded "
            f"model_flop_per_token={recorded:.4g} and no model; also give model= (--model NAME) to count "
            "the FLOP per token at that length, or model_flop_per_token= (--flop-per-token F)"
        )
    return replace(workload, model_flop_per_token=None, hardware_flop_per_token=None)


def _repeak(
    run: RunLog, workload: Workload, *, system: str | None, precision: str | None, given: float | None
) -> Workload:
    """A system or precision given (and no peak) drops the peak FLOP/s the job start recorded, so MFU
    divides by the catalog's dense peak of that device; with no device to look up, that is refused."""
    recorded = run.workload.peak_flop_per_s
    if given is not None or recorded is None or (system is None and precision is None):
        return workload
    if workload.system is None:
        raise UserInputError(
            f"{run.path}: precision={precision} (--precision) changes nothing: the run recorded "
            f"peak_flop_per_s={recorded:.4g} and no device; also give system= (--system NAME) to divide "
            f"by that device's {precision} peak"
        )
    return replace(workload, peak_flop_per_s=None)


def _rank_ledger(rank: RankLog, span_start: float, span_end: float) -> _RankResult:
    segments = rank.segments
    restart_points = _restart_points(segments)
    good = [
        step.end_s - step.start_s
        for segment, point in zip(segments, restart_points, strict=True)
        for step in segment.steps
        if not step.error and step.step < point
    ]
    ideal = ideal_step_time(good) or 0.0
    intervals: list[Interval] = []
    tokens = samples = wasted_tokens = 0.0
    durations: list[float] = []
    step_ids: list[int] = []
    starts: dict[tuple[int, int], float] = {}
    views = []
    productive: list[StepEvent] = []
    wasted_steps: list[StepEvent] = []
    for index, (segment, point) in enumerate(zip(segments, restart_points, strict=True)):
        intervals.extend(_phase_intervals(segment))
        first_productive = True
        num_wasted = 0
        for step in segment.steps:
            wasted = step.error or step.step >= point
            if wasted:
                num_wasted += 1
                wasted_tokens += step.tokens
                wasted_steps.append(step)
                intervals.append(("wasted_progress", "", step.start_s, step.end_s))
                continue
            productive.append(step)
            intervals.append((PRODUCTIVE, "", step.start_s, step.end_s))
            if first_productive and step.end_s - step.start_s > ideal:
                intervals.append(("startup", "", step.start_s, step.end_s - ideal))
            first_productive = False
            tokens += step.tokens
            samples += step.samples
            durations.append(step.end_s - step.start_s)
            step_ids.append(step.step)
            starts[(index, step.step)] = step.start_s
        if index + 1 < len(segments):
            intervals.append(("recovery", "", segment.end_s, segments[index + 1].start_s))
        views.append(_segment_view(index, segment, num_wasted))
    buckets, custom = attribute(intervals, start_s=span_start, end_s=span_end)
    return _RankResult(
        rank=rank.rank,
        buckets=buckets,
        custom=custom,
        tokens=tokens,
        samples=samples,
        wasted_tokens=wasted_tokens,
        durations=durations,
        step_ids=step_ids,
        starts=starts,
        segments=tuple(views),
        intervals=tuple(intervals),
        productive_steps=tuple(productive),
        wasted_steps=tuple(wasted_steps),
    )


def _restart_points(segments: Sequence[Segment]) -> list[float]:
    """Per segment, the lowest step index a later segment ran (inf if none): steps from there are lost."""
    points: list[float] = []
    lowest = float("inf")
    for segment in reversed(segments):
        points.append(lowest)
        if segment.steps:
            lowest = min(lowest, *(step.step for step in segment.steps))
    return points[::-1]


def _phase_intervals(segment: Segment) -> list[Interval]:
    intervals: list[Interval] = [
        (PHASES[phase.phase], phase.name, phase.start_s, phase.end_s) for phase in segment.phases
    ]
    first_step = segment.steps[0].start_s if segment.steps else segment.end_s
    # Untimed time before the first step is start-up work (Google: init, training prep).
    intervals.append(("init", "", segment.start_s, first_step))
    return intervals


def _segment_view(index: int, segment: Segment, num_wasted: int) -> SegmentView:
    numbers = [step.step for step in segment.steps]
    return SegmentView(
        index=index,
        start_s=segment.start_s,
        end_s=segment.end_s,
        status=segment.status,
        first_step=min(numbers) if numbers else None,
        last_step=max(numbers) if numbers else None,
        num_steps=len(numbers),
        num_wasted_steps=num_wasted,
    )


def _assemble(
    run: RunLog,
    workload: Workload,
    results: list[_RankResult],
    total_s: float,
    *,
    catalog: Catalog | None,
    models: ModelRegistry | None,
    convention: str,
) -> Ledger:
    count = len(results)
    buckets = {key: sum(result.buckets[key] for result in results) / count for key in results[0].buckets}
    custom_names = sorted({name for result in results for name in result.custom})
    custom = {name: sum(result.custom.get(name, 0.0) for result in results) / count for name in custom_names}
    tokens, samples, wasted_tokens = _counts(results, run.tokens_scope)
    productive_s = buckets[PRODUCTIVE]
    accelerators, accelerator_notes = _accelerators(run, workload)
    flops = utilization(
        tokens=tokens,
        total_s=total_s,
        productive_s=productive_s,
        workload=workload,
        num_accelerators=accelerators,
        catalog=catalog,
        models=models,
        convention=convention,
    )
    ranks, stragglers, straggler_notes = _rank_views(results, total_s)
    durations = [d for result in results for d in result.durations]
    step_ids = [s for result in results for s in result.step_ids]
    labels = [result.rank for result in results for _ in result.durations]
    reference_index = run.ranks.index(reference_rank(run))
    reference = results[reference_index]
    failures = sum(view.status in ("crashed", "error") for view in reference.segments[:-1])
    failures += reference.segments[-1].status == "error"
    return ledger_from_buckets(
        source="tracker",
        path=run.path,
        run_id=run.run_id,
        total_s=total_s,
        buckets=buckets,
        custom=custom,
        tokens=tokens,
        samples=samples,
        wasted_tokens=wasted_tokens,
        workload=workload,
        accelerators=accelerators,
        flops=flops,
        steps=step_stats(durations_s=durations, steps=step_ids, ranks=labels),
        segments=reference.segments,
        failures=failures,
        ranks=ranks,
        stragglers=stragglers,
        partial=run.partial,
        notes=(*run.notes, *accelerator_notes, *straggler_notes),
    )


def _counts(results: list[_RankResult], tokens_scope: str) -> tuple[float, float, float]:
    """Tokens, samples and wasted tokens of the run. Per rank they add up; a global count is logged by
    one rank or repeated by several, so each step counts the largest any rank logged for it (never a sum),
    and the wasted tokens are the largest any rank logged."""
    if tokens_scope == "rank":
        return (
            sum(result.tokens for result in results),
            sum(result.samples for result in results),
            sum(result.wasted_tokens for result in results),
        )
    tokens: dict[int, float] = {}
    samples: dict[int, float] = {}
    for result in results:
        for step in result.productive_steps:
            tokens[step.step] = max(tokens.get(step.step, 0.0), step.tokens)
            samples[step.step] = max(samples.get(step.step, 0.0), step.samples)
    wasted = max(result.wasted_tokens for result in results)
    return sum(tokens.values()), sum(samples.values()), wasted


def _accelerators(run: RunLog, workload: Workload) -> tuple[int, tuple[str, ...]]:
    """The accelerators the counted tokens ran on: the job's, or for a partial run whose ranks log their
    own tokens, the logged ranks' share of them (the missing ranks' tokens are not counted either)."""
    job = workload.num_accelerators or run.world_size
    if not run.partial or run.tokens_scope != "rank":
        return job, ()
    logged = max(1, round(job * len(run.ranks) / run.world_size))
    return logged, (
        f"partial: MFU, HFU and SOL efficiency divide by the {logged} accelerator(s) of the "
        f"{len(run.ranks)} logged rank(s), not the job's {job}",
    )


def ledger_from_buckets(
    *,
    source: str,
    path: str,
    run_id: str,
    total_s: float,
    buckets: Mapping[str, float],
    tokens: float,
    samples: float,
    workload: Workload,
    accelerators: int | None,
    flops: Utilization,
    steps: StepStats,
    custom: Mapping[str, float] | None = None,
    wasted_tokens: float = 0.0,
    segments: tuple[SegmentView, ...] = (),
    failures: int = 0,
    ranks: tuple[RankView, ...] = (),
    stragglers: tuple[int, ...] = (),
    partial: bool = False,
    notes: tuple[str, ...] = (),
    details: JsonObject | None = None,
) -> Ledger:
    """A :class:`Ledger` from attributed buckets (``productive`` + :data:`BUCKETS`): the
    derived figures (fractions, rates, ETTR, efficiency) shared by tracker runs and MLPerf logs."""
    productive_s = buckets[PRODUCTIVE]
    badput = {key: buckets[key] for key in BUCKETS}
    lost = sum(buckets[key] for key in ETTR_LOSSES)
    tokens_per_s = tokens / total_s if tokens > 0 and total_s > 0 else None
    sol = workload.sol_tokens_per_s_per_accelerator
    usable_sol = sol is not None and not figure_problem("sol_tokens_per_s_per_accelerator", sol)
    sol_total = sol * accelerators if sol is not None and usable_sol and accelerators else None
    return Ledger(
        source=source,
        path=path,
        run_id=run_id,
        total_s=total_s,
        productive_s=productive_s,
        badput_s=badput,
        custom_badput_s=dict(custom or {}),
        goodput_fraction=productive_s / total_s if total_s > 0 else 0.0,
        ettr=1.0 - lost / total_s if total_s > 0 else 0.0,
        tokens=tokens if tokens > 0 else None,
        samples=samples if samples > 0 else None,
        wasted_tokens=wasted_tokens if tokens > 0 else None,
        tokens_per_s=tokens_per_s,
        productive_tokens_per_s=tokens / productive_s if tokens > 0 and productive_s > 0 else None,
        samples_per_s=samples / total_s if samples > 0 and total_s > 0 else None,
        sol_tokens_per_s=sol_total,
        efficiency=tokens_per_s / sol_total if tokens_per_s is not None and sol_total else None,
        mfu=flops.mfu,
        hfu=flops.hfu,
        step_mfu=flops.step_mfu,
        step_hfu=flops.step_hfu,
        utilization=flops,
        steps=steps,
        num_accelerators=accelerators,
        num_segments=len(segments) if segments else 1,
        num_restarts=max(0, len(segments) - 1),
        num_failures=failures,
        segments=segments,
        ranks=ranks,
        stragglers=stragglers,
        partial=partial,
        notes=notes,
        details=dict(details or {}),
    )


def _rank_views(
    results: list[_RankResult], total_s: float
) -> tuple[tuple[RankView, ...], tuple[int, ...], tuple[str, ...]]:
    medians = [median_mad(result.durations)[0] if result.durations else 0.0 for result in results]
    lags = _start_lags(results)
    typical_step = median_mad([m for m in medians if m > 0])[0] if any(medians) else 0.0
    slow_steps = robust_high(medians)
    late_starts = robust_high(lags, floor=0.05 * typical_step)
    views = []
    for result, median, lag, slow, late in zip(results, medians, lags, slow_steps, late_starts, strict=True):
        reasons = []
        if slow:
            reasons.append(f"median step {median:.4g} s is above the other ranks'")
        if late:
            reasons.append(f"enters steps {lag:.4g} s after the first rank (median)")
        views.append(
            RankView(
                rank=result.rank,
                total_s=total_s,
                productive_s=result.buckets[PRODUCTIVE],
                badput_s={key: result.buckets[key] for key in BUCKETS},
                goodput_fraction=result.buckets[PRODUCTIVE] / total_s if total_s > 0 else 0.0,
                tokens=result.tokens,
                num_steps=len(result.durations),
                median_step_s=median if result.durations else None,
                median_start_lag_s=lag if len(results) > 1 else None,
                straggler=slow or late,
                reason="; ".join(reasons),
            )
        )
    stragglers = tuple(view.rank for view in views if view.straggler)
    notes = (
        (
            "two ranks: no majority to compare with, so the slower rank is flagged when its median step "
            "(or its growing start lag) exceeds the other's by 5% of a step",
        )
        if len(results) == 2 and stragglers
        else ()
    )
    return tuple(views), stragglers, notes


def _start_lags(results: list[_RankResult]) -> list[float]:
    """Per rank, the median over shared steps of (its start - the earliest rank's start)."""
    if len(results) < 2:
        return [0.0] * len(results)
    earliest: dict[tuple[int, int], float] = {}
    for result in results:
        for key, start in result.starts.items():
            earliest[key] = min(start, earliest.get(key, start))
    lags = []
    for result in results:
        values = [start - earliest[key] for key, start in result.starts.items()]
        lags.append(median_mad(values)[0] if values else 0.0)
    return lags

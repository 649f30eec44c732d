"""What got slower or faster between two traces, tested over per-step samples.

Each counted ``ProfilerStep`` of each rank is one sample of every metric:
the step's CPU time, its GPU busy, computation, communication and memory
time, and the time of each of the top kernels (0 in a step that did not run
it). A and B are compared metric by metric with a two-sided Mann-Whitney U
test; p-values are adjusted for the number of metrics (Benjamini-Hochberg)
and a change is reported only when the adjusted value is below ``alpha``.
The effect size is the rank-biserial correlation (+1: every B sample above
every A sample) and the shift the Hodges-Lehmann estimate of B - A.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Final

import numpy as np

from lightspeed.errors import TraceError, UserInputError
from lightspeed.records import Record
from lightspeed.trace.breakdown import NS, summarize
from lightspeed.trace.effect_sizes import MannWhitney, benjamini_hochberg, mann_whitney_u
from lightspeed.trace.gpu import dropped_step, gpu_events
from lightspeed.trace.kernels import distinct_short_names, short_names_note
from lightspeed.trace.kinds import KIND_NAMES
from lightspeed.trace.model import Trace

STEP_METRICS: Final = (
    ("step time (CPU)", "cpu_s"),
    ("GPU busy", "gpu_busy_s"),
    ("computation", "compute_s"),
    ("communication", "communication_s"),
    ("memory", "memory_s"),
)


@dataclass(frozen=True)
class DiffRow(Record):
    """One metric compared between A and B (per-step samples, seconds); ``short_name`` is the
    metric, or for a kernel a short name no other kernel of the diff shares; ``p_method`` how the
    p-value was found (``exact`` or ``asymptotic``: :func:`~lightspeed.trace.effect_sizes.mann_whitney_u`)."""

    metric: str
    kind: str
    num_a: int
    num_b: int
    median_a_s: float
    median_b_s: float
    change_pct: float
    shift_s: float
    effect_size: float
    p_value: float
    q_value: float
    verdict: str
    short_name: str = ""
    p_method: str = ""


@dataclass(frozen=True)
class TraceDiff(Record):
    """Every compared metric, step metrics first, then kernels by total time."""

    rows: tuple[DiffRow, ...]
    alpha: float
    num_samples_a: int
    num_samples_b: int
    notes: tuple[str, ...]


def diff_traces(
    trace_a: Trace, trace_b: Trace, *, top: int = 10, alpha: float = 0.05, include_last_step: bool = False
) -> TraceDiff:
    """Compare B against A per step: step, GPU and top-``top`` kernel times.

    Example::

        result = diff_traces(load_trace("before/"), load_trace("after/"))
        [row.metric for row in result.rows if row.verdict == "slower"]
        # -> ['communication']
    """
    if not 0 < alpha < 1:
        raise UserInputError(f"alpha must be between 0 and 1, got {alpha}")
    if top < 0:
        raise UserInputError(f"top must be >= 0, got {top}")
    samples_a = _samples(trace_a, "A", include_last_step)
    samples_b = _samples(trace_b, "B", include_last_step)
    kernels = _top_kernel_names(samples_a.kernels, samples_b.kernels, top)
    metrics: list[tuple[str, str, np.ndarray, np.ndarray]] = [
        (label, "step", samples_a.steps[label], samples_b.steps[label]) for label, _ in STEP_METRICS
    ]
    for name, kind in kernels:
        metrics.append(
            (name, f"kernel: {kind}", samples_a.kernel_samples(name), samples_b.kernel_samples(name))
        )
    tests = [mann_whitney_u(a, b) for _, _, a, b in metrics]
    q_values = benjamini_hochberg([t.p_value for t in tests])
    labels = distinct_short_names([name for name, _ in kernels])
    rows = tuple(
        _row(label, kind, a, b, test=test, q_value=q, alpha=alpha, short_name=labels.get(label, label))
        for (label, kind, a, b), test, q in zip(metrics, tests, q_values, strict=True)
    )
    shortened = short_names_note(labels)
    return TraceDiff(
        rows=rows,
        alpha=alpha,
        num_samples_a=samples_a.count,
        num_samples_b=samples_b.count,
        notes=tuple(dict.fromkeys(trace_a.notes + trace_b.notes + ((shortened,) if shortened else ()))),
    )


@dataclass
class _Samples:
    """Per-(rank, step) samples of one trace."""

    count: int
    steps: dict[str, np.ndarray]
    kernels: dict[tuple[str, str], dict[tuple[int, int], float]]
    keys: list[tuple[int, int]]

    def kernel_samples(self, name: str) -> np.ndarray:
        """Time of kernel ``name`` in each sample (0 where it did not run)."""
        per_key: dict[tuple[int, int], float] = defaultdict(float)
        for (kernel, _), values in self.kernels.items():
            if kernel == name:
                for key, value in values.items():
                    per_key[key] += value
        return np.array([per_key.get(key, 0.0) for key in self.keys])


def _samples(trace: Trace, label: str, include_last_step: bool) -> _Samples:
    summary = summarize(trace, include_last_step=include_last_step)
    rows = [(rank.rank, step) for rank in summary.ranks for step in rank.steps if step.counted]
    if not rows:
        raise TraceError(
            trace.ranks[0].path,
            f"trace {label} has no counted ProfilerStep: diff compares per-step samples",
            fix="push one NVTX range per step named 'step N' (torch.cuda.nvtx.range_push)"
            if trace.ranks[0].source_format == "nsys"
            else "profile several steps (torch.profiler.schedule with prof.step() each iteration)",
        )
    steps = {name: np.array([getattr(step, field) for _, step in rows]) for name, field in STEP_METRICS}
    keys = [(rank, step.step) for rank, step in rows]
    kernels: dict[tuple[str, str], dict[tuple[int, int], float]] = defaultdict(lambda: defaultdict(float))
    dropped = dropped_step(trace, include_last_step=include_last_step)
    wanted = set(keys)
    for rank in trace.ranks:
        events = gpu_events(rank, dropped_step=dropped)
        durations = (events.end_ns - events.start_ns) * NS
        for step, name_id, kind, duration in zip(
            events.step.tolist(),
            events.name_id.tolist(),
            events.kind.tolist(),
            durations.tolist(),
            strict=True,
        ):
            if (rank.rank, step) in wanted:
                kernels[(rank.events.names[name_id], KIND_NAMES[kind])][(rank.rank, step)] += duration
    return _Samples(count=len(rows), steps=steps, kernels=kernels, keys=keys)


def _top_kernel_names(
    kernels_a: dict[tuple[str, str], dict[tuple[int, int], float]],
    kernels_b: dict[tuple[str, str], dict[tuple[int, int], float]],
    top: int,
) -> list[tuple[str, str]]:
    totals: dict[tuple[str, str], float] = defaultdict(float)
    for kernels in (kernels_a, kernels_b):
        for key, values in kernels.items():
            totals[key] += sum(values.values())
    ranked = sorted(totals, key=lambda key: (-totals[key], key))
    chosen: list[tuple[str, str]] = []
    for name, kind in ranked:
        if name not in {n for n, _ in chosen}:
            chosen.append((name, kind))
        if len(chosen) == top:
            break
    return chosen


def _row(
    metric: str,
    kind: str,
    a: np.ndarray,
    b: np.ndarray,
    *,
    test: MannWhitney,
    q_value: float,
    alpha: float,
    short_name: str,
) -> DiffRow:
    median_a = float(np.median(a)) if a.size else math.nan
    median_b = float(np.median(b)) if b.size else math.nan
    change = 100.0 * (median_b / median_a - 1.0) if median_a > 0 else math.nan
    return DiffRow(
        metric=metric,
        kind=kind,
        num_a=int(a.size),
        num_b=int(b.size),
        median_a_s=median_a,
        median_b_s=median_b,
        change_pct=change,
        shift_s=test.shift,
        effect_size=test.rank_biserial,
        p_value=test.p_value,
        q_value=q_value,
        verdict=_verdict(a, b, q_value, test.shift, alpha),
        short_name=short_name,
        p_method=test.method,
    )


def _verdict(a: np.ndarray, b: np.ndarray, q_value: float, shift: float, alpha: float) -> str:
    if a.size == 0 or b.size == 0 or _smallest_p(a, b) >= alpha:
        return "too few steps"
    if not math.isfinite(q_value) or q_value >= alpha or shift == 0:
        return "no significant change"
    return "slower" if shift > 0 else "faster"


def _smallest_p(a: np.ndarray, b: np.ndarray) -> float:
    """The smallest two-sided p any arrangement of these sample sizes can give: 2 / C(n_a + n_b,
    n_a) without ties (the two most extreme splits); with ties the exact test
    (:func:`~lightspeed.trace.effect_sizes.exact_tied_p_value`) can leave one split alone at the
    extreme, so 1 / C(n_a + n_b, n_a)."""
    tied = np.unique(np.concatenate((a, b))).size < a.size + b.size
    return (1.0 if tied else 2.0) / math.comb(a.size + b.size, a.size)

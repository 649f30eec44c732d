"""Comparing two runs: every metric they share, judged by :func:`~lightspeed.gate.compare.compare_samples`.

:func:`compare_runs` pools the series of one metric (several files of a side), pairs a series
named by its metric alone (a run folder's, a trace's ``step_time_s``) with a stored run's
``NAME [METRIC]`` series (:func:`series_label`), refuses runs measured on other hardware
(:func:`environment_differences` of :data:`~lightspeed.gate.compare.ENVIRONMENT_FIELDS`), and
returns one :class:`GateResult`: the comparisons, the metrics of one side only, and the notes a
reader must see (environments that differ, directions assumed, metrics not judged or missing).
The statistics of one metric are :mod:`lightspeed.gate.compare`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from lightspeed.errors import UserInputError
from lightspeed.gate.compare import (
    DEFAULT_ALPHA,
    DEFAULT_NUM_RESAMPLES,
    DEFAULT_THRESHOLD_FRACTION,
    ENVIRONMENT_FIELDS,
    SAMPLES_HINT,
    TOO_FEW_SAMPLES,
    MetricComparison,
    MetricSamples,
    check_compatible,
    check_series,
    compare_samples,
)
from lightspeed.limits import check_kind
from lightspeed.records import Record


@dataclass(frozen=True)
class EnvironmentDifference(Record):
    """One fingerprint field that differs between the two sides (``hardware``: GPU or CPU model)."""

    key: str
    label: str
    baseline: str
    current: str
    hardware: bool


@dataclass(frozen=True)
class GateResult(Record):
    """Every compared metric; the gate fails (``passed`` false) on a regression, or on a
    metric of the baseline that the current run lacks unless ``allow_missing``.

    ``skipped_metrics`` lists the metrics of one side only; ``missing_from_current`` and
    ``missing_from_baseline`` split them by the side that lacks them; ``num_missing`` counts
    those missing from the current run that fail the gate (none with ``allow_missing`` or
    with metrics named explicitly). ``num_not_judged`` counts the metrics whose samples were too
    few to reach significance (verdict ``too few samples``): they do not fail the gate, but
    nothing was judged, so each has a note. ``notes`` are the warnings a reader must see
    (environments that differ, directions assumed, metrics not judged, metrics missing).
    """

    baseline_source: str
    current_source: str
    comparisons: tuple[MetricComparison, ...]
    num_regressions: int
    num_improvements: int
    skipped_metrics: tuple[str, ...]
    missing_from_current: tuple[str, ...] = ()
    missing_from_baseline: tuple[str, ...] = ()
    allow_missing: bool = False
    num_missing: int = 0
    passed: bool = True
    environment_differences: tuple[EnvironmentDifference, ...] = ()
    notes: tuple[str, ...] = ()
    num_not_judged: int = 0


def compare_runs(
    *,
    baseline: Sequence[MetricSamples],
    current: Sequence[MetricSamples],
    metrics: Sequence[str] = (),
    threshold_fraction: float = DEFAULT_THRESHOLD_FRACTION,
    alpha: float = DEFAULT_ALPHA,
    num_warmup: int | None = None,
    num_resamples: int = DEFAULT_NUM_RESAMPLES,
    seed: int = 0,
    allow_missing: bool = False,
    allow_different_hardware: bool = False,
) -> GateResult:
    """Compare every metric the two runs share (or only ``metrics``).

    A metric named in ``metrics`` but missing on either side is an error; with
    no ``metrics`` the runs must share at least one metric. Metrics present on
    one side only are listed in ``skipped_metrics``; one of the baseline that the
    current run lacks (its benchmark crashed) fails the gate unless ``allow_missing``
    or ``metrics`` names what to compare. ``num_warmup`` (else each series' own count)
    is dropped from each series before series of one metric are pooled. Runs whose
    fingerprints name another GPU or CPU model are refused unless
    ``allow_different_hardware``; other differences are listed and noted.
    """
    for role, side in (("baseline", baseline), ("current", current)):
        for entry in side:
            check_kind(f"each {role} series", entry, MetricSamples, SAMPLES_HINT)
    differences = environment_differences(baseline=baseline, current=current)
    _refuse_other_hardware(differences, allowed=allow_different_hardware)
    base_by_name = _by_metric(baseline, "baseline", num_warmup)
    cur_by_name = _by_metric(current, "current", num_warmup)
    matches = _match_by_metric(base_by_name, cur_by_name)
    renamed = {match.bare: match.named for match in matches}
    metrics = [renamed.get(name, name) for name in metrics]
    shared = [name for name in base_by_name if name in cur_by_name]
    if metrics:
        selected = list(dict.fromkeys(_named_series(name, base_by_name, cur_by_name) for name in metrics))
    elif not shared:
        raise UserInputError(
            f"the runs share no metric: baseline has {', '.join(sorted(base_by_name))}; "
            f"current has {', '.join(sorted(cur_by_name))}"
        )
    else:
        selected = shared
    comparisons = tuple(
        compare_samples(
            baseline=base_by_name[name],
            current=cur_by_name[name],
            threshold_fraction=threshold_fraction,
            alpha=alpha,
            num_resamples=num_resamples,
            seed=seed,
        )
        for name in selected
    )
    missing_current = tuple(sorted(set(base_by_name) - set(cur_by_name) - set(selected)))
    missing_baseline = tuple(sorted(set(cur_by_name) - set(base_by_name) - set(selected)))
    # a run folder or a trace matched by metric with a stored run cannot hold the stored run's other metrics
    folder_matched = [match.bare for match in matches if match.bare_role == "current"]
    gated_missing = () if metrics or allow_missing or folder_matched else missing_current
    num_regressions = sum(c.verdict == "regression" for c in comparisons)
    return GateResult(
        baseline_source=_sources(baseline),
        current_source=_sources(current),
        comparisons=comparisons,
        num_regressions=num_regressions,
        num_improvements=sum(c.verdict == "improvement" for c in comparisons),
        skipped_metrics=tuple(sorted(missing_current + missing_baseline)),
        missing_from_current=missing_current,
        missing_from_baseline=missing_baseline,
        allow_missing=allow_missing,
        num_missing=len(gated_missing),
        passed=num_regressions == 0 and not gated_missing,
        environment_differences=differences,
        num_not_judged=sum(c.verdict == TOO_FEW_SAMPLES for c in comparisons),
        notes=(
            *(_difference_note(difference) for difference in differences),
            *(_match_note(match) for match in matches),
            *(_direction_note(item) for item in comparisons if item.direction_assumed),
            *(_not_judged_note(item) for item in comparisons if item.verdict == TOO_FEW_SAMPLES),
            *(
                ()
                if metrics
                else _missing_notes(
                    missing_current, missing_baseline, _missing_outcome(allow_missing, folder_matched)
                )
            ),
        ),
    )


def _by_metric(
    series: Sequence[MetricSamples], role: str, num_warmup: int | None
) -> dict[str, MetricSamples]:
    """One series per metric: ``num_warmup`` (else each entry's own count) dropped from each entry,
    then the entries of one metric pooled (e.g. two files)."""
    if not series:
        raise UserInputError(f"the {role} input holds no metric samples")
    table: dict[str, MetricSamples] = {}
    for entry in series:
        item = entry if num_warmup is None else replace(entry, num_warmup=num_warmup)
        check_series(item, role, item.num_warmup)
        previous = table.get(item.metric)
        table[item.metric] = item if previous is None else _pooled(previous, item, role)
    return table


# The label of a named series of a results store (a job's name and its metric), as
# :func:`series_label` writes it.
_NAMED_LABEL: Final = re.compile(r"^.+ \[(?P<metric>[^\[\]]+)\]$")


def series_label(name: str, metric: str) -> str:
    """The label the gate gives series ``metric`` of the job ``name`` of a results store:
    ``NAME [METRIC]``, or the metric alone when the record's name is the metric.

    >>> series_label("tiny-gpt", "step_time_s"), series_label("step_time_s", "step_time_s")
    ('tiny-gpt [step_time_s]', 'step_time_s')
    """
    return metric if name == metric else f"{name} [{metric}]"


def label_metric(label: str) -> str:
    """The metric of a series label (:func:`series_label`): ``step_time_s`` of ``tiny-gpt [step_time_s]``."""
    match = _NAMED_LABEL.match(label)
    return match["metric"] if match else label


def _named_series(
    name: str, baseline: Mapping[str, MetricSamples], current: Mapping[str, MetricSamples]
) -> str:
    """The label of the series ``--metric name`` names: ``name`` itself, or the one series of
    metric ``name`` (``step [step_time_s]`` for ``step_time_s``), alike on both sides."""
    labels = [
        _side_label(name, role, table) for role, table in (("baseline", baseline), ("current", current))
    ]
    if labels[0] != labels[1]:
        raise UserInputError(
            f"metric {name!r} is {labels[0]!r} in the baseline run but {labels[1]!r} in the current "
            "run; compare runs of the same job, or give the full NAME [METRIC] label of each"
        )
    return labels[0]


def _side_label(name: str, role: str, table: Mapping[str, MetricSamples]) -> str:
    if name in table:
        return name
    of_metric = sorted(label for label in table if label_metric(label) == name)
    if len(of_metric) == 1:
        return of_metric[0]
    if of_metric:
        raise UserInputError(
            f"metric {name!r} names {len(of_metric)} series of the {role} run ({', '.join(of_metric)}); "
            "give the full NAME [METRIC] label of one"
        )
    raise UserInputError(
        f"metric {name!r} is not in the {role} run; it has: {', '.join(sorted(table))} "
        "(give one of these, or a metric that names exactly one of them)"
    )


@dataclass(frozen=True)
class _Match:
    """A series keyed by its metric alone (``bare``, from the ``bare_role`` side) compared with
    the other side's one series of that metric (``named``)."""

    bare: str
    named: str
    bare_role: str


def _match_by_metric(baseline: dict[str, MetricSamples], current: dict[str, MetricSamples]) -> list[_Match]:
    """Pair a series that carries only its metric's name on one side (a run folder's or a trace's
    ``step_time_s``) with the series of that metric on the other side (a stored run's
    ``tiny-gpt [step_time_s]``) when each side holds one series of that metric and neither label
    is on both sides: the bare series is keyed and named as the named one (in place)."""
    matches: list[_Match] = []
    for role, bare_side, named_side in (("baseline", baseline, current), ("current", current, baseline)):
        for label in [key for key in bare_side if key not in named_side and label_metric(key) == key]:
            named = [key for key in named_side if key not in bare_side and label_metric(key) == label]
            if len(named) != 1 or sum(label_metric(key) == label for key in bare_side) != 1:
                continue
            bare_side[named[0]] = replace(bare_side.pop(label), metric=named[0])
            matches.append(_Match(bare=label, named=named[0], bare_role=role))
    return matches


def _match_note(match: _Match) -> str:
    return (
        f"{match.named}: compared with the {match.bare_role} input's {match.bare}, the one series of "
        "that metric on each side (a stored run and a run folder, trace or sample file of one job)"
    )


def _pooled(first: MetricSamples, second: MetricSamples, role: str) -> MetricSamples:
    """Two series of one metric of the ``role`` input as one: the warm-up samples of both first
    (``num_warmup`` counts them all), then the measured samples of both."""
    lower_is_better, direction_assumed = check_compatible(
        first, second, places=_pooled_places(first, second, role)
    )
    warmup = first.samples[: first.num_warmup] + second.samples[: second.num_warmup]
    return replace(
        first,
        lower_is_better=lower_is_better,
        direction_assumed=direction_assumed,
        samples=warmup + first.measured() + second.measured(),
        num_warmup=len(warmup),
        source=f"{first.source}+{second.source}",
    )


def _pooled_places(first: MetricSamples, second: MetricSamples, role: str) -> tuple[str, str]:
    """Where two entries of one input are, for a message refusing to pool them: two entries of
    one file, or two files of the same side."""
    if first.source == second.source:
        return (
            f"one entry of the {role} input ({first.source})",
            "another entry of that same input (the entries of one metric are pooled)",
        )
    return f"the {role} input {first.source}", f"the {role} input {second.source}"


def environment_differences(
    *, baseline: Sequence[MetricSamples], current: Sequence[MetricSamples]
) -> tuple[EnvironmentDifference, ...]:
    """The fields of :data:`ENVIRONMENT_FIELDS` whose values differ between the two sides; a
    field one side does not record is not compared."""
    differences = []
    for key, label, hardware in ENVIRONMENT_FIELDS:
        base_values, cur_values = _environment_values(baseline, key), _environment_values(current, key)
        if base_values and cur_values and base_values != cur_values:
            differences.append(
                EnvironmentDifference(
                    key=key,
                    label=label,
                    baseline=" | ".join(base_values),
                    current=" | ".join(cur_values),
                    hardware=hardware,
                )
            )
    return tuple(differences)


def _environment_values(series: Sequence[MetricSamples], key: str) -> list[str]:
    return sorted({value for item in series for name, value in item.environment if name == key})


def _refuse_other_hardware(differences: Sequence[EnvironmentDifference], *, allowed: bool) -> None:
    hardware = [difference for difference in differences if difference.hardware]
    if hardware and not allowed:
        details = "; ".join(
            f"{item.label} {item.baseline!r} in the baseline, {item.current!r} in the current run"
            for item in hardware
        )
        raise UserInputError(
            f"the runs were measured on different hardware ({details}): a difference between devices "
            "is not a regression of the change; compare runs of the same hardware, or pass "
            "--allow-different-hardware to compare them anyway"
        )


def _difference_note(difference: EnvironmentDifference) -> str:
    note = (
        f"environments differ: {difference.label} is {difference.baseline!r} in the baseline but "
        f"{difference.current!r} in the current run"
    )
    return note + (" (different hardware, compared because it was allowed)" if difference.hardware else "")


def _direction_note(item: MetricComparison) -> str:
    better = "lower" if item.lower_is_better else "higher"
    return (
        f"{item.metric}: no input says which way is better and unit {item.unit!r} does not decide it; "
        f"assumed {better} is better (store lower_is_better with the records)"
    )


def _not_judged_note(item: MetricComparison) -> str:
    return f"{item.metric}: not judged (too few samples), so a regression here passes unseen: {item.reason}"


def _missing_outcome(allow_missing: bool, folder_matched: Sequence[str]) -> str:
    """What a metric missing from the current run does to the gate."""
    if allow_missing:
        return "allowed by --allow-missing"
    if folder_matched:
        return (
            f"not gated: the current input's {', '.join(folder_matched)} was matched by metric (a run "
            "folder, a trace or a sample file, which does not record the stored run's other metrics)"
        )
    return "this fails the gate (--allow-missing accepts it)"


def _missing_notes(
    missing_current: Sequence[str], missing_baseline: Sequence[str], outcome: str
) -> list[str]:
    return [
        *(
            f"{name}: in the baseline but missing from the current run (did its benchmark crash or "
            f"give no finite value?); {outcome}"
            for name in missing_current
        ),
        *(f"{name}: only in the current run, no baseline to compare it with" for name in missing_baseline),
    ]


def _sources(series: Sequence[MetricSamples]) -> str:
    return ", ".join(dict.fromkeys(item.source for item in series if item.source))


__all__ = [
    "EnvironmentDifference",
    "GateResult",
    "compare_runs",
    "environment_differences",
    "label_metric",
    "series_label",
]

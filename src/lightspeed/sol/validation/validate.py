"""Predict published runs and report the error, row by row.

``validate_published(path=...)`` reads a table in the format of
``published-dev.tsv``, predicts every row it can (training rows with the
training engine, inference rows with the inference engine) and reports
predicted vs measured with the relative error, plus median and p90 absolute
error per kind. A row it cannot read is reported with its reason, never dropped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import numpy as np

from lightspeed.catalog import Catalog
from lightspeed.errors import LightspeedError
from lightspeed.records import JsonDict, Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.hardware import hardware_for
from lightspeed.sol.core.uncertainty import LEVEL, Band, band_for, family_of, load_bands
from lightspeed.sol.train.grid import grid_from_plans
from lightspeed.sol.train.plan import TrainingPlan, validate_plan
from lightspeed.sol.train.result import TrainingEstimate, estimate_from_arrays
from lightspeed.sol.train.step import evaluate_grid
from lightspeed.sol.validation.published import NOTE_COLUMNS, PublishedRow, check_measured, read_table
from lightspeed.sol.validation.readings import Reading, RowError, read_cell
from lightspeed.sol.validation.rows import RowSetup, row_setup
from lightspeed.units import GIB, SECONDS_PER_HOUR
from lightspeed.workload import ModelRegistry, context_note, parameter_counts
from lightspeed.workload.flops import flops_per_token


@dataclass(frozen=True)
class OtherFigure(Record):
    """A figure a row publishes beside its own metric (a peak memory beside a throughput),
    predicted from the same plan; ``read_as`` says which words and number it was read from."""

    metric: str
    measured: float
    predicted: float
    rel_error: float
    read_as: str


@dataclass(frozen=True)
class ValidationRow(Record):
    """One published row: measured, predicted, relative error, or why it was not predicted;
    ``also``: the other figures it publishes, predicted from the same plan (never in the
    summary of its kind, which counts each row's own metric once; in the one of their metric)."""

    id: str
    kind: str
    metric: str
    measured: float | None
    predicted: float | None
    rel_error: float | None
    status: str
    reason: str
    plan: JsonDict | None
    assumptions: tuple[str, ...]
    source: str
    reading: JsonDict | None = None
    readings: tuple[JsonDict, ...] = ()
    interval: tuple[float, float] | None = None
    covered: bool | None = None
    publisher: str = ""
    stack: str = ""
    family: str = ""
    flop_convention: str = ""
    also: tuple[OtherFigure, ...] = ()


KINDS: Final = ("train", "infer")
# The summary of the rows whose kind is neither (``inference``, an empty cell): none is predicted,
# and the summary still counts every row of the file.
UNREAD_KIND: Final = "unread"
# The |relative error| a row is counted "within" at: issue 27's bar for every TTFT row at a
# given concurrency, the strictest per-row bar the project is held to.
WITHIN_ERROR: Final = 0.20


@dataclass(frozen=True)
class ErrorSummary(Record):
    """Absolute relative error statistics over the predicted rows of one kind, or over the predicted
    figures of one metric of it: ``num_within`` of the ``n`` are within :data:`WITHIN_ERROR`. A
    kind's ``n`` counts each row once, for its own metric; a metric's counts the figures of that
    metric rows publish beside their own as well (``num_other_figures`` of the ``n``). ``coverage``
    is over the rows' own figures (the others have no error bars)."""

    n: int
    median_abs_error: float | None
    p90_abs_error: float | None
    max_abs_error: float | None
    num_not_predicted: int
    coverage: float | None = None
    coverage_level: float | None = None
    num_within: int = 0
    within_error: float = WITHIN_ERROR
    num_other_figures: int = 0


@dataclass(frozen=True)
class ValidationReport(Record):
    """Every row, the summary per kind (``train``, ``infer``, and :data:`UNREAD_KIND` where a row's
    kind is neither) and, over the predicted figures, per kind and metric (``by_metric``, keyed
    ``infer/ttft_s``)."""

    path: str
    rows: tuple[ValidationRow, ...]
    summary: dict[str, ErrorSummary]
    by_metric: dict[str, ErrorSummary] = field(default_factory=dict)


# The fewest bytes a trained parameter takes on the GPUs at any moment: its 16-bit weight (gradients,
# master weights and optimizer moments may be sharded further, recomputed or offloaded to the host)
MIN_TRAINED_BYTES_PER_PARAM: Final = 2.0


def _best_plan(
    setup: RowSetup, efficiency: EfficiencyModel | None
) -> tuple[int, Any, Any, TrainingPlan, tuple[str, ...]]:
    """Evaluate the candidate plans; keep the fastest that fits, and the notes on the choice.

    Where none fits, the row is refused (:class:`RowError`) if its 16-bit weights alone, spread
    over all its GPUs, overflow them: no sharding, recomputation or offload runs it. Otherwise the
    run kept less than any plan lightspeed prices (a sharding, offload or recomputation its row does
    not state, or the memory model's error): the least-memory plan is kept, and the note says so.
    """
    plans = []
    for plan in setup.plans:
        try:
            validate_plan(plan, setup.model, stack=setup.stack)
        except LightspeedError:
            continue
        plans.append(plan)
    if not plans:
        validate_plan(setup.plans[0], setup.model, stack=setup.stack)  # raises with the reason
    hardware = hardware_for(setup.cluster, plans[0].precision, efficiency, stack=setup.stack)
    arrays = evaluate_grid(grid_from_plans(plans), setup.model, hardware, plans[0].seq_len)
    # the fastest: the least time per sequence (splits of an assumed batch differ in their batch)
    per_sequence = np.asarray(arrays.step_time_s) / np.array([plan.global_batch_size for plan in plans])
    memory = np.asarray(arrays.memory.total_bytes)
    fits = memory <= hardware.usable_memory_bytes
    if fits.any():
        index = int(np.argmin(np.where(fits, per_sequence, np.inf)))
        return index, arrays, hardware, plans[index], ()
    index = int(np.argmin(memory))
    note = _memory_shortfall(plans[index], float(memory[index]), hardware.usable_memory_bytes, setup)
    return index, arrays, hardware, plans[index], (note,)


def _memory_shortfall(plan: TrainingPlan, least_bytes: float, usable_bytes: float, setup: RowSetup) -> str:
    """The note on a row none of whose plans fits (see :func:`_best_plan`), or :class:`RowError`
    where its weights alone cannot fit its GPUs."""
    gpus = plan.num_gpus
    accelerator = setup.cluster.system.accelerator.name
    need = (
        f"no plan of its {gpus:,} GPUs fits: the least needs {least_bytes / GIB:,.1f} GiB per GPU of "
        f"{usable_bytes / GIB:,.1f} usable on {accelerator}"
    )
    weights = MIN_TRAINED_BYTES_PER_PARAM * parameter_counts(setup.model).total_params / gpus
    if weights > usable_bytes:
        raise RowError(
            f"{need}; its 16-bit weights alone, spread over all {gpus:,}, take {weights / GIB:,.1f} GiB "
            "each: use more GPUs or check the model and GPU cells"
        )
    return (
        f"{need} ({least_bytes / usable_bytes - 1:+.0%}): the run kept less (a sharding, offload or "
        "recomputation the row does not state, or lightspeed's memory model errs), so it is "
        "predicted on that least-memory plan, not one that fits"
    )


def _predicted_metric(setup: RowSetup, plan: TrainingPlan, estimate: TrainingEstimate, peak: float) -> float:
    step_s = estimate.step_time_s
    tokens = plan.tokens_per_step
    gpus = plan.num_gpus
    if setup.metric == "step_time_s":
        return step_s
    if setup.metric == "memory_per_gpu_bytes":
        return estimate.memory_per_gpu_bytes
    if setup.metric == "hfu":
        return _hfu_in_row_convention(setup, plan, estimate, peak)
    if setup.metric in ("gpu_hours", "time_to_train_s"):
        assert setup.num_tokens is not None
        seconds = setup.num_tokens / tokens * step_s
        return seconds * gpus / SECONDS_PER_HOUR if setup.metric == "gpu_hours" else seconds
    per_gpu = 1.0 / gpus if setup.metric.endswith("_per_gpu") else 1.0
    if setup.metric.startswith("tokens_per_s"):
        return tokens / step_s * per_gpu
    if setup.metric.startswith("samples_per_s"):
        return plan.global_batch_size / step_s * per_gpu
    rate_per_gpu = _row_flop_per_s_per_gpu(setup, plan, estimate)
    return rate_per_gpu / 1e12 if setup.metric == "tflop_per_s_per_gpu" else rate_per_gpu / peak


def _row_flop_per_s_per_gpu(setup: RowSetup, plan: TrainingPlan, estimate: TrainingEstimate) -> float:
    """The model FLOP/s per GPU of ``estimate`` counted as the row counts them (its convention)."""
    flops = flops_per_token(
        setup.model,
        seq_len=plan.seq_len,
        convention=setup.flop_convention,
        causal=setup.flop_causal,
        recompute=setup.flop_recompute,
    )
    return flops.training_flop * plan.tokens_per_step / estimate.step_time_s / plan.num_gpus


def _hfu_in_row_convention(
    setup: RowSetup, plan: TrainingPlan, estimate: TrainingEstimate, peak: float
) -> float:
    """HFU counted as the row counts its model FLOPs: the row's MFU plus the FLOPs the hardware runs
    beyond the engine's own model count (recomputation), so HFU >= MFU in one convention. A count
    that already includes the recompute pass (Megatron's 96-form) is the hardware's as it stands."""
    row_mfu = _row_flop_per_s_per_gpu(setup, plan, estimate) / peak
    if setup.flop_recompute:
        return row_mfu
    recomputed = max(0.0, estimate.hfu - estimate.mfu) * estimate.peak_flop_per_s / peak
    return row_mfu + recomputed


# The figures a row counts in FLOPs, each in the row's own convention (RowSetup.flop_convention)
FLOP_METRICS: Final = frozenset({"mfu", "hfu", "tflop_per_s_per_gpu"})


def _convention_notes(setup: RowSetup, estimate: TrainingEstimate) -> tuple[str, ...]:
    """The sentence that tells a FLOP figure counted as the row counts them from the plan's ``mfu``
    and its bound, which count them as the engine does, where the two conventions differ."""
    row = setup.flop_convention + (", recompute pass included" if setup.flop_recompute else "")
    if setup.metric not in FLOP_METRICS or (
        setup.flop_convention == estimate.flop_convention and not setup.flop_recompute
    ):
        return ()
    return (
        f"the predicted {setup.metric} counts FLOPs as the row does ({row}); the plan's mfu and its "
        f"bound count them as the engine does ({estimate.flop_convention})",
    )


def _peak_of(setup: RowSetup, hardware_peak: float) -> float:
    """The peak an MFU figure divides by: the one the row names (``MFU vs 2.45 PF``), else the catalog's."""
    return setup.peak_flop_per_s or hardware_peak


def _train_row(
    row: PublishedRow, catalog: Catalog, models: ModelRegistry, efficiency: EfficiencyModel | None
) -> ValidationRow:
    label = RowLabel(row.row_id, row.text("source"))
    return predict_training_setup(label, row_setup(row, catalog, models), efficiency)


@dataclass(frozen=True)
class RowLabel(Record):
    """What a prediction record says of the row it predicts: its id, source and publisher."""

    id: str
    source: str = ""
    publisher: str = ""


def predict_training_setup(
    label: RowLabel, setup: RowSetup, efficiency: EfficiencyModel | None = None
) -> ValidationRow:
    """The prediction of a training row from its setup (the fit script swaps ``setup.stack``)."""
    index, arrays, hardware, plan, fit_notes = _best_plan(setup, efficiency)
    estimate = estimate_from_arrays(
        arrays=arrays, index=index, model=setup.model, hardware=hardware, plan=plan
    )
    predicted = _predicted_metric(setup, plan, estimate, _peak_of(setup, hardware.peak_flop_per_s))
    family = family_of("train", setup.model, setup.cluster.system.accelerator)
    context = context_note(setup.model, plan.seq_len)
    row = predicted_row(
        label,
        kind="train",
        metric=setup.metric,
        measured=setup.measured,
        predicted=predicted,
        plan={**estimate.plan_summary(), "mfu_convention": estimate.flop_convention},
        assumptions=(
            *setup.assumptions,
            *fit_notes,
            *([context] if context else []),
            *_convention_notes(setup, estimate),
        ),
        flop_convention=setup.flop_convention if setup.metric in FLOP_METRICS else "",
        reading=setup.reading,
        readings=setup.readings,
        band=band_for(load_bands(), family),
        family=family,
        stack=setup.stack.name if setup.stack is not None else "",
    )
    return replace(row, also=_other_figures(setup, plan, estimate, hardware.peak_flop_per_s))


def _other_figures(
    setup: RowSetup, plan: TrainingPlan, estimate: TrainingEstimate, hardware_peak: float
) -> tuple[OtherFigure, ...]:
    """The row's other published figures (``setup.also``), each predicted from the plan and
    estimate its own metric was predicted on; a measured value that is not above 0 is left out."""
    figures = []
    for reading in setup.also:
        if reading.value is None or not (reading.value > 0 and math.isfinite(reading.value)):
            continue
        other = replace(
            setup,
            metric=reading.key,
            peak_flop_per_s=reading.peak_flop_per_s or setup.peak_flop_per_s,
            num_tokens=reading.num_tokens or setup.num_tokens,
        )
        predicted = _predicted_metric(other, plan, estimate, _peak_of(other, hardware_peak))
        error = (predicted - reading.value) / reading.value
        figures.append(OtherFigure(reading.key, reading.value, predicted, error, reading.describe()))
    return tuple(figures)


def predicted_row(
    label: RowLabel,
    *,
    kind: str,
    metric: str,
    measured: float,
    predicted: float,
    plan: JsonDict,
    assumptions: tuple[str, ...],
    reading: Reading | None = None,
    readings: tuple[Reading, ...] = (),
    band: Band | None = None,
    stack: str = "",
    interval: tuple[float, float] | None = None,
    family: str = "",
    flop_convention: str = "",
) -> ValidationRow:
    """The record of a row the engine predicted (relative error against ``measured``), with the
    error bars of its family around the prediction (or ``interval``, where the row's own band is
    known better: a latency under load) and whether the measured value fell inside; ``family``
    names the residuals the band comes from (:func:`~lightspeed.sol.core.uncertainty.family_name`);
    ``flop_convention`` how a FLOP figure (MFU, HFU, TFLOP/s) was counted, ``''`` for other figures.

    Raises :class:`RowError` (the row is reported as not predicted) when ``measured`` is not
    a number above zero (a relative error against it means nothing), or with ``reading``'s problem
    (a structured row read with one: :func:`~lightspeed.sol.validation.structured.load_published_runs`).
    """
    if reading is not None and reading.problem:  # a structured row's figure no run reaches
        raise RowError(reading.problem)
    if not measured > 0 or not math.isfinite(measured):
        raise RowError(
            f"measured value {measured:g} is not a number above 0; fix: write the value the source "
            "reports (a number above 0), or n/r where it gives none"
        )
    if not math.isfinite(predicted):
        raise RowError(f"the prediction is not a finite number ({predicted:g})")
    if interval is None and band is not None and metric != "memory_per_gpu_bytes":
        interval = band.of(metric, predicted)
    return ValidationRow(
        id=label.id,
        kind=kind,
        metric=metric,
        measured=measured,
        predicted=predicted,
        rel_error=(predicted - measured) / measured,
        status="ok",
        reason="",
        plan=plan,
        assumptions=assumptions,
        source=label.source,
        reading=reading.to_dict() if reading is not None else None,
        readings=tuple(item.to_dict() for item in readings),
        interval=interval,
        covered=None if interval is None else interval[0] <= measured <= interval[1],
        publisher=label.publisher,
        stack=stack,
        family=family,
        flop_convention=flop_convention,
    )


def _failed(row: PublishedRow, status: str, reason: str) -> ValidationRow:
    return ValidationRow(
        id=row.row_id,
        kind=row.kind or "unknown",
        metric=row.text("metric"),
        measured=None,
        predicted=None,
        rel_error=None,
        status=status,
        reason=reason,
        plan=None,
        assumptions=(),
        source=row.text("source"),
        readings=tuple(
            item.to_dict() for item in read_cell(row.text("metric"), row.text("measured"), kind=row.kind)
        ),
    )


InferencePredictor = Callable[[PublishedRow, Catalog, ModelRegistry], ValidationRow]


def _predict_row(
    row: PublishedRow,
    catalog: Catalog,
    models: ModelRegistry,
    efficiency: EfficiencyModel | None,
    infer: InferencePredictor | None,
) -> ValidationRow:
    try:
        check_measured(row)
        _refuse_known_regression(row)
        if row.kind == "train":
            return _train_row(row, catalog, models, efficiency)
        if row.kind == "infer":
            if infer is None:
                return _failed(row, "unsupported", "inference rows need the inference engine")
            return infer(row, catalog, models)
        return _failed(row, "error", f"kind {row.kind!r} is neither 'train' nor 'infer'")
    except (RowError, LightspeedError) as error:
        return _failed(row, "error", str(error))


# A figure its own source calls a regression it will fix (Megatron-Bridge's GPT-OSS 120B footnote:
# "Performance regression in GPT-OSS 120B pre-training is a known issue ... It will be resolved
# with the next container release"): what the stack does while broken, not what it does.
_KNOWN_REGRESSION: Final = re.compile(
    r"performance regression\b[^.;]*\bknown issue|known (?:performance )?regression", re.IGNORECASE
)


def _refuse_known_regression(row: PublishedRow) -> None:
    """Refuse a row whose notes quote its source calling the figure a known regression."""
    for column in NOTE_COLUMNS:
        match = _KNOWN_REGRESSION.search(row.text(column))
        if match is not None:
            raise RowError(
                f"the source calls this figure a known regression ('{match.group(0)}', in "
                f"{column}): lightspeed predicts the stack working, so the figure is not compared"
            )


def _setup_key(row: PublishedRow) -> tuple[str, ...]:
    """What a prediction depends on: every cell of the row but its id (the line is not a cell)."""
    return (row.kind, *(f"{column}\t{text}" for column, text in sorted(row.cells.items()) if column != "id"))


def p90_of(values: Sequence[float] | np.ndarray) -> float:
    """The 90th percentile of ``values``, linear between the closest ranks (numpy's default): the one
    definition of every p90 of absolute errors ``validate`` and the fit report print.

    >>> p90_of([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1])
    1.0
    """
    return float(np.percentile(np.asarray(values, dtype=float), 90))


def summarize(rows: tuple[ValidationRow, ...], kind: str, metric: str | None = None) -> ErrorSummary:
    """Median, p90 and max absolute relative error of the predicted rows of ``kind`` (and of
    ``metric``, if given: with the figures of that metric rows publish beside their own, ``also``),
    and how many are within :data:`WITHIN_ERROR`."""
    chosen = [r for r in rows if r.kind == kind and (metric is None or r.metric == metric)]
    others = [
        f.rel_error
        for r in rows
        if r.kind == kind
        for f in r.also
        if metric is not None and f.metric == metric
    ]
    errors = np.array(
        [abs(r.rel_error) for r in chosen if r.rel_error is not None] + [abs(e) for e in others]
    )
    missing = sum(1 for r in chosen if r.rel_error is None)
    if errors.size == 0:
        return ErrorSummary(0, None, None, None, missing)
    covered = [r.covered for r in chosen if r.covered is not None]
    return ErrorSummary(
        n=int(errors.size),
        median_abs_error=float(np.median(errors)),
        p90_abs_error=p90_of(errors),
        max_abs_error=float(errors.max()),
        num_not_predicted=missing,
        coverage=sum(covered) / len(covered) if covered else None,
        coverage_level=LEVEL if covered else None,
        num_within=int(np.count_nonzero(errors <= WITHIN_ERROR)),
        num_other_figures=len(others),
    )


def report_of(path: str, rows: tuple[ValidationRow, ...]) -> ValidationReport:
    """``rows`` with their summary per kind, and per kind and metric over the predicted rows and
    the figures they publish beside their own (a row not predicted counts in its kind's summary:
    its metric may be unread free text; one whose kind is neither in :data:`UNREAD_KIND`'s)."""
    predicted = tuple(row for row in rows if row.rel_error is not None)
    summary = {kind: summarize(rows, kind) for kind in KINDS}
    unread = sum(1 for row in rows if row.kind not in KINDS)
    if unread:
        summary[UNREAD_KIND] = ErrorSummary(0, None, None, None, unread)
    metrics = sorted(
        {(row.kind, row.metric) for row in predicted if row.kind in KINDS}
        | {(row.kind, figure.metric) for row in predicted if row.kind in KINDS for figure in row.also},
        key=lambda pair: (KINDS.index(pair[0]), pair[1]),
    )
    return ValidationReport(
        path=path,
        rows=rows,
        summary=summary,
        by_metric={f"{kind}/{metric}": summarize(predicted, kind, metric) for kind, metric in metrics},
    )


def validate_published(
    *,
    path: Path,
    catalog: Catalog,
    models: ModelRegistry,
    efficiency: EfficiencyModel | None = None,
    infer: InferencePredictor | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ValidationReport:
    """Predict every row of a published-results table (see module docs).

    Rows that describe the same setup (every cell but the id alike: a sweep's repeats, a table
    pasted twice) are predicted once. ``progress(done, total)`` is called after each row.
    """
    table = read_table(path)
    predicted: dict[tuple[str, ...], ValidationRow] = {}
    rows: list[ValidationRow] = []
    for done, row in enumerate(table, start=1):
        key = _setup_key(row)
        if key not in predicted:
            predicted[key] = _predict_row(row, catalog, models, efficiency, infer)
        rows.append(replace(predicted[key], id=row.row_id))
        if progress is not None:
            progress(done, len(table))
    return report_of(str(path), tuple(rows))

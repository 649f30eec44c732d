"""The sections of the HTML report, one builder per kind of result.

Each builder takes library records (never files) and returns a
:class:`~lightspeed.report.html.ReportSection` whose chart comes from the
area's own chart function (``report/bench.py`` roofline, ``report/sol.py``
step breakdown, ``report/goodput.py`` waterfall). Inputs are gathered by
:mod:`lightspeed.report.html_inputs`; a section whose data is missing says why.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from lightspeed.bench import BenchResult, DeviceSol
from lightspeed.gate import MetricHistory
from lightspeed.goodput import Ledger
from lightspeed.monitor import MonitorReport
from lightspeed.report.bench import (
    format_size,
    format_value,
    fraction_text,
    result_notes,
    roof_precisions,
    roofline_figure,
)
from lightspeed.report.goodput import bucket_rows, goodput_headline, goodput_waterfall_figure, ledger_notes
from lightspeed.report.html import ReportSection, Table, chart_from_figure, skipped_section
from lightspeed.report.monitor import monitor_section
from lightspeed.report.regression import history_figure
from lightspeed.report.sol import PART_NAMES, step_breakdown_figure
from lightspeed.units import format_duration, format_percent

if TYPE_CHECKING:  # html_cost reads its PredictedStep from here
    from lightspeed.report.html_cost import ServedPlan

TITLES: dict[str, str] = {
    "roofline": "Measured points against the speed of light (roofline)",
    "step": "Predicted step-time breakdown of a plan",
    "goodput": "Goodput ledger (waterfall from wall time to productive time)",
    "trace": "Trace temporal breakdown per rank",
    "kernels": "Kernels against their speed of light (Nsight Compute)",
    "history": "History of a metric across runs",
}

# Shown when a section has no data and nobody said why: the command that makes it.
HOW_TO_GET: dict[str, str] = {
    "roofline": "no benchmark results; run 'lightspeed bench gemm' and 'lightspeed bench membw', "
    "or pass --from run:ID",
    "step": "no training prediction; pass a plan's estimate ('lightspeed plan train ... --json > plan.json', "
    "then --from plan.json)",
    "goodput": "no goodput run in the store or the sources; pass a tracker run folder with --from RUN_DIR",
    "trace": "no profiler trace in the store or the sources; pass one with --from TRACE.json (or an Nsight "
    "Systems .sqlite)",
    "kernels": "no Nsight Compute output; pass ncu --csv output with --from NCU.csv",
    "history": "the results store holds no metric stored in two runs yet",
}


@dataclass(frozen=True)
class PredictedStep:
    """The fields of a training estimate the report draws (from a live estimate or its JSON);
    ``None``: the estimate did not say (a field missing from a file is not made up)."""

    model: str | None
    system: str | None
    num_gpus: int | None
    step_time_s: float
    breakdown_s: dict[str, float]
    mfu: float | None
    bound: str | None
    bound_part: str | None
    fits: bool | None
    source: str = ""  # the file or run it was read from

    def name(self, index: int = 1) -> str:
        """``model on system (N GPUs)`` from the fields present; ``plan N (source)`` when none names it."""
        where = f" ({self.source})" if self.source else ""
        named = " on ".join(part for part in (self.model, self.system) if part) or f"plan {index}{where}"
        return named + (f" ({self.num_gpus:,} GPUs)" if self.num_gpus is not None else "")


@dataclass(frozen=True)
class BenchInputs:
    """Benchmark results of one device and that device's SOL."""

    results: tuple[BenchResult, ...]
    sol: DeviceSol
    label: str


@dataclass(frozen=True)
class ReportInputs:
    """Everything the report draws; empty fields become sections that say what is missing.

    ``reasons`` maps a section key to why its data is missing (overrides
    :data:`HOW_TO_GET`); ``trace_sections`` and ``kernel_sections`` are built by
    ``report/trace.py`` and ``report/kernels.py``; ``serving_sections`` by ``report/simulation_section.py``
    from ``lightspeed simulate --json`` output (and the runs ``plan infer --json`` simulated under
    its load); ``inference_sections`` by ``report/inference_section.py`` from ``lightspeed plan infer
    --json`` output.
    """

    bench: BenchInputs | None = None
    estimates: tuple[PredictedStep, ...] = ()
    ledgers: tuple[Ledger, ...] = ()
    trace_sections: tuple[ReportSection, ...] = ()
    kernel_sections: tuple[ReportSection, ...] = ()
    history: MetricHistory | None = None
    reasons: Mapping[str, str] = field(default_factory=dict)
    monitors: tuple[MonitorReport, ...] = ()
    serving_sections: tuple[ReportSection, ...] = ()
    inference_sections: tuple[ReportSection, ...] = ()
    served: tuple[ServedPlan, ...] = ()  # the serving estimates' figures the cost section prices


def _missing(key: str, inputs: ReportInputs) -> ReportSection:
    return skipped_section(key, TITLES[key], inputs.reasons.get(key) or HOW_TO_GET[key])


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.5g}"


def roofline_section(bench: BenchInputs) -> ReportSection:
    """Every measured point beside its SOL, under one roof per GEMM precision measured."""
    precisions = roof_precisions(bench.results) or ["fp32"]
    device = bench.sol.device_name or "this device"
    rows = tuple(
        (
            result.name,
            result.dtype or "-",
            format_size(result),
            format_value(result.value, result.unit),
            format_value(result.sol, result.unit),
            fraction_text(result),
            "yes" if result.correct else "WRONG",
        )
        for result in bench.results
    )
    figure = roofline_figure(
        bench.results, sol=bench.sol, precision=precisions[0], title=f"{bench.label} on {device}"
    )
    notes = list(dict.fromkeys([*result_notes(bench.results), *([bench.sol.note] if bench.sol.note else [])]))
    roofs = ", ".join(precisions)
    return ReportSection(
        key="roofline",
        title=TITLES["roofline"],
        paragraphs=(
            f"{len(bench.results)} measured point(s) on {device}. Each line is the roofline of one "
            f"precision ({roofs}): its peak, as in the table, and the memory bandwidth where a STREAM "
            "result gives one; the gap to it is the SOL not reached.",
            *notes,
        ),
        charts=(chart_from_figure(figure, name="roofline", title=f"roofline of {device} ({roofs})"),),
        tables=(
            Table(headers=("benchmark", "dtype", "size", "measured", "SOL", "of SOL", "correct"), rows=rows),
        ),
    )


def step_section(estimates: Sequence[PredictedStep]) -> ReportSection:
    """Each prediction's step time split into compute, communication, bubble and the rest."""
    charts = []
    tables = []
    for index, estimate in enumerate(map(in_step_order, estimates), start=1):
        title = estimate.name(index)
        charts.append(chart_from_figure(step_breakdown_figure(estimate), name=f"step-{index}", title=title))
        rows = tuple(
            (PART_NAMES[part], format_duration(value), format_percent(value / estimate.step_time_s))
            for part, value in estimate.breakdown_s.items()
            if value > 0
        )
        tables.append(Table(headers=("part", "time per step", "share"), rows=rows, caption=title))
    lines = tuple(_step_line(estimate, index) for index, estimate in enumerate(estimates, start=1))
    return ReportSection(
        key="step", title=TITLES["step"], paragraphs=lines, charts=tuple(charts), tables=tuple(tables)
    )


def in_step_order(estimate: PredictedStep) -> PredictedStep:
    """``estimate`` with its parts in the order of a step (:data:`~lightspeed.report.sol.PART_NAMES`,
    the engine's: compute first, the optimizer and launch overhead last), whatever order it was
    read in: the results store keeps a payload's keys sorted, so a prediction read back from it
    would list the pipeline bubble before compute."""
    order = {part: position for position, part in enumerate(PART_NAMES)}
    parts = sorted(estimate.breakdown_s.items(), key=lambda item: order.get(item[0], len(order)))
    return replace(estimate, breakdown_s=dict(parts))


def _step_line(estimate: PredictedStep, index: int) -> str:
    """``name: step 2 s, MFU 44.0%, memory fits; bound``: the fields the estimate has, no others."""
    parts = [f"step {format_duration(estimate.step_time_s)}"]
    if estimate.mfu is not None:
        parts.append(f"MFU {format_percent(estimate.mfu)}")
    if estimate.fits is not None:
        parts.append(f"memory {'fits' if estimate.fits else 'does NOT fit'}")
    bound = f"; {estimate.bound}" if estimate.bound else ""
    return f"{estimate.name(index)}: {', '.join(parts)}{bound}"


def goodput_section(ledgers: Sequence[Ledger]) -> ReportSection:
    """The goodput ledger of each run as a waterfall, with its bucket table (as ``goodput report``)."""
    charts = []
    tables = []
    lines = []
    for index, ledger in enumerate(ledgers):
        label = ledger.run_id or ledger.path
        figure = goodput_waterfall_figure(ledger)
        charts.append(chart_from_figure(figure, name=f"waterfall-{index + 1}", title=f"goodput of {label}"))
        tables.append(
            Table(
                headers=("bucket", "time", "share of wall time"),
                rows=tuple(bucket_rows(ledger)),
                caption=f"{label}: buckets sum to the wall time; goodput = productive share",
            )
        )
        partial = " (partial)" if ledger.partial else ""
        lines.append(f"{label}{partial}: {goodput_headline(ledger)}  {ledger.steps.count} steps")
        lines.extend(f"{label}: note: {note}" for note in ledger_notes(ledger))
    return ReportSection(
        key="goodput",
        title=TITLES["goodput"],
        paragraphs=tuple(lines),
        charts=tuple(charts),
        tables=tuple(tables),
    )


def history_section(history: MetricHistory) -> ReportSection:
    """A metric across the runs of the store, with the gate's verdict per run."""
    rows = tuple(
        (
            point.run_id,
            time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(point.created_s)),
            _number(point.value),
            f"{_number(point.min_value)} .. {_number(point.max_value)}",
            str(point.num_samples),
            _number(point.sol),
            point.verdict,
        )
        for point in history.points
    )
    better = "lower" if history.lower_is_better else "higher"
    table = Table(
        headers=(
            "run",
            "time (UTC)",
            f"median ({history.unit})",
            "min .. max",
            "samples",
            "SOL",
            "vs previous",
        ),
        rows=rows,
    )
    figure = history_figure(history)
    return ReportSection(
        key="history",
        title=TITLES["history"],
        paragraphs=(
            f"{history.name} [{history.metric}] in {history.unit} over {len(history.points)} run(s) "
            f"({better} is better). Each run is compared with the one before by the regression gate "
            "(threshold 5%, Mann-Whitney U and bootstrap CI at alpha 0.05).",
        ),
        tables=(table,),
        charts=(
            chart_from_figure(figure, name="history", title=f"{history.name} [{history.metric}] by run"),
        ),
    )


def build_sections(inputs: ReportInputs) -> list[ReportSection]:
    """Every section of the report, in reading order."""
    sections = [
        roofline_section(inputs.bench) if inputs.bench is not None else _missing("roofline", inputs),
        step_section(inputs.estimates) if inputs.estimates else _missing("step", inputs),
        goodput_section(inputs.ledgers) if inputs.ledgers else _missing("goodput", inputs),
    ]
    sections.extend(inputs.inference_sections)  # serving estimates (plan infer --json), when passed
    sections.extend(inputs.serving_sections)  # simulated serving runs, when one was passed
    if inputs.monitors:  # counters beside the steps, when a monitor ran (monitor run, or --from its folder)
        sections.append(monitor_section(inputs.monitors))
    sections.extend(inputs.trace_sections or [_missing("trace", inputs)])
    sections.extend(inputs.kernel_sections or [_missing("kernels", inputs)])
    sections.append(
        history_section(inputs.history) if inputs.history is not None else _missing("history", inputs)
    )
    return sections

"""The HTML report's section for a ``lightspeed simulate --json`` result: the same figures the
table prints (:mod:`lightspeed.report.serving`), read back from the JSON with one error naming
the file and the field for a bad value, and the time series and latency-vs-load charts."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from lightspeed.errors import DataFileError, UserInputError
from lightspeed.records import JsonObject
from lightspeed.report.html import Chart, ReportSection, Table, chart_from_figure
from lightspeed.report.palette import category_color
from lightspeed.report.plots import add_legend, new_figure
from lightspeed.report.serving import (
    LOAD_SWEEP_HEADERS,
    band_paragraph,
    capacity_lines,
    latency_load_figure,
    load_sweep_rows,
    number_field,
    rates_text,
    slo_text,
    time_text,
)
from lightspeed.sol.serve.capacity_at_slo import CapacityResult, LoadPoint, SeedCheck
from lightspeed.sol.serve.run_metrics import ServiceLevel, Settling, SloResult
from lightspeed.sol.serve.workload import ArrivalProcess, LengthDistribution
from lightspeed.units import format_count

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _stats_from(data: JsonObject, key: str) -> list[str]:
    stats = data.get(key)
    if not isinstance(stats, Mapping):
        raise DataFileError("simulation JSON", f"no {key} statistics", field=key)
    return [time_text(number_field(stats, name)) for name in ("mean_s", "p50_s", "p90_s", "p99_s", "max_s")]


def series_figure(series: JsonObject) -> Figure:
    """Requests waiting, sequences running and in flight over time, KV use on a second axis."""
    figure, axes = new_figure(7.0, 3.5)
    times = [float(value) for value in series.get("time_s", ())]
    for key, label, color in (
        ("in_flight", "in flight", "predicted"),
        ("running", "running", "measured"),
        ("queue_length", "waiting", "sol"),
    ):
        values = [float(value) for value in series.get(key, ())]
        if len(values) == len(times):
            axes.plot(times, values, color=category_color(color), label=label, linewidth=1.2)
    axes.set_xlabel("time (s)")
    axes.set_ylabel("requests")
    kv = [float(value) * 100.0 for value in series.get("kv_use", ())]
    if len(kv) == len(times):
        other = axes.twinx()
        other.plot(times, kv, color="#94a3b8", linestyle=":", label="KV use (%)")
        other.set_ylabel("KV cache use (%)")
        add_legend(other, fontsize=8, frameon=False, loc="upper right")
    add_legend(axes, fontsize=8, frameon=False, loc="upper left")
    return figure


def serving_section(data: JsonObject, *, source: str, index: int = 1) -> ReportSection:
    """The report section of one ``lightspeed simulate --json`` result (its JSON object)."""
    rows = tuple(
        (name, *_stats_from(data, key))
        for name, key in (("TTFT", "ttft"), ("TPOT", "tpot"), ("ITL", "itl"), ("end to end", "e2e"))
    )
    paragraphs = [
        f"{data.get('model', '?')} on {data.get('system', '?')} ({source}): "
        f"{format_count(number_field(data, 'output_tokens_per_s'))} output tok/s, "
        f"{_rates_from(data)}, "
        f"{int(number_field(data, 'num_preemptions') or 0):,} preemptions.",
    ]
    workload = data.get("workload")
    if isinstance(workload, Mapping) and workload:  # in the headline's paragraph, as the terminal's
        paragraphs[0] += f" Workload: {_workload_text(workload)}; seed {data.get('seed', '?')}."
    slo = data.get("slo")
    if isinstance(slo, Mapping):
        paragraphs.append(slo_text(_slo_result(slo, source)) + ".")
    settled = data.get("settling")
    if isinstance(settled, Mapping):
        paragraphs.extend(_settling_paragraphs(settled))
    band = data.get("interval_under_load")
    if isinstance(band, Mapping):
        paragraphs.append(band_paragraph(band))
    charts: list[Chart] = []
    tables = [Table(headers=("latency", "mean", "p50", "p90", "p99", "max"), rows=rows)]
    found = data.get("capacity")
    if isinstance(found, Mapping):
        capacity = _capacity(found, source)
        paragraphs.extend(line + "." for line in capacity_lines(capacity))
        tables.append(
            Table(
                headers=LOAD_SWEEP_HEADERS,
                rows=tuple(tuple(row) for row in load_sweep_rows(capacity.probes)),
                caption="probes of the highest rate at the SLO, in the order simulated "
                "(simulate --max-rate-at-slo)",
            )
        )
    series = data.get("series")
    if isinstance(series, Mapping) and series.get("time_s"):
        charts.append(
            chart_from_figure(series_figure(series), name=f"serving-{index}", title="load over the run")
        )
    sweep = data.get("sweep")
    if isinstance(sweep, Sequence) and not isinstance(sweep, str) and sweep:
        points = _load_points(sweep, source)
        tables.append(
            Table(
                headers=LOAD_SWEEP_HEADERS,
                rows=tuple(tuple(row) for row in load_sweep_rows(points)),
                caption="latency against load (simulate --sweep)",
            )
        )
        charts.append(
            chart_from_figure(
                latency_load_figure(points, marked_rate=_marked_rate(data)),
                name=f"sweep-{index}",
                title="latency against load",
            )
        )
    return ReportSection(
        key=f"serving-{index}",
        title=f"Simulated serving: {data.get('model', '?')}{_title_details(data)}",
        paragraphs=tuple(paragraphs),
        tables=tuple(tables),
        charts=tuple(charts),
    )


def _marked_rate(data: JsonObject) -> tuple[float, str] | None:
    """The run's own arrival rate, to mark on its latency-load chart: the highest rate at the SLO
    where the run was a capacity search's (its run is at that rate); none for offline or
    fixed-concurrency runs."""
    workload = data.get("workload")
    arrivals = workload.get("arrivals") if isinstance(workload, Mapping) else None
    rate_per_s = number_field(arrivals, "rate_per_s") if isinstance(arrivals, Mapping) else math.nan
    if not math.isfinite(rate_per_s) or rate_per_s <= 0:
        return None
    searched = isinstance(data.get("capacity"), Mapping)
    return rate_per_s, "highest rate at the SLO" if searched else "this run's rate"


def _title_details(data: JsonObject) -> str:
    """``, tp=2 pp=1 x4 fp8 at 10 req/s``: the deployment and the load, so that the sections of
    several runs of one model differ by title (empty where the file holds neither)."""
    plan, workload = data.get("plan"), data.get("workload")
    parts = []
    if isinstance(plan, Mapping):
        degrees = [
            f"{key.replace('_', '-')}={plan[key]}" for key in ("tp", "pp") if isinstance(plan.get(key), int)
        ]
        degrees += [
            f"{key.replace('_', '-')}={plan[key]}"
            for key in ("ep", "dp_attention")
            if isinstance(plan.get(key), int) and plan[key] > 1
        ]
        replicas = plan.get("replicas")
        if isinstance(replicas, int) and replicas > 1:
            degrees.append(f"x{replicas}")
        if isinstance(plan.get("precision"), str):
            degrees.append(plan["precision"])
        parts.append(" ".join(degrees))
    if isinstance(workload, Mapping) and isinstance(workload.get("arrivals"), Mapping):
        parts.append(_arrivals_text(workload["arrivals"]))
    text = ", ".join(part for part in parts if part and part != "?")
    return f", {text}" if text else ""


def _rates_from(data: JsonObject) -> str:
    """``3.831 req/s completed over the run; 4.31 offered`` of a ``simulate --json`` result, as the
    terminal's requests/s line says them (:func:`rates_text`; the offered rate is the SLO's in
    results written before the run recorded its own)."""
    completed = number_field(data, "requests_per_s")
    settling = data.get("settling")
    kept_up = settling.get("settled") if isinstance(settling, Mapping) else None
    slo = data.get("slo")
    offered = number_field(data, "offered_requests_per_s")
    if not math.isfinite(offered) and isinstance(slo, Mapping):
        offered = number_field(slo, "offered_requests_per_s")
    workload = data.get("workload")
    arrivals = workload.get("arrivals") if isinstance(workload, Mapping) else None
    closed = isinstance(arrivals, Mapping) and arrivals.get("kind") == "closed"
    users = arrivals.get("concurrency") if closed and isinstance(arrivals, Mapping) else None
    stopped = number_field(data, "num_in_flight") > 0 or number_field(data, "num_arrived") < number_field(
        data, "num_requests"
    )
    return f"{completed:,.4g} req/s completed over the run" + rates_text(
        completed_per_s=completed,
        served_per_s=number_field(data, "served_requests_per_s"),
        offered_per_s=offered,
        kept_up=kept_up if isinstance(kept_up, bool) else None,
        users=users if isinstance(users, int) and not isinstance(users, bool) else None,
        stopped=stopped,
        trace=isinstance(workload, Mapping) and isinstance(workload.get("trace"), Mapping),
        warmup=number_field(data, "num_warmup") > 0,
    )


def _workload_text(workload: JsonObject) -> str:
    """The workload line of a ``simulate --json`` result's ``workload`` object (as
    :meth:`ServingWorkload.describe` writes it): count, arrivals, lengths, prefix hits, warm-up."""
    trace = workload.get("trace")
    number = number_field(workload, "num_requests")
    count = f"{number:,.0f}" if math.isfinite(number) else "?"
    if isinstance(trace, Mapping):
        text = f"{count} requests replayed from {trace.get('path', '?')}"
    else:
        arrivals, lengths = (
            workload.get("arrivals"),
            (workload.get(k) for k in ("input_lengths", "output_lengths")),
        )
        isl, osl = (_lengths_text(side) for side in lengths)
        text = f"{count} requests, {_arrivals_text(arrivals)}, ISL {isl}, OSL {osl}"
    hits = number_field(workload, "prefix_hit_rate")
    if math.isfinite(hits) and hits > 0:
        text += f", prefix cache hits {hits:.0%}"
    warmup = number_field(workload, "warmup_requests")
    if math.isfinite(warmup) and warmup > 0:
        text += f", the first {warmup:,.0f} not measured (warm-up)"
    name = workload.get("name")
    return f"{name}: {text}" if isinstance(name, str) and name else text


def _arrivals_text(arrivals: object) -> str:
    """:meth:`ArrivalProcess.describe` of a JSON ``arrivals`` object (``?`` where it is not one)."""
    if not isinstance(arrivals, Mapping):
        return "?"
    try:
        return ArrivalProcess(
            kind=str(arrivals.get("kind")),
            rate_per_s=_optional_float(arrivals.get("rate_per_s")),
            cv=_optional_float(arrivals.get("cv")) or 1.0,
            concurrency=int(arrivals["concurrency"])
            if isinstance(arrivals.get("concurrency"), int)
            else None,
        ).describe()
    except UserInputError:
        return "?"


def _lengths_text(lengths: object) -> str:
    """:meth:`LengthDistribution.describe` of a JSON length object (``?`` where it is not one)."""
    if not isinstance(lengths, Mapping):
        return "?"
    numbers = {key: number_field(lengths, key) for key in ("mean_tokens", "std_tokens")}
    bounds = {key: number_field(lengths, key) for key in ("minimum_tokens", "maximum_tokens")}
    if lengths.get("kind") == "empirical":
        return f"empirical mean {numbers['mean_tokens']:,.0f}"
    if not all(math.isfinite(value) for value in (*numbers.values(), *bounds.values())):
        return "?"
    try:
        return LengthDistribution(
            kind=str(lengths.get("kind")),
            mean_tokens=numbers["mean_tokens"],
            std_tokens=numbers["std_tokens"],
            minimum_tokens=int(bounds["minimum_tokens"]),
            maximum_tokens=int(bounds["maximum_tokens"]),
        ).describe()
    except UserInputError:
        return "?"


def _optional_float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _capacity(data: JsonObject, source: str) -> CapacityResult:
    """The ``capacity`` object of a ``simulate --max-rate-at-slo --json`` result back as a
    :class:`CapacityResult` (one error naming the file and the field for a bad one)."""
    probes = data.get("probes")
    if not isinstance(probes, Sequence) or isinstance(probes, str):
        raise DataFileError(source, "needs a list of probes", field="capacity.probes")
    limited_by = data.get("limited_by", "slo")
    offered = _optional_number(data, "offered_requests_per_s", source, "capacity")
    seed = _optional_number(data, "seed", source, "capacity")
    return CapacityResult(
        slo=_service_level(data.get("slo"), source, "capacity.slo"),
        **{
            key: _checked_number(data, key, source, "capacity")
            for key in (
                "max_rate_per_s",
                "goodput_requests_per_s",
                "goodput_requests_per_s_per_gpu",
                "saturation_rate_per_s",
            )
        },
        num_gpus=int(_checked_number(data, "num_gpus", source, "capacity")),
        probes=tuple(_load_points(probes, source, where="capacity.probes")),
        limited_by=limited_by if isinstance(limited_by, str) else "slo",
        offered_requests_per_s=math.nan if offered is None else offered,
        seed=0 if seed is None else int(seed),
        seed_checks=_seed_checks(data.get("seed_checks"), source),
    )


def _seed_checks(checks: object, source: str) -> tuple[SeedCheck, ...]:
    """The ``capacity.seed_checks`` of a ``simulate --max-rate-at-slo --json`` result (none in
    results written before they were)."""
    if checks is None:
        return ()
    if not isinstance(checks, Sequence) or isinstance(checks, str):
        raise DataFileError(source, "needs a list of seed checks", field="capacity.seed_checks")
    found = []
    for where, item in _objects(checks, source, "capacity.seed_checks", "a seed check"):
        found.append(
            SeedCheck(
                seed=int(_checked_number(item, "seed", source, where)),
                attainment=_checked_number(item, "attainment", source, where),
                meets=bool(_checked_flag(item, "meets", source, where)),
                settled=_checked_flag(item, "settled", source, where),
                sustained=bool(_checked_flag(item, "sustained", source, where)),
            )
        )
    return tuple(found)


def _optional_number(data: JsonObject, key: str, source: str, where: str) -> float | None:
    """``data[key]``: ``None`` when absent, else as :func:`_checked_number`."""
    return None if data.get(key) is None else _checked_number(data, key, source, where)


def _checked_number(data: JsonObject, key: str, source: str, where: str) -> float:
    """``data[key]`` as a finite number, else one error naming the file and the field."""
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DataFileError(source, "needs a finite number", field=f"{where}.{key}", value=value)
    return float(value)


def _checked_flag(data: JsonObject, key: str, source: str, where: str) -> bool | None:
    value = data.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise DataFileError(source, "needs true, false or null", field=f"{where}.{key}", value=value)


def _slo_result(data: JsonObject, source: str) -> SloResult:
    """The ``slo`` object of a ``simulate --json`` result back as a :class:`SloResult`."""
    level = _service_level(data.get("slo"), source, "slo.slo")
    number = {
        key: _checked_number(data, key, source, "slo")
        for key in (
            "ttft_attainment",
            "tpot_attainment",
            "attainment",
            "goodput_requests_per_s",
            "goodput_requests_per_s_per_gpu",
        )
    }
    served = _optional_number(data, "served_requests_per_s", source, "slo")
    offered = _optional_number(data, "offered_requests_per_s", source, "slo")
    unscored = _optional_number(data, "num_unscored", source, "slo")
    if unscored is not None and not (unscored >= 0 and unscored.is_integer()):
        raise DataFileError(
            source, "needs a whole number, 0 or more", field="slo.num_unscored", value=unscored
        )
    return SloResult(
        slo=level,
        meets=bool(_checked_flag(data, "meets", source, "slo")),
        p99_meets=bool(_checked_flag(data, "p99_meets", source, "slo")),
        served_requests_per_s=math.nan if served is None else served,
        offered_requests_per_s=math.nan if offered is None else offered,
        num_unscored=0 if unscored is None else int(unscored),
        **number,
    )


def _service_level(limits: object, source: str, where: str) -> ServiceLevel:
    """An SLO's limits of a ``simulate --json`` result back as a :class:`ServiceLevel`."""
    if not isinstance(limits, Mapping):
        raise DataFileError(source, "the SLO names no limits", field=where)
    try:
        return ServiceLevel(
            ttft_s=_optional_number(limits, "ttft_s", source, where),
            tpot_s=_optional_number(limits, "tpot_s", source, where),
            attainment=_checked_number(limits, "attainment", source, where),
            per_limit=bool(_checked_flag(limits, "per_limit", source, where)),
        )
    except UserInputError as error:
        if isinstance(error, DataFileError):
            raise
        raise DataFileError(source, str(error), field=where) from None


def _objects(items: Sequence[object], source: str, where: str, what: str) -> list[tuple[str, JsonObject]]:
    """(``where[i]``, item) of each item of a JSON list, each an object, else one error naming the
    file and the item (``what``: ``a sweep row``)."""
    found = []
    for index, item in enumerate(items):
        field = f"{where}[{index}]"
        if not isinstance(item, Mapping):
            raise DataFileError(source, f"{what} must be an object", field=field, value=item)
        found.append((field, item))
    return found


_POINT_TIMES = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p50_s")


def _load_points(sweep: Sequence[object], source: str, *, where: str = "sweep") -> list[LoadPoint]:
    """The ``sweep`` rows (or the capacity's probes) of a ``simulate --json`` result back as
    :class:`LoadPoint`."""
    points = []
    for where_item, item in _objects(sweep, source, where, "a sweep row"):
        points.append(
            LoadPoint(
                rate_per_s=_checked_number(item, "rate_per_s", source, where_item),
                **{key: _checked_number(item, key, source, where_item) for key in _POINT_TIMES},
                output_tokens_per_s=_checked_number(item, "output_tokens_per_s", source, where_item),
                requests_per_s=_checked_number(item, "requests_per_s", source, where_item),
                served_output_tokens_per_s=_nan_if_none(
                    _optional_number(item, "served_output_tokens_per_s", source, where_item)
                ),
                attainment=_optional_number(item, "attainment", source, where_item),
                meets=_checked_flag(item, "meets", source, where_item),
                settled=_checked_flag(item, "settled", source, where_item),
            )
        )
    return points


def _nan_if_none(value: float | None) -> float:
    """``value``, NaN for a figure the file does not hold (written before it was recorded)."""
    return math.nan if value is None else value


def _arrival_cv(data: JsonObject) -> float:
    """The arrivals' coefficient of variation a run's settling was judged with (1, Poisson's, for
    a file written before it was recorded)."""
    cv = number_field(data, "arrival_cv")
    return cv if math.isfinite(cv) and cv >= 0.0 else 1.0


def _settling_paragraphs(data: JsonObject) -> list[str]:
    """The warning of a run that did not settle (:class:`Settling`), none for one that did or for
    figures that are not numbers."""
    first, second, arrivals = (
        number_field(data, key)
        for key in ("first_half_in_flight", "second_half_in_flight", "measured_arrivals")
    )
    if not all(math.isfinite(value) and value >= 0.0 for value in (first, second, arrivals)):
        return []
    line = Settling(
        first_half_in_flight=first,
        second_half_in_flight=second,
        measured_arrivals=int(arrivals),
        first_half_arrived=number_field(data, "first_half_arrived"),
        second_half_arrived=number_field(data, "second_half_arrived"),
        arrival_cv=_arrival_cv(data),
    ).describe()
    return [line] if line else []


def is_simulation_result(data: JsonObject) -> bool:
    """Whether a JSON object is ``lightspeed simulate --json`` output."""
    return all(key in data for key in ("ttft", "tpot", "series", "workload"))


__all__ = ["is_simulation_result", "series_figure", "serving_section"]

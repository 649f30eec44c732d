"""The HTML report's sections for a ``lightspeed plan infer --json`` estimate: the headline (TTFT,
TPOT, throughput, batch, error bar), the iteration breakdown and the memory per GPU, the same rows
as the terminal's tables (:mod:`lightspeed.report.inference`), read back from the JSON with one
error naming the file and the field for a bad value; and, where the deployment was simulated under
its load (the ``simulated`` object), that run as the section of a ``simulate --json`` result draws
it (:func:`~lightspeed.report.simulation_section.serving_section`), with the note comparing it with
the analytic headline."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from lightspeed.datafile import Fields, JsonFields
from lightspeed.errors import DataFileError
from lightspeed.records import JsonObject
from lightspeed.report.breakdown_json import checked_breakdown
from lightspeed.report.html import ReportSection, Table
from lightspeed.report.inference import (
    MAX_BATCH_LIMITS,
    PART_NAMES,
    batch_text,
    breakdown_rows,
    error_bar_row,
    kv_transfer_text,
    memory_rows,
    rates_text,
    tpot_text,
    ttft_text,
)
from lightspeed.report.serving import against_analytic_text
from lightspeed.report.simulation_section import is_simulation_result, serving_section
from lightspeed.units import format_duration

INFER_FIX: Final = "pass the output of this lightspeed's 'lightspeed plan infer ... --json'"
# the plan's settings the headline names (``plan infer --json``'s ``plan`` object), in this order
_PLAN_KEYS: Final = ("tp", "pp", "ep", "dp_attention", "replicas", "precision")


def is_inference_estimate(data: JsonObject) -> bool:
    """Whether a JSON object is ``lightspeed plan infer --json`` output (an iteration's breakdown)."""
    return "iteration_breakdown_s" in data


def inference_section(data: JsonObject, *, source: str, index: int = 1) -> ReportSection:
    """The report section of one ``plan infer --json`` estimate (``source``: the file it came from,
    named in every error; ``index``: its number among the report's estimates, for its anchor)."""
    fields = JsonFields(source, data)
    load = _table(fields, "load")
    output_tokens = load.integer("output_tokens", minimum=1)
    iteration_s = fields.number("iteration_s")
    parts = _table(fields, "iteration_breakdown_s")
    breakdown = checked_breakdown(parts, iteration_s, names=PART_NAMES, what="iteration", fix=INFER_FIX)
    tables = [
        Table(headers=("metric", "value"), rows=_headline_rows(fields, output_tokens)),
        Table(
            headers=("part", "time", "share"),
            rows=tuple(tuple(row) for row in breakdown_rows(breakdown, iteration_s)),
            caption=f"iteration: {format_duration(iteration_s)}",
        ),
    ]
    if fields.present("memory_bytes"):
        tables.append(_memory_table(fields))
    name = " on ".join(fields.string(key) for key in ("model", "system") if fields.present(key))
    return ReportSection(
        key=f"inference-{index}",
        title=f"Predicted serving: {name or f'estimate {index}'}",
        paragraphs=(_headline(fields, load, source), *_bound_lines(fields)),
        tables=tuple(tables),
    )


def simulated_section(data: JsonObject, *, source: str, index: int = 1) -> ReportSection | None:
    """The ``simulated`` run of a ``plan infer --json`` estimate (``None`` where it has none: no
    load given, or a batching the simulator does not model), drawn as a ``simulate --json`` result,
    with the note of how far it parts from the analytic headline."""
    simulated = data.get("simulated")
    if simulated is None:
        return None
    if not isinstance(simulated, Mapping) or not is_simulation_result(simulated):
        raise DataFileError(source, "not a simulated run", field="simulated", fix=INFER_FIX)
    section = serving_section(simulated, source=f"{source}, simulated under its load", index=index)
    note = against_analytic_text(_ratios(simulated.get("against_analytic"), source))
    return section if note is None else replace(section, paragraphs=(*section.paragraphs, note))


def _table(fields: JsonFields, key: str) -> Fields:
    """The object ``key`` (required)."""
    table = fields.table(key)
    assert table is not None  # a required table is there, or table() raised
    return table


def _headline(fields: JsonFields, load: Fields, source: str) -> str:
    """``llama-3-70b on 1 x dgx-h100 (8 GPUs): tp=8 pp=1 ..., continuous batching, ISL/OSL
    2000/200 (pi.json).``: the fields the estimate has."""
    named = " on ".join(fields.string(key) for key in ("model", "system") if fields.present(key))
    gpus = f" ({fields.integer('num_gpus', minimum=1):,} GPUs)" if fields.present("num_gpus") else ""
    words = [f"{named or 'estimate'}{gpus}:"]
    plan = fields.data.get("plan")
    if isinstance(plan, Mapping):
        words.append(" ".join(f"{key}={plan[key]}" for key in _PLAN_KEYS if _shown(plan.get(key))) + ",")
    if fields.present("batching"):
        words.append(f"{fields.string('batching')} batching,")
    words.append(
        f"ISL/OSL {load.integer('input_tokens', minimum=1)}/{load.integer('output_tokens', minimum=1)}"
    )
    return f"{' '.join(words)} ({source})."


def _shown(value: object) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _headline_rows(fields: JsonFields, output_tokens: int) -> tuple[tuple[str, ...], ...]:
    """TTFT, TPOT, throughput, requests/s, batch, error bar and KV transfer, as the terminal's table."""
    between = output_tokens > 1  # one output token has no time between tokens (null in the file)
    rows = [
        ["TTFT", ttft_text(fields.number("ttft_s"), _simulated_p50_s(fields.data, "ttft_p50_s"))],
        [
            "TPOT",
            tpot_text(
                fields.number("tpot_s") if between else None,
                fields.number("output_tokens_per_s_per_user") if between else None,
                output_tokens=output_tokens,
                simulated_tpot_p50_s=_simulated_p50_s(fields.data, "tpot_p50_s") if between else None,
            ),
        ],
        [
            "output tokens/s",
            rates_text(fields.number("output_tokens_per_s"), fields.number("output_tokens_per_s_per_gpu")),
        ],
        ["requests/s", f"{fields.number('requests_per_s'):,.3g}"],
        ["batch per replica", _batch(fields)],
    ]
    if fields.present("intervals"):
        rows.append(
            error_bar_row(_bars(_table(fields, "intervals"), output_tokens), output_tokens=output_tokens)
        )
    if fields.present("kv_transfer_s"):
        link = fields.string("kv_transfer_link") if fields.present("kv_transfer_link") else None
        speed = (
            fields.number("kv_transfer_link_bytes_per_s")
            if fields.present("kv_transfer_link_bytes_per_s")
            else None
        )
        rows.append(
            [
                "KV transfer per request",
                kv_transfer_text(fields.number("kv_transfer_s", positive=False), link, speed),
            ]
        )
    return tuple(tuple(row) for row in rows)


def _simulated_p50_s(data: JsonObject, key: str) -> float | None:
    """A p50 (``ttft_p50_s``, ``tpot_p50_s``) of the run simulated under the load, where the
    estimate has one."""
    simulated = data.get("simulated")
    p50_s = simulated.get(key) if isinstance(simulated, Mapping) else None
    if isinstance(p50_s, bool) or not isinstance(p50_s, int | float):
        return None
    return float(p50_s) if math.isfinite(p50_s) and p50_s >= 0 else None


def _batch(fields: JsonFields) -> str:
    limit = fields.string("max_batch_limit")
    if limit not in MAX_BATCH_LIMITS:
        raise DataFileError(
            fields.path,
            f"unknown limit of the batch (known: {', '.join(MAX_BATCH_LIMITS)})",
            field="max_batch_limit",
            value=limit,
            fix=INFER_FIX,
        )
    return batch_text(
        batch_per_replica=fields.number("batch_per_replica"),
        max_batch=fields.integer("max_batch", minimum=1),
        max_batch_limit=limit,
        concurrency=fields.number("concurrency"),
        split=fields.present("kv_transfer_s"),
    )


def _bars(bars: Fields, output_tokens: int) -> dict[str, Any]:
    """The ``intervals`` object checked: a level from 0 to 1, the family and its row count, and a
    low and high end of each figure (none for the TPOT of one output token)."""
    level = bars.number("level")
    if level > 1.0:
        raise DataFileError(bars.path, "needs a fraction from 0 to 1", field="intervals.level", value=level)
    figures = (
        ("ttft_s", "tpot_s", "output_tokens_per_s")
        if output_tokens > 1
        else ("ttft_s", "output_tokens_per_s")
    )
    return {
        "level": level,
        "family": bars.string("family"),
        "num_rows": bars.integer("num_rows", minimum=1),
        **{key: _ends(bars, key) for key in figures},
    }


def _ends(bars: Fields, key: str) -> tuple[float, float]:
    """``[low, high]``: two finite numbers >= 0, the low one first."""
    ends = bars.data.get(key)
    if (
        not isinstance(ends, Sequence)
        or isinstance(ends, str)
        or len(ends) != 2
        or not all(_finite(end) and end >= 0 for end in ends)
        or ends[0] > ends[1]
    ):
        raise DataFileError(
            bars.path, "needs [low, high]: two numbers >= 0, low first", field=f"intervals.{key}", value=ends
        )
    return float(ends[0]), float(ends[1])


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _memory_table(fields: JsonFields) -> Table:
    memory = _table(fields, "memory_bytes")
    sizes = {str(name): memory.number(str(name), positive=False) for name in memory.data}
    usable = fields.number("usable_memory_bytes")
    return Table(
        headers=("component", "bytes"),
        rows=tuple(tuple(row) for row in memory_rows(sizes, usable)),
        caption="memory per GPU",
    )


def _bound_lines(fields: JsonFields) -> list[str]:
    """``bound: ...`` and each ``assumed: ...`` line the estimate has (strings only)."""
    lines = [f"bound: {fields.string('bound')}"] if fields.present("bound") else []
    assumptions = fields.data.get("assumptions")
    if isinstance(assumptions, Sequence) and not isinstance(assumptions, str):
        lines.extend(f"assumed: {line}" for line in assumptions if isinstance(line, str))
    return lines


def _ratios(ratios: object, source: str) -> dict[str, float]:
    """The ``simulated.against_analytic`` ratios (none where the file has none)."""
    if ratios is None:
        return {}
    if not isinstance(ratios, Mapping) or not all(_finite(value) for value in ratios.values()):
        raise DataFileError(
            source, "needs an object of finite ratios", field="simulated.against_analytic", fix=INFER_FIX
        )
    return {str(key): float(value) for key, value in ratios.items()}


__all__ = ["INFER_FIX", "inference_section", "is_inference_estimate", "simulated_section"]

"""Read the metric and measured cells of a published row the way people write them.

A cell often holds several metrics, separated by ``;``, and the measured cell
the same number of values in the same order (``tokens/s/GPU; model
TFLOP/s/GPU`` with ``14,451; 744``): they are paired by position, and so are
metrics joined by ``/`` over as many numbers (``TTFT (s) / TPOT (ms)`` with
``0.3 / 12.5``; a different count of numbers is refused, and so is one quantity over several
numbers, ``tokens/s/GPU`` over ``4792; 4800`` or ``4792 / 4800``). Each piece
carries its own unit and scope, in the metric text or beside the number:

* time units ``ms``, ``us``, ``s``, ``min``, ``h``/``hours``, ``d``/``days``
  (``iteration time (ms)``, ``120.5 ms``, ``84 d``);
* scope ``per GPU`` / ``/GPU``, ``per node`` / ``per DGX`` (``(8 GPUs)`` in the text gives
  its size, else the row's system does), a GPU count with no node (``tokens/s (8 GPUs)``),
  ``per user``, or the whole job
  (``aggregate``, ``total``, ``system``); a metric that names no scope takes the
  one written beside its number (``24k / node``), else its quantity's: one GPU's for a FLOP rate
  (``TFLOP/s``, ``TFLOPS``, ``TF``: papers write it per GPU), ``TGS`` and memory, one user's for
  a per-user speed, the job's for the rest (token, sample and request rates, times, GPU-hours);
* inference quantities: ``TTFT``, ``first-token`` and ``1st Token Latency`` the time to the first
  token (:func:`~lightspeed.sol.validation.metric_keys.infer_key`);
* numbers with thousands separators and K/M/B/T suffixes (``2,288,843``,
  ``2.664M``), a leading ``~`` (approximate), a range ``20-22`` (its
  midpoint), a percent sign (``54.32%``), ``PF``/``TF`` rates;
* a formula the text gives for its number (``out_tps=OSL*BS/latency/TP``)
  explains the metric, it does not name it: what follows an ``=`` up to the
  next ``,``, ``;`` or ``)`` is left out when the quantity, unit and scope are
  read, so ``output tokens/s/GPU (offline, out_tps=OSL*BS/latency/TP)`` is a
  throughput per GPU, not a latency.

:func:`read_cell` returns one :class:`Reading` per piece, recognized or not,
so a row can show exactly how it was read; the engines then predict the first
reading they can.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final

from lightspeed.errors import LightspeedError
from lightspeed.records import Record
from lightspeed.sol.validation.metric_keys import (
    PER_ACCELERATOR,
    PER_USER,
    infer_key,
    names_peta,
    piece_key,
    total_by_formula,
    train_key,
    without_formulas,
)
from lightspeed.units import parse_count

# 1.2e4 is 12,000, not 1.2; thousands grouped by a space as SI and some sources write them
# (``2 909``, with a no-break or narrow no-break space too) are one number
_NUMBER: Final = r"(?:\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?![\d,])|\d[\d,]*)(?:\.\d+)?(?:e[+-]?\d+)?"
_GROUPING: Final = re.compile(r"[,\s\u00a0\u202f]")
_VALUE: Final = re.compile(
    rf"(?P<approx>~|≈|about\s+)?(?P<low>{_NUMBER})(?:\s*(?:-|–|to)\s*(?P<high>{_NUMBER}))?"
    r"\s*(?P<unit>%|thousand|million|billion|trillion|[kmbt](?![a-z])|pf|tf|ms|us|µs|ns\b|min|hours?|days?|d\b"
    r"|h\b|sec\b|s\b|gib|gb)?",
    re.IGNORECASE,
)
_SUFFIX: Final = {
    "k": 1e3,
    "m": 1e6,
    "b": 1e9,
    "t": 1e12,
    "thousand": 1e3,
    "million": 1e6,
    "billion": 1e9,
    "trillion": 1e12,
}
_NOT_FINITE: Final = re.compile(r"(?<![a-z])[-+−]?(?:inf(?:inity)?|nan|∞)(?![a-z])", re.IGNORECASE)
_TIME_UNITS: Final = (
    (re.compile(r"\(ms\)|\bms\b|millisecond"), "ms", 1e-3),
    (re.compile(r"\(us\)|\bus\b|µs|microsecond"), "us", 1e-6),
    (re.compile(r"\(ns\)|\bns\b|nanosecond"), "ns", 1e-9),
    (re.compile(r"\(min\)|\bmin\b|minutes?"), "min", 60.0),
    (re.compile(r"\(h\)|\bhours?\b|\bh\b"), "h", 3600.0),
    (re.compile(r"\(d\)|\bdays?\b|\bd\b"), "d", 86400.0),
    (re.compile(r"\(s\)|\bs\b|\bsecs?\b|seconds?"), "s", 1.0),
)
# Per node, as sources write it: ``per node``, ``/node``, ``per server`` / ``per host``, and a
# rack-scale system's compute tray (``per GB200 tray (4 GPUs)``).
_PER_NODE: Final = re.compile(
    r"per\s+(?:[\w-]+\s+){0,3}(?:node|server|host|[dh]gx|(?P<tray>tray))s?\b|/\s*(?:node|server|host|[dh]gx)\b"
)
# A figure for a number of GPUs the text names, with no node in it: ``tokens/s (8 GPUs)``, ``per 8
# GPUs``: that many GPUs' figure, whatever the job's count (:meth:`Reading.per_gpu`).
_GPU_COUNT: Final = re.compile(r"\((\d+)\s*(?:x\s*)?gpus?\)|\bper\s+(\d+)\s*gpus?\b")
# a node's GPUs: ``per node (8 GPUs)``, ``per 8-GPU H800 node``
_NODE_SIZE: Final = re.compile(
    r"\((\d+)\s*gpus?(?:\s+each)?\)|\b(\d+)[\s-]*gpus?\s+(?:[\w-]+\s+)?(?:node|server)"
)
# A compute tray of GB200 / GB300 NVL72 holds two superchips: four GPUs (NVIDIA GB200 NVL72 product
# page: 18 compute trays of 72 GPUs).
TRAY_GPUS: Final = 4
# The peak a utilization is taken against, as metric cells name it: ``MFU vs 989 TF``, ``MFU (of
# 1,979 TFLOPS)``, ``MFU @ 989 TFLOP/s``, ``MFU (989 TFLOPS peak)``, ``989 TFLOP/s dense BF16 peak``.
_PEAK: Final = re.compile(
    r"(?:\bvs\.?|\bof|@|\bagainst)\s*(?P<before>" + _NUMBER + r")\s*(?P<before_unit>pf|tf)"
    r"|(?P<after>" + _NUMBER + r")\s*(?P<after_unit>pf|tf)[a-z/]*(?:\s+[a-z0-9]+){0,3}\s+peak\b",
    re.IGNORECASE,
)
# Rates that exist per GPU too (``tokens_per_s`` -> ``tokens_per_s_per_gpu``).
RATE_KEYS: Final = frozenset(
    {"tokens_per_s", "samples_per_s", "output_tokens_per_s", "total_tokens_per_s", "input_tokens_per_s"}
)
_TOKEN_BUDGET: Final = re.compile(
    r"(?<![\w.+-])(\d[\d.,]*\s*(?:[kmbt]|thousand|million|billion|trillion)?)\s*tokens", re.IGNORECASE
)
# a magnitude spelled out after a number: ``2 million tokens``, ``14.8 trillion``
_SPELLED_MAGNITUDE: Final = re.compile(r"(\d)\s*(thousand|million|billion|trillion)\b", re.IGNORECASE)


def with_magnitude_letters(text: str) -> str:
    """``text`` with each magnitude spelled after a number as its letter (``2 million`` -> ``2m``,
    ``14.8 trillion`` -> ``14.8t``), the way the count readers take them.

    >>> with_magnitude_letters("2.664 million GPU-hours for 14.8 Trillion tokens")
    '2.664m GPU-hours for 14.8t tokens'
    """
    return _SPELLED_MAGNITUDE.sub(lambda found: found.group(1) + found.group(2)[0].lower(), text)


class RowError(LightspeedError):
    """A row cannot be turned into a prediction; the message says which field and why (raised
    here and by the row readers; ``lightspeed.sol.validation.published`` re-exports it)."""


@dataclass(frozen=True)
class Reading(Record):
    """One metric piece of a row paired with its value, converted to base units.

    ``key`` names the quantity (``tokens_per_s_per_gpu``, ``step_time_s``,
    ``mfu`` ...; empty when the text names nothing lightspeed reads).
    ``value`` is in base units (seconds, fractions, tokens/s, FLOP/s in
    TFLOP/s for ``tflop_per_s_per_gpu``, bytes) but still in ``scope``: per
    node values become per GPU once the node size is known
    (:meth:`per_gpu`); scope ``gpus`` is a figure for ``gpus_per_scope`` GPUs
    (``tokens/s (8 GPUs)``). ``position`` counts from 1 among ``num_pieces``.
    ``problem`` says why the cell cannot be read as a measurement (``''`` if
    it can); :meth:`per_gpu` refuses the row with it.
    """

    key: str
    value: float | None
    metric_text: str
    value_text: str
    unit: str
    scope: str
    position: int
    num_pieces: int
    gpus_per_scope: int | None = None
    peak_flop_per_s: float | None = None
    num_tokens: float | None = None
    flop_basis: str = ""
    notes: tuple[str, ...] = ()
    problem: str = ""

    def describe(self) -> str:
        """``'tokens/s/GPU' <- '14,451' (1 of 2)``: what was read, from which text."""
        where = f" ({self.position} of {self.num_pieces})" if self.num_pieces > 1 else ""
        return f"'{self.metric_text}' <- '{self.value_text}'{where}"

    def per_gpu(self, node_gpus: int) -> Reading:
        """This reading with a per-node value divided over the node's GPUs (``node_gpus``
        unless the text named its own size), and a figure the text gives for a number of GPUs
        (``tokens/s (8 GPUs)``) over those GPUs.

        Raises :class:`~lightspeed.sol.validation.published.RowError` with :attr:`problem` when
        the cell cannot be read as a measurement (a metric piece without its value, a
        utilization above 100%): the reading is never predicted.
        """
        if self.problem:
            raise RowError(self.problem)
        if self.scope not in ("node", "gpus") or self.value is None:
            return self
        size = self.gpus_per_scope or node_gpus
        note = f"per node of {size} GPUs" if self.scope == "node" else f"a figure for {size} GPUs"
        return _replace(
            self,
            key=self.key + "_per_gpu" if self.key in RATE_KEYS else self.key,
            value=self.value / size,
            scope="gpu",
            gpus_per_scope=size,
            notes=(*self.notes, f"{note} -> per GPU"),
        )


def _replace(reading: Reading, **changes: object) -> Reading:
    fields = reading.to_dict()
    fields.update(changes)
    fields["notes"] = tuple(fields["notes"])
    return Reading(**fields)


def split_pieces(text: str) -> list[str]:
    """The ``;``-separated pieces of a cell (one piece when there is no ``;``)."""
    return [piece.strip() for piece in text.split(";")] if text.strip() else []


def parse_value(text: str) -> tuple[float | None, str, tuple[str, ...]]:
    """(number, unit written beside it, notes) of a measured piece.

    >>> parse_value("2,288,843")
    (2288843.0, '', ())
    >>> parse_value("~14,800")[0], parse_value("20-22")[0], parse_value("54.32%")[:2]
    (14800.0, 21.0, (54.32, '%'))
    >>> parse_value("-137")[0]  # the sign is kept: a negative measurement is refused, never flipped
    -137.0
    """
    match = _VALUE.search(text)
    if match is None:
        return None, "", ()
    notes: list[str] = []
    sign = -1.0 if text[: match.start("low")].rstrip().endswith(("-", "−")) else 1.0
    low = sign * float(_GROUPING.sub("", match["low"]))
    value = low
    if match["high"]:
        high = sign * float(_GROUPING.sub("", match["high"]))
        if high > low:
            value = (low + high) / 2.0
            notes.append(f"range {match['low']}-{match['high']}: midpoint")
    if match["approx"]:
        notes.append("approximate value")
    notes.extend(_bound_notes(text, match))
    unit = (match["unit"] or "").lower()
    if unit in _SUFFIX:
        value *= _SUFFIX[unit]
        unit = ""
    return value, unit, tuple(notes)


# A bound, not a point: ``>1660``, ``≥``, ``at least``, ``over``, ``27000+`` (at least), ``<``,
# ``≤``, ``up to``, ``at most`` (at most); and a second number after a ``/`` (``1600 / 1700``).
_LOWER_BOUND_BEFORE: Final = re.compile(r"(?:>=?|≥|\bat\s+least|\bover|\bmore\s+than)\s*$", re.IGNORECASE)
_UPPER_BOUND_BEFORE: Final = re.compile(r"(?:<=?|≤|\bup\s+to|\bat\s+most|\bless\s+than)\s*$", re.IGNORECASE)
_SECOND_NUMBER: Final = re.compile(rf"\s*/\s*[~≈]?{_NUMBER}")


def _bound_notes(text: str, match: re.Match[str]) -> list[str]:
    """How a value that is not one point was read: a bound as its number, the first of two."""
    before, after = text[: match.start("low")], text[match.end() :]
    written = text[: match.end()].strip()
    if _LOWER_BOUND_BEFORE.search(before):
        return [f"lower bound '{written}' read as its number"]
    if after.startswith("+"):
        return [f"lower bound '{written}+' read as its number"]
    if _UPPER_BOUND_BEFORE.search(before):
        return [f"upper bound '{written}' read as its number"]
    if _SECOND_NUMBER.match(after):
        return ["first of two numbers read ('/' separates them)"]
    return []


def impossible_value(text: str) -> str:
    """Why a measured piece cannot be a measurement (``''`` when it can): a word that is not a
    finite number (``inf``, ``nan``), or a negative number.

    >>> [impossible_value(text) for text in ("inf (44%)", "1e400", "-137", "20-22", "n/r")]
    ['not a finite number', 'not a finite number', 'a negative number', '', '']
    """
    if _NOT_FINITE.search(text):
        return "not a finite number"
    value = parse_value(text)[0]
    if value is not None and not math.isfinite(value):  # 1e400 overflows to infinity
        return "not a finite number"
    return "a negative number" if value is not None and value < 0 else ""


def _time_unit(text: str) -> tuple[str, float] | None:
    for pattern, name, factor in _TIME_UNITS:
        if pattern.search(text):
            return name, factor
    return None


def _scope(metric: str) -> tuple[str, int | None]:
    if PER_USER.search(metric):
        return "user", None
    if node := _PER_NODE.search(metric):
        size = _NODE_SIZE.search(metric)
        return "node", int(size.group(1) or size.group(2)) if size else TRAY_GPUS if node.group(
            "tray"
        ) else None
    if PER_ACCELERATOR.search(metric):
        return "gpu", 1
    if count := _GPU_COUNT.search(metric):
        return "gpus", int(count.group(1) or count.group(2))
    return "job", None


# Serving latencies; written without a unit they are milliseconds, as vLLM's and SGLang's
# bench_serving, genai-perf and trtllm-bench print them (``Median TTFT (ms)``) and as a table
# that drops its header's unit still means them.
SERVING_LATENCY_KEYS: Final = ("ttft_s", "tpot_s", "itl_s", "request_latency_s")
_UNSTATED_TIME_UNITS: Final = dict.fromkeys(SERVING_LATENCY_KEYS, ("ms", 1e-3))


@dataclass(frozen=True)
class RowSyntax(Record):
    """How rows of one input format write a figure, for the fix a refused row is given: ``value``
    names where the number is written, ``unit`` how its unit is set (``latency_unit`` a latency's),
    ``scope`` how it is said to be one GPU's or the whole job's, and ``omit`` how a figure the
    source does not give is written."""

    value: str
    unit: str
    latency_unit: str
    scope: str
    omit: str


# A table's rows (``validate FILE.tsv``): the measured and metric cells, ``n/r`` for a figure not given
TABLE_ROW: Final = RowSyntax(
    value="the measured cell",
    unit="the unit in the metric or measured cell",
    latency_unit="the unit in the metric or measured cell (a latency with none is read in ms)",
    scope="whether the figure is per GPU or the job's (the metric cell's scope)",
    omit="write n/r",
)
# Structured rows (``validate FILE.toml``): typed fields, the unit the metric's own; a row holds only
# a figure the source gives, so one not given is left out, never written as not reported
STRUCTURED_ROW: Final = RowSyntax(
    value="field 'value'",
    unit="field 'value' (in the unit its metric names)",
    latency_unit="field 'value' (in seconds: a latency metric's unit is s)",
    scope="whether 'metric' is the per-GPU one (its name ends in _per_gpu) or the job's",
    omit=(
        "remove the row where the source does not give the figure (a structured row has no field for "
        "a figure not reported)"
    ),
)


UTILIZATION_KEYS: Final = ("mfu", "hfu")
# a percentage the metric's own words state: ``MFU (%)``, ``MFU %``, ``MFU in percent``
_PERCENT_IN_METRIC: Final = re.compile(r"%|\bper\s*cent(?:age)?\b")


def _in_percent(unit: str, metric: str) -> bool:
    """Whether a utilization is written in percent: beside its number (``43%``) or in its metric."""
    return unit == "%" or bool(_PERCENT_IN_METRIC.search(metric))


def _fraction_in_percent_column(key: str, value: float, unit: str, metric: str) -> bool:
    """Whether a utilization is a fraction written under a metric that says percent (``MFU %``
    over ``0.57``): at most 1 with no percent sign of its own, where as a percentage it would be
    at most 1% of peak, below any published run (a percent sign beside the number is kept)."""
    return key in UTILIZATION_KEYS and 0.0 < value <= 1.0 and unit != "%" and _in_percent(unit, metric)


def _fraction_in_percent_note(value_text: str, fraction: float) -> str:
    """The note of a reading :func:`_fraction_in_percent_column` took as the fraction."""
    written = value_text.strip()
    return (
        f"{written!r} under a percent metric read as the fraction {fraction:g} ({fraction * 100:g}%): "
        f"{written}% of peak is below any published run"
    )


def utilization_problem(
    key: str,
    fraction: float | None,
    value_text: str,
    *,
    ambiguous: bool = False,
    syntax: RowSyntax = TABLE_ROW,
) -> str:
    """Why a utilization reading (``key`` ``mfu`` or ``hfu``, ``fraction`` of peak) cannot be a
    measurement (``''`` if it can, and for every other key): a value between 1 and 2 written with no
    percent sign (``1.41``: 1.41%, or 141% mistyped?), or 100% of peak or more (no run reaches its
    GPUs' peak: the value or its unit was misread). One check for table and structured rows, the fix
    said in the ``syntax`` of the row's format (:data:`TABLE_ROW`, :data:`STRUCTURED_ROW`).

    >>> utilization_problem("mfu", 0.43, "43%"), utilization_problem("tokens_per_s", 5.0, "5")
    ('', '')
    >>> utilization_problem("mfu", 1.0, "100%").split(":")[0]
    "MFU '100%' is 100% of peak"
    """
    if key not in UTILIZATION_KEYS or fraction is None:
        return ""
    name = key.upper()
    if ambiguous:  # only a table's cell can be: a structured row's unit is the metric's
        written = value_text.strip()
        return (
            f"{name} {written!r} is ambiguous: {written}% of peak, or {written} as a fraction (over "
            f"100%, which no run reaches); write {written}% or {fraction:g}, or n/r"
        )
    if fraction >= 1.0:
        example = "43% or 0.43" if syntax == TABLE_ROW else "0.43 for 43%"
        return (
            f"{name} {value_text!r} is {fraction:.0%} of peak: a utilization is at most 100%, and no run "
            f"reaches its GPUs' peak; fix {syntax.value} ({example}) or {syntax.omit}"
        )
    return ""


def _convert(key: str, value: float, unit: str, metric: str) -> tuple[float, str]:
    """``value`` in base units for ``key``, and the unit it was read in."""
    if key in UTILIZATION_KEYS:
        # a utilization is a percentage (``43%``, ``43``, ``MFU (%)`` over ``43``) unless written
        # as a fraction (``0.43``, ``MFU (%)`` over ``0.43``): no published run reaches as little
        # as 1% of peak
        if (not _in_percent(unit, metric) and value <= 1.0) or _fraction_in_percent_column(
            key, value, unit, metric
        ):
            return value, "fraction"
        return value / 100.0, "%"
    if key in ("step_time_s", "time_to_train_s", *SERVING_LATENCY_KEYS):
        written = _time_unit(unit) if unit else None
        named = written or _time_unit(metric) or _UNSTATED_TIME_UNITS.get(key, ("s", 1.0))
        return value * named[1], named[0]
    if key in ("pflop_per_s", "tflop_per_s_per_gpu"):
        # in TFLOP/s: the unit beside the number wins (``0.726 PF``), else the one the text names
        peta = unit == "pf" or (unit != "tf" and names_peta(metric))
        return value * (1e3 if peta else 1.0), "TFLOP/s"
    if key == "memory_per_gpu_bytes":
        gib = unit == "gib" or ("gib" in metric and unit != "gb")
        return value * (2.0**30 if gib else 1e9), "GiB" if gib else "GB"
    return value, unit or _UNITS.get(key, "tokens/s")


_UNITS: Final = {
    "gpu_hours": "GPU-hours",
    "samples_per_s": "samples/s",
    "requests_per_s": "requests/s",
}


def _token_budget(metric: str) -> float | None:
    match = _TOKEN_BUDGET.search(metric)
    if match is None or "per 1" in metric[: match.start()]:
        return None
    count = with_magnitude_letters(match.group(1))
    return parse_count(count.replace(" ", "").replace(",", "").upper())


def _peak(metric: str) -> float | None:
    """The peak FLOP/s the metric text takes a utilization against (:data:`_PEAK`), if it names one."""
    match = _PEAK.search(metric)
    if match is None:
        return None
    value, unit = (
        match.group("before") or match.group("after"),
        match.group("before_unit") or match.group("after_unit"),
    )
    return float(value.replace(",", "")) * (1e15 if unit.lower() == "pf" else 1e12)


def _flop_basis(metric: str) -> str:
    if ("model tflop" in metric or "model flop" in metric) and not re.search(
        r"model\s+flops?\s+utili", metric
    ):
        return "model"
    if "hardware" in metric or "achieved" in metric or "hfu" in metric:
        return "hardware"
    return ""


def read_cell(metric_text: str, measured_text: str, *, kind: str = "train") -> tuple[Reading, ...]:
    """Every piece of a row's metric cell, paired by position with the measured cell.

    ``kind`` picks the vocabulary (``train`` or ``infer``); with one measured
    value and several metric pieces (``bs256, ISL/OSL 128/128, output
    tok/s/GPU``), the value goes with the whole metric text.

    >>> [(r.key, r.value) for r in read_cell("tokens/s/GPU; model TFLOP/s/GPU", "14,451; 744")]
    [('tokens_per_s_per_gpu', 14451.0), ('tflop_per_s_per_gpu', 744.0)]
    """
    metrics = split_pieces(metric_text)
    values = split_pieces(measured_text)
    problem = _unpaired(metrics, values, kind)
    if len(values) <= 1 or len(metrics) <= 1:
        metrics, values = [metric_text.strip()], [measured_text.strip()]
    pairs, slash_problem = _slash_paired(metrics, values, kind)
    readings = [
        _reading(metric, value_text, position, len(pairs), kind)
        for position, (metric, value_text) in enumerate(pairs, start=1)
    ]
    problem = problem or slash_problem
    problem = problem or next((reading.problem for reading in readings if reading.problem), "")
    # a problem in one piece refuses the row, whichever piece would be predicted
    return tuple(_replace(reading, problem=problem) if problem else reading for reading in readings)


def _unpaired(metrics: list[str], values: list[str], kind: str) -> str:
    """Why the pieces of a metric cell cannot be paired with the measured cell's values (``''``
    if they can): two or more pieces name a quantity and the counts differ. One quantity among
    context pieces (``TFLOPS/GPU (Dispatcher AlltoAll, NCCL backend; 'Baseline')``) goes with the
    one value."""
    named = [piece for piece in metrics if piece_key(piece, kind)]
    if len(named) == 1 and len(metrics) != len(values) and len(_numbers(values)) > 1:
        return _one_metric_two_values(named[0], "; ".join(values), len(_numbers(values)))
    if len(metrics) <= 1 or len(metrics) == len(values):
        return ""
    if len(named) < 2:
        return ""
    return (
        f"metric cell has {len(metrics)} pieces (';'), measured cell {len(values)}: "
        "give one value per piece, in the same order, or n/r"
    )


def _numbers(values: list[str]) -> list[str]:
    """The pieces of a measured cell that are numbers (not a note beside one)."""
    return [value for value in values if _NUMBER_FIRST.match(value)]


def _one_metric_two_values(metric: str, measured: str, count: int) -> str:
    """Why one quantity cannot take ``count`` numbers (``tokens/s/GPU`` over ``4792; 4800`` or
    ``4792 / 4800``): which one the source means is a guess. A range (``20-22``) is one value."""
    return (
        f"metric '{metric.strip()}' is one quantity but measured '{measured.strip()}' gives {count} "
        "values: give one value, or name each metric, one per value (e.g. 'tokens/s/GPU; MFU %'); a "
        "range is one value ('4792-4800', read as its midpoint)"
    )


# Metrics joined by a ``/`` (``TTFT (s) / TPOT (ms)``, ``TTFT/TPOT (ms)``) over as many numbers
# (``0.3 / 12.5``): a ``/`` between spaces, or a bare one where every side names a quantity (never
# the ``/`` inside a unit: ``tok/s``, ``ms/token``, ``tokens/s/GPU``).
_SPACED_SLASH: Final = re.compile(r"\s+/\s+")
_NUMBER_FIRST: Final = re.compile(rf"\s*[~≈]?{_NUMBER}")


def _slash_metrics(metric: str, kind: str) -> list[str]:
    """The quantities a metric piece joins with ``/`` (one piece where it joins none)."""
    for pieces in (_SPACED_SLASH.split(metric), metric.split("/")):
        if len(pieces) > 1 and all(piece_key(piece, kind) for piece in pieces):
            return [piece.strip() for piece in pieces]
    return [metric]


def _slash_values(value_text: str) -> list[str]:
    """The numbers a measured piece joins with ``/`` (``0.3 / 12.5``, ``0.3 s / 12.5 ms``); one
    piece where a side is no number (``5000 tok/s``)."""
    pieces = value_text.split("/")
    if len(pieces) > 1 and all(_NUMBER_FIRST.match(piece) for piece in pieces):
        return [piece.strip() for piece in pieces]
    return [value_text]


def _slash_paired(metrics: list[str], values: list[str], kind: str) -> tuple[list[tuple[str, str]], str]:
    """(metric, value) pairs of the ``;`` pieces, each ``/``-joined metric paired by position with
    the numbers its value joins as ``;`` pieces are, and why they cannot be (``''`` if they can):
    two or more quantities over a different count of two or more numbers."""
    pairs: list[tuple[str, str]] = []
    problem = ""
    for metric, value_text in zip(metrics, values, strict=False):
        named, numbers = _slash_metrics(metric, kind), _slash_values(value_text)
        if len(named) > 1 and len(named) == len(numbers):
            pairs.extend(zip(named, numbers, strict=True))
            continue
        if len(numbers) > 1 and len(named) == 1 and piece_key(metric, kind):
            problem = problem or _one_metric_two_values(metric, value_text, len(numbers))
        elif len(named) > 1 and len(numbers) > 1:
            problem = problem or (
                f"metric '{metric.strip()}' names {len(named)} quantities ('/') but measured "
                f"'{value_text.strip()}' gives {len(numbers)} numbers: give one number per quantity, "
                "in the same order, or n/r"
            )
        pairs.append((metric, value_text))
    return pairs, problem


_FRACTION_WORD: Final = re.compile(r"\bfraction\b")


def _reading(metric: str, value_text: str, position: int, count: int, kind: str) -> Reading:
    # logs and JSON exports name metrics in snake case (``inter_token_latency_s``,
    # ``train_samples_per_second``)
    lowered = without_formulas(metric.lower()).replace("_", " ")
    value, unit, notes = parse_value(value_text)
    if kind == "train":
        key = train_key(lowered)
        if key == "steps_per_s" and value is not None and value > 0.0:
            key, value, unit = "step_time_s", 1.0 / value, "s"
            notes = (*notes, "steps per second: the step time is its inverse")
    else:
        # the unit may stand beside the number only (``generation throughput`` <- ``3,500 tokens/s``)
        key = infer_key(lowered) or infer_key(f"{lowered} {value_text.lower()}")
        key = total_by_formula(key, metric.lower(), lowered)
    ambiguous = False
    if value is not None and key:
        unstated = key in SERVING_LATENCY_KEYS and not (unit and _time_unit(unit)) and not _time_unit(lowered)
        ambiguous = key in UTILIZATION_KEYS and 1.0 < value < 2.0 and not _in_percent(unit, lowered)
        in_metric = _time_unit(lowered) if key in SERVING_LATENCY_KEYS else None
        if _fraction_in_percent_column(key, value, unit, lowered):
            notes = (*notes, _fraction_in_percent_note(value_text, value))
        value, unit = _convert(key, value, unit, lowered)
        if unstated:
            notes = (*notes, "no time unit: milliseconds, as serving benchmarks print latencies")
        elif in_metric and unit != in_metric[0]:
            notes = (*notes, f"the value's own unit ({unit}) wins over the metric's ({in_metric[0]})")
    problem = utilization_problem(key, value, value_text, ambiguous=ambiguous)
    stated_fraction = "%" not in value_text and _FRACTION_WORD.search(lowered)
    if not problem and key in UTILIZATION_KEYS and unit == "%" and stated_fraction:
        # ``MFU (fraction)`` over ``45``: the metric says a fraction, the value is a percentage
        problem = (
            f"{key.upper()} {value_text.strip()!r} is above 1 under a metric that says it is a fraction "
            f"('{metric}'): write {value:g} as the fraction, or the value as {value_text.strip()}%"
        )
    scope, size = _scope(lowered)
    problem = problem or _scope_conflict(metric, scope, value_text)
    if scope == "job":  # the scope written beside the number: ``24k / node``, ``1,650 per GPU``
        scope, size = _scope(value_text.lower())
    if key in RATE_KEYS and scope == "gpu":
        key += "_per_gpu"
    scope, size = _scope_of_key(key, scope, size)
    return Reading(
        key=key,
        value=value,
        metric_text=metric,
        value_text=value_text,
        unit=unit,
        scope=scope,
        position=position,
        num_pieces=count,
        gpus_per_scope=size,
        peak_flop_per_s=_peak(metric),
        num_tokens=_token_budget(metric),
        flop_basis=_flop_basis(lowered),
        notes=notes,
        problem=problem,
    )


# Scopes a metric and the words beside its number may both state; two different ones are a conflict
_STATED_SCOPES: Final = {"gpu": "per GPU", "node": "per node", "user": "per user"}


def _scope_conflict(metric: str, metric_scope: str, value_text: str) -> str:
    """Why a piece cannot be read (``''`` if it can): its metric states one scope and the words
    beside its number another (``tokens/s per node`` over ``1000 per GPU``): which one the figure
    is, the metric's division or none, is a guess either way.

    >>> _scope_conflict("tokens/s per node", "node", "1000 per GPU").split(":")[0]
    "metric 'tokens/s per node' is per node but its value '1000 per GPU' says per GPU"
    >>> _scope_conflict("tokens/s per node", "node", "8,000 / node")
    ''
    >>> _scope_conflict("tokens/s", "job", "1,000 per GPU")
    ''
    """
    value_scope, _ = _scope(value_text.lower())
    if metric_scope == value_scope or metric_scope not in _STATED_SCOPES or value_scope not in _STATED_SCOPES:
        return ""
    return (
        f"metric '{metric.strip()}' is {_STATED_SCOPES[metric_scope]} but its value '{value_text.strip()}' "
        f"says {_STATED_SCOPES[value_scope]}: state the figure's scope once, in the metric cell or beside "
        "the number"
    )


def _scope_of_key(key: str, scope: str, size: int | None) -> tuple[str, int | None]:
    """(scope, GPUs in it) of a reading whose text names no scope but whose key is one GPU's or one
    user's (``TGS``, a bare ``TFLOP/s``, ``memory (GB)``, ``latency tok/s``): that GPU's or user's,
    as the value is taken, never the job's."""
    if scope != "job":
        return scope, size
    if "_per_gpu" in key:  # a rate per GPU, ``memory_per_gpu_bytes``
        return "gpu", 1
    return ("user", None) if key.endswith("_per_user") else (scope, size)


__all__ = [
    "RATE_KEYS",
    "STRUCTURED_ROW",
    "TABLE_ROW",
    "Reading",
    "RowSyntax",
    "parse_value",
    "read_cell",
    "split_pieces",
    "utilization_problem",
]

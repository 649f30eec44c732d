"""Typed values of every numeric command-line option: finite, in range, exact.

Every numeric option of every command uses one of these click parameter types
(``tests/cli/test_option_types.py`` walks the whole command tree and fails on
one that does not). Each type parses the text itself, so that:

- integers are read exactly (``99999999999999999999`` stays that number and is
  refused against the bound, never rounded through a float);
- ``nan``, ``inf`` and numbers that overflow a float (``1e400``) are refused;
- every value lies between bounds that come from physics or memory (no CPU runs
  above 10 GHz, no cluster holds ten million GPUs), named in the message;
- sizes, durations, rates and percentages accept the units of
  :mod:`lightspeed.units` (``80GB``, ``50ms``, ``200GB/s``, ``5%``) and come
  out in base SI (bytes, seconds, bytes per second, a fraction).

A bad value is a usage error: one line on stderr, exit code 2::

    $ lightspeed plan train ... --gpus 99999999999999999999
    lightspeed: error: Invalid value for '--gpus': 99999999999999999999 GPUs is above the limit of
    10,000,000 GPUs (50x the largest cluster built); allowed: a whole number from 1 to 10,000,000 GPUs ...

See docs/limits.md for every bound and how new commands adopt these types.

>>> GPUS.convert("64", None, None)
64
>>> Size(minimum=1.0, maximum=2.0**50).convert("1.5GiB", None, None)
1610612736.0
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, Final

import click

from lightspeed.cli.text_options import NonEmptyText
from lightspeed.errors import UserInputError
from lightspeed.files import excerpt
from lightspeed.limits import (
    MAX_ACCELERATORS,
    MAX_BYTES,
    MAX_BYTES_PER_S,
    MAX_CPU_HZ,
    MAX_DURATION_S,
    MAX_FLOP,
    MAX_FLOP_PER_TOKEN,
    MAX_NODES,
    MAX_PROCESSES,
    MAX_SEQ_LEN,
    MAX_THREADS,
    MAX_USD,
    MAX_WATTS,
    OPTION_BOUNDS,
)
from lightspeed.units import (
    format_bytes,
    format_bytes_per_s,
    format_duration,
    parse_bandwidth,
    parse_bytes,
    parse_count,
    parse_duration,
    parse_percent,
)

# --- bounds: documented in docs/limits.md, one home in lightspeed.limits (the Python API's too)

_INTEGER: Final = re.compile(r"[+-]?\d[\d_]*")
# one way to split each text (no "[0-9]*[0-9]+"): a run of 5,000 digits is refused in linear time
_SUFFIXED: Final = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]?)")
_HAS_UNIT: Final = re.compile(r"[a-zA-Zµ%]")
# NaN or infinity as written (any unit after it: ``nan%``, ``-inf GiB``); no finite number starts so
_NOT_FINITE_LITERAL: Final = re.compile(r"[+-]?\s*(?:nan|snan|inf)", re.IGNORECASE)
_COUNT_SUFFIX: Final = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12, "p": 10**15}
# token lengths as LLM usage writes them: an "8K context" is 8,192 tokens and "128K" 131,072 (Llama 3),
# MLPerf's and TensorRT-LLM's "ISL 1K" 1,024
_TOKEN_LENGTH_SUFFIX: Final = {"": 1, "k": 2**10, "m": 2**20}
# Past every bound (the largest is 2^63): an integer beyond is compared as this, never built whole
# (Python's int() refuses a string of over 4,300 digits).
_FAR_PAST_BOUNDS: Final = 10**30
# a decimal number with its exponent apart: Decimal refuses exponents of 19 digits and more
_DECIMAL: Final = re.compile(r"([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?)0*(\d+))?")


def _exact(number: str) -> Decimal:
    """``number`` (``1000``, ``-2.5e3``, no ``_``) as an exact :class:`Decimal`: ``Infinity`` (with
    its sign) for an exponent too large for Decimal (``1e99999999999999999999``), and ``1e-999999``
    for one too small (a tiny number, not a whole one). Not a number: ``InvalidOperation``.

    >>> _exact("-2.5e3"), _exact("1e99999999999999999999"), len(str(_exact("9" * 5000)))
    (Decimal('-2.5E+3'), Decimal('Infinity'), 5000)
    """
    parts = _DECIMAL.fullmatch(number)
    if parts is not None and parts.group(4) is not None and len(parts.group(4)) > 9:
        sign, mantissa, exponent_sign = parts.group(1, 2, 3)
        if not mantissa.strip(".0"):
            return Decimal(0)  # zero, whatever its exponent
        size = Decimal("1e-999999") if exponent_sign == "-" else Decimal("Infinity")
        return -size if sign == "-" else size
    return Decimal(number)


def _plain(value: float | int) -> str:
    """``10,000,000`` or ``1e+35``: a bound as people read it."""
    if isinstance(value, int) or (math.isfinite(value) and value == int(value) and abs(value) < 1e15):
        return f"{int(value):,}"
    return f"{value:g}"


class NumericType(click.ParamType[Any]):
    """Base of every numeric option type: parses text, refuses non-finite and out-of-range values.

    ``minimum``/``maximum`` are the bounds in the value's base unit;
    ``min_open``/``max_open`` exclude them. ``unit`` names what is counted
    in messages (``GPUs``, ``s``); ``why`` says where the maximum comes from.
    """

    name = "number"

    def __init__(
        self,
        *,
        minimum: float | int | None = None,
        maximum: float | int | None = None,
        min_open: bool = False,
        max_open: bool = False,
        unit: str = "",
        why: str = "",
    ) -> None:
        self.minimum = minimum
        self.maximum = maximum
        self.min_open = min_open
        self.max_open = max_open
        self.unit = unit
        self.why = why

    def parse(self, text: str) -> float | int:
        """The value of ``text`` (raise :class:`UserInputError` when it cannot be read)."""
        try:
            return float(_exact(text.replace("_", "")))  # past 1.8e308: inf, said to overflow
        except (InvalidOperation, ValueError):
            raise UserInputError(f"cannot read {excerpt(text)!r} as a number") from None

    def describe(self, value: float | int) -> str:
        """``value`` with its unit, for messages."""
        return (
            f"{value:g} {self.unit}".strip() if isinstance(value, float) else f"{value} {self.unit}".strip()
        )

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, bool):
            self.fail(f"{value!r} is not a number", param, ctx)
        text = excerpt(value) if isinstance(value, int) else str(value).strip()
        try:
            number = value if isinstance(value, int | float) else self.parse(text)
        except UserInputError as error:
            self.fail(f"{_bounded(str(error), text)}; {self.allowed()}", param, ctx)
        if isinstance(number, float) and not math.isfinite(number):
            reason = "is not a finite number" if _literal_not_finite(text) else "overflows a 64-bit float"
            self.fail(f"{excerpt(text)} {reason}; {self.allowed()}", param, ctx)
        problem = self.out_of_range(number)
        if problem:
            self.fail(f"{self._shown(value, text, number)} {problem}", param, ctx)
        return number

    def _shown(self, value: Any, text: str, number: float | int) -> str:
        """The value as the user wrote it, with the unit when the text has none."""
        if isinstance(value, int | float):
            return self.describe(number)
        if len(text) > len(excerpt(text)):
            return excerpt(text)
        return text if _HAS_UNIT.search(text) else f"{text} {self.unit}".strip()

    def out_of_range(self, number: float | int) -> str:
        """Why ``number`` is outside the bounds ('' when inside)."""
        low, high = self.minimum, self.maximum
        if low is not None and (number < low or (self.min_open and number == low)):
            return f"is {'not above' if self.min_open else 'below'} the minimum; {self.allowed()}"
        if high is not None and (number > high or (self.max_open and number == high)):
            why = f" ({self.why})" if self.why else ""
            words = "not below the maximum" if number == high else "above the limit"
            return f"is {words} of {self.format_bound(high, unit=True)}{why}; {self.allowed()}"
        return ""

    def format_bound(self, bound: float | int, *, unit: bool = False) -> str:
        """A bound as people read it (with the unit when ``unit``)."""
        return f"{_plain(bound)} {self.unit}".strip() if unit else _plain(bound)

    def allowed(self) -> str:
        """The allowed range in words: ``allowed: a whole number from 1 to 64 GPUs``."""
        low, high = self.minimum, self.maximum
        if low is not None and high is not None and not self.min_open and not self.max_open:
            bounds = f"from {self.format_bound(low)} to {self.format_bound(high)}"
        else:
            parts = []
            if low is not None:
                parts.append(f"{'above' if self.min_open else 'at least'} {self.format_bound(low)}")
            if high is not None:
                parts.append(f"{'below' if self.max_open else 'at most'} {self.format_bound(high)}")
            bounds = " and ".join(parts)
        unit = f" {self.unit}" if self.unit and not self.formats_unit() else ""
        return f"allowed: {self.kind_words} {bounds}{unit}".rstrip()

    kind_words = "a finite number"

    def formats_unit(self) -> bool:
        """Whether :meth:`format_bound` writes the unit itself (sizes, durations, rates)."""
        return False


def _literal_not_finite(text: str) -> bool:
    """Whether ``text`` (which read as NaN or infinity) was written as one (``nan``, ``-inf%``,
    ``inf GiB``), not as a number too large for a float (``1e400``): no such number starts with
    these letters, whatever unit follows."""
    return _NOT_FINITE_LITERAL.match(text.strip()) is not None


def _bounded(message: str, text: str) -> str:
    """``message`` (a parser's, which quotes the value whole) with a long ``text`` cut short."""
    return message.replace(repr(text), repr(excerpt(text))) if len(text) > len(excerpt(text)) else message


class Integer(NumericType):
    """A whole number, read exactly (no float in between); ``4k``/``16M`` suffixes (powers of 1,000)
    with ``suffixes``, or the suffixes of a ``multipliers`` table.

    >>> Integer(minimum=1, maximum=8).convert("8", None, None)
    8
    """

    name = "integer"
    kind_words = "a whole number"

    def __init__(
        self, *, suffixes: bool = False, multipliers: Mapping[str, int] | None = None, **bounds: Any
    ) -> None:
        super().__init__(**bounds)
        self.multipliers = dict(multipliers or (_COUNT_SUFFIX if suffixes else {"": 1}))

    def parse(self, text: str) -> int:
        match = _SUFFIXED.fullmatch(text)
        suffix = match.group(2).lower() if match else ""
        if _INTEGER.fullmatch(text):
            exact = _exact(text.replace("_", ""))
        elif match is None or suffix not in self.multipliers:
            raise UserInputError(f"{excerpt(text)!r} is not a whole number")
        else:
            exact = _exact(match.group(1))
        if exact.is_infinite() or exact.adjusted() >= 30:  # far past every bound: never build it whole
            return _FAR_PAST_BOUNDS if exact > 0 else -_FAR_PAST_BOUNDS
        exact *= self.multipliers[suffix]
        if exact != exact.to_integral_value():
            raise UserInputError(f"{excerpt(text)!r} is not a whole number")
        return int(exact)

    def describe(self, value: float | int) -> str:
        return f"{excerpt(value)} {self.unit}".strip()

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, float):
            if not value.is_integer():
                self.fail(f"{value!r} is not a whole number", param, ctx)
            value = int(value)
        return super().convert(value, param, ctx)


class Number(NumericType):
    """A finite real number (``0.7``, ``1e-3``)."""

    name = "number"


class Quantity(NumericType):
    """A number read by one of the :mod:`lightspeed.units` parsers (base SI out)."""

    def __init__(
        self, parser: Callable[[str], float], formatter: Callable[[float], str] | None = None, **bounds: Any
    ) -> None:
        super().__init__(**bounds)
        self.parser = parser
        self.formatter = formatter

    def formats_unit(self) -> bool:
        return self.formatter is not None

    def format_bound(self, bound: float | int, *, unit: bool = False) -> str:
        if self.formatter is None:
            return super().format_bound(bound, unit=unit)
        return self.formatter(float(bound))

    def describe(self, value: float | int) -> str:
        return self.format_bound(value) if self.formatter is not None else super().describe(value)

    def parse(self, text: str) -> float:
        """The unit parsers read magnitudes; a leading minus is read here, so that ``-5`` is said to
        be below the minimum rather than unreadable."""
        if text.startswith("-") and not text.startswith("--"):
            try:
                return -float(self.parser(text[1:].strip()))
            except UserInputError:
                pass  # the parser's own words about the whole text
        return float(self.parser(text))

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        result = super().convert(value, param, ctx)
        return float(result)


class Count(Quantity):
    """A count with an optional suffix: ``29e12``, ``29T``, ``405B``, ``1.5k`` (a float)."""

    name = "count"

    def __init__(self, **bounds: Any) -> None:
        super().__init__(parse_count, **bounds)


class WholeCount(Count):
    """A count of whole things, with a suffix as :class:`Count` reads it (``15T``, ``2e12``): a
    fraction (``1.5`` tokens) is a typo, not a count.

    >>> WholeCount(minimum=1.0, maximum=1e18, unit="tokens").convert("15T", None, None)
    15000000000000.0
    """

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        result = super().convert(value, param, ctx)
        if not float(result).is_integer():
            self.fail(f"{result:g} is not a whole number of {self.unit}; give e.g. 15e12 or 15T", param, ctx)
        return result


class Size(Quantity):
    """Bytes: ``80GB``, ``141GiB``, ``1e9`` (a bare number is bytes)."""

    name = "size"

    def __init__(self, **bounds: Any) -> None:
        super().__init__(parse_bytes, format_bytes, unit="B", **bounds)


class Rate(Quantity):
    """Bytes per second: ``200GB/s`` or ``200GB`` (the ``/s`` is optional), or a NIC's bits,
    ``400Gb/s``, ``400Gbit/s``, ``400Gbps`` (a lowercase ``b``: 50 GB/s)."""

    name = "rate"

    def __init__(self, **bounds: Any) -> None:
        super().__init__(parse_bandwidth, format_bytes_per_s, unit="B/s", **bounds)


class Duration(Quantity):
    """Seconds: ``50ms``, ``5s``, ``10min``, ``2h`` (a bare number is seconds)."""

    name = "duration"

    def __init__(self, **bounds: Any) -> None:
        super().__init__(parse_duration, format_duration, unit="s", **bounds)


class LatencyLimit(Duration):
    """A latency limit (TTFT, TPOT): a :class:`Duration` that must carry its unit, ``300ms`` or
    ``0.3s``. A bare ``300`` is refused rather than read: lightspeed's durations read it as seconds,
    vLLM's ``--goodput ttft:300`` as milliseconds, and either guess is 1000x off for someone. A plan
    file's number (``max_ttft_s = 0.3``) is seconds by its key's name and passes.

    >>> LatencyLimit(minimum=0.0, maximum=60.0, min_open=True).convert("300ms", None, None)
    0.3
    """

    def __init__(self, *, units: tuple[str, str] = ("ms", "s"), **bounds: Any) -> None:
        super().__init__(**bounds)
        self.units = units  # the two a refusal suggests, the likelier first

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and is_bare_number(value):
            self.fail(f"{excerpt(value.strip())}: {give_a_unit(value, self.units)}", param, ctx)
        return super().convert(value, param, ctx)


def is_bare_number(text: str) -> bool:
    """Whether ``text`` is a latency a unit would make valid, written without one (``300``, ``0.3``,
    ``2e3``; not ``300ms``, nor ``0``, ``-1`` or ``1e400``, which no unit mends: the range check
    says why).

    >>> is_bare_number("300"), is_bare_number("300ms"), is_bare_number("-1"), is_bare_number("1e400")
    (True, False, False, False)
    """
    match = _SUFFIXED.fullmatch(text.strip())
    return match is not None and not match.group(2) and 0.0 < float(match.group(1)) < math.inf


def give_a_unit(text: str, units: tuple[str, str] = ("ms", "s")) -> str:
    """What to write instead of the bare latency ``text``: ``give a unit (300ms or 300s)``."""
    number = excerpt(text.strip())
    return f"give a unit ({number}{units[0]} or {number}{units[1]})"


class BandwidthWithUnit(Rate):
    """A bandwidth that must carry its unit (``200GB/s``, ``200GB``): a bare ``200`` is refused
    rather than read as 200 B/s, with the shared refusal of a bare number (the one
    :class:`LatencyLimit` gives latencies).

    >>> BandwidthWithUnit(minimum=0.0).convert("50GB/s", None, None)
    50000000000.0
    """

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and is_bare_number(value):
            self.fail(f"{excerpt(value.strip())}: {give_a_unit(value, ('GB/s', 'TB/s'))}", param, ctx)
        return super().convert(value, param, ctx)


def _format_percent(fraction: float) -> str:
    return f"{fraction * 100:,g}%"


class Percent(Quantity):
    """A fraction: ``5%`` or ``0.05`` both give 0.05."""

    name = "percent"

    def __init__(self, **bounds: Any) -> None:
        super().__init__(parse_percent, _format_percent, **bounds)


class Pair(NumericType):
    """``A:B``: two whole numbers in one option, each from ``minimum`` to ``maximum``
    (``form`` names them, ``example`` shows one); a plan file writes them as ``[A, B]``.

    >>> ends = Pair(minimum=0, maximum=10_000, unit="layers", form="START:END", what="x", example="0:14")
    >>> ends.convert("1:14", None, None)
    (1, 14)
    """

    name = "pair"

    def __init__(self, *, minimum: int, maximum: int, unit: str, form: str, what: str, example: str) -> None:
        super().__init__(minimum=minimum, maximum=maximum, unit=unit)
        self.form, self.what, self.example = form, what, example
        self.name = form.lower()  # click's metavar: START:END, P:D
        self.counter = Integer(minimum=minimum, maximum=maximum, unit=unit)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        parts = [str(part) for part in value] if isinstance(value, tuple | list) else str(value).split(":")
        try:
            if len(parts) != 2:
                raise click.BadParameter("two numbers are needed")
            return tuple(self.counter.convert(part.strip(), param, ctx) for part in parts)
        except click.BadParameter as error:
            self.fail(
                f"{excerpt(value)!r}: write {self.form}, {self.what}, each a whole number from "
                f"{self.minimum:,} to {self.maximum:,}, e.g. {self.example} ({error.message})",
                param,
                ctx,
            )


class ListOf(NumericType):
    """Comma-separated values of one numeric type, as a tuple (each checked by ``item``).

    >>> ListOf(Integer(minimum=1, maximum=512), example="256,288").convert("256, 288", None, None)
    (256, 288)
    """

    name = "list"

    def __init__(self, item: NumericType, *, example: str) -> None:
        super().__init__(minimum=item.minimum, maximum=item.maximum, unit=item.unit, why=item.why)
        self.item = item
        self.example = example

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        parts = [part.strip() for part in str(value).split(",") if part.strip()]
        if not parts:
            self.fail(f"give at least one value, e.g. {self.example}", param, ctx)
        return tuple(self.item.convert(part, param, ctx) for part in parts)


class PerPosition(NumericType):
    """One value, or one per position separated by single commas (``0.8,0.6,0.4``), as a tuple of
    ``item`` values: an empty item (``0.8,``, ``0.8,,0.6``) is refused, and a bad one is named by its
    ``what`` and place, 1 the first (a plan file's number or list is checked the same way).

    >>> PerPosition(Number(minimum=0.0, maximum=1.0), what="draft position", example="0.8,0.6").convert(
    ...     "0.8, 0.6", None, None)
    (0.8, 0.6)
    """

    name = "rates"

    def __init__(self, item: NumericType, *, what: str, example: str) -> None:
        super().__init__(
            minimum=item.minimum,
            maximum=item.maximum,
            min_open=item.min_open,
            max_open=item.max_open,
            unit=item.unit,
            why=item.why,
        )
        self.item, self.what, self.example = item, what, example

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple | list):
            parts: list[Any] = list(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            parts = [value]
        else:
            parts = str(value).split(",")
        if not parts or all(isinstance(part, str) and not part.strip() for part in parts):
            self.fail(f"give one value, or one per {self.what}, e.g. {self.example}", param, ctx)
        refuse_empty_items(self, value, parts, what=self.what, example=self.example, param=param, ctx=ctx)
        values = []
        for place, part in enumerate(parts, 1):
            try:
                values.append(self.item.convert(part.strip() if isinstance(part, str) else part, param, ctx))
            except click.BadParameter as error:
                where = f"{self.what} {place}: " if len(parts) > 1 else ""
                self.fail(f"{where}{error.message}", param, ctx)
        return tuple(values)


def refuse_empty_items(
    kind: click.ParamType[Any],
    value: Any,
    parts: list[Any],
    *,
    what: str,
    example: str,
    param: click.Parameter | None,
    ctx: click.Context | None,
) -> None:
    """Refuse an empty item among the comma-separated ``parts`` of ``value`` (``8,``, ``8,,16``: a
    stray comma, not a value), naming its place, 1 the first (``what`` names an item)."""
    for place, part in enumerate(parts, 1):
        if isinstance(part, str) and not part.strip():
            kind.fail(
                f"{excerpt(value)!r}: {what} {place} is empty; separate the values with single "
                f"commas, e.g. {example}",
                param,
                ctx,
            )


def first_repeated(values: Sequence[Any]) -> int | None:
    """The place (from 0) of the first value in ``values`` equal to one before it, else ``None``.

    >>> first_repeated([8, 16, 8]), first_repeated([8, 16])
    (2, None)
    """
    seen: set[Any] = set()
    for place, value in enumerate(values):
        if value in seen:
            return place
        seen.add(value)
    return None


class DistinctList(ListOf):
    """Comma-separated values of one numeric type, each given once, as a tuple: an empty item
    (``8,``, ``8,,16``) is refused naming its place, and so is a value given twice (``8,8``; ``8,08``
    too, once read), which would be answered twice.

    >>> DistinctList(Integer(minimum=1, maximum=512), example="256,288").convert("256, 288", None, None)
    (256, 288)
    """

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        parts = str(value).split(",")
        if not any(part.strip() for part in parts):
            self.fail(f"give at least one value, e.g. {self.example}", param, ctx)
        refuse_empty_items(self, value, parts, what="value", example=self.example, param=param, ctx=ctx)
        values = tuple(self.item.convert(part.strip(), param, ctx) for part in parts)
        repeated = first_repeated(values)
        if repeated is not None:
            shown = self.item.describe(values[repeated])
            self.fail(f"{excerpt(value)!r}: {shown} given twice: give each value once", param, ctx)
        return values


class SizeList(ListOf):
    """Comma-separated sizes (``1MiB,64MiB``) as a tuple of bytes."""

    name = "sizes"

    def __init__(self, **bounds: Any) -> None:
        super().__init__(Size(**bounds), example="1MiB,64MiB")


# an SLO's attainment: a share above none, up to every request (100%: each one within the limits)
SLO_ATTAINMENT: Final = Percent(minimum=0.0, maximum=1.0, min_open=True)


class ServiceLevelSpec(click.ParamType[tuple[float | None, float | None, float]]):
    """``ttft=2s,tpot=50ms[,attainment=90%]``: latency limits of an SLO and the share of requests
    that must meet both (default 90%, DistServe's), as ``(ttft_s, tpot_s, attainment)``. Each limit
    carries its unit (a bare ``ttft=300`` is refused, :class:`LatencyLimit`); the attainment is a
    share above 0 and up to 100% (every request within the limits), ``90%`` or ``0.9``.

    >>> ServiceLevelSpec().convert("ttft=2s,tpot=50ms", None, None)
    (2.0, 0.05, 0.9)
    """

    name = "slo"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        limits: dict[str, float] = {"attainment": 0.9}
        for part in (piece.strip() for piece in str(value).split(",") if piece.strip()):
            key, _, text = part.partition("=")
            key = key.strip().lower()
            if key in ("ttft", "tpot") and is_bare_number(text):
                self.fail(f"{key}={excerpt(text.strip())}: {give_a_unit(text)}", param, ctx)
            try:
                if key in ("ttft", "tpot"):
                    limits[key] = LATENCY_BOUND.convert(text.strip(), param, ctx)
                elif key == "attainment":
                    limits[key] = SLO_ATTAINMENT.convert(text.strip(), param, ctx)
                else:
                    raise click.BadParameter(f"unknown limit {key!r}")
            except (click.BadParameter, UserInputError) as error:
                message = error.message if isinstance(error, click.BadParameter) else str(error)
                self.fail(
                    f"{excerpt(value)!r}: write ttft=TIME,tpot=TIME[,attainment=SHARE], e.g. "
                    f"ttft=2s,tpot=50ms ({message})",
                    param,
                    ctx,
                )
        if "ttft" not in limits and "tpot" not in limits:
            self.fail(f"{excerpt(value)!r}: give a TTFT or a TPOT limit, e.g. ttft=2s,tpot=50ms", param, ctx)
        return (limits.get("ttft"), limits.get("tpot"), limits["attainment"])


class ServiceLevelText(click.ParamType[str]):
    """An SLO as a plan file keeps it: the text of :class:`ServiceLevelSpec`, checked the same way.

    >>> ServiceLevelText().convert(" ttft=2s,tpot=50ms ", None, None)
    'ttft=2s,tpot=50ms'
    """

    name = "slo"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        ServiceLevelSpec().convert(str(value), param, ctx)  # one line naming the problem, or fine
        return str(value).strip()


class LengthSpec(NumericType):
    """How token counts spread around ``--isl``/``--osl``: ``fixed``, ``uniform:MIN-MAX``,
    ``lognormal:STD`` or ``lognormal:STD:MIN-MAX``, ``file:PATH`` (one count per line) or
    ``file:PATH:COLUMN`` (a CSV/JSONL column), as a tuple of its parts.

    >>> LengthSpec().convert("uniform:100-300", None, None)
    ('uniform', '100', '300')
    """

    name = "lengths"

    def __init__(self) -> None:
        super().__init__(minimum=1, maximum=MAX_SEQ_LEN, unit="tokens")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        text = str(value).strip()
        kind, _, rest = text.partition(":")
        kind = kind.lower()
        try:
            if kind == "fixed" and not rest:
                return ("fixed",)
            if kind == "file" and rest:
                path, _, column = rest.partition(":")
                return ("file", path, column) if column else ("file", path)
            if kind == "uniform":
                low, high = rest.split("-")
                return (
                    "uniform",
                    str(SEQ_LEN.convert(low, param, ctx)),
                    str(SEQ_LEN.convert(high, param, ctx)),
                )
            if kind == "lognormal":
                std, _, bounds = rest.partition(":")
                spread: tuple[str, ...] = ("lognormal", str(SPREAD_TOKENS.convert(std, param, ctx)))
                if bounds:
                    low, high = bounds.split("-")
                    spread += (str(SEQ_LEN.convert(low, param, ctx)), str(SEQ_LEN.convert(high, param, ctx)))
                return spread
        except (ValueError, click.BadParameter):
            pass
        return self.fail(
            f"{excerpt(text)!r}: write fixed, uniform:MIN-MAX, lognormal:STD[:MIN-MAX] or file:PATH[:COLUMN]",
            param,
            ctx,
        )


# --- the option types commands share -----------------------------------------------------------
def _limits(name: str) -> dict[str, Any]:
    """The bounds of the option type ``name``, from :data:`lightspeed.limits.OPTION_BOUNDS` (the
    Python configurations check their fields against the same table)."""
    return OPTION_BOUNDS[name].click_bounds()


GPUS: Final = Integer(**_limits("GPUS"), suffixes=True, unit="GPUs", why="50x the largest cluster built")
NODES: Final = Integer(minimum=1, maximum=MAX_NODES, suffixes=True, unit="nodes")
DEGREE: Final = Integer(**_limits("DEGREE"))  # tp, pp, dp, ep, cp, replicas: GPUs, stages or ways, so no unit


class TokenLength(Integer):
    """A sequence or request length in tokens: ``8k`` is 8,192 and ``128k`` 131,072, as context
    lengths are written (``m`` is 1,048,576); a bare number is read as it is.

    >>> TokenLength(minimum=1, maximum=2**24).convert("8k", None, None)
    8192
    """

    name = "tokens"

    def __init__(self, **bounds: Any) -> None:
        super().__init__(multipliers=_TOKEN_LENGTH_SUFFIX, unit="tokens", **bounds)

    def allowed(self) -> str:
        return f"{super().allowed()} (8k = 8,192 tokens)"


SEQ_LEN: Final = TokenLength(**_limits("SEQ_LEN"), why="13x the longest context offered")
SEQUENCES: Final = Integer(**_limits("SEQUENCES"), suffixes=True, unit="sequences")
# a token budget (plan/search train, flops, cost): whole tokens, at least one
TOKENS: Final = WholeCount(**_limits("TOKENS"), unit="tokens", why="25,000x the largest training budget")
FLOP_TOTAL: Final = Count(minimum=0.0, maximum=MAX_FLOP, min_open=True, unit="FLOP")
FLOP_PER_TOKEN: Final = Count(minimum=0.0, maximum=MAX_FLOP_PER_TOKEN, min_open=True, unit="FLOP")
ROWS: Final = Integer(**_limits("ROWS"), unit="rows")
PROBABILITY_OPEN: Final = Number(minimum=0.0, maximum=1.0, min_open=True, max_open=True)
FRACTION: Final = Number(**_limits("FRACTION"))
LATENCY_BOUND: Final = LatencyLimit(**_limits("LATENCY_BOUND"))
CUTOFF: Final = Duration(minimum=0.0, maximum=86400.0, why="one day")
# trace idle's kernel-wait threshold: HTA's is a bare number of microseconds, lightspeed's durations
# read one as seconds, so it must carry its unit (a million times off either way)
KERNEL_WAIT_THRESHOLD: Final = LatencyLimit(minimum=0.0, maximum=86400.0, why="one day", units=("us", "ms"))
PER_SECOND: Final = Number(**_limits("PER_SECOND"), unit="per s")
# a memory or link bandwidth given by a user: always with its unit (a bare 200 is not 200 B/s)
BANDWIDTH: Final = BandwidthWithUnit(
    minimum=0.0, maximum=MAX_BYTES_PER_S, min_open=True, why="above any memory or link"
)
POWER_W: Final = Number(minimum=0.0, maximum=MAX_WATTS, min_open=True, unit="W", why="10 GW")
USD: Final = Number(minimum=0.0, maximum=MAX_USD, min_open=True, unit="USD", why="per GPU-hour")
VPP: Final = Integer(**_limits("VPP"), unit="chunks")
ZERO_STAGE: Final = Integer(**_limits("ZERO_STAGE"))
EXPERT_IMBALANCE: Final = Number(**_limits("EXPERT_IMBALANCE"), why="the busiest GPU holding every token")
EFFECTIVE_BITS: Final = Number(**_limits("EFFECTIVE_BITS"), unit="bits", why="a 4-bit float to 16 bits")
DRAFT_TOKENS: Final = Integer(**_limits("DRAFT_TOKENS"), unit="tokens")
# the deepest a search over speculative depths tries (sol/infer/search.py MAX_SEARCHED_DRAFT_TOKENS)
SEARCHED_DRAFT_TOKENS: Final = Integer(
    **_limits("SEARCHED_DRAFT_TOKENS"), unit="tokens", why="one search per depth"
)
MTP_MODULES: Final = Integer(**_limits("MTP_MODULES"), unit="modules", why="MiniMax-M2 declares 3")
# per draft position (each kept given the ones before it were), below 1: one rate or one per position
ACCEPTANCE: Final = PerPosition(Number(**_limits("ACCEPTANCE")), what="draft position", example="0.8,0.6,0.4")
POOL_SPLIT: Final = Pair(
    **_limits("POOL_SPLIT"),
    unit="replicas",
    form="P:D",
    what="prefill and decode replicas",
    example="1:3",
)
BF16_LAYERS: Final = Pair(
    **_limits("BF16_LAYERS"), unit="layers", form="START:END",
    what="layers kept in BF16 at the model's start and at its end", example="0:14",
)  # fmt: skip
RACKS: Final = Integer(minimum=1, maximum=MAX_ACCELERATORS // 8, unit="racks")
SYSTEMS_PER_RACK: Final = Integer(minimum=1, maximum=64, unit="systems")
PUE: Final = Number(minimum=1.0, maximum=5.0, why="facility power / IT power: 1 is a site with no overhead")
SITE_KW: Final = Number(minimum=0.0, maximum=MAX_WATTS / 1e3, min_open=True, unit="kW", why="10 GW")
CPU_GHZ: Final = Number(
    minimum=0.0, maximum=MAX_CPU_HZ / 1e9, min_open=True, unit="GHz", why="the record is 9.1"
)
THRESHOLD: Final = Percent(minimum=0.0, maximum=10.0)  # a relative change of the median: 0 to 1,000%
WARMUP: Final = Integer(minimum=0, maximum=2**31, unit="samples")
FAILURE_RATE: Final = Number(minimum=0.0, maximum=1e9, unit="failures per node-day")
CHECKPOINT_S: Final = Duration(minimum=0.0, maximum=MAX_DURATION_S, min_open=True, why="a century")
RESTART_S: Final = Duration(minimum=0.0, maximum=MAX_DURATION_S, why="a century")
NUM_LINKS: Final = Integer(minimum=1, maximum=1024, unit="links")
TRACE_MAX_BYTES: Final = Size(minimum=2.0**10, maximum=MAX_BYTES)
THREADS: Final = Integer(minimum=1, maximum=MAX_THREADS, unit="threads", why="Linux's largest NR_CPUS")
GEMM_ROWS: Final = Integer(minimum=1, maximum=2**31 - 1, suffixes=True, unit="rows", why="a 32-bit index")
ARRAY_SIZE: Final = Size(minimum=8.0 * 2**10, maximum=MAX_BYTES)
PROCESSES: Final = Integer(minimum=1, maximum=MAX_PROCESSES, unit="processes")
JOBS: Final = Integer(minimum=1, maximum=MAX_PROCESSES, unit="worker processes")
WORKER_MEMORY: Final = Size(minimum=2.0**28, maximum=MAX_BYTES, why="the address space one worker may take")
EXPERTS: Final = Integer(minimum=1, maximum=2**16, unit="experts")  # 65,536: 256x DeepSeek-V3's
PHYSICAL_EXPERTS: Final = Integer(**_limits("PHYSICAL_EXPERTS"), unit="physical experts")
PHYSICAL_EXPERT_LIST: Final = DistinctList(PHYSICAL_EXPERTS, example="256,288")
EXPERT_GROUPS: Final = Integer(minimum=1, maximum=2**16, unit="groups")
MOE_LAYERS: Final = Integer(minimum=1, maximum=4096, unit="layers")
TOP_K: Final = Integer(minimum=1, maximum=2**16, unit="experts per token")
TOKENS_PER_LAYER: Final = Integer(minimum=1, maximum=10**12, suffixes=True, unit="tokens")
HOLDOUT_FRACTION: Final = Percent(minimum=0.0, maximum=1.0, min_open=True, max_open=True)
LOAD_STEPS: Final = Integer(minimum=1, maximum=10_000, unit="steps")
LOAD_SKEW: Final = Number(minimum=0.0, maximum=1e6)
SEED: Final = Integer(**_limits("SEED"))
TOP_ROWS: Final = Integer(minimum=1, maximum=2**16, unit="rows")
TIMEOUT: Final = Duration(minimum=0.0, maximum=86400.0, min_open=True, why="one day")
SAMPLE_INTERVAL: Final = Duration(minimum=0.0, maximum=3600.0, min_open=True, why="one hour")
PORT: Final = Integer(minimum=0, maximum=65535, why="the largest TCP port")
REFRESHES: Final = Integer(minimum=1, maximum=2**31, unit="refreshes")
REQUESTS: Final = Integer(**_limits("REQUESTS"), suffixes=True, unit="requests")
WARMUP_REQUESTS: Final = Integer(**_limits("WARMUP_REQUESTS"), suffixes=True, unit="requests")
BURSTINESS_CV: Final = Number(minimum=0.0, maximum=1000.0, min_open=True)
SPREAD_TOKENS: Final = Number(minimum=0.0, maximum=MAX_SEQ_LEN, min_open=True, unit="tokens")
BLOCK_TOKENS: Final = Integer(minimum=1, maximum=2**20, unit="tokens")
FINALISTS: Final = Integer(**_limits("FINALISTS"), unit="deployments")
SLO_TEXT: Final = ServiceLevelText()
NAME: Final = NonEmptyText()
SIMULATED_S: Final = Duration(minimum=0.0, maximum=MAX_DURATION_S, min_open=True, why="a century")

"""Quantities: unit constants, parsing and formatting.

Everything inside lightspeed is base SI: bytes, seconds, FLOP (a count),
FLOP/s (a rate), watts, joules. Convert only when loading data files and when
rendering. ``GB`` is 1e9 bytes and ``GiB`` is 2**30 bytes; never mix them.

Example:
    >>> parse_bytes("80GB")
    80000000000.0
    >>> format_bytes(200e12)
    '200 TB'
    >>> bytes_per_element("fp4")
    0.5
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Final

from lightspeed.errors import UserInputError

# Decimal (SI) multipliers: storage, bandwidth and FLOP figures in datasheets.
KILO: Final = 1e3
MEGA: Final = 1e6
GIGA: Final = 1e9
TERA: Final = 1e12
PETA: Final = 1e15
EXA: Final = 1e18

# Binary multipliers: only where a source prints GiB/TiB/MiB.
KIB: Final = 2.0**10
MIB: Final = 2.0**20
GIB: Final = 2.0**30
TIB: Final = 2.0**40

BITS_PER_BYTE: Final = 8.0
SECONDS_PER_HOUR: Final = 3600.0
SECONDS_PER_DAY: Final = 86400.0

_BYTE_UNITS: Final[dict[str, float]] = {
    "b": 1.0,
    "kb": KILO,
    "mb": MEGA,
    "gb": GIGA,
    "tb": TERA,
    "pb": PETA,
    "eb": EXA,
    "kib": KIB,
    "mib": MIB,
    "gib": GIB,
    "tib": TIB,
    "pib": 2.0**50,
}

_COUNT_SUFFIXES: Final[dict[str, float]] = {
    "": 1.0,
    "k": KILO,
    "m": MEGA,
    "b": GIGA,  # billions, as in "70B parameters"
    "g": GIGA,
    "t": TERA,
    "p": PETA,
}

_DURATION_UNITS: Final[dict[str, float]] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "min": 60.0,
    "h": SECONDS_PER_HOUR,
    "d": SECONDS_PER_DAY,
}

# one way to split each text (not "[0-9]*\.?[0-9]+", which backtracks quadratically: 8,000 digits
# and a bad unit took 2.5 s, a megabyte of them hours)
_NUMBER = r"((?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"

# Weights per scale group of a plain "int4" checkpoint (AWQ's and GPTQ's default).
INT4_GROUP_SIZE: Final = 128

# Bytes per element of each numeric format; floats, never integer division.
# fp4/fp6 variants carry block-scale overhead: NVFP4 stores one FP8 (E4M3)
# scale per 16 values, MXFP4/MXFP6/MXFP8 one E8M0 byte per 32 values (OCP MX
# spec v1.0); plain "fp4" is the raw 4-bit payload. Plain "int4" is a 4-bit integer checkpoint as
# AWQ and GPTQ store it: groups of 128 weights along the input dimension, each with an FP16 scale
# and a 4-bit zero point (AutoAWQ's WQLinear_GEMM: qweight, qzeros packed 8 to an int32, scales
# FP16; group size 128 the AWQ paper's and both tools' default), 0.5 + (2 + 0.5) / 128 bytes; a
# published checkpoint of another group size or scale format says so (sol/data/checkpoints.toml).
_BYTES_PER_ELEMENT: Final[dict[str, float]] = {
    "fp64": 8.0,
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "mxfp8": 1.0 + 1.0 / 32.0,
    "fp6": 0.75,
    "mxfp6": 0.75 + 1.0 / 32.0,
    "fp4": 0.5,
    "int4": 0.5 + (2.0 + 0.5) / INT4_GROUP_SIZE,
    "nvfp4": 0.5 + 1.0 / 16.0,
    "mxfp4": 0.5 + 1.0 / 32.0,
}

# Formats whose stored size includes block scales: the element alone.
_ELEMENT_BYTES: Final[dict[str, float]] = {
    "mxfp8": 1.0,
    "mxfp6": 0.75,
    "nvfp4": 0.5,
    "mxfp4": 0.5,
    "int4": 0.5,
}

# Which catalog compute row a storage format runs its math on.
_COMPUTE_PRECISION: Final[dict[str, str]] = {
    "fp64": "fp64",
    "fp32": "fp32",
    "tf32": "tf32",
    "bf16": "bf16",
    "fp16": "fp16",
    "fp8": "fp8",
    "mxfp8": "fp8",
    "int8": "int8",
    "fp6": "fp6",
    "mxfp6": "fp6",
    "fp4": "fp4",
    "int4": "int4",
    "nvfp4": "fp4",
    "mxfp4": "fp4",
}

PRECISIONS: Final[tuple[str, ...]] = tuple(_BYTES_PER_ELEMENT)


def _check_precision(precision: str) -> str:
    key = precision.strip().lower()
    if key not in _BYTES_PER_ELEMENT:
        raise UserInputError(f"unknown precision {precision!r}; allowed: {', '.join(PRECISIONS)}")
    return key


def bytes_per_element(precision: str) -> float:
    """Bytes one element occupies in ``precision`` (block or group scales included; ``int4``
    as AWQ and GPTQ store it, groups of 128 with an FP16 scale and a 4-bit zero each).

    >>> bytes_per_element("nvfp4"), bytes_per_element("int4")
    (0.5625, 0.51953125)
    """
    return _BYTES_PER_ELEMENT[_check_precision(precision)]


def element_bits(precision: str) -> float:
    """Bits of one element of ``precision`` without its block scales, as quantization tools count
    a format's width (ModelOpt's effective bits: NVFP4 4, FP8 8, BF16 16).

    >>> element_bits("nvfp4"), element_bits("mxfp8")
    (4.0, 8.0)
    """
    return 8.0 * _ELEMENT_BYTES.get(_check_precision(precision), bytes_per_element(precision))


def compute_precision(precision: str) -> str:
    """The catalog compute row (``bf16``, ``fp8``, ``fp4`` ...) a format runs on.

    >>> compute_precision("mxfp4")
    'fp4'
    """
    return _COMPUTE_PRECISION[_check_precision(precision)]


def _split_number(text: str, what: str, pattern: str, *, lower: bool = True) -> tuple[float, str]:
    match = re.fullmatch(rf"\s*{_NUMBER}\s*{pattern}\s*", text)
    if match is None:
        raise UserInputError(f"cannot read {_excerpt(text)!r} as {what}")
    return float(match.group(1)), match.group(2).lower() if lower else match.group(2)


def _excerpt(text: str) -> str:
    return text if len(text) <= 80 else f"{text[:40]}... ({len(text):,} characters)"


def _bits_or_bytes(unit: str) -> tuple[str, float]:
    """A unit's multiplier prefix (``G``, ``Gi``, empty) and the bytes one of it holds: a lowercase
    ``b`` or ``bit`` is a bit (1/8 byte), an uppercase ``B`` a byte; ``""`` when it names neither.

    >>> _bits_or_bytes("Gb"), _bits_or_bytes("GB"), _bits_or_bytes("Gbit"), _bits_or_bytes("GiB")
    (('G', 0.125), ('G', 1.0), ('G', 0.125), ('Gi', 1.0))
    """
    for ending, size in (("bits", 1 / BITS_PER_BYTE), ("bit", 1 / BITS_PER_BYTE)):
        if unit.lower().endswith(ending):
            return unit[: -len(ending)], size
    if unit.endswith("b"):
        return unit[:-1], 1 / BITS_PER_BYTE
    if unit.endswith("B"):
        return unit[:-1], 1.0
    return "", 0.0


def parse_bytes(text: str | float | int) -> float:
    """Parse a size such as ``80GB``, ``141 GiB`` or ``1e12`` into bytes.

    A bare number is bytes. ``GB`` is 1e9 and ``GiB`` 2**30. ``80Gb`` is refused: a lowercase
    ``b`` after a capital prefix reads as bits (a link's ``400Gb/s``), and a size is bytes.
    """
    if isinstance(text, int | float):
        return float(text)
    value, written = _split_number(text, "a size (e.g. 80GB, 141GiB, 1e9)", r"([a-zA-Z]*)", lower=False)
    prefix = written[:-1]
    if written.endswith("b") and prefix != prefix.lower() and f"{prefix.lower()}b" in _BYTE_UNITS:
        spellings = (f"{prefix}B",) if prefix.endswith("i") else (f"{prefix}B", f"{prefix}iB")
        raise UserInputError(
            f"size {_excerpt(text)!r}: a lowercase b is a bit and a size is bytes; "
            f"write {' or '.join(f'{value:g}{unit}' for unit in spellings)}"
        )
    unit = written.lower() or "b"
    if unit not in _BYTE_UNITS:
        raise UserInputError(
            f"unknown size unit {unit!r} in {text!r}; use one of B, KB, MB, GB, TB, KiB, MiB, GiB, TiB"
        )
    return value * _BYTE_UNITS[unit]


def parse_bandwidth(text: str | float | int) -> float:
    """Parse a bandwidth into bytes per second: ``50GB/s``, ``50GB``, ``50 GBps`` (bytes) or a NIC's
    ``400Gb/s``, ``400Gbit/s``, ``400Gbps`` (bits: a lowercase ``b`` or ``bit``, divided by 8).

    >>> parse_bandwidth("400Gb/s"), parse_bandwidth("50GB/s"), parse_bandwidth("1.6 Tbps")
    (50000000000.0, 50000000000.0, 200000000000.0)
    """
    if isinstance(text, int | float):
        return float(text)
    example = "a bandwidth (e.g. 50GB/s in bytes, 400Gb/s in bits)"
    value, written = _split_number(text, example, r"([a-zA-Z]*?)\s*(?:/\s*s|ps)?", lower=False)
    if not written:
        return value  # a bare number is bytes per second, as a bare size is bytes
    prefix, bytes_each = _bits_or_bytes(written)
    multiplier = _BYTE_UNITS.get(f"{prefix.lower()}b") if bytes_each else None
    if multiplier is None:
        raise UserInputError(
            f"unknown bandwidth unit {written!r} in {_excerpt(text)!r}; write e.g. 50GB/s or 50GiB/s "
            "(bytes, capital B) or 400Gb/s, 400Gbit/s, 400Gbps (bits)"
        )
    return value * multiplier * bytes_each


def parse_count(text: str | float | int) -> float:
    """Parse a count such as ``29e12``, ``29T``, ``405B`` or ``1.5k``.

    >>> parse_count("29T")
    29000000000000.0
    """
    if isinstance(text, int | float):
        return float(text)
    value, suffix = _split_number(text, "a count (e.g. 29e12, 29T, 405B, 1.5k)", r"([kKmMbBgGtTpP]?)")
    return value * _COUNT_SUFFIXES[suffix]


def parse_duration(text: str | float | int) -> float:
    """Parse a duration such as ``50ms``, ``5 s`` or ``2h`` into seconds; bare = seconds."""
    if isinstance(text, int | float):
        return float(text)
    value, unit = _split_number(text, "a duration (e.g. 50ms, 5s, 2h)", r"([a-zµ]*)")
    unit = unit or "s"
    if unit not in _DURATION_UNITS:
        raise UserInputError(f"unknown time unit {unit!r} in {text!r}; use one of ns, us, ms, s, min, h, d")
    return value * _DURATION_UNITS[unit]


def parse_items(
    text: str, flag: str, *, example: str, unique: bool = True, name: Callable[[str], str] = str
) -> tuple[str, ...]:
    """The comma-separated items of an option's ``text`` (``1f1b, gpipe``), stripped; one error for
    no item, an empty one (``a,,b``) or (``unique``) one whose ``name`` (``ttft`` of ``ttft=2s``) is
    given twice, case aside (a schedule tried twice ranks every plan twice and reports a tie with
    itself).

    >>> parse_items("1f1b, gpipe", "--schedules", example="1f1b,gpipe")
    ('1f1b', 'gpipe')
    """
    shown = _excerpt(text)
    if not text.strip():
        raise UserInputError(f"{flag} {shown!r} names nothing: give one or more, e.g. {example}")
    items = tuple(item.strip() for item in text.split(","))
    if not all(items):
        raise UserInputError(
            f"{flag} {shown!r}: an empty item; write the items separated by single commas, e.g. {example}"
        )
    names = [name(item).strip() for item in items]
    lowered = [item.lower() for item in names]
    repeated = [item for index, item in enumerate(names) if lowered[index] in lowered[:index]]
    if unique and repeated:
        raise UserInputError(f"{flag} {shown!r}: {repeated[0]} is given twice; name each once")
    return items


def parse_percent(text: str | float) -> float:
    """Parse ``5%`` or ``0.05`` into a fraction (0.05)."""
    if isinstance(text, float | int):
        return float(text)
    stripped = text.strip()
    try:
        if stripped.endswith("%"):
            return float(stripped[:-1]) / 100.0
        return float(stripped)
    except ValueError:
        raise UserInputError(f"cannot read {text!r} as a percentage (e.g. 5% or 0.05)") from None


# Past these a figure prints in scientific notation in its base unit (``1e-300 s``), not as a row
# of zeros: below a thousandth of the smallest unit, or a million of the largest.
_SMALLEST_SHOWN: Final = 1e-3
_LARGEST_SHOWN: Final = 1e6


def _scaled(value: float, steps: tuple[tuple[float, str], ...], unit: str, digits: int) -> str:
    """``value`` in the largest of ``steps`` (ascending ``(factor, prefix)``) it reaches once
    rounded to ``digits``: 999.96e9 B to 4 digits is ``1 TB``, not ``1,000 GB``."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}".strip()
    index = 0
    while index + 1 < len(steps):
        step_ratio = round(steps[index + 1][0] / steps[index][0])
        if abs(_shown(value / steps[index][0], digits)) < step_ratio:
            break
        index += 1
    factor, prefix = steps[index]
    shown = abs(_shown(value / factor, digits))
    if shown < _SMALLEST_SHOWN or (index == len(steps) - 1 and shown >= _LARGEST_SHOWN):
        return _scientific(value, digits, unit)
    return f"{_round_sig(value / factor, digits)} {prefix}{unit}"


def _shown(value: float, digits: int) -> float:
    """``value`` rounded to ``digits`` significant digits, as :func:`_round_sig` prints it (the
    number a reader sees); infinite when ``value`` is."""
    return float(f"{value:.{max(0, digits - 1)}e}")


def _scientific(value: float, digits: int, unit: str) -> str:
    """``1e-300 s``, ``1.23e+25 B``: ``digits`` significant digits, no trailing zeros."""
    mantissa, exponent = f"{value:.{max(0, digits - 1)}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{exponent} {unit}".strip()


def _round_sig(value: float, digits: int) -> str:
    """Significant-digit rounding without scientific notation or trailing zeros."""
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


_SI_STEPS: Final = (
    (1.0, ""),
    (KILO, "k"),
    (MEGA, "M"),
    (GIGA, "G"),
    (TERA, "T"),
    (PETA, "P"),
    (EXA, "E"),
)


def format_si(value: float, unit: str, digits: int = 4) -> str:
    """``value`` with a decimal SI prefix on ``unit``, to ``digits`` significant digits.

    >>> format_si(12.75e9, "W"), format_si(1.191e14, "Wh"), format_si(0.2549, "J")
    ('12.75 GW', '119.1 TWh', '0.2549 J')
    """
    return _scaled(value, _SI_STEPS, unit, digits)


def format_bytes(num_bytes: float, digits: int = 4, binary: bool = False) -> str:
    """``200e12`` -> ``'200 TB'``; ``binary=True`` -> ``'181.9 TiB'``."""
    if binary:
        steps = ((1.0, ""), (KIB, "Ki"), (MIB, "Mi"), (GIB, "Gi"), (TIB, "Ti"), (2.0**50, "Pi"))
        return _scaled(num_bytes, steps, "B", digits)
    return _scaled(num_bytes, _SI_STEPS, "B", digits)


def format_memory(num_bytes: float, digits: int = 4) -> str:
    """Device memory in binary units, as nvidia-smi and frameworks print it.

    >>> format_memory(85.52e9)
    '79.65 GiB'
    """
    return format_bytes(num_bytes, digits, binary=True)


def format_bytes_per_s(rate_bytes_per_s: float, digits: int = 4) -> str:
    """``3.35e12`` -> ``'3.35 TB/s'`` (decimal, as vendors and nccl-tests print)."""
    return _scaled(rate_bytes_per_s, _SI_STEPS, "B/s", digits)


def format_flop(count_flop: float, digits: int = 3) -> str:
    """A FLOP count in scientific notation: ``1.74e28`` -> ``'1.74e+28 FLOP'``."""
    return f"{count_flop:.{digits - 1}e} FLOP"


def format_flop_per_s(rate_flop_per_s: float, digits: int = 4) -> str:
    """``989.5e12`` -> ``'989.5 TFLOP/s'``."""
    return _scaled(rate_flop_per_s, _SI_STEPS, "FLOP/s", digits)


def ordinal(number: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``11th``, ``22nd``.

    >>> [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)]
    ['1st', '2nd', '3rd', '4th', '11th', '12th', '13th', '21st', '22nd', '101st', '111th']
    """
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` with its noun in the right number: ``1 GPU``, ``2 GPUs``, ``1,024 GPUs``.

    >>> counted(1, "GPU"), counted(8, "GPU"), counted(1024, "GPU"), counted(2, "batch", "batches")
    ('1 GPU', '8 GPUs', '1,024 GPUs', '2 batches')
    """
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def format_count(count: float, digits: int = 4) -> str:
    """``70.6e9`` -> ``'70.6 B'`` (K, M, B, T as used for parameters and tokens)."""
    steps = ((1.0, ""), (KILO, "K"), (MEGA, "M"), (GIGA, "B"), (TERA, "T"), (PETA, "P"))
    return _scaled(count, steps, "", digits).strip()


# (seconds per unit, unit, the shown value at which the next unit takes over)
_SHOWN_DURATION_UNITS: Final = (
    (1e-9, "ns", 1000.0),
    (1e-6, "us", 1000.0),
    (1e-3, "ms", 1000.0),
    (1.0, "s", 120.0),
    (60.0, "min", 120.0),
    (SECONDS_PER_HOUR, "h", 48.0),
    (SECONDS_PER_DAY, "d", math.inf),
)


def format_duration(duration_s: float, digits: int = 3) -> str:
    """Seconds in the most readable unit: ``0.05`` -> ``'50 ms'``, ``200000`` -> ``'2.31 d'``.

    The unit is chosen after rounding to ``digits``, so 0.9999965 s is ``1 s`` (not ``1,000 ms``);
    below a thousandth of a nanosecond or above a million days, scientific notation in seconds.

    >>> format_duration(0.9999965), format_duration(0.0009999), format_duration(1e-300)
    ('1 s', '1 ms', '1e-300 s')
    """
    if duration_s == 0 or not math.isfinite(duration_s):
        return f"{duration_s:g} s"
    for factor, unit, next_at in _SHOWN_DURATION_UNITS:
        shown = abs(_shown(duration_s / factor, digits))
        if shown < next_at:
            if shown < _SMALLEST_SHOWN or shown >= _LARGEST_SHOWN:
                return _scientific(duration_s, digits, "s")
            return f"{_round_sig(duration_s / factor, digits)} {unit}"
    return _scientific(duration_s, digits, "s")


def format_percent(fraction: float, decimals: int = 1) -> str:
    """``0.8333`` -> ``'83.3%'``."""
    return f"{fraction * 100:.{decimals}f}%"


def format_ratio(ratio: float) -> str:
    """``0.0315`` -> ``'1/32'`` style when the ratio is a clean power-of-two fraction,
    else ``'0.667x'``."""
    if ratio > 0 and ratio < 1:
        inverse = 1.0 / ratio
        nearest = round(inverse)
        if nearest >= 2 and abs(inverse - nearest) / nearest < 0.03:
            return f"1/{nearest}"
    return f"{_round_sig(ratio, 3)}x"


def format_significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits (whole numbers keep every integer digit), with
    thousands separators and no exponent.

    >>> format_significant(36.42694), format_significant(5.74596), format_significant(1234.5)
    ('36.4', '5.75', '1,234')
    """
    return _round_sig(value, digits) if math.isfinite(value) else f"{value:g}"


def quotient_of_shown(numerator_text: str, denominator_text: str) -> float:
    """The ratio of two numbers as printed, so that a printed ratio is the quotient of the printed
    figures, rounding included (``'36.4'`` over ``'5.7'`` is 6.386, not the 6.33 of 36.4/5.75).

    >>> round(quotient_of_shown("150", "3.4"), 2), quotient_of_shown("1,200", "600")
    (44.12, 2.0)
    """
    return _shown_number(numerator_text) / _shown_number(denominator_text)


def _shown_number(text: str) -> float:
    try:
        return float(text.replace(",", "").strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a plain printed number") from None


# Units whose smaller value is better (durations, energies); a rate (``.../s``) is better higher
_ENERGY_UNITS: Final = ("J", "kJ", "MJ", "Wh", "kWh")
LOWER_IS_BETTER_UNITS: Final = (*_DURATION_UNITS, *_ENERGY_UNITS)
HIGHER_IS_BETTER_UNIT_SUFFIX: Final = "/s"
UNIT_PER: Final = "/"  # ``NUMERATOR/DENOMINATOR``: ``ms/token``, ``J/token``, ``B/s``


def unit_direction(unit: str) -> bool | None:
    """``lower_is_better`` as the unit alone decides it: ``True`` for durations and energies
    (:data:`LOWER_IS_BETTER_UNITS`) and for a duration or energy per unit of work (``ms/token``,
    ``s/step``, ``ns/op``, ``J/token``: a latency or a cost per item), ``False`` for rates
    (``.../s``), ``None`` for any other unit (a count of findings is better lower, a count of
    tokens higher, a price per hour lower: the unit cannot say).

    >>> unit_direction("s"), unit_direction("FLOP/s"), unit_direction("count")
    (True, False, None)
    >>> unit_direction("ms/token"), unit_direction("J/token"), unit_direction("tokens/J")
    (True, True, None)
    """
    if unit in LOWER_IS_BETTER_UNITS:
        return True
    if unit.endswith(HIGHER_IS_BETTER_UNIT_SUFFIX):
        return False
    numerator, per, _denominator = unit.partition(UNIT_PER)
    if per and numerator.strip() in LOWER_IS_BETTER_UNITS:
        return True
    return None


def fraction_of_sol(value: float | None, sol: float | None, *, lower_better: bool) -> float | None:
    """The fraction of the speed of light reached: ``value / sol`` for a rate (higher is better),
    ``sol / value`` for a time (lower is better), so that it is at most 1 for a physical
    measurement and above 1 only when the SOL was beaten. ``None`` when either is unknown, not
    finite or not positive.

    >>> fraction_of_sol(2e10, 4e10, lower_better=False)
    0.5
    >>> round(fraction_of_sol(0.42, 0.30, lower_better=True), 4)  # 300 ms of SOL, 420 ms taken
    0.7143
    """
    if value is None or sol is None:
        return None
    if not (math.isfinite(value) and math.isfinite(sol)) or value <= 0 or sol <= 0:
        return None
    return sol / value if lower_better else value / sol

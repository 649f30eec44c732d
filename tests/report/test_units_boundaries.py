"""Durations and rates at a unit's boundary, and far outside every unit (``results show``,
the report's tables): the unit is chosen after rounding, and no figure is a row of digits."""

from __future__ import annotations

import pytest

from lightspeed.report.bench import format_value
from lightspeed.units import format_bytes, format_bytes_per_s, format_duration, format_memory


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0.9999965, "1 s"),  # 999.9965 ms rounds to 1,000 ms: that is 1 s
        (0.0009999, "1 ms"),  # 999.9 us rounds to 1,000 us
        (0.9999e-6, "1 us"),  # 999.9 ns
        (119.9996, "2 min"),  # 120.0 s: minutes take over at 120 s
        (7194.0, "2 h"),  # 119.9 min shows as 120 min: hours take over at 120 min
        (172_790.0, "2 d"),  # 47.997 h shows as 48 h: days take over at 48 h
        (0.9994, "999 ms"),  # stays below the boundary once rounded
        (0.05, "50 ms"),
        (-0.9999965, "-1 s"),
    ],
)
def test_duration_unit_is_chosen_after_rounding(seconds: float, shown: str) -> None:
    assert format_duration(seconds) == shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (format_bytes_per_s(999.96e9), "1 TB/s"),  # 999.96 GB/s to 4 digits is 1,000 GB/s
        (format_memory(1023.99 * 2**20), "1 GiB"),  # 1,023.99 MiB to 4 digits is 1,024 MiB
        (format_bytes(999.94e3), "999.9 kB"),
    ],
)
def test_prefix_is_chosen_after_rounding(text: str, shown: str) -> None:
    assert text == shown


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        (1e-300, "s", "1e-300 s"),  # was '0.000...0001 s', some 300 characters
        (1e300, "s", "1e+300 s"),  # was 1.157e294 days written out in full
        (5e-13, "s", "5e-13 s"),  # a thousandth of a ns: below every unit
        (2.5e-9, "s", "2.5 ns"),  # the smallest unit while it reads as a number
        (1e-30, "B/s", "1e-30 B/s"),
        (1e300, "FLOP/s", "1e+300 FLOP/s"),
        (1.5e24, "B/s", "1.5e+24 B/s"),  # 1,500,000 EB/s is past a million of the largest prefix
        (3.35e12, "B/s", "3.35 TB/s"),
    ],
)
def test_tiny_and_huge_values_print_compactly(value: float, unit: str, shown: str) -> None:
    assert format_value(value, unit) == shown

"""Units: parsing and formatting against hand-computed values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lightspeed.errors import UserInputError
from lightspeed.units import (
    bytes_per_element,
    compute_precision,
    format_bytes,
    format_duration,
    format_percent,
    format_ratio,
    parse_bytes,
    parse_count,
    parse_duration,
    parse_percent,
)


def test_gb_is_decimal_and_gib_binary() -> None:
    assert parse_bytes("80GB") == 80e9
    assert parse_bytes("141 GiB") == 141 * 2**30
    assert parse_bytes("1.5TB") == 1.5e12
    assert parse_bytes(42) == 42.0


def test_seed_100t_weights_are_200_tb_or_181_9_tib() -> None:
    weights_bytes = 100e12 * bytes_per_element("bf16")
    assert format_bytes(weights_bytes) == "200 TB"
    assert format_bytes(weights_bytes, binary=True) == "181.9 TiB"


def test_counts_accept_suffixes_and_scientific_notation() -> None:
    assert parse_count("29e12") == 29e12
    assert parse_count("29T") == 29e12
    assert parse_count("405B") == 405e9
    assert parse_count("1.5k") == 1500.0


def test_durations() -> None:
    assert parse_duration("50ms") == pytest.approx(0.05)
    assert parse_duration("2h") == 7200.0
    assert format_duration(0.05) == "50 ms"
    assert format_duration(3.7 * 86400) == "3.7 d"


def test_fp4_block_scales_add_bytes() -> None:
    assert bytes_per_element("fp4") == 0.5
    assert bytes_per_element("nvfp4") == 0.5 + 1 / 16  # one FP8 scale per 16 values
    assert bytes_per_element("mxfp4") == 0.5 + 1 / 32  # one E8M0 scale per 32 values
    assert compute_precision("nvfp4") == "fp4"


def test_ratio_shows_seed_fractions() -> None:
    assert format_ratio(0.8 / 26) == "1/32"
    assert format_ratio(0.8 / 51) == "1/64"
    assert format_ratio(400 / 600) == "0.667x"
    assert format_percent(10_000 / 12_000) == "83.3%"
    assert parse_percent("5%") == pytest.approx(0.05)


@pytest.mark.parametrize("bad", ["eighty GB", "80 parsecs", "", "GB"])
def test_bad_sizes_raise_user_errors(bad: str) -> None:
    with pytest.raises(UserInputError, match="size"):
        parse_bytes(bad)


def test_unknown_precision_lists_the_allowed_ones() -> None:
    with pytest.raises(UserInputError, match="bf16"):
        bytes_per_element("bf15")


@given(st.floats(min_value=1e-3, max_value=1e18, allow_nan=False))
def test_format_then_parse_bytes_round_trips_within_rounding(value: float) -> None:
    text = format_bytes(value, digits=6).replace(",", "").replace(" ", "")
    assert parse_bytes(text) == pytest.approx(value, rel=1e-5)


def test_a_long_run_of_digits_is_refused_by_a_bounded_message() -> None:
    """20,000 digits and a unit that is not one: one short message quoting the start and the
    length (the number pattern has one way to split each text, so the refusal is immediate)."""
    text = "9" * 20_000 + "x GB"
    with pytest.raises(UserInputError) as raised:
        parse_bytes(text)
    message = str(raised.value)
    assert len(message) < 200
    assert "(20,004 characters)" in message

"""Numeric options given numbers no parser should build whole: one line, exit 2, the value cut short.

A whole number of 5,000 digits used to reach ``int()``, which refuses more than 4,300 digits
(``ValueError`` and a traceback), and an exponent of 20 digits reached ``Decimal`` arithmetic
(``decimal.Overflow``). Each option type now says the value is past its limit, and no message
echoes more than a bounded start of the value.
"""

from __future__ import annotations

import click
import pytest

from fuzzing import check
from lightspeed.cli import options
from lightspeed.cli.options import GPUS, Integer, NumericType

DIGITS = "9" * 5000
INFER = ("plan", "infer", "--model", "llama-3-8b", "--system", "dgx-h100")
# every option type the commands share, by name
TYPES = {name: value for name, value in vars(options).items() if isinstance(value, NumericType)}


def _message(kind: NumericType, text: str) -> str:
    with pytest.raises(click.BadParameter) as error:
        kind.convert(text, None, None)
    return error.value.message


def _bounded(message: str) -> None:
    assert "9" * 41 not in message, message  # at most a bounded start of the value
    assert len(message) < 400, message


@pytest.mark.parametrize("name", sorted(TYPES))
def test_every_option_type_refuses_a_5000_digit_number_in_a_bounded_line(name: str) -> None:
    kind = TYPES[name]
    for text in (DIGITS, f"-{DIGITS}", f"0.{DIGITS}1e{DIGITS}", f"{DIGITS}zz"):  # zz: no unit
        message = _message(kind, text)
        _bounded(message)
        if isinstance(kind, Integer) and text == DIGITS:
            assert "above the limit" in message, message
        if isinstance(kind, Integer) and text.startswith("-"):
            assert "below the minimum" in message, message


@pytest.mark.parametrize(
    "text",
    ["1e99999999999999999999", "1e999999999k", "1e9999999999999999999k", "-1e99999999999999999999"],
)
def test_an_exponent_past_decimal_is_past_the_limit(text: str) -> None:
    message = _message(GPUS, text)
    assert ("above the limit" if not text.startswith("-") else "below the minimum") in message


def test_tiny_and_zero_exponents_are_read_as_written() -> None:
    assert "not a whole number" in _message(GPUS, "1e-99999999999999999999")
    assert "below the minimum" in _message(GPUS, "0e99999999999999999999")
    assert "not a whole number" in _message(GPUS, "e99999999999")
    assert "below the minimum" in _message(GPUS, "0" * 5000)
    assert GPUS.convert("0" * 5000 + "8", None, None) == 8  # leading zeros: still exactly 8


def test_values_inside_the_bounds_read_exactly_as_before() -> None:
    assert [GPUS.convert(text, None, None) for text in ("64", "16k", "1_000", "1e3", "+3")] == [
        64,
        16_000,
        1000,
        1000,
        3,
    ]
    assert "99999999999999999999 GPUs is above the limit" in _message(GPUS, "99999999999999999999")
    assert "1e400 overflows a 64-bit float" in _message(options.TOKENS, "1e400")
    assert options.FLOP_TOTAL.convert("1e34", None, None) == 1e34  # past 1e30, still a float
    assert options.PROBABILITY_OPEN.convert("0.5", None, None) == 0.5


def test_the_cli_says_the_option_is_past_its_limit() -> None:
    outcome = check([*INFER, "--tp", DIGITS])
    assert outcome.code == 2
    assert "'--tp'" in outcome.err
    assert "above the limit of 10,000,000" in outcome.err  # a degree: GPUs, stages or ways, no unit
    _bounded(outcome.err)


@pytest.mark.parametrize("option", ["--arrival-rate", "--isl", "--gpus"])
def test_float_and_integer_options_of_the_cli_stay_bounded(option: str) -> None:
    outcome = check([*INFER, option, DIGITS + "zz"])
    assert outcome.code == 2
    _bounded(outcome.err)

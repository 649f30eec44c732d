"""A rate so small its gaps overflow (the CLI fuzz suite's ``--arrival-rate 4.9e-324``) gave
infinite arrival times, then NaN latencies under numpy's warning ("invalid value encountered in
subtract"), printed as figures. Rates start at one request a century, at the API's edge and the
CLI's alike (docs/limits.md)."""

from __future__ import annotations

from typing import Any

import pytest

from lightspeed.errors import UserInputError
from lightspeed.limits import MAX_DURATION_S, MIN_RATE_PER_S
from lightspeed.sol.serve.workload import MIN_ARRIVAL_RATE_PER_S, ArrivalProcess


def test_the_floor_is_one_request_a_century_in_both_places() -> None:
    century_s = 100 * 365.25 * 86400.0  # by hand: 3,155,760,000 s
    assert century_s == MAX_DURATION_S
    assert MIN_ARRIVAL_RATE_PER_S == MIN_RATE_PER_S == pytest.approx(1 / 3.15576e9)


@pytest.mark.parametrize("rate", [4.9e-324, 1e-300, 1e-12])
def test_a_rate_below_the_floor_is_refused(rate: float) -> None:
    with pytest.raises(UserInputError, match="below one request a century"):
        ArrivalProcess.poisson(rate)
    with pytest.raises(UserInputError, match="below one request a century"):
        ArrivalProcess.gamma(rate, 2.0)


def test_the_floor_itself_is_a_rate() -> None:
    assert ArrivalProcess.poisson(MIN_ARRIVAL_RATE_PER_S).rate_per_s == MIN_ARRIVAL_RATE_PER_S


def test_the_cli_refuses_it_in_one_line(run_cli: Any) -> None:
    args = ("plan", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--tp", "1")
    result = run_cli(*args, "--arrival-rate", "4.9e-324")
    assert result.code == 2
    assert "--arrival-rate" in result.err
    assert "below the minimum" in result.err
    assert "Traceback" not in result.err

"""The "other figures the rows publish" table writes a rate as a number, never as a time: a
metric name ending ``_per_s`` is a rate (``tokens_per_s``), one ending ``_s`` otherwise a time."""

from __future__ import annotations

import pytest

from lightspeed.report.validation_rows import figure_text
from lightspeed.sol.validation.structured import METRIC_UNITS

# 84 days in seconds: 84 * 24 * 3600
_EIGHTY_FOUR_DAYS_S = 7_257_600.0


def test_aggregate_tokens_per_s_is_a_rate_not_days() -> None:
    # T108 publishes 2,288,843 aggregate tokens/s; read as seconds it showed as 26.5 d
    assert figure_text("tokens_per_s", 2_288_843.0) == "2,288,843"


@pytest.mark.parametrize("metric", sorted(m for m, unit in METRIC_UNITS.items() if unit.endswith("/s")))
def test_every_rate_metric_is_written_as_a_number(metric: str) -> None:
    assert figure_text(metric, _EIGHTY_FOUR_DAYS_S) == "7,257,600"


@pytest.mark.parametrize("metric", sorted(m for m, unit in METRIC_UNITS.items() if unit == "s"))
def test_every_time_metric_is_written_as_a_duration(metric: str) -> None:
    assert figure_text(metric, _EIGHTY_FOUR_DAYS_S) == "84 d"

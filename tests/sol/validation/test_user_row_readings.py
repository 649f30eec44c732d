"""Metric and measured cells as users write them by hand (units beside the number, unpaired
pieces, node-scoped figures, impossible utilizations, bounds): the reader converts them or says
why not."""

from __future__ import annotations

import pytest

from lightspeed.sol.validation.metric_keys import not_predicted_reason
from lightspeed.sol.validation.published import RowError
from lightspeed.sol.validation.readings import parse_value, read_cell


def _only(metric: str, measured: str):
    readings = read_cell(metric, measured, kind="train")
    assert len(readings) == 1
    return readings[0]


def test_petaflops_written_beside_a_per_gpu_tflops_metric_are_converted() -> None:
    reading = _only("TFLOP/s/GPU", "0.726 PF")
    assert reading.key == "tflop_per_s_per_gpu"
    assert reading.value == pytest.approx(726.0)  # 0.726 PF = 726 TFLOP/s


def test_pflops_per_gpu_is_one_gpus_rate() -> None:
    reading = _only("PFLOP/s per GPU", "0.726")
    assert (reading.key, reading.scope) == ("tflop_per_s_per_gpu", "gpu")
    assert reading.value == pytest.approx(726.0)


def test_aggregate_tflops_is_the_jobs_rate() -> None:
    # read as the aggregate key, in TFLOP/s; the row divides it by its GPUs (46,464 / 64 = 726)
    reading = _only("TFLOP/s (aggregate)", "46,464")
    assert reading.key == "pflop_per_s"
    assert reading.value == pytest.approx(46_464.0)


@pytest.mark.parametrize(
    ("metric", "measured", "pieces", "values"),
    [
        ("Tokens/sec/GPU; MFU", "1660", 2, 1),
        ("step time (s); Tokens/sec/GPU", "1660", 2, 1),
        ("TFLOP/s per GPU; MFU; tokens/s/GPU", "726; 1660", 3, 2),
    ],
)
def test_metric_pieces_without_their_values_refuse_the_row(
    metric: str, measured: str, pieces: int, values: int
) -> None:
    readings = read_cell(metric, measured, kind="train")
    with pytest.raises(RowError, match=f"metric cell has {pieces} pieces.*measured cell {values}: give one"):
        readings[0].per_gpu(8)


@pytest.mark.parametrize(
    ("metric", "per_gpu"),
    [
        ("tokens/s (8 GPUs)", 13_300 / 8),
        ("tokens/s per DGX", 13_300 / 8),
        ("tokens/s per 4 GPUs", 13_300 / 4),
    ],
)
def test_figures_for_a_node_or_a_gpu_count_become_per_gpu(metric: str, per_gpu: float) -> None:
    # on a 64-GPU job: the figure is 8 (or 4) GPUs', not the job's
    reading = _only(metric, "13.3k").per_gpu(8)
    assert (reading.key, reading.scope) == ("tokens_per_s_per_gpu", "gpu")
    assert reading.value == pytest.approx(per_gpu)


@pytest.mark.parametrize(
    ("metric", "measured"), [("MFU", "150%"), ("HFU", "101"), ("tokens/s/GPU; MFU", "1660; 150%")]
)
def test_a_utilization_above_100_percent_is_a_row_error(metric: str, measured: str) -> None:
    readings = read_cell(metric, measured, kind="train")
    with pytest.raises(RowError, match="at most 100%"):
        readings[0].per_gpu(8)


@pytest.mark.parametrize(
    ("text", "value", "note"),
    [
        (">1660", 1660.0, "lower bound '>1660'"),
        ("27000+", 27000.0, "lower bound '27000+'"),
        ("up to 1660", 1660.0, "upper bound 'up to 1660'"),
        ("1600 / 1700", 1600.0, "first of two numbers"),
    ],
)
def test_bounds_and_two_numbers_say_how_they_were_read(text: str, value: float, note: str) -> None:
    read, _, notes = parse_value(text)
    assert read == pytest.approx(value)
    assert any(note in item for item in notes)


def test_a_metric_naming_no_quantity_says_what_to_write() -> None:
    reason = not_predicted_reason("throughput")
    assert "write them in the metric cell" in reason
    assert "tokens/s/GPU" in reason

"""Out of sample: mean TTFT and ITL under Poisson loads and with every request at once, against
TensorRT-LLM's online serving table (the fifth table of benchmarks/perf_overview_check.py; version
0.14 on Triton, Llama 3.1 8B and 70B on H100 and H200, never fitted on). The figures and what is
left are in docs/benchmarks.md."""

from __future__ import annotations

from functools import partial

import pytest

from lightspeed.sol import inference_predictor
from scripts import load_script


def test_the_online_table_is_read_whole_and_a_queue_of_every_request_lands_within_20_percent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = load_script("benchmarks/perf_overview_check.py")
    # the predictions alone: the two more runs per row that draw a latency under load its band
    # (load_bands) change no predicted value and no refusal, and were two thirds of the time
    monkeypatch.setattr(script, "inference_predictor", partial(inference_predictor, load_bands=False))
    result = script.check_online()
    assert result["num_rows"] == 144
    assert result["refused"] == []
    # 500 requests sent at once: the mean TTFT is mostly the queue ahead of each prompt, which
    # the simulator builds request by request (measured 1.7-9.2 s).
    all_at_once = [error for row_id, error in result["rows"].items() if row_id.endswith("QINF-TTFT")]
    assert len(all_at_once) == 12
    assert all(abs(error) <= 0.20 for error in all_at_once), all_at_once

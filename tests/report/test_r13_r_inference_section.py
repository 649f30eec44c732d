"""The report's section of a ``plan infer --json`` estimate, from a hand-written estimate whose
figures are worked out here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightspeed.errors import DataFileError
from lightspeed.report.html_inputs import gather_inputs
from lightspeed.report.html_sections import build_sections
from lightspeed.report.inference_section import inference_section

# One iteration of 20 ms: 15 ms of GEMMs and 5 ms of TP all-reduce (75% and 25% of it); 8 users
# at 100 ms TTFT and a 20 ms TPOT (1 / 20 ms = 50 tok/s each, 400 tok/s over 4 GPUs = 100 each).
ESTIMATE = {
    "ttft_s": 0.1,
    "tpot_s": 0.02,
    "output_tokens_per_s": 400.0,
    "output_tokens_per_s_per_gpu": 100.0,
    "output_tokens_per_s_per_user": 50.0,
    "requests_per_s": 2.0,
    "max_batch": 64,
    "max_batch_limit": "kv cache",
    "model": "tiny",
    "system": "box",
    "num_gpus": 4,
    "plan": {"tp": 4, "pp": 1, "precision": "bf16"},
    "load": {"input_tokens": 1000, "output_tokens": 200},
    "batching": "continuous",
    "batch_per_replica": 8.0,
    "concurrency": 8.0,
    "iteration_s": 0.02,
    "iteration_breakdown_s": {"gemm_compute": 0.015, "tp_comm": 0.005, "ep_comm": 0.0},
    "kv_transfer_s": None,
    "memory_bytes": {"weights": 2**30, "kv_cache": 3 * 2**30},
    "usable_memory_bytes": 4 * 2**30,
    "bound": "compute-bound",
    "simulated": None,
}


def test_the_section_holds_the_worked_figures() -> None:
    section = inference_section(ESTIMATE, source="pi.json")
    headline, parts, memory = section.tables
    rows = {row[0]: row[1] for row in headline.rows}
    assert rows["TTFT"] == "100 ms"
    assert rows["TPOT"] == "20 ms (50.0 tok/s per user)"
    assert rows["output tokens/s"] == "400 tok/s (100 tok/s per GPU)"
    assert parts.caption == "iteration: 20 ms"
    assert parts.rows == (("GEMMs (compute-bound)", "15 ms", "75.0%"), ("TP all-reduce", "5 ms", "25.0%"))
    assert memory.rows[-1] == ("usable", "4 GiB")
    assert section.paragraphs[0] == (
        "tiny on box (4 GPUs): tp=4 pp=1 precision=bf16, continuous batching, ISL/OSL 1000/200 (pi.json)."
    )
    assert "bound: compute-bound" in section.paragraphs


def test_parts_that_do_not_add_up_are_refused() -> None:
    bad = {**ESTIMATE, "iteration_breakdown_s": {"gemm_compute": 0.015}}  # 15 ms of a 20 ms iteration
    with pytest.raises(DataFileError, match=r"add up to 0\.015 s, not the iteration time 0\.02 s"):
        inference_section(bad, source="pi.json")


def test_the_report_places_it_after_the_training_sections(tmp_path: Path) -> None:
    source = tmp_path / "pi.json"
    source.write_text(json.dumps([ESTIMATE, ESTIMATE]))  # a list of estimates: one section each
    keys = [
        section.key
        for section in build_sections(gather_inputs(sources=[str(source)], store_path=tmp_path / "s.sqlite"))
    ]
    assert keys.index("step") < keys.index("inference-1") < keys.index("inference-2") < keys.index("trace")

"""The seed's training scenarios (lightspeed.tour.scenarios, printed by examples/seed_training.py)
checked against the published numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.tour.scenarios import (
    DEEPSEEK_PRETRAIN_GPU_HOURS,
    deepseek_v3_training,
    llama3_405b_training,
    nvlink_cut,
)
from lightspeed.workload import ModelRegistry

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "seed_training.py"


def test_deepseek_v3_gpu_hours_within_25_percent_of_reported(catalog: Catalog, models: ModelRegistry) -> None:
    estimate = deepseek_v3_training(catalog, models)
    # DeepSeek-V3 technical report, Table 1: 2,664K H800 GPU-hours of pre-training on 14.8T tokens.
    assert DEEPSEEK_PRETRAIN_GPU_HOURS == 2.664e6
    assert estimate.gpu_hours == pytest.approx(2.664e6, rel=0.25)
    assert estimate.plan.effective_schedule == "dualpipe"
    assert estimate.num_gpus == 2048
    # The plan ran, so it fit the H800's 80 GB. The engine counts the last stage's two losses (the
    # model's and the MTP module's) at 8 bytes a logit, 2 x 8 x 4,096 x 129,280 = 8.47 GB (DeepSeek's
    # loss code is unpublished), and so overstates the plan's memory by that much at most: within 12%
    # of the usable memory (79.65 GiB), and the tour says it overstates a plan that ran.
    assert estimate.memory_per_gpu_bytes / estimate.usable_memory_bytes < 1.12


def test_nvlink_cut_costs_little_when_overlapped_or_off_node(catalog: Catalog, models: ModelRegistry) -> None:
    deepseek = nvlink_cut(catalog, models, 64)
    inside = nvlink_cut(catalog, models, 8)
    for cut in (deepseek, inside):
        assert cut.h800_overlap_s >= cut.h100_overlap_s  # a slower link never speeds a step up
        assert cut.h800_no_overlap_s >= cut.h100_no_overlap_s
    # EP inside the node puts the all-to-all on NVLink: exposed, the cut shows; overlapped, it hides.
    assert inside.cost_without_overlap > 0.03
    assert inside.cost_with_overlap < inside.cost_without_overlap
    assert deepseek.cost_without_overlap < 0.02  # EP64 rides InfiniBand, as DeepSeek designed it


def test_llama3_405b_within_10_percent_of_the_reported_430_400_380_tflops(
    catalog: Catalog, models: ModelRegistry
) -> None:
    results = llama3_405b_training(catalog, models)
    assert [round(reported, 2) for _, reported in results] == [0.43, 0.41, 0.38]  # Llama 3 paper, Table 4
    # Table 4: 430, 400 and 380 TFLOP/s per GPU (8K on 8,192 and 16,384 GPUs; 131K with CP16).
    for (estimate, _), tflops in zip(results, (430, 400, 380), strict=True):
        assert estimate.tflop_per_s_per_gpu == pytest.approx(tflops, rel=0.10)
        assert estimate.fits


def test_the_example_prints_every_scenario() -> None:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLE), "--json"], capture_output=True, text=True, check=True, timeout=300
    )
    payload = json.loads(completed.stdout)
    assert payload["deepseek_v3"]["reported_gpu_hours"] == 2.664e6
    assert [cut["plan"] for cut in payload["nvlink_cut"]] == ["EP64", "EP8"]
    assert len(payload["llama3_405b"]) == 3

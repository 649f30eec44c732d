"""search infer's goodput finalists come from points within the SLO's limits; the bound sentence
says the HBM streaming ceiling as a ceiling; a GPU count of part of several nodes is refused with
the systems that can be searched."""

from __future__ import annotations

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol.infer.estimate_notes import bound_sentence
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.infer.iteration import ITERATION_PARTS
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad
from lightspeed.sol.infer.search import _best_per_shape, search_inference
from lightspeed.sol.infer.search_space import shape_columns
from lightspeed.sol.serve.goodput_search import _finalists
from lightspeed.sol.serve.run_metrics import ServiceLevel
from lightspeed.workload import ModelRegistry


def test_each_shape_keeps_its_fastest_point_within_the_bounds() -> None:
    """Three shapes, two batches each (by hand): shape A's faster batch breaks the bounds, so its
    slower one stands for it (5); shape B keeps its faster (7); shape C has no feasible batch."""
    a, b, c = (1, 1, 1, 1, 0, 8, 1, 1, 1, 1), (2, 1, 1, 1, 0, 4, 2, 1, 1, 1), (1, 1, 1, 2, 0, 4, 1, 1, 1, 2)
    points = shape_columns([a, a, b, b, c, c])
    per_gpu = np.array([5.0, 9.0, 6.0, 7.0, 10.0, 11.0])
    feasible = np.array([True, False, True, True, False, False])
    chosen, without = _best_per_shape(points, per_gpu, feasible)
    assert chosen.tolist() == [3, 0]  # B at 7, then A at 5
    assert without == 1


@pytest.fixture(scope="module")
def llama_70b_at_slo(catalog: Catalog, models: ModelRegistry):  # type: ignore[no-untyped-def]
    """The search of the expert check: Llama 3 70B on 8 H100, 2000/200 tokens, TTFT <= 500 ms,
    TPOT <= 30 ms (its frontier's two fastest points, tp=1 pp=4 and tp=1 pp=2, run at 261 and
    186 ms a token)."""
    return search_inference(
        model=models.get("llama-3-70b"),
        cluster=catalog.cluster("dgx-h100"),
        load=ServingLoad(2000, 200),
        precision="fp8",
        max_ttft_s=0.5,
        max_tpot_s=0.03,
    )


def test_finalists_are_shapes_that_meet_the_limits(llama_70b_at_slo) -> None:  # type: ignore[no-untyped-def]
    slo = ServiceLevel(ttft_s=0.5, tpot_s=0.03)
    finalists = _finalists(llama_70b_at_slo, 6, None, slo)
    points = {point.plan: point for point in llama_70b_at_slo.feasible_shapes}
    assert len(finalists) == 6
    for plan, rate in finalists:
        point = points[plan.describe()]
        assert point.ttft_s <= 0.5
        assert point.tpot_s <= 0.03
        assert rate == point.output_tokens_per_s_per_gpu
    shapes = {(plan.tp, plan.pp) for plan, _ in finalists}
    assert (1, 2) not in shapes  # its TPOT at one request is already above 30 ms
    assert (1, 4) not in shapes
    assert {(2, 2), (4, 2)} <= shapes  # within the limits, never simulated before
    assert llama_70b_at_slo.num_shapes_infeasible >= 2


def test_a_memory_bound_step_says_its_ceiling_and_what_it_sustained(catalog: Catalog) -> None:
    """Weight reads 3 ms of a 4 ms step at H100's streaming ceiling (80% of 3.35 TB/s = 2.68 TB/s):
    by hand, 2.68 x 3 / 4 = 2.01 TB/s sustained over the step (it said '2.68 TB/s reached')."""
    plan = InferencePlan(tp=8, precision="fp8")
    hardware = inference_hardware_for(catalog.cluster("dgx-h100"), plan)
    assert hardware.stream_bytes_per_s == pytest.approx(3.35e12 * 0.8)
    parts = dict.fromkeys(ITERATION_PARTS, 0.0)
    parts.update(weight_reads=3e-3, launch=1e-3)
    sentence, part = bound_sentence(parts, hardware, plan)
    assert part == "weight_reads"
    assert "streaming ceiling 2.68 TB/s" in sentence
    assert "2.01 TB/s sustained over the step" in sentence
    assert "reached" not in sentence


def test_part_of_several_nodes_is_refused_with_the_systems_that_work(
    catalog: Catalog, models: ModelRegistry
) -> None:
    with pytest.raises(InvalidPlanError) as raised:
        search_inference(
            model=models.get("llama-3-70b"),
            cluster=catalog.parse_cluster("2xdgx-h100"),
            load=ServingLoad(2000, 200),
            precision="fp8",
            num_gpus=12,
        )
    message = str(raised.value)
    assert "--system 2xdgx-h100 without --gpus (16 GPUs)" in message
    assert "--system dgx-h100 --gpus 8" in message
    assert "2 x dgx-h100" not in message  # a cluster name the user never gave

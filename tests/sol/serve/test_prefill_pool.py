"""A disaggregated deployment whose prefill replicas have degrees of their own (NVIDIA Dynamo's and
vLLM's P/D recipes: prefill at TP 1 or 2 or with attention data parallelism beside decode at TP 4
or 8): the plan's GPUs, the checks, the analytic estimate and the simulator, against hand
calculations and the same-shape deployments they must reduce to."""

from __future__ import annotations

import json

import pytest

from expect import one_line_error
from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError, PlanMismatchError
from lightspeed.sol.infer.estimate import estimate_inference
from lightspeed.sol.infer.plan import InferencePlan, PoolShape, ServingLoad, validate_inference_plan
from lightspeed.sol.serve import (
    ArrivalProcess,
    LengthDistribution,
    ServingWorkload,
    simulate,
    simulated_deployment,
)
from lightspeed.workload import ModelRegistry

H100 = "dgx-h100"
QUIET = ArrivalProcess.poisson(0.001)  # requests never overlap


def _workload(isl: int, osl: int, count: int) -> ServingWorkload:
    return ServingWorkload(
        arrivals=QUIET,
        input_lengths=LengthDistribution.fixed(isl),
        output_lengths=LengthDistribution.fixed(osl),
        num_requests=count,
    )


def test_the_plan_counts_each_pool_at_its_size() -> None:
    # vLLM's GLM-5.2 post: 4 prefill instances of TP1 DP4 EP (4 GPUs each) and 1 decode of DP8 EP
    plan = InferencePlan(
        tp=1, dp_attention=8, ep=8, disaggregated=(4, 1), prefill_shape=PoolShape(tp=1, ep=4, dp_attention=4)
    )
    assert plan.num_gpus == 4 * 4 + 1 * 8 == 24
    assert "(prefill tp=1 pp=1 ep=4 dp-attention=4)" in plan.describe()
    prefill = plan.prefill_plan
    assert (prefill.tp, prefill.dp_attention, prefill.ep, prefill.disaggregated) == (1, 4, 4, None)
    with pytest.raises(InvalidPlanError, match="need a disaggregated deployment"):
        InferencePlan(tp=4, prefill_shape=PoolShape(tp=2))
    with pytest.raises(InvalidPlanError, match="prefill tp must be a whole number >= 1"):
        PoolShape(tp=0)


def test_the_prefill_pool_is_checked_and_counted(models: ModelRegistry) -> None:
    model = models.get("llama-3-70b")  # 64 heads
    bad = InferencePlan(tp=4, disaggregated=(1, 1), prefill_shape=PoolShape(tp=3))
    with pytest.raises(InvalidPlanError, match="the prefill pool: tp=3 does not divide"):
        validate_inference_plan(bad, model)
    good = InferencePlan(tp=4, disaggregated=(2, 1), prefill_shape=PoolShape(tp=2))
    validate_inference_plan(good, model, num_gpus=8)  # 2 x 2 + 1 x 4
    with pytest.raises(PlanMismatchError, match="2 prefill replicas of 2 and 1 decode replicas of 4"):
        validate_inference_plan(good, model, num_gpus=12)


def test_the_same_shape_written_out_changes_nothing(catalog: Catalog, models: ModelRegistry) -> None:
    model, cluster = models.get("llama-3-70b"), catalog.cluster(H100)
    load = ServingLoad(4000, 500, arrival_rate_per_s=1.0)
    shared = InferencePlan(tp=4, precision="fp8", disaggregated=(1, 1))
    written = InferencePlan(tp=4, precision="fp8", disaggregated=(1, 1), prefill_shape=PoolShape(tp=4))
    first, second = (
        estimate_inference(model=model, cluster=cluster, plan=plan, load=load) for plan in (shared, written)
    )
    assert (second.ttft_s, second.tpot_s, second.requests_per_s) == (
        first.ttft_s,
        first.tpot_s,
        first.requests_per_s,
    )
    # a TP-2 prefill pool takes longer per prompt: the first token comes later, decoding is the same
    narrow = estimate_inference(
        model=model,
        cluster=cluster,
        plan=InferencePlan(tp=4, precision="fp8", disaggregated=(1, 1), prefill_shape=PoolShape(tp=2)),
        load=load,
    )
    assert narrow.ttft_s > first.ttft_s
    assert narrow.tpot_s == pytest.approx(first.tpot_s)
    assert narrow.num_gpus == 6


def test_the_simulator_prefills_on_the_prefill_pools_shape(catalog: Catalog, models: ModelRegistry) -> None:
    """One TP-2 prefill replica and one TP-4 decode replica on one DGX H100, one request at a time:
    the first token comes when a TP-2 deployment's would, plus the prompt's KV cache (163,840 bytes
    per token of Llama 3 70B) sent by the smaller group, 2 GPUs, over NVLink."""
    model, cluster = models.get("llama-3-70b"), catalog.cluster(H100)
    colocated = simulate(
        model=model,
        cluster=cluster,
        plan=InferencePlan(tp=2, precision="fp8"),
        workload=_workload(8000, 20, 5),
        num_gpus=2,
    )
    plan = InferencePlan(tp=4, precision="fp8", disaggregated=(1, 1), prefill_shape=PoolShape(tp=2))
    deployment = simulated_deployment(model=model, cluster=cluster, plan=plan)
    assert deployment.prefill_pool is not None
    assert deployment.prefill_pool.kv_tokens_per_rank < deployment.kv_tokens_per_rank  # 2 GPUs hold less
    split = simulate(model=model, cluster=cluster, plan=plan, workload=_workload(8000, 20, 5))
    fabric = deployment.hardware.hardware.fabric
    up = fabric.scale_up
    transfer = (
        8000 * 163840 / 2 / (up.bandwidth_per_gpu_bytes_per_s * fabric.bandwidth_efficiency)
        + up.latency_s
        + fabric.base_latency_s
    )
    assert float(deployment.kv_transfer_s(8000)) == pytest.approx(transfer, rel=1e-6)
    # to a tenth of the transfer: it reaches the user before the first token (the simulator once
    # counted it in the decode steps after it)
    assert split.ttft.p50_s == pytest.approx(colocated.ttft.p50_s + transfer, abs=transfer / 10)


def test_the_cli_takes_the_prefill_degrees_and_refuses_them_alone(run_cli) -> None:  # type: ignore[no-untyped-def]
    base = (
        "plan", "infer", "--model", "llama-3-70b", "--system", "dgx-h100", "--precision", "fp8",
        "--isl", "2000", "--osl", "200",
    )  # fmt: skip
    one_line_error(
        run_cli(*base, "--gpus", "4", "--tp", "4", "--prefill-tp", "2"), "need a disaggregated deployment"
    )
    result = run_cli(
        *base, "--gpus", "8", "--tp", "4", "--disaggregated", "2:1", "--prefill-tp", "2", "--json"
    )
    assert result.code == 0, result.err
    assert json.loads(result.out)["plan"]["prefill_shape"] == {"tp": 2, "pp": 1, "ep": 1, "dp_attention": 1}

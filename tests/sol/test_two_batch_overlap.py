"""Two-batch overlap: the all-to-all of one micro-batch hidden behind the other's compute."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import InferencePlan, ServingLoad, estimate_inference, load_serving_stack
from lightspeed.sol.core.serving_choice import serving_stack_for
from lightspeed.sol.core.serving_stacks import ServingStack
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.infer.iteration import IterationGrid, iteration_cost
from lightspeed.workload import ModelRegistry, TransformerSpec

WIDE_EP = InferencePlan(tp=1, ep=16, dp_attention=16, precision="fp8")


def _grid(plan: InferencePlan, sequences: float, context: float) -> IterationGrid:
    def one(value: float) -> np.ndarray:
        return np.asarray([value])

    return IterationGrid(
        tp=one(plan.tp),
        pp=one(plan.pp),
        ep=one(plan.ep),
        dp_attention=one(plan.dp_attention),
        decode_sequences=one(sequences),
        query_tokens=one(1.0),
        decode_context=one(context),
        prefill_tokens=one(0.0),
        prefill_context=one(0.0),
        prefill_requests=one(0.0),
        group_prefill_tokens=one(0.0),
    )


def _all_moe(models: ModelRegistry) -> TransformerSpec:
    model = models.get("deepseek-v3")
    assert model.moe is not None
    return dataclasses.replace(model, moe=dataclasses.replace(model.moe, num_dense_layers=0))


def _parts(
    model: TransformerSpec, catalog: Catalog, plan: InferencePlan, serving: ServingStack, sequences: float
) -> dict[str, float]:
    hardware = inference_hardware_for(catalog.cluster("dgx-h100", num_nodes=2), plan, None, serving)
    cost = iteration_cost(_grid(plan, sequences, 2000.0), model, hardware)
    return {name: float(value[0]) for name, value in cost.parts.items()}


def test_sglang_and_deepseek_overlap_trtllm_does_not() -> None:
    # SGLang's --enable-two-batch-overlap; DeepSeek's day-6 overview (dual micro-batch overlap).
    assert load_serving_stack("sglang-2025").two_batch_overlap
    assert load_serving_stack("deepseek-2025").two_batch_overlap
    assert not load_serving_stack("trtllm-2025").two_batch_overlap
    stack, _ = serving_stack_for("deepseek-ai/open-infra-index day 6 production stats", 2025)
    assert stack.name == "deepseek-2025"


def test_covered_all_to_all_costs_only_the_contention_share(models: ModelRegistry, catalog: Catalog) -> None:
    # A large decode batch at a 2K context: each MoE layer's attention and expert GEMMs take
    # longer than its dispatch + combine over NVLink/IB, so the overlap covers the whole
    # all-to-all and only overlap_contention (0.2 in stacks.toml) of it still costs the step.
    model = _all_moe(models)
    with_tbo = load_serving_stack("sglang-2025")
    without = dataclasses.replace(with_tbo, two_batch_overlap=False)
    plain = _parts(model, catalog, WIDE_EP, without, sequences=16 * 256)
    overlapped = _parts(model, catalog, WIDE_EP, with_tbo, sequences=16 * 256)
    others = sum(value for name, value in plain.items() if name not in ("ep_comm", "launch", "host"))
    assert plain["ep_comm"] < others  # the premise: the layer's other work can hide it
    assert with_tbo.overlap_contention == pytest.approx(0.2)
    assert overlapped["ep_comm"] == pytest.approx(0.2 * plain["ep_comm"], rel=1e-9)
    # each micro-batch reads the layer's weights: at most twice what one batch reads
    assert plain["weight_reads"] <= overlapped["weight_reads"] <= 2 * plain["weight_reads"] + 1e-12
    for name in ("gemm_compute", "attention_compute", "kv_reads", "elementwise"):
        if name in plain:
            assert overlapped[name] == pytest.approx(plain[name], rel=1e-12), name


def test_exposed_all_to_all_is_what_compute_cannot_cover(models: ModelRegistry, catalog: Catalog) -> None:
    # One sequence per GPU: dispatch/combine latency dwarfs the layer's compute, so the overlap
    # saves at most the other work (less the contention share of it), never more.
    model = _all_moe(models)
    with_tbo = load_serving_stack("sglang-2025")
    without = dataclasses.replace(with_tbo, two_batch_overlap=False)
    plain = _parts(model, catalog, WIDE_EP, without, sequences=16.0)
    overlapped = _parts(model, catalog, WIDE_EP, with_tbo, sequences=16.0)
    others = sum(value for name, value in overlapped.items() if name not in ("ep_comm", "launch", "host"))
    assert overlapped["ep_comm"] < plain["ep_comm"]
    assert overlapped["ep_comm"] >= plain["ep_comm"] - others


def test_no_attention_data_parallelism_no_overlap(models: ModelRegistry, catalog: Catalog) -> None:
    model = _all_moe(models)
    with_tbo = load_serving_stack("sglang-2025")
    without = dataclasses.replace(with_tbo, two_batch_overlap=False)
    plan = InferencePlan(tp=16, ep=16, precision="fp8")
    assert _parts(model, catalog, plan, with_tbo, 256.0) == _parts(model, catalog, plan, without, 256.0)


def test_wide_ep_decode_batch_stops_at_the_recipes_per_rank_batch(
    models: ModelRegistry, catalog: Catalog
) -> None:
    # SGLang's 96-H100 recipe (sgl-project/sglang#6017): 72 decode ranks, --max-running-requests
    # 18432 = 256 per rank; the GB200 recipes: 768 per rank. A plain TP deployment keeps the
    # KV-cache limit, and so does a stack without such a recipe.
    model = models.get("deepseek-v3")
    sglang = load_serving_stack("sglang-2025")
    assert sglang.decode_batch_limit("hopper") == 256
    assert sglang.decode_batch_limit("Blackwell") == 768
    assert load_serving_stack("trtllm-2025").decode_batch_limit("hopper") is None
    load = ServingLoad(input_tokens=2000, output_tokens=100)
    cluster = catalog.cluster("dgx-h100", num_nodes=9)
    wide = InferencePlan(tp=1, ep=72, dp_attention=72, precision="fp8", kv_precision="fp8")

    def batch(plan: InferencePlan, serving: ServingStack) -> float:
        estimate = estimate_inference(
            model=model, cluster=cluster, plan=plan, load=load, batching="decode", serving=serving
        )
        return estimate.batch_per_replica

    unlimited = batch(wide, dataclasses.replace(sglang, decode_batch_per_rank=()))
    assert unlimited > 256 * 72  # the KV cache alone would hold more
    assert batch(wide, sglang) == 256 * 72

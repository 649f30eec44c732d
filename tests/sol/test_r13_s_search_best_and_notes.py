"""r13 S: a serving search prints the point it ranked (one TTFT, one TPOT, within the bounds), a
prefill-bound split point decodes the batch its prompt rate keeps, the bound sentence counts the
draft steps, the KV-cache reads of compute-bound attention are said to sit in the attention math,
and a disaggregated split too big for the cluster says so in words that fit."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol import InferencePlan, ServingLoad, SpeculativeDecoding, estimate_inference
from lightspeed.sol.infer.search import FrontierPoint, InferenceSearchResult, search_inference
from lightspeed.workload import ModelRegistry


def _ranked_point(result: InferenceSearchResult) -> FrontierPoint:
    """The best point as the search's grid ranked it: each shape's fastest feasible point, best
    first, so the first is the best deployment's own."""
    point = result.feasible_shapes[0]
    assert point.deployment == result.best.plan
    return point


def _search(
    models: ModelRegistry,
    catalog: Catalog,
    *,
    model: str,
    system: str,
    precision: str,
    bounds: tuple[float, float],
) -> InferenceSearchResult:
    return search_inference(
        model=models.get(model),
        cluster=catalog.cluster(system),
        load=ServingLoad(32768, 1024),
        precision=precision,
        max_ttft_s=bounds[0],
        max_tpot_s=bounds[1],
        disaggregated=True,
    )


def test_r13_s_the_best_split_deployment_is_the_point_the_search_ranked(
    models: ModelRegistry, catalog: Catalog
) -> None:
    """gpt-moe-1.8t on a GB200 NVL72 (the expert check): the printed best had a TTFT of 2.55 s
    under a 2.4 s bound while the same point ranked at 2.32 s (a closed loop of a whole number of
    users, 85 for 84.5, adds 0.5 / 1.96 requests/s = 0.26 s of waiting)."""
    result = _search(
        models, catalog, model="gpt-moe-1.8t", system="gb200-nvl72", precision="nvfp4", bounds=(2.4, 0.050)
    )
    best, point = result.best, _ranked_point(result)
    assert best.plan.disaggregated is not None
    assert best.ttft_s <= 2.4
    assert best.ttft_s == pytest.approx(point.ttft_s, rel=0.01)
    assert best.tpot_s == pytest.approx(point.tpot_s, rel=1e-4)
    assert best.batch_per_replica == pytest.approx(point.batch_per_replica, rel=1e-4)
    assert best.output_tokens_per_s_per_gpu == pytest.approx(point.output_tokens_per_s_per_gpu, rel=1e-4)


def test_r13_s_a_prefill_bound_best_holds_its_bounds_and_its_decode_batch(
    models: ModelRegistry, catalog: Catalog
) -> None:
    """Mixtral 8x7B, 32K-token prompts, 4 TP1 prefill replicas for one TP4 decode replica: the
    prefill pool bounds the rate, so the decode replica holds only what that rate keeps decoding
    (Little's law on it: rate x (OSL - 1) x TPOT / D sequences), not the ladder's 96; the best used
    to print a TTFT of 4.8 s under a 2 s bound (96 users queueing for a prefill)."""
    result = _search(
        models, catalog, model="mixtral-8x7b", system="dgx-h100", precision="fp8", bounds=(2.0, 0.050)
    )
    best, point = result.best, _ranked_point(result)
    assert best.plan.disaggregated is not None
    decoders = best.plan.disaggregated[1]
    assert best.ttft_s <= 2.0
    assert best.tpot_s <= 0.050
    assert best.ttft_s == pytest.approx(point.ttft_s, rel=0.01)
    assert best.tpot_s == pytest.approx(point.tpot_s, rel=1e-4)
    held = best.requests_per_s * 1023 * point.tpot_s / decoders
    assert point.batch_per_replica == pytest.approx(held, rel=1e-4)
    assert best.batch_per_replica == pytest.approx(held, rel=1e-4)


def test_r13_s_an_open_loop_split_counts_every_request_in_flight(
    models: ModelRegistry, catalog: Catalog
) -> None:
    """Requests in flight over separate pools under an arrival rate are Little's law over the
    loop (rate x (TTFT + (OSL - 1) x TPOT)), the prompts in the prefill pool included, as the
    table says ('the rest in the prefill pool or crossing to decode')."""
    estimate = estimate_inference(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-h100"),
        plan=InferencePlan(tp=4, precision="fp8", disaggregated=(1, 1)),
        load=ServingLoad(8000, 500, arrival_rate_per_s=2.0),
    )
    assert estimate.requests_per_s == pytest.approx(2.0, rel=1e-6)
    in_flight = 2.0 * (estimate.ttft_s + 499 * estimate.tpot_s)
    assert estimate.concurrency == pytest.approx(in_flight, rel=1e-9)
    assert estimate.concurrency > estimate.batch_per_replica  # the prompts being prefilled too


def test_r13_s_the_bound_sentence_counts_the_draft_steps(models: ModelRegistry, catalog: Catalog) -> None:
    """5 draft tokens at the cost of a full decode step each: 5 plain decode steps of drafting per
    verify step, which at one sequence reads the same weights as a plain step, so about 5 / 6 = 83%
    of the iteration is drafting; the sentence names it first."""
    estimate = estimate_inference(
        model=models.get("llama-3-8b"),
        cluster=catalog.resolve_cluster("h100-sxm", 1),
        plan=InferencePlan(precision="fp8", speculative=SpeculativeDecoding(5, 0.5, draft_cost_fraction=1.0)),
        load=ServingLoad(1024, 1024, concurrency=1),
    )
    draft_share = estimate.iteration_breakdown_s["draft"] / estimate.iteration_s
    assert draft_share == pytest.approx(5 / 6, abs=0.01)
    assert estimate.bound.startswith("memory-bound: draft steps (speculative decoding) 83%, ")
    assert estimate.bound_part == "draft"


def test_r13_s_compute_bound_attention_says_where_its_kv_reads_are(
    models: ModelRegistry, catalog: Catalog
) -> None:
    """DeepSeek-V3 decode, 8 attention-DP ranks of 32 sequences over ~2,250 tokens: each rank
    reads 32 x 2,250 x 35,136 B (61 layers x a 576-wide FP8 latent) ~ 2.5 GB
    of cache, ~0.66 ms at 3.84 TB/s, while the KV-cache part holds well under a microsecond: the
    reads are inside the (compute-bound) attention math, and an assumption says so."""
    estimate = estimate_inference(
        model=models.get("deepseek-v3"),
        cluster=catalog.cluster("dgx-h200"),
        plan=InferencePlan(tp=1, ep=8, dp_attention=8, precision="fp8"),
        load=ServingLoad(2000, 500, concurrency=256),
        batching="decode",
    )
    reads_s = 32 * 2250 * 35_136 / 3.84e12
    parts = estimate.iteration_breakdown_s
    assert parts["kv_cache"] < 0.01 * reads_s < parts["attention_compute"]
    notes = [line for line in estimate.assumptions if line.startswith("attention kernels priced")]
    assert len(notes) == 1
    assert "attention math" in notes[0]
    assert "holds the KV-cache reads" in notes[0]


def test_r13_s_memory_bound_attention_needs_no_note(models: ModelRegistry, catalog: Catalog) -> None:
    """One sequence at TP8: the decode KV reads bind the attention kernels and sit in the KV-cache
    part, so no note is added."""
    estimate = estimate_inference(
        model=models.get("deepseek-v3"),
        cluster=catalog.cluster("dgx-h200"),
        plan=InferencePlan(tp=8, ep=8, precision="fp8"),
        load=ServingLoad(2000, 500, concurrency=1),
        batching="decode",
    )
    assert estimate.iteration_breakdown_s["kv_cache"] > estimate.iteration_breakdown_s["attention_compute"]
    assert not any(line.startswith("attention kernels priced") for line in estimate.assumptions)


def test_r13_s_a_split_too_big_for_the_cluster_says_what_it_needs(
    models: ModelRegistry, catalog: Catalog
) -> None:
    """1:1 on one GPU: a prefill and a decode replica of one GPU each need 2 GPUs."""
    with pytest.raises(InvalidPlanError) as raised:
        estimate_inference(
            model=models.get("llama-3-8b"),
            cluster=catalog.resolve_cluster("h100-sxm", 1),
            plan=InferencePlan(disaggregated=(1, 1)),
            load=ServingLoad(1024, 256),
        )
    message = str(raised.value)
    assert "the disaggregated split 1:1 needs 2 GPUs" in message
    assert "1 prefill replica of 1 GPU and 1 decode replica of 1 GPU" in message
    assert "has 1; fix: a system of at least 2 GPUs" in message
    assert "1 replicas" not in message


def test_r13_s_too_many_replicas_name_the_count_that_fits(models: ModelRegistry, catalog: Catalog) -> None:
    """16 TP1 replicas on 8 GPUs: 8 fit."""
    with pytest.raises(InvalidPlanError, match=r"needs 16 GPUs .* has 8; fix: --replicas 8 or fewer"):
        estimate_inference(
            model=models.get("llama-3-8b"),
            cluster=catalog.cluster("dgx-h100"),
            plan=InferencePlan(replicas=16),
            load=ServingLoad(1024, 256),
        )

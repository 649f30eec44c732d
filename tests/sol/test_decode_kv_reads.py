"""Decode attention's reads of a grouped-query KV cache per serving profile (issue 27/28): TensorRT-LLM
0.5-0.6's masked MHA kernel runs one thread block per query head, so each query head of a GQA group
reads its KV head again; 0.7's XQA kernel and later servers read each KV head once."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.datafile import Fields
from lightspeed.errors import DataFileError
from lightspeed.sol import InferencePlan, ServingLoad, estimate_inference, load_serving_stack
from lightspeed.sol.core.serving_choice import serving_stack_for
from lightspeed.sol.core.serving_stacks import DECODE_KV_READS, _versions
from lightspeed.sol.core.stacks import choice_of
from lightspeed.workload import ModelRegistry


def _decode_kv_s(models: ModelRegistry, catalog: Catalog, serving: str, model: str, tp: int) -> float:
    """KV-cache seconds of one decode step of 64 sequences (2,048-token prompts) on H100s in FP8."""
    estimate = estimate_inference(
        model=models.get(model),
        cluster=catalog.resolve_cluster("dgx-h100", tp),
        plan=InferencePlan(tp=tp, precision="fp8", max_batch=64),
        load=ServingLoad(2048, 2),
        batching="decode",
        serving=load_serving_stack(serving),
    )
    assert estimate.batch_per_replica == 64
    return estimate.iteration_breakdown_s["kv_cache"]


def test_masked_mha_reads_a_gqa_kv_head_once_per_query_head(models: ModelRegistry, catalog: Catalog) -> None:
    # Llama 2 70B: 64 query heads over 8 KV heads; on a TP4 GPU 16 query heads and 2 KV heads, so
    # each cached KV value is read 16 / 2 = 8 times; the new token's K and V are written once.
    reads_once = _decode_kv_s(models, catalog, "trtllm-2023-xqa", "llama-2-70b", 4)
    per_query_head = _decode_kv_s(models, catalog, "trtllm-2023", "llama-2-70b", 4)
    assert per_query_head / reads_once == pytest.approx(8.0, rel=0.01)  # the new token's K, V: written once


def test_mha_models_and_later_servers_read_each_kv_head_once(models: ModelRegistry, catalog: Catalog) -> None:
    # Llama 2 7B is MHA (32 query heads, 32 KV heads): nothing to read twice, whatever the kernel.
    old = _decode_kv_s(models, catalog, "trtllm-2023", "llama-2-7b", 1)
    assert old == pytest.approx(_decode_kv_s(models, catalog, "trtllm-2023-xqa", "llama-2-7b", 1), rel=1e-12)
    assert float(load_serving_stack("trtllm-2025").decode_kv_reads_per_kv_head(16.0, 2.0)) == 1.0


def test_a_row_naming_its_release_takes_the_profile_of_that_release() -> None:
    assert serving_stack_for("TensorRT-LLM v0.6.1 tables", 2023, (0, 6))[0].name == "trtllm-2023"
    chosen, why = serving_stack_for("TRT-LLM v0.7a", 2023, (0, 7))
    assert chosen.name == "trtllm-2023-xqa"
    assert "0.7" in why
    # no release named: the year decides, and the 0.5-0.6 profile comes first by name
    assert serving_stack_for("TensorRT-LLM A100 table", 2023)[0].name == "trtllm-2023"
    # the 0.7 profile shares the fitted values of 0.5-0.6 (same runtime and GEMMs)
    older, newer = load_serving_stack("trtllm-2023"), load_serving_stack("trtllm-2023-xqa")
    assert newer.group == "trtllm-2023"
    assert (newer.kernel_efficiency, newer.iteration_overhead_s) == (
        older.kernel_efficiency,
        older.iteration_overhead_s,
    )


@pytest.mark.parametrize("versions", [["0.5"], ["0.7", "0.5"], ["v0.5", "0.6"], ["0.5", "x"]])
def test_bad_version_ranges_are_refused(versions: list[str]) -> None:
    with pytest.raises(DataFileError, match="versions"):
        _versions(Fields("stacks.toml", {"versions": versions}))


def test_the_xqa_release_is_as_much_faster_as_nvidia_measured(
    models: ModelRegistry, catalog: Catalog
) -> None:
    # NVIDIA/TensorRT-LLM docs/source/blogs/Falcon180B-H200.md (@3c44cb97): v0.7a's GQA kernels in the
    # generation phase, "up to 2.4x improvement on Llama-70B", measured as v0.7a vs v0.6a on one H200,
    # TP1, FP8, batch 192; the 128/2048 row of the same page ran batch 192 too. The two profiles
    # differ only in decode_kv_reads, so their ratio is that mechanism's alone.
    def throughput(serving: str) -> float:
        return estimate_inference(
            model=models.get("llama-2-70b"),
            cluster=catalog.resolve_cluster("dgx-h200", 1),
            plan=InferencePlan(tp=1, precision="fp8", max_batch=192),
            load=ServingLoad(128, 2048),
            batching="static",
            serving=load_serving_stack(serving),
        ).output_tokens_per_s

    assert throughput("trtllm-2023-xqa") / throughput("trtllm-2023") == pytest.approx(2.4, rel=0.15)


def test_an_unknown_decode_kv_reads_is_refused_and_an_absent_one_reads_once() -> None:
    with pytest.raises(DataFileError, match="decode_kv_reads"):
        choice_of(
            Fields("stacks.toml", {"decode_kv_reads": "per_token"}),
            "decode_kv_reads",
            DECODE_KV_READS,
            "per_kv_head",
        )
    absent = choice_of(Fields("stacks.toml", {}), "decode_kv_reads", DECODE_KV_READS, "per_kv_head")
    assert absent == "per_kv_head"

"""What a server stores the KV cache in when nothing says (``ServingStack.kv_cache_default``):
vLLM's and SGLang's ``--kv-cache-dtype auto`` keeps the model's 16-bit dtype whatever the weights'
format; TensorRT-LLM's quantized checkpoints carry an FP8 cache; Intel Gaudi's FP8 recipe for vLLM
quantizes the cache too. Hand counts below: Llama 3 70B keeps 80 layers x 8 KV heads x 128 x 2 (K
and V) = 163,840 elements a token, split over the 8 GPUs of TP 8."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import InferencePlan, ServingLoad
from lightspeed.sol.core.serving_stacks import load_serving_stack, load_serving_stacks
from lightspeed.sol.infer.estimate import deployment_memory
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.validation.infer_precision import kv_precision
from lightspeed.sol.validation.infer_rows import read_inference_row
from lightspeed.sol.validation.published import PublishedRow, read_table
from lightspeed.workload import ModelRegistry

ELEMENTS_PER_TOKEN_PER_GPU = 80 * 8 * 128 * 2 / 8


def _kv(
    catalog: Catalog, models: ModelRegistry, serving: str, system: str, plan: InferencePlan
) -> tuple[str, float, str]:
    """(KV format, KV bytes a token on a GPU, the notes) of Llama 3 70B at ``plan``."""
    model = models.get("llama-3-70b")
    hardware = inference_hardware_for(
        catalog.resolve_cluster(system), plan, serving=load_serving_stack(serving), model=model
    )
    memory = deployment_memory(model, hardware, plan, ServingLoad(1024, 1024))
    return (
        hardware.precisions.kv_cache,
        float(memory.kv_bytes_per_token[0]),
        " ".join(hardware.precisions.notes),
    )


def test_vllm_and_sglang_keep_a_16_bit_cache_beside_fp8_weights(
    catalog: Catalog, models: ModelRegistry
) -> None:
    plan = InferencePlan(tp=8, precision="fp8")
    for serving in ("vllm-2024", "vllm-2025", "vllm-2026", "sglang-2024", "sglang-2025"):
        kv, per_token, notes = _kv(catalog, models, serving, "dgx-h100", plan)
        assert kv == "bf16", serving
        assert per_token == pytest.approx(ELEMENTS_PER_TOKEN_PER_GPU * 2)  # 40,960 bytes
        assert "keeps the model's dtype" in notes
    # TensorRT-LLM's FP8 engines: an FP8 cache, half the bytes
    kv, per_token, notes = _kv(catalog, models, "trtllm-2025", "dgx-h100", plan)
    assert (kv, per_token) == ("fp8", pytest.approx(ELEMENTS_PER_TOKEN_PER_GPU))
    assert "keeps the model's dtype" not in notes


def test_a_named_cache_format_and_gaudis_recipe_win(catalog: Catalog, models: ModelRegistry) -> None:
    kv, per_token, _ = _kv(
        catalog, models, "vllm-2025", "dgx-h100", InferencePlan(tp=8, precision="fp8", kv_precision="fp8")
    )
    assert (kv, per_token) == ("fp8", pytest.approx(ELEMENTS_PER_TOKEN_PER_GPU))
    kv, _, _ = _kv(catalog, models, "vllm-2024", "hls-gaudi3", InferencePlan(tp=8, precision="fp8"))
    assert kv == "fp8"
    # a 16-bit model's cache is 16-bit on every server, with no note
    kv, per_token, notes = _kv(
        catalog, models, "vllm-2025", "dgx-h100", InferencePlan(tp=8, precision="bf16")
    )
    assert (kv, per_token) == ("bf16", pytest.approx(ELEMENTS_PER_TOKEN_PER_GPU * 2))
    assert "keeps the model's dtype" not in notes


def test_the_profiles_say_which_default_they_keep() -> None:
    defaults = {name: stack.kv_cache_default for name, stack in load_serving_stacks().items()}
    assert {name for name, value in defaults.items() if value == "model"} == {
        "vllm-2024",
        "vllm-2025",
        "vllm-2026",
        "sglang-2024",
        "sglang-2025",
    }
    assert all(load_serving_stack(name).kv_cache_source for name in ("vllm-2025", "sglang-2025"))


def _row(precision: str, model: str = "Llama 3.1 70B") -> PublishedRow:
    return PublishedRow(row_id="r", kind="infer", line=2, cells={"precision": precision, "model": model})


@pytest.mark.parametrize(
    ("precision", "model", "expected"),
    [
        ("FP8 checkpoint; --kv-cache-dtype=fp8_e4m3", "GLM-5", "fp8"),  # SGLang's spelling
        ("FP8 (--kv-cache-dtype fp8_e5m2)", "GLM-5", "fp8"),
        ("NVFP4; kv_cache_config dtype: fp8", "DeepSeek-V3.2", "fp8"),  # TensorRT-LLM's YAML
        ("FP8", "Llama 3.1 70B (amd/Llama-3.1-70B-Instruct-FP8-KV)", "fp8"),  # AMD's Quark checkpoint
        ("FP8", "Llama 3.1 70B (meta-llama/Llama-3.1-70B-FP8)", None),  # names no cache format
        ("bf16 KV cache", "Llama 3.1 70B", "bf16"),
    ],
)
def test_the_reader_takes_the_cache_format_a_row_names(
    precision: str, model: str, expected: str | None
) -> None:
    assert kv_precision(_row(precision, model)) == expected


def test_an_mlperf_row_on_vllm_keeps_the_submissions_fp8_cache(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # AMD's MI300X Llama 2 70B Offline (MLPerf v5.1) runs vLLM, whose default would be bf16; the
    # submission's Quark checkpoint quantizes the KV cache with the weights

    table = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "mlperf-v5.1.tsv"
    row = next(row for row in read_table(table) if row.row_id == "MI300X-offline")
    spec = read_inference_row(row, catalog, models)
    assert spec.serving is not None
    assert load_serving_stack(spec.serving).kv_cache_default == "model"
    assert (spec.plan.precision, spec.plan.kv_precision) == ("fp8", "fp8")
    assert any(note.startswith("KV cache fp8: MLPerf closed submissions") for note in spec.assumptions)

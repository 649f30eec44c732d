"""What the server's memory share is of (``ServingStack.kv_memory_of``): TensorRT-LLM's
``kv_cache_free_gpu_mem_fraction`` (0.9) is of the memory left after the weights; vLLM's
``gpu_memory_utilization`` (0.9) of the whole GPU, the weights, workspace and runtime then taken
from it. Hand relations below; the byte counts are the engine's own memory parts."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import DataFileError
from lightspeed.sol import InferencePlan, ServingLoad, estimate_inference
from lightspeed.sol.core.serving_stacks import load_serving_stack, load_serving_stacks
from lightspeed.sol.infer.estimate import deployment_memory
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.infer.memory import MemoryArrays
from lightspeed.workload import ModelRegistry
from stacks_files import edited_stacks

PLAN = InferencePlan(tp=2, precision="fp8")
LOAD = ServingLoad(1024, 1024)


def _memory(
    catalog: Catalog, models: ModelRegistry, serving: str, deployment: tuple[str, str, InferencePlan]
) -> MemoryArrays:
    model, system, plan = deployment
    hardware = inference_hardware_for(
        catalog.resolve_cluster(system), plan, serving=load_serving_stack(serving), model=models.get(model)
    )
    return deployment_memory(models.get(model), hardware, plan, LOAD)


def test_vllms_share_is_of_the_whole_gpu(catalog: Catalog, models: ModelRegistry) -> None:
    """Llama 2 70B in FP8 on two 48 GB L40S: vLLM's KV cache is 0.9 U - R (U the usable memory, R
    the weights, workspace and runtime a GPU holds), where a share of the free memory would be
    0.9 (U - R): a tenth of R less, 3.5 GB of its 35 GB of weights a GPU."""
    whole = _memory(catalog, models, "vllm-2025", ("llama-2-70b", "l40s", PLAN))
    taken = float(whole.weights_bytes[0] + whole.workspace_bytes[0] + whole.reserved_bytes[0])
    assert taken > 30e9
    assert float(whole.kv_capacity_bytes[0]) == pytest.approx(0.9 * whole.usable_bytes - taken)
    assert float(whole.kv_capacity_bytes[0]) < 0.9 * (whole.usable_bytes - taken) - 3e9
    assert not bool(whole.kv_share_raised)
    free = _memory(catalog, models, "trtllm-2025", ("llama-2-70b", "l40s", PLAN))
    taken = float(free.weights_bytes[0] + free.workspace_bytes[0] + free.reserved_bytes[0])
    assert float(free.kv_capacity_bytes[0]) == pytest.approx(0.9 * (free.usable_bytes - taken))


def test_a_deployment_vllms_default_cannot_start_takes_the_raised_share_and_says_so(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """Kimi K2 (1T parameters, FP8) on eight H200: 90% of 140 GiB less its 129.5 GB of weights a
    GPU, the workspace and the runtime holds no request, so vLLM's default leaves no KV cache; a
    run that served raised gpu_memory_utilization, and the estimate takes the free memory's share
    and says so."""
    plan = InferencePlan(tp=8, precision="fp8")
    whole = _memory(catalog, models, "vllm-2025", ("kimi-k2", "dgx-h200", plan))
    free = _memory(catalog, models, "trtllm-2025", ("kimi-k2", "dgx-h200", plan))
    taken = float(whole.weights_bytes[0] + whole.workspace_bytes[0] + whole.reserved_bytes[0])
    assert 0.9 * whole.usable_bytes - taken < float(whole.kv_bytes_per_sequence[0])
    assert bool(whole.kv_share_raised)
    assert float(whole.kv_capacity_bytes[0]) == float(free.kv_capacity_bytes[0])
    estimate = estimate_inference(
        model=models.get("kimi-k2"),
        cluster=catalog.resolve_cluster("dgx-h200"),
        plan=plan,
        load=LOAD,
        serving="vllm-2025",
    )
    assert any("it has to be raised" in note for note in estimate.assumptions)


@pytest.mark.parametrize(
    ("pattern", "replacement", "words"),
    [
        (r'kv_memory_of = "total"', 'kv_memory_of = "most"', "kv_memory_of"),
        (r"prefill_graph_tokens = 512", "prefill_graph_tokens = -1", "prefill_graph_tokens"),
        (r"prefill_graph_tokens = 512", 'prefill_graph_tokens = "many"', "prefill_graph_tokens"),
        (r'"8" = 0.81', '"8" = 1.5', "kv_memory_share_by_tp.8"),
        (r'"8" = 0.81', '"eight" = 0.81', "kv_memory_share_by_tp"),
        (r'"1" = 0.88\n', "", "start at one GPU"),
    ],
)
def test_a_broken_memory_or_graph_field_is_refused_with_its_name(
    tmp_path: Path, pattern: str, replacement: str, words: str
) -> None:
    with pytest.raises(DataFileError, match=words):
        load_serving_stacks(edited_stacks(tmp_path, pattern, replacement))


@pytest.mark.parametrize(
    ("system", "tp", "share"), [("h100-sxm", 1, 0.88), ("dgx-h100", 2, 0.87), ("dgx-h100", 8, 0.81)]
)
def test_sglangs_share_of_the_whole_gpu_falls_with_tp(
    catalog: Catalog, models: ModelRegistry, system: str, tp: int, share: float
) -> None:
    """SGLang's mem_fraction_static (weights and KV pool) defaults by TP in 0.3-0.4's server_args:
    0.88 at TP 1, 0.87 from 2, 0.85 from 4, 0.81 from 8: Llama 3 8B in FP8 keeps share x U - R."""
    plan = InferencePlan(tp=tp, precision="fp8")
    memory = _memory(catalog, models, "sglang-2025", ("llama-3-8b", system, plan))
    taken = float(memory.weights_bytes[0] + memory.workspace_bytes[0] + memory.reserved_bytes[0])
    assert float(memory.kv_capacity_bytes[0]) == pytest.approx(share * memory.usable_bytes - taken)

"""Serving profiles that share kernels, and the MoE dispatch kernels of prefill and decode."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import DataFileError, UnsupportedError
from lightspeed.sol import InferencePlan, ServingLoad, estimate_inference, load_serving_stack
from lightspeed.sol.core.serving_choice import default_serving_stack, serving_stack_for
from lightspeed.sol.core.serving_stacks import ServingStack, load_serving_stacks
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.infer.iteration import IterationGrid, iteration_cost
from lightspeed.sol.validation.infer_stack import row_serving_stack
from lightspeed.sol.validation.published import PublishedRow
from lightspeed.workload import ModelRegistry
from stacks_files import edited_stacks

WIDE_EP = InferencePlan(tp=1, ep=16, dp_attention=16, precision="fp8")


def test_sglang_and_deepseek_share_the_2025_serving_kernels() -> None:
    # Their published rows are all wide-EP MoE: the dense kernels come from the profile whose
    # rows pin them (TensorRT-LLM 2025), the MoE path's factor from their own rows.
    trtllm = load_serving_stack("trtllm-2025")
    for name in ("sglang-2025", "deepseek-2025"):
        stack = load_serving_stack(name)
        assert stack.kernel_group == "trtllm-2025"
        assert stack.kernel_efficiency == trtllm.kernel_efficiency
    assert load_serving_stack("deepseek-2025").group == "sglang-2025"
    assert (
        load_serving_stack("sglang-2025").attention_dp_efficiency
        == load_serving_stack("deepseek-2025").attention_dp_efficiency
    )


def test_a_dense_deployment_costs_the_same_on_sglang_and_tensorrt_llm(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # No MoE path, no attention DP: nothing but the shared kernels decides the step (the KV cache's
    # format named: SGLang keeps the model's 16-bit dtype by default, TensorRT-LLM FP8).
    cluster = catalog.cluster("dgx-h100", num_nodes=1)
    load = ServingLoad(1024, 1024, concurrency=64)
    plan = InferencePlan(tp=1, replicas=8, precision="fp8", kv_precision="fp8")
    model = models.get("llama-3.1-8b")
    on = {
        name: estimate_inference(model=model, cluster=cluster, plan=plan, load=load, serving=name)
        for name in ("sglang-2025", "trtllm-2025")
    }
    assert on["sglang-2025"].output_tokens_per_s == pytest.approx(on["trtllm-2025"].output_tokens_per_s)


def test_a_shared_kernel_efficiency_edited_on_one_side_is_refused(tmp_path: Path) -> None:
    edited = edited_stacks(
        tmp_path,
        r"(\[serving\.sglang-2025\]\n(?:.*\n)*?)kernel_efficiency = .*\n",
        r"\1kernel_efficiency = 0.31\n",
    )
    with pytest.raises(DataFileError, match=r"sglang-2025.*kernel_efficiency 0.31 differs from trtllm-2025"):
        load_serving_stacks(edited)
    unknown = edited_stacks(tmp_path, r'kernel_fit_group = "trtllm-2025"', 'kernel_fit_group = "trtllm-2099"')
    with pytest.raises(DataFileError, match="kernel_fit_group names no serving profile"):
        load_serving_stacks(unknown)


def test_the_cpp_executor_takes_the_host_time_fitted_on_the_cpp_runtime(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # TensorRT-LLM 0.8-0.21 (TensorRT engines under the C++ executor) has no fitted rows; its step
    # loop is serial on the host like the 0.5-0.7 runtime's, whose fitted host time it takes, while
    # its kernels stay the 2025 profile's.
    executor, runtime = load_serving_stack("trtllm-2024"), load_serving_stack("trtllm-2023")
    assert executor.host_group == "trtllm-2023"
    assert executor.kernel_group == "trtllm-2025"
    assert executor.iteration_overhead_s == runtime.iteration_overhead_s > 0.0
    assert load_serving_stack("trtllm-2025").host_group == "trtllm-2025"
    # a decode step of one sequence pays that host time once, on top of the GPU's work
    plan = InferencePlan(tp=1, precision="fp8")
    hardware = inference_hardware_for(catalog.cluster("dgx-h100", num_nodes=1), plan, None, executor)
    grid = _grid(1.0, 0.0, 1.0)
    parts = iteration_cost(grid, models.get("llama-3.1-8b"), hardware).parts
    assert float(parts["host"][0]) == pytest.approx(runtime.iteration_overhead_s)
    # and the plan says whose value it is
    estimate = estimate_inference(
        model=models.get("llama-3.1-8b"),
        cluster=catalog.cluster("dgx-h100", num_nodes=1),
        plan=plan,
        load=ServingLoad(128, 128, concurrency=1),
        serving="trtllm-2024",
    )
    said = f"{runtime.iteration_overhead_s * 1e3:g} ms host time per iteration (trtllm-2023's fitted value"
    assert any(said in line for line in estimate.assumptions)


def test_a_shared_host_time_edited_on_one_side_is_refused(tmp_path: Path) -> None:
    edited = edited_stacks(
        tmp_path,
        r"(\[serving\.trtllm-2024\]\n(?:.*\n)*?)iteration_overhead_s = .*\n",
        r"\1iteration_overhead_s = 0.003\n",
    )
    differs = r"trtllm-2024.*iteration_overhead_s 0.003 differs from trtllm-2023"
    with pytest.raises(DataFileError, match=differs):
        load_serving_stacks(edited)
    unknown = edited_stacks(tmp_path, r'host_fit_group = "trtllm-2023"', 'host_fit_group = "trtllm-1999"')
    with pytest.raises(DataFileError, match="host_fit_group names no serving profile"):
        load_serving_stacks(unknown)


def _grid(decode_sequences: float, prefill_tokens: float, groups: float) -> IterationGrid:
    def one(value: float) -> np.ndarray:
        return np.asarray([value])

    return IterationGrid(
        tp=one(1.0),
        pp=one(1.0),
        ep=one(groups),
        dp_attention=one(groups),
        decode_sequences=one(decode_sequences),
        query_tokens=one(1.0),
        decode_context=one(2000.0),
        prefill_tokens=one(prefill_tokens),
        prefill_context=one(prefill_tokens / groups),
        prefill_requests=one(1.0 if prefill_tokens else 0.0),
        group_prefill_tokens=one(prefill_tokens / groups),
    )


def _ep_comm(models: ModelRegistry, catalog: Catalog, serving: ServingStack, grid: IterationGrid) -> float:
    hardware = inference_hardware_for(catalog.cluster("dgx-h100", num_nodes=2), WIDE_EP, None, serving)
    return float(iteration_cost(grid, models.get("deepseek-v3"), hardware).parts["ep_comm"][0])


def test_prompt_tokens_cross_the_network_once_per_node_decode_tokens_once_per_expert(
    models: ModelRegistry, catalog: Catalog
) -> None:
    # DeepSeek-V3 routes each token to top_k = 8 experts on at most topk_group = 4 nodes. Prefill
    # runs DeepEP's normal kernels (one copy per destination node); decode its low-latency
    # kernels (one copy per expert). Over two 8-GPU nodes (128 experts each) the InfiniBand half
    # of the all-to-all bounds it, and a token reaches 2 (1 - C(128, 8) / C(256, 8)) of the two
    # nodes, so the bandwidth part of a prompt token costs that over 8 of a decode token's. The
    # difference between two loads removes the fixed latency; two-batch overlap is off so the
    # raw all-to-all is compared.
    serving = dataclasses.replace(load_serving_stack("sglang-2025"), two_batch_overlap=False)
    groups = 16.0
    decode = [
        _ep_comm(models, catalog, serving, _grid(groups * tokens, 0.0, groups)) for tokens in (256, 512)
    ]
    prefill = [
        _ep_comm(models, catalog, serving, _grid(0.0, groups * tokens, groups)) for tokens in (256, 512)
    ]
    reached = 2 * (1 - math.comb(128, 8) / math.comb(256, 8))
    assert (prefill[1] - prefill[0]) / (decode[1] - decode[0]) == pytest.approx(reached / 8, rel=1e-9)


def test_each_server_runs_on_the_accelerators_its_documentation_lists() -> None:
    stacks = load_serving_stacks()
    for name, stack in stacks.items():
        assert stack.vendors, name
        if "tensorrt-llm" in stack.frameworks:  # NVIDIA's, CUDA only
            assert stack.vendors == ("NVIDIA",), name
    assert set(stacks["vllm-2025"].vendors) == {"NVIDIA", "AMD", "Intel", "Google"}


@pytest.mark.parametrize(
    ("vendor", "year", "expected"),
    [
        ("NVIDIA", None, "trtllm-2025"),  # unchanged: the current default
        # a row of 2023 takes the current default's release of its year, not 2025's CUDA graphs
        # and overlap scheduler (LMDeploy 0.1's A100 table naming no known server: Llama 2 70B
        # batch 64 +32.1% on trtllm-2025, -24.6% on trtllm-2023)
        ("NVIDIA", 2023, "trtllm-2023"),
        ("NVIDIA", 2024, "trtllm-2025"),
        ("AMD", 2024, "vllm-2024"),  # vLLM's V0 engine, the 2024 releases
        ("AMD", 2025, "vllm-2025"),
        ("AMD", None, "vllm-2026"),  # the newest without a year
        ("Intel", 2024, "vllm-2024"),
        ("Google", 2025, "vllm-2025"),
    ],
)
def test_a_deployment_naming_no_server_takes_one_that_runs_on_its_accelerators(
    vendor: str, year: int | None, expected: str
) -> None:
    stack, why = default_serving_stack(vendor, year)
    assert stack.name == expected
    assert vendor in stack.vendors
    if vendor != "NVIDIA":
        assert f"does not run on {vendor} accelerators" in why
    elif year is not None and year < stack.to_year and stack.name != "trtllm-2025":
        assert f"release of {year}" in why


def test_a_row_on_amd_naming_no_server_is_read_as_vllm_and_one_naming_tensorrt_llm_is_refused() -> None:
    stack, why = serving_stack_for("MLPerf Inference v5.0 closed, AMD", 2025, vendor="AMD")
    assert stack.name == "vllm-2025"
    assert "vllm is the server AMD documents" in why
    # a row naming both servers (a comparison) takes the one that runs there
    assert serving_stack_for("vLLM 0.6 vs TensorRT-LLM", 2024, vendor="AMD")[0].name == "vllm-2024"
    with pytest.raises(UnsupportedError, match="names tensorrt-llm, which does not run on AMD accelerators"):
        serving_stack_for("TensorRT-LLM 0.17 on MI300X", 2025, vendor="AMD")


def test_an_estimate_on_amd_runs_a_server_that_runs_there(catalog: Catalog, models: ModelRegistry) -> None:
    cluster = catalog.resolve_cluster("mi300x-platform", 8)
    kwargs = {
        "model": models.get("llama-3-70b"),
        "cluster": cluster,
        "plan": InferencePlan(tp=8, precision="fp8"),
        "load": ServingLoad(1024, 256, concurrency=16),
    }
    assert estimate_inference(**kwargs).serving == "vllm-2026"
    with pytest.raises(UnsupportedError, match="does not run on AMD accelerators"):
        estimate_inference(**kwargs, serving="trtllm-2025")


def test_a_profile_with_an_unknown_vendor_is_refused(tmp_path: Path) -> None:
    edited = edited_stacks(tmp_path, r'vendors = \["NVIDIA"\]', 'vendors = ["Nvidia"]')
    with pytest.raises(DataFileError, match="vendors must name at least one of NVIDIA, AMD, Intel, Google"):
        load_serving_stacks(edited)


@pytest.mark.parametrize(
    ("source", "year", "profile"),
    [
        # AMD's results page pins its container: rocm/vllm:rocm7.0.0_vllm_0.10.2_20251006 (V1 engine)
        ("AMD ROCm results (container rocm/vllm:rocm7.0.0_vllm_0.10.2_20251006)", 2024, "vllm-2025"),
        ("a sweep on A100 (vLLM 0.23.0, vllm bench serve)", 2020, "vllm-2026"),  # async by default
        ("a sweep on A100 (vLLM 0.13.0, vllm bench serve)", 2026, "vllm-2025"),
        ("MLPerf v4.1 AMD, vllm==0.4.3", 2025, "vllm-2024"),  # the V0 engine, whatever the year says
        ("vLLM blog, 2025", 2025, "vllm-2025"),  # no version: the year decides
    ],
)
def test_a_pinned_vllm_release_dates_the_server(source: str, year: int, profile: str) -> None:
    row = PublishedRow(row_id="V1", kind="infer", line=2, cells={"source": source})
    assert row_serving_stack(row, year, "NVIDIA")[0].name == profile


@pytest.mark.parametrize(
    ("source", "profile", "note_end"),
    [
        # SGLang's own comparison page: vLLM is named in the path, the release beside SGLang is
        # the row's (it was read as vLLM 0.3, the V0 engine, and its v0.3.0 as TensorRT-LLM's)
        (
            "sgl-project/sglang benchmark/benchmark_vllm_060/README.md, row RPS 4 SGLang "
            "(SGLang v0.3.0; sglang.bench_serving --dataset-name sharegpt)",
            "sglang-2024",  # before the overlap scheduler was on by default (0.3.6)
            "sglang 0.3",
        ),
        ("SGLang v0.4.6 against vLLM 0.6.3 on the same node", "sglang-2025", "sglang, 2024"),
        # of the two releases, the first written is the row's server
        ("vLLM v0.6.3 against SGLang v0.4.6", "vllm-2024", "vllm 0.6"),
        ("TRT-LLM v0.7a, against vLLM", "trtllm-2023-xqa", "tensorrt-llm 0.7"),
    ],
)
def test_a_release_belongs_to_the_server_it_is_written_beside(
    source: str, profile: str, note_end: str
) -> None:
    row = PublishedRow(row_id="V1", kind="infer", line=2, cells={"source": source})
    stack, note = row_serving_stack(row, 2024, "NVIDIA")
    assert (stack.name, note.split(": the row names ")[1]) == (profile, note_end)


@pytest.mark.parametrize(
    ("source", "profile"),
    [
        # a TensorRT-LLM release as release notes, pip and NGC write it (without a "v" each was
        # read by the row's year alone: 0.17's TensorRT engines as the PyTorch backend)
        ("TensorRT-LLM 0.17.0, trtllm-bench", "trtllm-2024"),
        ("pip install trtllm==0.14.0", "trtllm-2024"),
        ("tensorrt_llm 0.12.0 (C++ executor)", "trtllm-2024"),  # not even read as TensorRT-LLM
        ("TensorRT LLM 0.15", "trtllm-2024"),  # the name NVIDIA writes since 2025
        ("nvcr.io/nvidia/tensorrt-llm/release:0.21.0", "trtllm-2024"),
        ("TensorRT-LLM 0.6.1 tables", "trtllm-2023"),
        ("TensorRT-LLM release 0.7", "trtllm-2023-xqa"),
        # from 1.0 the PyTorch backend, whatever year the row is dated by
        ("TensorRT-LLM v1.0.0rc4, trtllm-serve", "trtllm-2025"),
        # vLLM's own image: vllm/vllm-openai:<release>
        ("vllm/vllm-openai:v0.6.4 on 8 x H100", "vllm-2024"),
        ("vllm/vllm-openai:v0.8.5 on 8 x H100", "vllm-2025"),
    ],
)
@pytest.mark.parametrize("year", [2023, 2024, 2025])
def test_a_release_is_read_as_release_notes_pip_and_containers_write_it(
    source: str, profile: str, year: int
) -> None:
    row = PublishedRow(row_id="V1", kind="infer", line=2, cells={"source": source})
    assert row_serving_stack(row, year, "NVIDIA")[0].name == profile


@pytest.mark.parametrize(
    ("text", "profile", "others"),
    [
        # a page comparing servers without releases: the one named first is the row's, and the
        # note says which others it names (the year once chose, whichever profile ran to 2030)
        ("vLLM 2024 sweep on H100, against SGLang", "vllm-2024", "sglang"),
        ("SGLang's benchmark page against vLLM and TensorRT-LLM", "sglang-2025", "tensorrt-llm, vllm"),
    ],
)
def test_of_several_servers_without_a_release_the_first_named_is_the_rows(
    text: str, profile: str, others: str
) -> None:
    stack, note = serving_stack_for(text, 2024)
    assert stack.name == profile
    assert note.endswith(f"(named first; the text also names {others})")


def test_a_release_from_1_0_says_it_dated_the_row() -> None:
    row = PublishedRow(row_id="V1", kind="infer", line=2, cells={"source": "TensorRT LLM 1.1.0"})
    stack, note = row_serving_stack(row, 2023, "NVIDIA", "no year in the source: 2023 for Hopper")
    assert stack.name == "trtllm-2025"
    assert note.endswith("tensorrt-llm, 2025 (release 1.1, the PyTorch backend by default)")


def test_a_profile_chosen_by_a_guessed_year_says_the_year_was_guessed() -> None:
    """A TensorRT-LLM row on an A100 whose source gives no year is dated 2020 by the hardware,
    which picks the 2023 profile: the note says the year is that guess, not the source's."""
    row = PublishedRow(row_id="V1", kind="infer", line=2, cells={"source": "TensorRT-LLM table, quoted"})
    stack, note = row_serving_stack(row, 2020, "NVIDIA", "no year in the source: 2020 for Ampere")
    assert stack.name == "trtllm-2023"
    assert note.endswith("tensorrt-llm, 2020 (no year in the source: 2020 for Ampere)")
    # a release in the source dates the row itself: no year note
    pinned = PublishedRow(row_id="V2", kind="infer", line=2, cells={"source": "TensorRT-LLM release/0.5.0"})
    assert "(" not in row_serving_stack(pinned, 2020, "NVIDIA", "no year in the source: 2020 for Ampere")[1]


@pytest.mark.parametrize(
    ("source", "profile", "note_end"),
    [
        # trtllm-bench build then throughput on the engine: the C++ executor's profile
        ("TensorRT-LLM perf-overview, generated using version 0.17", "trtllm-2024", "tensorrt-llm 0.17"),
        # the same release run with --backend pytorch: the PyTorch backend's profile, dated by it
        (
            "TensorRT-LLM v0.19 (trtllm-bench --backend pytorch)",
            "trtllm-2025",
            "tensorrt-llm, 2025 (release 0.19 on the PyTorch backend)",
        ),
    ],
)
def test_a_release_names_the_executor_unless_the_row_names_the_pytorch_backend(
    source: str, profile: str, note_end: str
) -> None:
    row = PublishedRow(row_id="V1", kind="infer", line=2, cells={"source": source})
    stack, note = row_serving_stack(row, 2024, "NVIDIA", "no year in the source: 2024 for Hopper")
    assert stack.name == profile
    assert note.endswith(note_end)

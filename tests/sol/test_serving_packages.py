"""Servers shipped inside another product: a row that names NVIDIA NIM (its benchmarking pages give
a NIM release, never the TensorRT-LLM one inside it) runs the profile that release ships: NIM 1.x
serves its optimized profiles from pre-compiled TensorRT-LLM engines (NIM docs, "Model Profiles"),
the C++ executor without an overlap scheduler (trtllm-2024); NIM 2.0 ships vLLM 0.17.1 as its
only backend (release notes 2.0.1). Before this, a NIM row took the current default, TensorRT-LLM's
PyTorch backend with its overlap scheduler, whose extra step before a first token the engines
do not have (issue 27: which server ran a published row)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.errors import DataFileError
from lightspeed.sol.core.serving_packages import load_serving_packages
from lightspeed.sol.validation.infer_stack import row_serving_stack
from lightspeed.sol.validation.published import PublishedRow
from stacks_files import edited_stacks

NIM_PAGE = (
    "NVIDIA NIM LLM benchmarking guide, 'Performance' page "
    "(https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance.md; AIPerf), "
    "'Llama-3.3-70b-instruct Results', Version: 1.8.0, '2 x H100 80G'"
)


def _profile(source: str, year: int, vendor: str = "NVIDIA") -> tuple[str, str]:
    row = PublishedRow(row_id="N1", kind="infer", line=2, cells={"source": source})
    stack, note = row_serving_stack(row, year, vendor)
    return stack.name, note


@pytest.mark.parametrize(
    ("source", "year", "profile"),
    [
        (NIM_PAGE, 2025, "trtllm-2024"),  # the labelled release, not the docs path's 1.0.0
        ("nvcr.io/nim/meta/llama-3.1-8b-instruct:1.3.0, genai-perf", 2026, "trtllm-2024"),
        ("NIM for LLMs 1.14.1 on 8 x H200", 2026, "trtllm-2024"),
        ("NVIDIA NIM 24.05 (Llama 3 8B)", 2024, "trtllm-2024"),
        ("NIM v1.8 container", 2025, "trtllm-2024"),
        ("NVIDIA NIM (v1.8.0), Llama 3.3 70B", 2026, "trtllm-2024"),  # the release in parentheses
        ("nim-llm:1.8.0 Helm chart", 2026, "trtllm-2024"),  # NIM LLM's chart and package name
        # a page of the NIM LLM documentation of one release names it; the benchmarking guide's
        # own version (R01's .../benchmarking/llm/1.0.0/) does not
        ("https://docs.nvidia.com/nim/large-language-models/1.8.0/benchmarking.html", 2026, "trtllm-2024"),
        ("https://docs.nvidia.com/nim/large-language-models/2.0.1/release-notes.html", 2026, "vllm-2026"),
        # NIM 2.x ships vLLM only
        ("nvcr.io/nim/meta/llama-3.3-70b-instruct:2.0.1", 2026, "vllm-2026"),
        # no release: up to 2025 every NIM was a 1.x release with TensorRT-LLM engines
        ("NVIDIA NIM benchmarks, Llama 3.1 8B", 2025, "trtllm-2024"),
        # no release in 2026 (1.15 and later ship PyTorch-backend profiles too, 2.x vLLM): the
        # year's default, as a row naming no server
        ("NVIDIA NIM benchmarks, Llama 3.1 8B", 2026, "trtllm-2025"),
        ("NIM for LLMs 1.15.2", 2026, "trtllm-2025"),
    ],
)
def test_a_nim_release_runs_the_server_it_ships(source: str, year: int, profile: str) -> None:
    assert _profile(source, year)[0] == profile


def test_the_note_names_the_package_and_its_release() -> None:
    assert _profile(NIM_PAGE, 2025)[1] == (
        "serving stack trtllm-2024: the row names NVIDIA NIM for LLMs 1.8, which ships it"
    )
    assert _profile("NVIDIA NIM 24.05", 2024)[1].endswith("NVIDIA NIM for LLMs 24.05, which ships it")


@pytest.mark.parametrize(
    ("source", "profile"),
    [
        # a server the row names with its release is the row's, whatever package carries it
        ("NIM 1.8.0 (TensorRT-LLM v1.0, PyTorch backend)", "trtllm-2025"),
        # a server named without a release: its own profile by year, not the package's
        ("NIM 1.8.0, vLLM backend profile", "vllm-2025"),
        # words that contain "nim" are not NIM; a docs path alone does not name it
        ("minimal latency sweep, TensorRT-LLM 0.17.0", "trtllm-2024"),
        ("https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance.md", "trtllm-2025"),
        ("animated demo, 2025", "trtllm-2025"),
    ],
)
def test_a_server_the_row_names_wins_and_only_the_word_names_nim(source: str, profile: str) -> None:
    assert _profile(source, 2025)[0] == profile


@pytest.mark.parametrize(
    ("source", "year", "profile"),
    [
        # Triton's TensorRT-LLM container: its release gives the TensorRT-LLM inside (24.10: 0.14),
        # whose backend runs engines; the row naming TensorRT-LLM without a release of its own
        # took the year's profile, the PyTorch backend, before
        ("nvcr.io/nvidia/tritonserver:24.10-trtllm-python-py3, Llama 3 8B", 2024, "trtllm-2024"),
        ("Triton Inference Server 24.07 with the TensorRT-LLM backend", 2025, "trtllm-2024"),
        ("Triton Inference Server, TensorRT-LLM backend", 2025, "trtllm-2024"),
        ("Triton Inference Server, TensorRT-LLM backend", 2026, "trtllm-2025"),
        # a later container (TensorRT-LLM 1.0 on) is not listed: the year's profile
        ("nvcr.io/nvidia/tritonserver:25.10-trtllm-python-py3", 2025, "trtllm-2025"),
        # Triton's vLLM container is vLLM's
        ("nvcr.io/nvidia/tritonserver:24.10-vllm-python-py3", 2024, "vllm-2024"),
        # NIM naming TensorRT-LLM without a release: what NIM 1.8 ships (was the year's profile)
        ("NIM 1.8.0, TensorRT-LLM backend", 2025, "trtllm-2024"),
        # "Triton" alone is also OpenAI's kernel language: not the server
        ("OpenAI Triton attention kernels, TensorRT-LLM", 2025, "trtllm-2025"),
    ],
)
def test_a_triton_container_runs_the_tensorrt_llm_release_it_ships(
    source: str, year: int, profile: str
) -> None:
    assert _profile(source, year)[0] == profile


def test_a_nim_row_on_another_vendors_gpus_is_not_given_nvidias_engines() -> None:
    """The package's profile runs on NVIDIA GPUs only: a row on AMD's takes the vendor's server."""
    assert _profile("NIM 1.8.0 on MI300X", 2025, vendor="AMD")[0] == "vllm-2025"
    assert _profile("NIM 1.8.0 on MI300X", 2026, vendor="AMD")[0] == "vllm-2026"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (r'\["1\.0", "1\.14", "trtllm-2024"\]', '["1.0", "1.14", "tgi-2024"]', "lead to a serving profile"),
        (r'\["1\.0", "1\.14", "trtllm-2024"\]', '["1.14", "1.0", "trtllm-2024"]', "comes after the last"),
        (r'\["1\.0", "1\.14", "trtllm-2024"\]', '["one", "1.14", "trtllm-2024"]', "major.minor"),
        (r'\["1\.0", "1\.14", "trtllm-2024"\]', '["1.0", "trtllm-2024"]', "expected"),
        (r'undated_profile = "trtllm-2024"', 'undated_profile = "nim-engines"', "names no serving profile"),
        (r'image = "nvcr.io/nim/"', 'imge = "nvcr.io/nim/"', "unknown field"),
    ],
)
def test_a_broken_package_table_is_refused_with_the_field(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    with pytest.raises(DataFileError, match=message) as refused:
        load_serving_packages(edited_stacks(tmp_path, old, new))
    assert "serving_package.nim" in str(refused.value)

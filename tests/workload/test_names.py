"""Model names as published rows write them resolve to one model, or to none when they could mean two."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.errors import UnknownNameError
from lightspeed.workload import ModelRegistry, load_models
from lightspeed.workload.names import checkpoint_format, reduce_name

# Names copied from Hugging Face repositories, MLPerf submissions (v4.1-v5.1 benchmark names),
# vendor blogs and InferenceMAX/SemiAnalysis tables, with the architecture each one is.
PUBLISHED_NAMES = [
    # Ollama's tags (family:size-variant), as local-serving benchmarks name their models
    ("llama3.1:8b", "llama-3.1-8b"),
    ("llama3.1:70b-instruct-fp16", "llama-3.1-70b"),
    ("qwen2.5:72b", "qwen2.5-72b"),
    ("Llama-2-70b-chat-hf", "llama-2-70b"),
    ("meta-llama/Llama-2-70b-chat-hf", "llama-2-70b"),
    ("TheBloke/Llama-2-70B-Chat-GPTQ", "llama-2-70b"),
    ("Llama 3.3 70B Instruct FP8", "llama-3.3-70b"),
    ("nvidia/Llama-3.3-70B-Instruct-FP4", "llama-3.3-70b"),
    ("RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8-dynamic", "llama-3.1-70b"),
    ("neuralmagic/Meta-Llama-3.1-8B-Instruct-quantized.w8a8", "llama-3.1-8b"),
    ("amd/Llama-3.1-405B-Instruct-FP8-KV", "llama-3.1-405b"),
    ("Llama 3.1 405B FP8", "llama-3.1-405b"),
    ("nvidia/DeepSeek-R1-FP4", "deepseek-v3"),
    ("nvidia/DeepSeek-R1-0528-FP4", "deepseek-v3"),
    ("Mixtral 8x7B Instruct v0.1", "mixtral-8x7b"),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
    ("mistralai/Mistral-7B-Instruct-v0.1", "mistral-7b-v0.1"),
    ("Mistral-7B-Instruct-v0.3-FP8", "mistral-7b"),
    ("mistralai/Mistral-Large-Instruct-2411-FP8", "mistral-large-2"),
    ("Qwen3-32B-FP8", "qwen3-32b"),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "qwen3-235b-a22b-instruct-2507"),
    ("Qwen/Qwen3-235B-A22B-Thinking-2507", "qwen3-235b-a22b-instruct-2507"),
    ("Qwen/Qwen2.5-72B-Instruct-AWQ", "qwen2.5-72b"),
    ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "qwen2.5-7b"),
    ("google/gemma-3-27b-it", "gemma-3-27b"),
    # MLPerf Inference benchmark names: accuracy target and the interactive scenario
    ("llama2-70b-99.9", "llama-2-70b"),
    ("llama2-70b-99", "llama-2-70b"),
    ("llama2-70b-interactive-99", "llama-2-70b"),
    ("mixtral-8x7b-99", "mixtral-8x7b"),
    ("llama3.1-405b", "llama-3.1-405b"),
    ("llama3.1-8b", "llama-3.1-8b"),
    # spaces, dashes and a family glued to its number are one spelling
    ("Llama3 70B", "llama-3-70b"),
    ("Llama 3 8B Instruct FP8", "llama-3-8b"),
    ("Llama-3.2-1B-Instruct-FP8", "llama-3.2-1b"),
    # models added for the names published rows use (issue 28, coverage)
    ("microsoft/phi-4", "phi-4"),
    ("Qwen/Qwen2-72B-Instruct", "qwen2-72b"),
    ("mistralai/Mistral-Small-24B-Instruct-2501", "mistral-small-24b"),
    ("Mistral NeMo 12B Instruct FP8", "mistral-nemo-12b"),
    ("databricks/dbrx-instruct", "dbrx"),
    ("01-ai/Yi-34B-Chat", "yi-34b"),
    ("Command R+", "command-r-plus"),
    # GLM-4.5, Phi-3 and Phi-3.5-MoE (issue 28, 2025-26 rows); V3.1 is V3's architecture
    ("GLM-4.5", "glm-4.5"),
    ("zai-org/GLM-4.5", "glm-4.5"),
    ("THUDM/GLM-4.5", "glm-4.5"),
    ("zai-org/GLM-4.5-FP8", "glm-4.5"),
    ("zai-org/GLM-4.5-Base", "glm-4.5"),
    ("GLM-4.5-Air", "glm-4.5-air"),
    ("zai-org/GLM-4.5-Air", "glm-4.5-air"),
    ("zai-org/GLM-4.5-Air-FP8", "glm-4.5-air"),
    ("Phi-3 mini", "phi-3-mini"),
    ("microsoft/Phi-3-mini-4k-instruct", "phi-3-mini"),
    ("Phi-3 medium", "phi-3-medium"),
    ("microsoft/Phi-3-medium-4k-instruct", "phi-3-medium"),
    ("Phi-3.5-MoE", "phi-3.5-moe"),
    ("Phi-3.5-MoE-instruct", "phi-3.5-moe"),
    ("microsoft/Phi-3.5-MoE-instruct", "phi-3.5-moe"),
    ("DeepSeek-V3.1", "deepseek-v3"),  # same architecture as V3
    # Megatron-Bridge's performance summary (docs/performance-summary.md): the family's V glued,
    # words joined by underscores, the family in capitals
    ("DeepSeekV3", "deepseek-v3"),
    ("DeepseekV2", "deepseek-v2"),
    ("Qwen3_30B_a3B", "qwen3-30b-a3b"),
    ("LLAMA3.1_405B", "llama-3.1-405b"),
    ("GPT OSS 120B", "gpt-oss-120b"),
    ("Yi-6B-Chat", "yi-6b"),  # community benchmarks on one RTX 4090
    ("phi-4", "phi-4"),  # Phi-4 stays Phi-4
]


@pytest.mark.parametrize(("name", "expected"), PUBLISHED_NAMES)
def test_published_names_resolve_to_their_architecture(
    registry: ModelRegistry, name: str, expected: str
) -> None:
    found = registry.find(name)
    assert found is not None, name
    assert found.spec.name == expected


def test_a_family_and_its_point_release_do_not_collide(registry: ModelRegistry) -> None:
    # llama-3 with 8B and llama-3.2 with 1B reduce to different keys; 3.2 8B does not exist.
    assert reduce_name("Llama 3 8B").base != reduce_name("Llama 3.2 1B").base
    assert registry.find("Llama-3.2-8B-Instruct") is None


def test_a_version_the_model_does_not_list_is_no_match(registry: ModelRegistry) -> None:
    # No file lists a Mistral 7B v0.4: refused, never v0.1, v0.2 or v0.3. v0.2 (no window, like
    # v0.3, but v0.1's 32,000-token vocabulary) is neither v0.1 nor v0.3: it has its own file.
    assert registry.find("mistralai/Mistral-7B-Instruct-v0.4") is None
    assert registry.get("mistralai/Mistral-7B-Instruct-v0.2").name == "mistral-7b-v0.2"
    assert registry.get("Mistral-7B-Instruct-v0.1-FP8").name == "mistral-7b-v0.1"


def test_a_name_two_models_reduce_to_is_refused_naming_both(registry: ModelRegistry) -> None:
    # "MPT 7B" is both the llm-foundry recipe (mpt-7b) and MosaicML's release (mosaicml-mpt-7b);
    # the exact name picks one, a checkpoint name with a format tag is ambiguous.
    assert registry.get("mpt-7b").name == "mpt-7b"
    assert registry.find("MPT-7B-FP8") is None
    assert registry.matches("MPT-7B-FP8") == ["mosaicml-mpt-7b", "mpt-7b"]
    with pytest.raises(UnknownNameError) as raised:
        registry.get("MPT-7B-FP8")
    assert "mosaicml-mpt-7b" in str(raised.value)
    assert "mpt-7b," in str(raised.value)


def test_a_user_model_that_makes_a_name_ambiguous_is_caught(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    original = (Path(__file__).parents[2] / "src/lightspeed/workload/data/models/qwen3-32b.toml").read_text()
    path.write_text(
        original.replace('name = "qwen3-32b"', 'name = "qwen-3-32b-chat"').replace(
            '["qwen/qwen3-32b", "qwen/qwen3-32b-base"]', "[]"
        ),
        encoding="utf-8",
    )
    registry = load_models([path])
    assert registry.get("qwen3-32b").name == "qwen3-32b"  # exact names still win
    assert registry.matches("Qwen3-32B-FP8") == ["qwen-3-32b-chat", "qwen3-32b"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("nvidia/DeepSeek-R1-FP4", "fp4"),
        ("RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8-dynamic", "fp8"),
        ("neuralmagic/Meta-Llama-3.1-8B-Instruct-quantized.w8a8", "w8a8"),
        ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "gptq"),
        ("openai/gpt-oss-120b", None),
        ("Llama 3.3 70B Instruct", None),
    ],
)
def test_the_checkpoint_format_a_name_states(name: str, expected: str | None) -> None:
    assert checkpoint_format(name) == expected

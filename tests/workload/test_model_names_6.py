"""Model names published tables write that the registry did not match (names, round 6).

An MoE by its total alone or with an active count its own name lacks (``Qwen3 235B``,
``DeepSeek-V3 671B-A37B``), a note in parentheses after the name (``Qwen3-235B (MoE)``), a bare
size with the architecture in parentheses (``70B (Meta Llama3 architecture)``), Megatron-Bridge's
recipe names (``llama31_405b``) and a known fine-tune family named after its base
(``Hermes-3-Llama-3.1-405B-FP8``); and the names whose results must not move: distillations,
Qwen2.5-Coder, and the unsupported models, which stay refused with their reason.
"""

from __future__ import annotations

import pytest

from lightspeed.workload import ModelRegistry
from lightspeed.workload.names import name_readings, reduce_name, split_active

# (name as a published table writes it, the one model it must resolve to); none matched before
RESOLVES = [
    # Qwen3 235B-A22B: Qwen3 has no dense 235B, so the total alone names the MoE
    ("Qwen3-235B", "qwen3-235b-a22b"),
    ("Qwen3 235B", "qwen3-235b-a22b"),
    ("Qwen3-235B (MoE)", "qwen3-235b-a22b"),
    ("Qwen3 235B (MoE, 22B active)", "qwen3-235b-a22b"),
    ("Qwen3-MoE 235B-A22B", "qwen3-235b-a22b"),
    ("Qwen3-235B (Qwen/Qwen3-235B-A22B)", "qwen3-235b-a22b"),
    ("Qwen3-235B-A22B (MoE)", "qwen3-235b-a22b"),
    ("Qwen3 30B", "qwen3-30b-a3b"),
    # an active count the model's own spellings leave out
    ("DeepSeek-V3 671B-A37B", "deepseek-v3"),
    ("DeepSeek-V2 236B-A21B", "deepseek-v2"),
    # Megatron-Bridge's recipe names: the family's version undotted, glued, underscores
    ("llama31_405b", "llama-3.1-405b"),
    ("llama31_70b", "llama-3.1-70b"),
    ("llama31_8b", "llama-3.1-8b"),
    ("llama32_1b", "llama-3.2-1b"),
    ("llama33_70b", "llama-3.3-70b"),
    ("qwen25_72b", "qwen2.5-72b"),
    # a bare size, the architecture in parentheses
    ("70B (Meta Llama3 architecture)", "llama-3-70b"),
    ("405B (Meta Llama3 architecture)", "llama-3-405b"),
    # fine-tune families named after their base, whose shapes they keep
    ("Hermes-3-Llama-3.1-405B-FP8", "llama-3.1-405b"),
    ("NousResearch/Hermes-3-Llama-3.1-70B", "llama-3.1-70b"),
    ("NousResearch/Hermes-2-Pro-Llama-3-8B", "llama-3-8b"),
    ("NousResearch/Nous-Hermes-2-Mixtral-8x7B-DPO", "mixtral-8x7b"),
    ("cognitivecomputations/dolphin-2.9-llama3-8b", "llama-3-8b"),
    ("allenai/Llama-3.1-Tulu-3-8B", "llama-3.1-8b"),
    ("allenai/Llama-3.1-Tulu-3-70B-DPO", "llama-3.1-70b"),
]


@pytest.mark.parametrize(("name", "expected"), RESOLVES)
def test_published_names_resolve_to_their_model(registry: ModelRegistry, name: str, expected: str) -> None:
    assert registry.matches(name) == [expected]
    assert registry.get(name).name == expected
    assert registry.unsupported_model(name) is None


# Names that matched before and must keep their model: a "contains a base's name" rule would move
# the distillations (Distill-Qwen-7B is Qwen2.5-Math-7B's shapes, not a "Qwen 7B").
KEEPS = [
    ("DeepSeek-R1-Distill-Llama-70B", "llama-3.3-70b"),
    ("DeepSeek-R1-Distill-Llama-8B", "llama-3.1-8b"),
    ("DeepSeek-R1-Distill-Qwen-1.5B", "deepseek-r1-distill-qwen-1.5b"),
    ("DeepSeek-R1-Distill-Qwen-7B", "qwen2.5-7b"),
    ("DeepSeek-R1-Distill-Qwen-32B", "qwen2.5-32b"),
    ("Qwen2.5-Coder-32B", "qwen2.5-32b"),
    ("Llama-3.1-Nemotron-70B-Instruct", "llama-3.1-70b"),
    ("llama3_70b", "llama-3-70b"),
    ("llama3_8b", "llama-3-8b"),
    ("Llama-33B", "llama-33b"),  # a size, never a version 3.3
    ("Falcon-40B", "falcon-40b"),
    ("Qwen3-30B-A3B", "qwen3-30b-a3b"),
    ("Mistral-7B-Instruct-v0.1", "mistral-7b-v0.1"),
]


@pytest.mark.parametrize(("name", "expected"), KEEPS)
def test_names_that_matched_keep_their_model(registry: ModelRegistry, name: str, expected: str) -> None:
    assert registry.matches(name) == [expected]


def test_every_unsupported_spelling_stays_refused_with_its_reason(registry: ModelRegistry) -> None:
    for model in registry.unsupported.values():
        for spelling in (model.name, *model.spellings):
            assert registry.matches(spelling) == [], spelling
            refused = registry.unsupported_model(spelling)
            assert refused is not None, spelling
            assert refused.name == model.name


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Llama-3.3-Nemotron-Super-49B", "llama-3.3-nemotron-super-49b"),
        ("nvidia/Llama-3_3-Nemotron-Super-49B-v1", "llama-3.3-nemotron-super-49b"),
        ("Llama-3.1-Nemotron-Ultra-253B", "llama-3.1-nemotron-ultra-253b"),
        # the readings that now match reach the unsupported models too
        ("Llama-3.3-Nemotron-Super-49B-v1.5 (FP8)", "llama-3.3-nemotron-super-49b"),
    ],
)
def test_unsupported_models_are_refused_in_every_reading(
    registry: ModelRegistry, name: str, expected: str
) -> None:
    assert registry.find(name) is None
    refused = registry.unsupported_model(name)
    assert refused is not None
    assert refused.name == expected


@pytest.mark.parametrize(
    "name",
    [
        "Qwen3-30B-A5B",  # an active count that differs from the model's: another model
        "Hermes-4-405B",  # a fine-tune family with no base named
        "EAGLE3-LLaMA3.1-Instruct-8B",  # a draft head, not a fine-tune family on the list
        "70B (MoE)",  # a size and a note, no architecture
        "Meta Llama3",  # an architecture without a size
    ],
)
def test_names_that_say_too_little_or_something_else_match_nothing(
    registry: ModelRegistry, name: str
) -> None:
    assert registry.matches(name) == []


def test_a_models_own_display_name_means_that_model(registry: ModelRegistry) -> None:
    # a note in parentheses is not dropped before the model's own display name is tried:
    # "MPT-7B (MosaicML, released checkpoint)" is MosaicML's release, never the llm-foundry recipe
    assert registry.matches("MPT-7B (MosaicML, released checkpoint)") == ["mosaicml-mpt-7b"]
    assert registry.matches("MPT-7B (llm-foundry benchmark config)") == ["mpt-7b"]
    for name, entry in registry.entries.items():
        assert registry.matches(entry.spec.display_name) == [name], entry.spec.display_name


def test_the_reductions_behind_the_rules() -> None:
    assert reduce_name("llama31_405b").base == reduce_name("Llama-3.1-405B").base
    assert reduce_name("Llama-33B").base != reduce_name("Llama 3.3 70B").base
    assert split_active(reduce_name("Qwen3-235B-A22B").base) == ("qwen3-235b", "a22b")
    assert split_active(reduce_name("DeepSeek-V3").base) == (reduce_name("DeepSeek-V3").base, None)
    assert name_readings("70B (Meta Llama3 architecture)")[-1] == "Meta Llama3 70B"
    assert name_readings("Hermes-3-Llama-3.1-405B-FP8")[-1] == "llama-3.1-405b-fp8"


def test_a_row_naming_qwen3_235b_gets_the_moe_not_a_dense_model(registry: ModelRegistry) -> None:
    # the row that was refused "ep=32 needs a mixture-of-experts model; qwen3-235b is dense": its
    # model cell no longer falls through to a dense model built from its cells
    from lightspeed.sol.validation.published import PublishedRow
    from lightspeed.sol.validation.row_model import resolve_model

    row = PublishedRow("W04", "train", 2, {"model": "Qwen3-235B (Qwen/Qwen3-235B-A22B)", "params(B)": "235"})
    spec, note = resolve_model(registry, row)
    assert spec.name == "qwen3-235b-a22b"
    assert spec.moe is not None
    assert "catalog model" in note

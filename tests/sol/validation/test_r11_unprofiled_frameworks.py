"""A row naming a framework lightspeed has no profile for says so (it was recognised), and is
predicted on the default profile as a row naming none is."""

from __future__ import annotations

import pytest

from lightspeed.sol.core.stacks import default_stack_name, stack_for


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ("Colossal-AI benchmark 2024", "Colossal-AI"),
        ("facebookresearch/fairscale FSDP, 2024", "FairScale"),
        ("EleutherAI GPT-NeoX 20B paper", "GPT-NeoX"),
    ],
)
def test_an_unprofiled_framework_is_named_in_the_note(source: str, named: str) -> None:
    stack, note = stack_for(source, 2024)
    assert stack.name == default_stack_name()
    assert f"names {named}, which has no profile" in note
    assert "names no framework" not in note


def test_a_text_naming_no_framework_says_so() -> None:
    stack, note = stack_for("a vendor blog, 2024", 2024)
    assert stack.name == default_stack_name()
    assert "names no framework" in note


def test_before_2023_an_unprofiled_framework_takes_megatrons_profile_of_its_year() -> None:
    stack, note = stack_for("GPT-NeoX 2021 run", 2021)
    assert "megatron" in stack.frameworks
    assert "names GPT-NeoX, which has no profile: the Megatron profile of its year" in note

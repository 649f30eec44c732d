"""``compare systems --decompose``: the "memory" change swaps every memory figure the planner reads.

The planner sizes a GPU by ``memory_device_bytes``: the driver's reported figure where the catalog
has one. Swapping only the listed and nominal capacities left the baseline's reported capacity in
place, so "8 x dgx-h100 with gb200's HBM" kept 79.65 GiB and "dgx-b200 with h100-sxm's HBM" kept
179 GiB (a plan for 811 GB of Llama 3.1 405B weights on eight 80 GB GPUs).
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from lightspeed.catalog import Accelerator, Catalog
from lightspeed.sol import ServingLoad, decompose_ratio
from lightspeed.sol.decomposition import _Ends
from lightspeed.tour.scenarios import GPT_MOE_SYSTEMS, gpt_moe_serving_options
from lightspeed.workload import ModelRegistry

MIB = 2**20


def _memory_fields() -> list[str]:
    return [field.name for field in dataclasses.fields(Accelerator) if "memory" in field.name]


def test_memory_change_carries_the_capacity_the_planner_reads(catalog: Catalog) -> None:
    h100, b200 = (catalog.resolve_cluster(name) for name in ("2xdgx-h100", "dgx-b200"))
    ends = _Ends(h100, b200, "bf16", "bf16")
    borrowed, _, name = ends.coalition(frozenset({"memory"}))
    assert name.endswith("with b200's HBM")
    # the driver's figures the catalog cites: B200 183,359 MiB, H100 SXM 81,559 MiB
    assert borrowed.system.accelerator.memory_device_bytes == 183_359 * MIB
    kept, _, _ = ends.coalition(frozenset({"scale-up domain"}))
    assert kept.system.accelerator.memory_device_bytes == 81_559 * MIB
    for field in _memory_fields():  # and every other memory figure with them
        assert getattr(borrowed.system.accelerator, field) == getattr(b200.system.accelerator, field)
        assert getattr(kept.system.accelerator, field) == getattr(h100.system.accelerator, field)


def test_b200_with_h100_hbm_cannot_hold_405b_in_bf16(catalog: Catalog, models: ModelRegistry) -> None:
    """By hand: Llama 3.1 405B has 126 layers of 16384 x 16384 x 2 (Q, O) + 16384 x 1024 x 2 (K, V)
    + 3 x 16384 x 53248 (MLP) = 3.19e9 parameters, 401.6e9 in all before the embeddings: 803 GB in
    BF16. Eight H100s hold 8 x 81,559 MiB = 684 GB, so no split of one DGX B200 given the H100's HBM
    can hold the weights (the old code planned tp=4 pp=2, batch 442, there)."""
    per_layer = 16384 * 16384 * 2 + 16384 * 1024 * 2 + 3 * 16384 * 53248
    weight_bytes = 126 * per_layer * 2
    assert weight_bytes > 8 * 81_559 * MIB
    decomposition = decompose_ratio(
        model=models.get("llama-3.1-405b"),
        baseline=catalog.resolve_cluster("2xdgx-h100"),
        target=catalog.resolve_cluster("dgx-b200"),
        baseline_precision="bf16",
        target_precision="bf16",
        options={"load": ServingLoad(2048, 512), "plan_family": "wide-ep"},
    )
    coalitions = {frozenset(c.changes): c for c in decomposition.coalitions}
    for changes in ({"scale-up domain"}, {"scale-up domain", "tensor cores"}):
        coalition = coalitions[frozenset(changes)]
        assert coalition.tokens_per_s_per_gpu is None, coalition.plan
        assert "does not fit" in coalition.reason
    assert decomposition.factors == ()  # said in the note, never a factor from an impossible plan
    assert "no deployment meets the bounds" in decomposition.note


def _shapley_by_hand(rates: dict[str, float], name: str) -> float:
    """Four players: weight 1/4 for the empty and the full context, 1/12 for each context of one or
    two others (0! 3! / 4! and 1! 2! / 4!); ``rates`` keyed by the letters of the changes applied."""
    others = [letter for letter in "TPMS" if letter != name]

    def key(letters: str) -> str:
        return "".join(letter for letter in "TPMS" if letter in letters)

    contexts = [("", 1 / 4), ("".join(others), 1 / 4)]
    contexts += [(other, 1 / 12) for other in others]
    contexts += [
        ("".join(pair), 1 / 12)
        for pair in ((others[0], others[1]), (others[0], others[2]), (others[1], others[2]))
    ]
    log_factor = sum(
        weight * math.log(rates[key(context + name)] / rates[key(context)]) for context, weight in contexts
    )
    return math.exp(log_factor)


def test_gpt_moe_factors_by_hand_from_the_coalitions(catalog: Catalog, models: ModelRegistry) -> None:
    """The README's comparison (``tp-ep-pp``; the catalogued MHA gives the same plans under
    ``wide-ep``). Each factor recomputed by hand from the 16 coalition rates (before the memory
    fix the H100 kept 80 GB under the GB200's HBM, and memory came third of four)."""
    baseline, target = (catalog.resolve_cluster(name) for name in GPT_MOE_SYSTEMS)
    decomposition = decompose_ratio(
        model=models.get("gpt-moe-1.8t"),
        baseline=baseline,
        target=target,
        baseline_precision="fp8",
        target_precision="nvfp4",
        options=gpt_moe_serving_options("tp-ep-pp"),
    )
    letters = {"tensor cores": "T", "precision": "P", "memory": "M", "scale-up domain": "S"}
    rates = {}
    for coalition in decomposition.coalitions:
        assert coalition.tokens_per_s_per_gpu is not None
        rates["".join(letters[change] for change in coalition.changes)] = coalition.tokens_per_s_per_gpu
    factors = {factor.name: factor.factor for factor in decomposition.factors}
    for name, letter in letters.items():
        assert factors[name] == pytest.approx(_shapley_by_hand(rates, letter), rel=1e-9)
    # the KV cache binds both systems (MHA, 2.2 MiB a token): the GB200's HBM is the largest factor
    assert max(factors, key=lambda name: factors[name]) == "memory"
    # memory applied alone: the H100 deployment given 186 GB per GPU serves far more than 80 GB did
    assert rates["M"] / rates[""] > 2.0

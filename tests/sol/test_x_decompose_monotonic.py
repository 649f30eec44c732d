"""``compare systems --decompose``: a change that lowers the best throughput where it is added is
named, with its cause, in the decomposition (``drops``) and in the note the command prints.

On the README's GPT-MoE-1.8T example, "precision + scale-up domain" (NVFP4 weights on H100
tensor cores: dequantized into BF16 GEMMs) served 8.497 tok/s/GPU and adding GB200's tensor
cores lowered it (7.085 then; 7.833 with the serving changes since): the engine runs NVFP4 on FP4
tensor cores as FP4 GEMMs, which keep one 128 x 128 output tile per SM, so at decode batches the
weights stream on a share of the SMs (the best plan's weight reads 11.4 ms -> 19.7 ms on the same
H100 HBM). Nothing said so: the Shapley factors averaged the drop in silently.
"""

from __future__ import annotations

import itertools

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import decompose_ratio
from lightspeed.sol.decomposition import FACTORS, Coalition, RatioDecomposition, _drops
from lightspeed.tour.scenarios import GPT_MOE_PRECISIONS, GPT_MOE_SYSTEMS, gpt_moe_serving_options
from lightspeed.workload import ModelRegistry

# the causes _drop_cause names; a drop explained only by "the best plan changes" has no cause
PHYSICAL_CAUSES = ("every plan must fill", "instead of")


def _coalition(
    changes: str, rate: float, gemm_format: str, *, gpus: int = 64, tiles: bool = False
) -> Coalition:
    chosen = tuple(changes.split("+")) if changes else ()
    return Coalition(
        chosen, "system", "nvfp4", "plan", rate, num_gpus=gpus, gemm_format=gemm_format, fp4_tiles=tiles
    )


def test_a_drop_names_the_combination_and_the_fp4_tile_cause() -> None:
    """By hand: a (2.0) -> a+b (1.5) is the one drop of these four; b's GEMMs moved from weight-only
    BF16 to FP4 GEMMs priced by their tiles, on the same GPU count."""
    coalitions = {
        frozenset(): _coalition("", 1.0, "bf16"),
        frozenset({"a"}): _coalition("a", 2.0, "bf16"),
        frozenset({"b"}): _coalition("b", 1.2, "fp4", tiles=True),
        frozenset({"a", "b"}): _coalition("a+b", 1.5, "fp4", tiles=True),
    }
    (drop,) = _drops(coalitions, ("a", "b"))
    assert (drop.added, drop.before) == ("b", ("a",))
    assert (drop.tokens_per_s_per_gpu_before, drop.tokens_per_s_per_gpu_after) == (2.0, 1.5)
    assert drop.cause.startswith(
        "GEMMs on fp4 instead of bf16 tensor cores: an FP4 GEMM keeps one output tile"
    )


def test_a_drop_from_more_gpus_says_the_plans_must_fill_them() -> None:
    coalitions = {
        frozenset(): _coalition("", 4.5, "fp8", gpus=64),
        frozenset({"s"}): _coalition("s", 4.4, "fp8", gpus=72),
    }
    (drop,) = _drops(coalitions, ("s",))
    assert drop.cause == "every plan must fill 72 GPUs instead of 64 and tokens/s per GPU counts them all"


def test_no_drop_where_every_change_helps() -> None:
    coalitions = {
        frozenset(): _coalition("", 1.0, "fp8"),
        frozenset({"a"}): _coalition("a", 1.0, "fp8"),  # equal is no drop
        frozenset({"b"}): _coalition("b", 3.0, "fp8"),
        frozenset({"a", "b"}): _coalition("a+b", 3.5, "fp8"),
    }
    assert _drops(coalitions, ("a", "b")) == ()


@pytest.fixture(scope="module")
def readme_example(catalog: Catalog, models: ModelRegistry) -> RatioDecomposition:
    """README.md's ``compare systems ... --decompose`` (the tour's GPT-MoE-1.8T scenario, wide-EP)."""
    baseline, target = (catalog.resolve_cluster(name) for name in GPT_MOE_SYSTEMS)
    return decompose_ratio(
        model=models.get("gpt-moe-1.8t"),
        baseline=baseline,
        target=target,
        baseline_precision=GPT_MOE_PRECISIONS[0],
        target_precision=GPT_MOE_PRECISIONS[1],
        options=gpt_moe_serving_options("wide-ep"),
    )


def test_every_change_that_lowers_the_best_throughput_is_explained(
    readme_example: RatioDecomposition,
) -> None:
    """Adding any one change of GB200 to any combination either does not lower the best tokens/s
    per GPU, or the decomposition lists that step with a physical cause, and the note says it."""
    rates = {frozenset(c.changes): c.tokens_per_s_per_gpu for c in readme_example.coalitions}
    listed = {(drop.added, frozenset(drop.before)): drop for drop in readme_example.drops}
    for size in range(len(FACTORS)):
        for chosen in map(frozenset, itertools.combinations(FACTORS, size)):
            for added in (factor for factor in FACTORS if factor not in chosen):
                before, after = rates[chosen], rates[chosen | {added}]
                assert before is not None
                assert after is not None
                if after >= before:
                    assert (added, chosen) not in listed
                    continue
                drop = listed[(added, chosen)]
                assert any(cause in drop.cause for cause in PHYSICAL_CAUSES), drop.cause
                assert drop.cause in readme_example.note
    assert len(listed) == len(readme_example.drops)


def test_gb200_tensor_cores_after_nvfp4_on_h100_cores_is_the_fp4_tile_cause(
    readme_example: RatioDecomposition,
) -> None:
    """The defect's step: with the H100's tensor cores NVFP4 runs weight-only in BF16; with GB200's
    in FP4 GEMMs priced by their tiles (one per SM). Where that step lowers the rate, the cause is
    that one, not an unexplained artefact."""
    coalitions = {frozenset(c.changes): c for c in readme_example.coalitions}
    before = coalitions[frozenset({"precision", "scale-up domain"})]
    after = coalitions[frozenset({"tensor cores", "precision", "scale-up domain"})]
    assert (before.gemm_format, after.gemm_format, after.fp4_tiles) == ("bf16", "fp4", True)
    assert after.num_gpus == before.num_gpus == 72
    assert before.tokens_per_s_per_gpu is not None
    assert after.tokens_per_s_per_gpu is not None
    if after.tokens_per_s_per_gpu < before.tokens_per_s_per_gpu:
        (drop,) = (d for d in readme_example.drops if d.added == "tensor cores")
        assert "an FP4 GEMM keeps one output tile per SM" in drop.cause


def test_drops_are_in_the_json(readme_example: RatioDecomposition) -> None:
    payload = readme_example.to_dict()
    assert isinstance(payload["drops"], list)
    assert len(payload["drops"]) == len(readme_example.drops)
    assert {"gemm_format", "num_gpus", "fp4_tiles"} <= set(payload["coalitions"][0])

"""System comparison and the seed's claims 10 and 12, through the shipped examples.

Tolerances come from the figures the seed and NVIDIA publish, not from the
engine's own output; where the engine disagrees the test pins down by how much
and docs/inference.md says why.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import UserInputError
from lightspeed.sol import (
    ServingLoad,
    auto_precision,
    compare_systems,
    decompose_ratio,
    fabric_comparison,
    shapley_factors,
)
from lightspeed.sol.decomposition import FACTORS
from lightspeed.tour.scenarios import GPT_MOE_SYSTEMS, gpt_moe_serving_options
from lightspeed.workload import ModelRegistry

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def examples() -> Iterator[Any]:
    sys.path.insert(0, str(EXAMPLES))
    try:
        import seed_inference_gpt_moe
        import seed_nvl72_vs_infiniband

        yield seed_inference_gpt_moe, seed_nvl72_vs_infiniband
    finally:
        sys.path.remove(str(EXAMPLES))


@pytest.fixture(scope="module")
def gpt_moe(examples: Any) -> dict[str, Any]:
    return dict(examples[0].scenario("tp-ep-pp"))


@pytest.fixture(scope="module")
def nvl72_vs_ib(examples: Any) -> dict[str, Any]:
    return dict(examples[1].scenario())


def test_h100_per_gpu_throughput_matches_nvidias_figure(gpt_moe: dict[str, Any]) -> None:
    # Seed claim 10: ~3.4 tokens/s per GPU on HGX H100 (FP8) with TTFT <= 5 s and TPOT <= 50 ms. The
    # engine lands within 2x: the H100's KV-limited batch depends on memory NVIDIA does not publish
    # (we use the driver's 81,559 MiB and a ~4.6 GB reserve, docs/inference.md).
    assert 3.4 / 2 <= gpt_moe["h100_tokens_per_s_per_gpu"] <= 3.4 * 2
    h100 = gpt_moe["comparison"].results[0].infer
    assert h100.ttft_s <= 5.0
    assert h100.tpot_s <= 0.050


def test_gb200_wins_several_fold_but_not_thirty_times(gpt_moe: dict[str, Any]) -> None:
    # NVIDIA's headline is ~30x; the seed's figures, 150 vs 3.4 tokens/s per GPU, are 44x. The engine
    # finds the NVL72 ahead several-fold but far below 30x: with the catalog's MHA attention the KV
    # cache caps the batch (docs/inference.md, "GPT-MoE-1.8T: where the model disagrees").
    assert 30 / 10 < gpt_moe["ratio"] < 30
    assert 150 / 6 < gpt_moe["gb200_tokens_per_s_per_gpu"] < 150
    gb200 = gpt_moe["comparison"].results[1].infer
    assert gb200.ttft_s <= 5.0
    assert gb200.tpot_s <= 0.050
    assert "KV-cache" in gb200.bound


def test_ratio_splits_into_factors_that_multiply_to_it(gpt_moe: dict[str, Any]) -> None:
    decomposition = gpt_moe["decomposition"]
    factors = {factor.name: factor for factor in decomposition.factors}
    assert list(factors) == ["tensor cores", "precision", "memory", "scale-up domain"]
    assert math.prod(factor.factor for factor in decomposition.factors) == pytest.approx(decomposition.ratio)
    assert decomposition.ratio == pytest.approx(gpt_moe["ratio"], rel=1e-6)
    assert len(decomposition.coalitions) == 16  # every combination of 4 changes, searched once
    # FP4 halves the bytes per weight of FP8 (0.5625 vs 1 with block scales): at most ~2x
    assert 1.0 < factors["precision"].factor <= 2.2
    # mostly memory-bound decode: HBM capacity (186 vs 80 GB: room for the KV cache) is the largest
    assert factors["memory"].factor == max(factor.factor for factor in decomposition.factors)
    assert factors["scale-up domain"].factor > 1.0
    # the sequential view (in the order listed) is kept, and it is one path through the combinations
    assert [step.name for step in decomposition.steps][-1] == "scale-up domain"
    assert math.prod(step.factor for step in decomposition.steps) == pytest.approx(decomposition.ratio)


def test_factors_do_not_depend_on_the_order_they_are_listed_in(
    catalog: Catalog, models: ModelRegistry, gpt_moe: dict[str, Any]
) -> None:
    """Issue 28: the one-at-a-time factors depended on the order (tensor cores 1.08x first,
    more when FP4 or the HBM came before them). Listed backwards, the Shapley factors are the same."""
    baseline, target = (catalog.resolve_cluster(name) for name in GPT_MOE_SYSTEMS)
    backwards = decompose_ratio(
        model=models.get("gpt-moe-1.8t"),
        baseline=baseline,
        target=target,
        baseline_precision="fp8",
        target_precision="nvfp4",
        options=gpt_moe_serving_options("tp-ep-pp"),
        factors=tuple(reversed(FACTORS)),
    )
    forwards = {factor.name: factor.factor for factor in gpt_moe["decomposition"].factors}
    assert [factor.name for factor in backwards.factors] == list(reversed(FACTORS))
    for factor in backwards.factors:
        assert factor.factor == pytest.approx(forwards[factor.name], rel=1e-12)
    # while the sequential steps do depend on it: "tensor cores" is worth more applied last
    first = {step.name: step.factor for step in gpt_moe["decomposition"].steps}
    last = {step.name: step.factor for step in backwards.steps}
    assert last["tensor cores"] > first["tensor cores"] * 1.2


def test_attention_assumption_moves_the_answer(gpt_moe: dict[str, Any]) -> None:
    """NVIDIA does not publish GPT-MoE-1.8T's attention. KV bytes per token in FP8, by hand, over 76
    layers: MHA 2 x 120 heads x 128 = 30,720 per layer (2,334,720); GQA 2 x 8 x 128 = 2,048
    (155,648); MLA-like a 512 + 64 latent (43,776)."""
    sensitivity = gpt_moe["attention_sensitivity"]
    cases = {case.name: case for case in sensitivity.cases}
    assert list(cases) == ["as catalogued", "GQA, 8 KV heads", "MLA-like latent"]  # MHA is the catalogue's
    assert cases["as catalogued"].catalogued
    assert [case.kv_cache_bytes_per_token for case in cases.values()] == [2_334_720, 155_648, 43_776]
    mha, gqa, mla = (case.decomposition for case in cases.values())
    assert mha is not None
    assert gqa is not None
    assert mla is not None
    assert mha.ratio == pytest.approx(gpt_moe["ratio"], rel=1e-6)
    # with a 15x smaller KV cache the GB200 reaches about half NVIDIA's ~150 (2.6x the MHA figure;
    # 75 tokens/s at the fitted kernel efficiency of 0.75), and the ratio grows
    assert 150 / 2.2 < gqa.target_tokens_per_s_per_gpu < 150 * 1.5
    assert gqa.target_tokens_per_s_per_gpu > 2 * gpt_moe["gb200_tokens_per_s_per_gpu"]
    assert gqa.ratio > 1.5 * mha.ratio
    assert mla.ratio > 1.5 * mha.ratio
    assert sensitivity.spread == pytest.approx(sensitivity.ratio_high / sensitivity.ratio_low)
    assert sensitivity.spread > 1.5  # the answer depends on an unpublished assumption
    for case in cases.values():
        assert case.decomposition is not None
        product = math.prod(factor.factor for factor in case.decomposition.factors)
        assert product == pytest.approx(case.decomposition.ratio)


def test_fabric_figures_match_the_seed(nvl72_vs_ib: dict[str, Any]) -> None:
    nvl72, infiniband = nvl72_vs_ib["fabric"]
    # Seed claim 12: 1.8 TB/s per GPU (bidirectional NVLink 5) vs 20-80 GB/s (one 400G NIC per GPU).
    assert nvl72.slowest_bidirectional_bytes_per_s == pytest.approx(1.8e12)
    assert 20e9 <= infiniband.slowest_bytes_per_s <= 80e9
    # Small-message latency 1-2 us vs 5-10 us per hop.
    tolerance = 1 + 1e-9  # the catalog stores microseconds as seconds
    assert 1e-6 / tolerance <= nvl72.small_message_latency_s <= 2e-6 * tolerance
    assert 5e-6 / tolerance <= infiniband.small_message_latency_s <= 10e-6 * tolerance
    assert infiniband.small_all_reduce_s > 3 * nvl72.small_all_reduce_s
    # 1 GiB over the rack's 72 GPUs, reduced in the NVSwitches: 80 us before the first byte
    # (runtime.toml in_switch_latency) and the bytes at 0.611 of the 900 GB/s link, 2.03 ms;
    # over 9 InfiniBand nodes the same all-reduce takes three times as long (6.0 ms)
    assert nvl72.large_all_reduce_s == pytest.approx(80e-6 + 2**30 / (0.611 * 900e9), rel=1e-6)
    assert infiniband.large_all_reduce_s > 2.9 * nvl72.large_all_reduce_s


def test_collective_overhead_share_is_small_on_nvlink_and_large_over_infiniband(
    nvl72_vs_ib: dict[str, Any],
) -> None:
    serving = nvl72_vs_ib["serving"].results
    # Seed: "a few %" vs "tens of %" for the same collectives (the fabric figures above). The best MoE
    # serving plan of each system keeps its traffic off the slow level: on the NVL72 there is none,
    # and the H100 cluster's best plan pipelines across nodes instead of spreading experts over
    # InfiniBand (docs/inference.md records the shares).
    assert serving[0].slow_level_share == 0.0
    assert serving[0].communication_share < 0.3
    assert serving[1].slow_level_share <= serving[1].communication_share < 0.3
    training = nvl72_vs_ib["training"].results
    # Seed claim 3: MLPerf Training v5.0, GB200 NVL72 up to 2.6x per-GPU throughput over Hopper.
    assert (
        2.6 / 1.3
        < training[0].throughput_tokens_per_s_per_gpu / training[1].throughput_tokens_per_s_per_gpu
        < 2.6 * 1.3
    )
    assert all(share.crosses_slow_level for share in training[1].collectives if "InfiniBand" in share.level)


def test_topology_limits_name_the_domain(catalog: Catalog, models: ModelRegistry) -> None:
    clusters = [catalog.resolve_cluster("dgx-h100"), catalog.resolve_cluster("2xdgx-h100")]
    comparison = compare_systems(
        model=models.get("llama-3-8b"),
        clusters=clusters,
        workload="infer",
        options={"load": ServingLoad(512, 256)},
    )
    assert comparison.per_gpu_ratio[0] == 1.0
    single, double = comparison.results
    assert single.limits.scale_out is None or single.limits.domain_size == 8
    assert any("cross InfiniBand" in rule for rule in double.limits.rules)
    assert single.precision == auto_precision(clusters[0]) == "fp8"  # Hopper: narrowest tensor-core format


def test_bad_comparisons_are_refused(catalog: Catalog, models: ModelRegistry) -> None:
    cluster = catalog.resolve_cluster("dgx-h100")
    with pytest.raises(UserInputError, match="workload"):
        compare_systems(model=models.get("llama-3-8b"), clusters=[cluster], workload="finetune")
    with pytest.raises(UserInputError, match="2 precisions for 1 systems"):
        compare_systems(
            model=models.get("llama-3-8b"), clusters=[cluster], workload="infer", precisions=["fp8", "bf16"]
        )
    assert fabric_comparison([cluster])[0].scale_out is None


def _computed(result: dict[str, Any], *family: str) -> Any:
    """A stand-in for an example's ``scenario``: the result this module's fixture computed for the
    same ``family`` of plans (the scenario is deterministic; each computation takes seconds)."""

    def scenario(*asked: str) -> dict[str, Any]:
        assert asked == family
        return result

    return scenario


def test_examples_print_what_the_tests_check(
    examples: Any,
    gpt_moe: dict[str, Any],
    nvl72_vs_ib: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpt_moe_example, fabric_example = examples
    # main() prints the scenario the tests above check, computed once by their fixtures
    monkeypatch.setattr(gpt_moe_example, "scenario", _computed(gpt_moe, "tp-ep-pp"))
    monkeypatch.setattr(fabric_example, "scenario", _computed(nvl72_vs_ib))
    monkeypatch.setattr(sys, "argv", ["seed_inference_gpt_moe.py", "--json"])
    gpt_moe_example.main()
    printed = json.loads(capsys.readouterr().out)
    assert printed["nvidia"] == {"h100": 3.4, "gb200": 150.0, "ratio": 150 / 3.4, "headline_ratio": 30.0}
    assert printed["ratio"] == pytest.approx(
        printed["gb200_tokens_per_s_per_gpu"] / printed["h100_tokens_per_s_per_gpu"]
    )
    assert [factor["name"] for factor in printed["decomposition"]["factors"]][-1] == "scale-up domain"
    assert len(printed["attention_sensitivity"]["cases"]) == 3
    monkeypatch.setattr(sys, "argv", ["seed_inference_gpt_moe.py"])
    columns = os.environ.get("COLUMNS")
    monkeypatch.setenv("COLUMNS", "400")  # a table row per line, to read the figures back
    gpt_moe_example.main()
    text = capsys.readouterr().out
    if columns is None:
        monkeypatch.delenv("COLUMNS")
    else:
        monkeypatch.setenv("COLUMNS", columns)
    # issue 28: 3.4 vs 150 is 44x, not 30x; 30x is NVIDIA's headline, printed as such
    assert "seed: 3.4 vs 150 = 44x" in text
    assert "NVIDIA's headline: 30x (not the quotient" in text
    model = re.search(r"model: H100 ([\d.,]+) vs GB200 ([\d.,]+) tokens/s per GPU = ([\d.]+)x", text)
    assert model is not None
    assert float(model[3]) == round(float(model[2]) / float(model[1]), 1)  # from the printed figures
    _check_printed_ratios(text)
    monkeypatch.setattr(sys, "argv", ["seed_nvl72_vs_infiniband.py"])
    fabric_example.main()
    text = capsys.readouterr().out
    assert "1.8 TB/s bidir." in text
    assert "hop latency" in text
    assert "best infer plan per system" in text


def _cells(text: str, title: str) -> list[list[str]]:
    """The body rows of the rich table under ``title`` in ``text`` (printed wide: a row per line)."""
    rows = []
    for line in text[text.index(title) :].splitlines()[1:]:
        if line.startswith("└"):
            break
        if line.startswith("│"):
            rows.append([cell.strip() for cell in line.strip().strip("│").split("│")])
    return rows


def _check_printed_ratios(text: str) -> None:
    """Every printed ratio is the quotient of the printed rates, rounding included."""
    comparison = _cells(text, "best infer plan per system")
    first = float(comparison[0][4].replace(",", ""))
    for row in comparison:
        assert float(row[5].rstrip("x")) == round(float(row[4].replace(",", "")) / first, 2)
    title = re.search(r"at nvfp4 vs .* at fp8: ([\d.,]+) / ([\d.,]+) tok/s per GPU = ([\d.]+)x", text)
    assert title is not None
    # the same 2 decimals as the comparison's "vs first" (it was 1 decimal: 2.7x beside 2.65x)
    assert float(title[3]) == round(float(title[1]) / float(title[2]), 2)
    assert title[3] == comparison[-1][5].rstrip("x")
    rates = {
        row[0]: float(row[3].replace(",", "")) for row in _cells(text, "changes applied to the baseline")
    }
    base = rates["none (baseline)"]
    for row in _cells(text, "factors (Shapley"):
        assert float(row[2].rstrip("x")) == round(rates[row[0]] / base, 2)  # alone: first
    for row in _cells(text, "the ratio under each attention"):
        base, goal = (float(cell.replace(",", "")) for cell in row[3:5])
        assert float(row[5].rstrip("x")) == round(goal / base, 2)


def test_shapley_factors_by_hand() -> None:
    """Two changes worth 2x and 3x alone and 12x together: a is 2x first and 12/3 = 4x second, b 3x
    first and 6x second; each gets the geometric mean over the two orders, sqrt(8) and sqrt(18),
    whose product is 12."""
    rates = {frozenset(): 1.0, frozenset("a"): 2.0, frozenset("b"): 3.0, frozenset("ab"): 12.0}
    factors = shapley_factors(["a", "b"], rates.__getitem__)
    assert factors["a"] == pytest.approx(math.sqrt(8))
    assert factors["b"] == pytest.approx(math.sqrt(18))
    assert factors["a"] * factors["b"] == pytest.approx(12.0)


def test_shapley_factors_ignore_the_order_of_the_names() -> None:
    # three interacting changes; any listing gives the same factors, and they multiply to the ratio
    names = ("x", "y", "z")
    rates = {
        frozenset(subset): 1.0 + 0.7 * len(subset) + (2.5 if {"x", "z"} <= set(subset) else 0.0)
        for size in range(4)
        for subset in itertools.combinations(names, size)
    }
    calls: list[frozenset[str]] = []

    def rate(subset: frozenset[str]) -> float:
        calls.append(subset)
        return rates[subset]

    reference = shapley_factors(names, rate)
    assert len(calls) == 8  # each combination once
    for order in itertools.permutations(names):
        again = shapley_factors(order, rates.__getitem__)
        assert again == pytest.approx(reference, rel=1e-12)
    assert math.prod(reference.values()) == pytest.approx(rates[frozenset(names)] / rates[frozenset()])
    assert reference["x"] == pytest.approx(reference["z"])  # symmetric roles, equal shares
    with pytest.raises(ValueError, match="need > 0"):
        shapley_factors(["a"], lambda subset: 0.0)


def test_tour_prints_the_quotient_of_its_own_figures(catalog: Catalog, models: ModelRegistry) -> None:
    """The tour's GPT-MoE line: its ratio is the printed GB200 figure over the printed H100 one
    (rounding included), and the seed's 3.4 vs 150 is 150 / 3.4 = 44.1 -> 44x, not 30x."""
    from lightspeed.tour.seed import gpt_moe_inference

    line = gpt_moe_inference(catalog, models).lines[-1]
    shown = re.search(r"per GPU: ([\d.,]+) / ([\d.,]+) = ([\d.]+)x", line)
    assert shown is not None, line
    assert float(shown[3]) == round(float(shown[1].replace(",", "")) / float(shown[2].replace(",", "")), 1)
    assert "seed: 3.4 vs 150 tokens/s per GPU = 44x" in line
    assert "NVIDIA's headline: 30x, not the quotient" in line

"""System comparison and the seed's claims 10 and 12, through the shipped examples.

Tolerances come from the figures the seed and NVIDIA publish, not from the
engine's own output; where the engine disagrees the test pins down by how much
and docs/inference.md says why.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import UserInputError
from lightspeed.sol import ServingLoad, auto_precision, compare_systems, fabric_comparison
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


def test_gb200_wins_by_an_order_of_magnitude_but_not_thirty_times(gpt_moe: dict[str, Any]) -> None:
    # NVIDIA claims ~30x (150 vs 3.4 tokens/s per GPU). The engine finds the NVL72 ahead by more
    # than 30/4 but below 30: with the catalog's MHA attention the KV cache caps the batch
    # (docs/inference.md, "GPT-MoE-1.8T: where the model disagrees").
    assert 30 / 5 < gpt_moe["ratio"] < 30
    assert 150 / 6 < gpt_moe["gb200_tokens_per_s_per_gpu"] < 150
    gb200 = gpt_moe["comparison"].results[1].infer
    assert gb200.ttft_s <= 5.0
    assert gb200.tpot_s <= 0.050
    assert "KV-cache" in gb200.bound


def test_ratio_decomposes_into_one_change_at_a_time(gpt_moe: dict[str, Any]) -> None:
    decomposition = gpt_moe["decomposition"]
    steps = {step.name: step for step in decomposition.steps}
    assert list(steps) == ["baseline", "tensor cores", "precision", "memory", "scale-up domain"]
    assert math.prod(step.factor for step in decomposition.steps) == pytest.approx(decomposition.ratio)
    assert decomposition.ratio == pytest.approx(gpt_moe["ratio"], rel=1e-6)
    # Mostly memory-bound decode: more tensor-core FLOP/s alone buys little (the compute that remains
    # is not hidden behind a launch floor: kernels cost their fixed GPU time on top, issue 28) ...
    assert steps["tensor cores"].factor == pytest.approx(1.0, abs=0.15)
    # ... FP4 halves the bytes per weight of FP8 (0.5625 vs 1 with block scales): at most ~2x ...
    assert 1.3 < steps["precision"].factor <= 2.2
    # ... and HBM capacity (186 vs 80 GB: room for KV cache) is the largest factor.
    assert steps["memory"].factor == max(step.factor for step in decomposition.steps)
    assert steps["scale-up domain"].factor > 1.0


def test_with_eight_kv_heads_the_gb200_reaches_nvidias_figure(examples: Any) -> None:
    # What-if, not NVIDIA's spec: 8 KV heads shrink the KV cache 15x and the engine lands near 150.
    wide = examples[0].scenario("wide-ep", what_if_gqa=True)
    assert 150 / 2 < wide["gb200_tokens_per_s_per_gpu"] < 150 * 1.5


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
    assert infiniband.large_all_reduce_s > 3 * nvl72.large_all_reduce_s


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


def test_examples_print_what_the_tests_check(
    examples: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    gpt_moe_example, fabric_example = examples
    monkeypatch.setattr(sys, "argv", ["seed_inference_gpt_moe.py", "--json"])
    gpt_moe_example.main()
    printed = json.loads(capsys.readouterr().out)
    assert printed["nvidia"] == {"h100": 3.4, "gb200": 150.0, "ratio": 30.0}
    assert printed["ratio"] == pytest.approx(
        printed["gb200_tokens_per_s_per_gpu"] / printed["h100_tokens_per_s_per_gpu"]
    )
    assert [step["name"] for step in printed["decomposition"]["steps"]][-1] == "scale-up domain"
    monkeypatch.setattr(sys, "argv", ["seed_inference_gpt_moe.py"])
    gpt_moe_example.main()
    assert "NVIDIA: 3.4 vs 150.0 (~30x)" in capsys.readouterr().out
    monkeypatch.setattr(sys, "argv", ["seed_nvl72_vs_infiniband.py"])
    fabric_example.main()
    text = capsys.readouterr().out
    assert "1.8 TB/s bidir." in text
    assert "hop latency" in text
    assert "best infer plan per system" in text

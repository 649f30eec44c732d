"""A MoE layer waits for its busiest GPU: at a small batch under expert parallelism that GPU reads
more experts than the mean (round 15, expert check B). Mixtral on EP8 at batch 1 touches two
experts on two GPUs; the busiest reads one whole expert per layer, where the engine charged the
mean, a quarter of one, and priced EP8 and TP8 decode the same."""

from __future__ import annotations

import json

import pytest

from lightspeed.sol.core.experts import busiest_rank_touched


def test_the_busiest_of_two_ranks_by_hand() -> None:
    # two ranks of two experts each, every expert reached with p: E[max] = P(max >= 1) + P(max >= 2)
    # = (1 - (1 - p)^4) + (1 - (1 - p^2)^2)
    p = 0.3
    expected = (1 - (1 - p) ** 4) + (1 - (1 - p**2) ** 2)
    assert float(busiest_rank_touched(2, p, 2)) == pytest.approx(expected, rel=1e-12)


def test_one_rank_or_every_expert_reached_is_the_mean() -> None:
    assert float(busiest_rank_touched(256, 8 / 256, 1)) == pytest.approx(8.0)
    assert float(busiest_rank_touched(32, 1.0, 8)) == pytest.approx(32.0)
    # arrays keep their shape
    assert busiest_rank_touched([32.0, 32.0], [1.0, 0.5], [8.0, 1.0]).shape == (2,)


def test_one_token_on_ep8_reads_one_whole_expert() -> None:
    # Mixtral: 8 experts, top 2, one per GPU; a token's two experts sit on two GPUs
    assert float(busiest_rank_touched(1, 1 - (1 - 2 / 8), 8, least=1.0)) == pytest.approx(1.0)


def _weight_reads_s(run_cli, ep: int) -> float:  # type: ignore[no-untyped-def]
    result = run_cli(
        "plan", "infer", "--model", "mixtral-8x7b", "--system", "dgx-h100", "--tp", "8", "--ep", str(ep),
        "--isl", "1024", "--osl", "1024", "--concurrency", "1", "--expert-imbalance", "1", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    return float(json.loads(result.out)["iteration_breakdown_s"]["weight_reads"])


def test_mixtral_ep8_decode_reads_a_whole_expert_per_layer(run_cli) -> None:  # type: ignore[no-untyped-def]
    # bytes per GPU per decode step, BF16, 32 layers, hidden 4,096, expert FFN 14,336 (gated: 3 matrices)
    expert_bytes = 3 * 4096 * 14336 * 2
    attention_bytes = 4096 * (4096 + 2 * 1024 + 4096) * 2  # q, k, v (8 KV heads of 128), o
    lm_head_bytes = 4096 * 32000 * 2
    shared = 32 * attention_bytes / 8 + lm_head_bytes / 8
    tp8 = 32 * 2 * expert_bytes / 8 + shared  # two experts touched, each an eighth on every GPU
    ep8 = 32 * 1 * expert_bytes + shared  # the busiest GPU holds one of the two, whole
    measured = _weight_reads_s(run_cli, 8) / _weight_reads_s(run_cli, 1)
    assert measured == pytest.approx(ep8 / tp8, rel=0.05)  # 3.6x; the engine charged 1.0x


# group-limited routing (DeepSeek-V3 section 3.2.2): a token's experts sit in few groups, so on few ranks


def test_one_deepseek_token_on_ep8_by_exact_count() -> None:
    import itertools
    import math

    from lightspeed.sol.core.experts import grouped_busiest_table

    # EP8 holds one group of 32 experts a rank; a token reaches 4 of the 8 groups and draws its 8
    # experts from their 128: the counts on the 4 ranks are multivariate hypergeometric
    total = math.comb(128, 8)
    exact = sum(
        max(counts) * math.prod(math.comb(32, count) for count in counts) / total
        for counts in itertools.product(range(9), repeat=4)
        if sum(counts) == 8
    )
    assert exact == pytest.approx(3.486, abs=1e-3)
    table = grouped_busiest_table(256, 8, 8, 4, 8)
    assert float(table[1]) == pytest.approx(exact, abs=0.05)  # 1,000 seeded runs of the router
    assert float(busiest_rank_touched(32, 8 / 256, 8, least=1.0)) < 2.6  # independent draws: 2.54


def test_a_token_in_one_group_puts_both_its_experts_on_one_rank() -> None:
    from lightspeed.sol.core.experts import grouped_busiest_table

    # 8 experts in 4 groups of 2, one group a rank, top-2 in 1 group: every token fills its group's
    # rank, so the busiest rank holds 2 from the first token on (and never more: 2 a rank)
    table = grouped_busiest_table(8, 2, 4, 1, 4)
    assert [float(value) for value in table[:4]] == [0.0, 2.0, 2.0, 2.0]


def test_a_router_without_groups_keeps_the_independent_count() -> None:
    from lightspeed.sol.core.experts import busiest_rank_experts
    from lightspeed.workload import load_models

    mixtral = load_models().get("mixtral-8x7b").moe
    assert mixtral is not None
    p = 1 - (1 - 2 / 8) ** 3
    assert float(busiest_rank_experts(mixtral, 8.0, 3.0, 4.0)) == pytest.approx(
        float(busiest_rank_touched(2, p, 4, least=1.0))
    )

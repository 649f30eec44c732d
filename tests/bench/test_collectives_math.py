"""nccl-tests conventions: busbw factors, element counts, assembly across ranks (no torch needed)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.bench import CollectiveConfig, DeviceSol, assemble_results, busbw_factor
from lightspeed.bench.collectives import _element_counts
from lightspeed.errors import UserInputError


@pytest.mark.parametrize(
    ("collective", "num_ranks", "factor"),
    [
        ("all_reduce", 8, 1.75),  # 2 (n-1)/n, nccl-tests PERFORMANCE.md
        ("all_reduce", 2, 1.0),
        ("all_gather", 8, 0.875),  # (n-1)/n
        ("reduce_scatter", 4, 0.75),
        ("all_to_all", 4, 0.75),
        ("broadcast", 8, 1.0),
        ("sendrecv", 8, 1.0),
    ],
)
def test_busbw_factors(collective: str, num_ranks: int, factor: float) -> None:
    assert busbw_factor(collective, num_ranks) == pytest.approx(factor)


def test_element_counts_follow_nccl_tests_sizes() -> None:
    # all_gather: size is the whole output; each of 4 ranks contributes a quarter.
    assert _element_counts("all_gather", 4096, 4) == (256, 1024)
    # reduce_scatter: size is the whole input; each rank keeps a quarter.
    assert _element_counts("reduce_scatter", 4096, 4) == (1024, 256)
    # all_reduce: size is the per-rank buffer.
    assert _element_counts("all_reduce", 4096, 4) == (1024, 1024)
    # sizes that do not split evenly round down to a multiple of the ranks
    assert _element_counts("all_to_all", 40, 3) == (9, 9)


def test_assembly_uses_the_slowest_rank_per_trial() -> None:
    size = 1_000_000
    rank0 = [("all_reduce", size, [0.001, 0.002, 0.003], True)]
    rank1 = [("all_reduce", size, [0.0015, 0.001, 0.004], True)]
    (result,) = assemble_results(per_rank=[rank0, rank1], backend="gloo", sol=DeviceSol.unknown("test"))
    # block times = max over ranks = 1.5 ms, 2 ms, 4 ms; median 2 ms; factor 2(n-1)/n = 1 for n = 2
    assert result.value == pytest.approx(size / 0.002)
    assert result.stats.max == pytest.approx(size / 0.0015)
    assert result.stats.min == pytest.approx(size / 0.004)
    assert result.details["algbw_bytes_per_s"] == pytest.approx(size / 0.002)
    # each rank's figure is the median of its trials, as the headline is the median of the blocks:
    # rank 0 (1, 2, 3 ms) -> 2 ms, rank 1 (1.5, 1, 4 ms) -> 1.5 ms. (The mean of rank 1, 2.17 ms,
    # was shown beside a 2 ms headline: slower than the collective it is part of.)
    assert result.details["rank_time_s"]["min"] == pytest.approx(0.0015)
    assert result.details["rank_time_s"]["median"] == pytest.approx(0.00175)
    assert result.details["rank_time_s"]["max"] == pytest.approx(0.002)
    assert result.details["time_s"] >= result.details["rank_time_s"]["max"]
    assert result.correct is True
    assert result.sol is None
    assert result.sol_note == "test"


def test_one_wrong_rank_marks_the_point_wrong() -> None:
    rank0 = [("broadcast", 4096, [0.001], True)]
    rank1 = [("broadcast", 4096, [0.001], False)]
    (result,) = assemble_results(per_rank=[rank0, rank1], backend="gloo", sol=DeviceSol.unknown(""))
    assert result.correct is False


def test_nccl_results_compare_with_the_scale_up_link() -> None:
    sol = DeviceSol(device_name="h100-sxm", scale_up_bytes_per_s=450e9)
    rows = [[("all_reduce", 2**20, [1e-5], True)] for _ in range(8)]
    (result,) = assemble_results(per_rank=rows, backend="nccl", sol=sol)
    assert result.sol == 450e9
    assert result.fraction_of_sol == pytest.approx(2**20 / 1e-5 * 1.75 / 450e9)


def test_config_rejects_unknown_collectives_and_tiny_sizes() -> None:
    with pytest.raises(UserInputError, match="allreduce"):
        CollectiveConfig(collectives=("allreduce",), sizes=(1024,))
    with pytest.raises(UserInputError, match="at least"):
        CollectiveConfig(sizes=(2,))
    assert CollectiveConfig(sizes=(1024,), budget_bytes=4096, max_iterations=50).iterations(1024) == 4
    assert CollectiveConfig(sizes=(1024,), budget_bytes=4096).iterations(2**30) == 2


@settings(max_examples=60, deadline=None)
@given(
    trials=st.lists(
        st.lists(st.floats(min_value=1e-6, max_value=1.0), min_size=3, max_size=3), min_size=2, max_size=5
    )
)
def test_the_headline_is_what_the_slowest_rank_sees(trials: list[list[float]]) -> None:
    """A collective ends when its last rank does: the headline time is never below any rank's own
    figure, so its bandwidth is never above what the slowest rank saw (median of max >= max of medians)."""
    per_rank = [[("all_gather", 1 << 20, rank_trials, True)] for rank_trials in trials]
    (result,) = assemble_results(per_rank=per_rank, backend="gloo", sol=DeviceSol.unknown(""))
    slowest_s = result.details["rank_time_s"]["max"]
    assert result.details["time_s"] >= slowest_s * (1 - 1e-12)
    assert result.value <= (1 << 20) * busbw_factor("all_gather", len(trials)) / slowest_s * (1 + 1e-12)

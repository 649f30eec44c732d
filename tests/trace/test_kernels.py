"""Top kernels per kind, worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from lightspeed.errors import UserInputError
from lightspeed.trace import load_trace, shorten_name, top_kernels


def test_top_kernels_by_hand(write_trace: Any, kineto: Any) -> None:
    k = kineto
    events = [k.kernel("gemm", t, d) for t, d in ((0, 10), (20, 30), (60, 20))]
    events += [k.kernel("relu", 100, 5), k.kernel("ncclKernel_AllReduce", 200, 40, stream=20)]
    report = top_kernels(load_trace(write_trace("rank-0.json", k.document(events))), top=1)
    by_kind = {row.kind: row for row in report.kernels}
    gemm = by_kind["computation"]
    assert (gemm.name, gemm.count) == ("gemm", 3)
    assert (gemm.total_s, gemm.min_s, gemm.median_s, gemm.max_s) == pytest.approx(
        (60e-6, 10e-6, 20e-6, 30e-6)
    )
    assert gemm.share_of_kind_pct == pytest.approx(100 * 60 / 65)
    assert by_kind["communication"].name == "ncclKernel_AllReduce"
    assert "memory" not in by_kind


def test_ranks_pool_or_split(real_trace: Any) -> None:
    trace = load_trace(real_trace("trace_filter"))
    pooled = top_kernels(trace, top=3, kinds=("communication",))
    split = top_kernels(trace, top=3, kinds=("communication",), per_rank=True)
    assert {row.rank for row in pooled.kernels} == {None}
    assert {row.rank for row in split.kernels} == {0, 1}
    assert pooled.kernels[0].count == sum(r.count for r in split.kernels if r.name == pooled.kernels[0].name)
    with pytest.raises(UserInputError, match="unknown kernel kind"):
        top_kernels(trace, kinds=("matmul",))


def test_shorten_name_as_hta() -> None:
    assert shorten_name("void at::native::foo<float, 4>(int, float*)") == "at::native::foo"
    assert shorten_name("Memcpy HtoD (Pageable -> Device)") == "Memcpy HtoD (Pageable -> Device)"
    assert shorten_name("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn"

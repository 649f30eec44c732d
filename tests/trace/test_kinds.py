"""Kernel kinds follow HTA's name rules (hta/utils/utils.py, HTA 0.5.0)."""

from __future__ import annotations

import numpy as np
import pytest

from lightspeed.trace.kinds import classify_ids, classify_name


@pytest.mark.parametrize(
    ("name", "category", "kind"),
    [
        (
            "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
            "kernel",
            "communication",
        ),
        ("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", "kernel", "communication"),
        ("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", "memory"),
        ("Memset (Device)", "gpu_memset", "memory"),
        # ROCm copy without the Memcpy prefix: memory by its category
        ("CopyHostToDevice", "gpu_memcpy", "memory"),
        ("ampere_sgemm_128x64_nn", "kernel", "computation"),
        ("triton_poi_fused_add_cos_sin_0", "kernel", "computation"),
        # HTA keeps names mentioning Memcpy (not as prefix) or Sync out of computation
        ("void cub::DeviceMemcpy::BatchMemcpyKernel", "kernel", "other"),
        ("Stream Sync", "kernel", "other"),
    ],
)
def test_classify_name(name: str, category: str, kind: str) -> None:
    assert classify_name(name, category) == kind


def test_classify_ids_classifies_each_distinct_pair() -> None:
    names = ("gemm", "ncclKernel_X", "Memset (Device)")
    codes = classify_ids(
        np.array([0, 1, 2, 0], dtype=np.int32),
        np.array([0, 0, 1, 0], dtype=np.int32),
        names,
        ("kernel", "gpu_memset"),
    )
    assert codes.tolist() == [0, 1, 2, 0]


@pytest.mark.parametrize("num_other_names", [0, 200_000])
def test_classify_ids_agrees_with_classify_name_whether_pairs_are_tabled_or_sorted(
    num_other_names: int,
) -> None:
    """A few events and few names take the table of every pair; 200,000 more names than events
    take the sort of the pairs seen. Both give each event its name's kind."""
    names = (
        "gemm",
        "ncclDevKernel_AllReduce",
        "Memset (Device)",
        "Memcpy DtoH",
        *(f"k{i}" for i in range(num_other_names)),
    )
    categories = ("kernel", "gpu_memset", "gpu_memcpy")
    name_ids = np.array([3, 0, 1, 2, 0, 1, len(names) - 1], dtype=np.int32)
    category_ids = np.array([2, 0, 0, 1, 0, 0, 0], dtype=np.int32)
    codes = classify_ids(name_ids, category_ids, names, categories)
    expected = [classify_name(names[n], categories[c]) for n, c in zip(name_ids, category_ids, strict=True)]
    assert [("computation", "communication", "memory", "other")[code] for code in codes] == expected
    assert expected[:4] == ["memory", "computation", "communication", "memory"]

"""Round 14 fix S2, defect 1: a CPU is refused fp8 GEMMs, which torch's CPU build emulates (1.3 s
for one 256^3 multiply on the dev VM, over an hour for a --quick sweep), as it is refused tf32;
``--dtype all`` leaves fp8 out on a CPU (the 32x32 probe alone passed it)."""

from __future__ import annotations

import pytest

from lightspeed.bench import BenchDevice, supported_dtypes
from lightspeed.bench.gemm import check_dtype
from lightspeed.errors import UnsupportedError

torch = pytest.importorskip("torch")

CPU = BenchDevice(kind="cpu", index=0, name="test cpu", num_threads=1)


def test_fp8_is_refused_on_the_cpu_before_anything_runs() -> None:
    with pytest.raises(UnsupportedError, match="the CPU has no fp8 GEMM kernel") as caught:
        check_dtype(torch, CPU, "fp8")
    message = str(caught.value)
    assert "\n" not in message
    assert "use bf16 or fp32 on the CPU" in message  # what to do instead
    assert "compute capability 8.9" in message  # where fp8 can be measured


def test_tf32_is_still_refused_on_the_cpu() -> None:
    with pytest.raises(UnsupportedError, match="tf32 is a GPU tensor-core mode"):
        check_dtype(torch, CPU, "tf32")


def test_all_on_the_cpu_leaves_out_fp8_and_tf32() -> None:
    dtypes = supported_dtypes(CPU)
    assert "fp8" not in dtypes
    assert "tf32" not in dtypes
    assert {"fp64", "fp32"} <= set(dtypes)  # every CPU build multiplies these natively

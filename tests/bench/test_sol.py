"""SOL figures come from the catalog; unknown devices say so instead of guessing."""

from __future__ import annotations

import pytest

from lightspeed.bench import BenchDevice, DeviceSol, device_sol, sol_from_accelerator
from lightspeed.catalog import load_catalog
from lightspeed.errors import UnknownNameError


def test_h100_figures_per_direction() -> None:
    sol = sol_from_accelerator(load_catalog().accelerator("h100-sxm"))
    # NVIDIA H100 datasheet: 1979 TFLOP/s BF16 with sparsity -> 989.5 dense; 3.35 TB/s HBM3.
    assert sol.compute("bf16")[0] == pytest.approx(989.5e12)
    assert sol.memory_bandwidth_bytes_per_s == pytest.approx(3.35e12)
    # NVLink 4: 18 links x 25 GB/s per direction = 450 GB/s (900 GB/s bidirectional printed).
    assert sol.scale_up_bytes_per_s == pytest.approx(450e9)


def test_fp64_gemm_ceiling_is_the_tensor_core_row() -> None:
    # NVIDIA H200 datasheet: FP64 34 TFLOP/s, FP64 Tensor Core 67 TFLOP/s. cuBLAS's DGEMM runs on
    # the tensor cores: measured on an H200 (docs/benchmarks.md, GPU) at 62.5 TFLOP/s, which the
    # vector figure would show as 184% of its SOL.
    sol = sol_from_accelerator(load_catalog().accelerator("h200-sxm"))
    assert sol.compute("fp64")[0] == pytest.approx(67e12)
    # AMD MI300X datasheet: FP64 vector 81.7, FP64 matrix 163.4 TFLOP/s
    mi300x = sol_from_accelerator(load_catalog().accelerator("mi300x"))
    assert mi300x.compute("fp64")[0] == pytest.approx(163.4e12)
    # a device without a matrix row keeps its vector figure
    assert DeviceSol(device_name="x", flop_per_s={"fp64": 5.0}).compute("fp64")[0] == 5.0


def test_named_sol_device_and_unknown_name() -> None:
    cpu = BenchDevice(kind="cpu", index=0, name="Some CPU", num_threads=1)
    gpu = BenchDevice(kind="cuda", index=0, name="Some GPU", num_threads=1)
    catalog = load_catalog()
    assert device_sol(device=gpu, catalog=catalog, sol_device="h100").device_name == "h100-sxm"
    assert device_sol(device=cpu, catalog=catalog, sol_device="xeon-platinum-8480c").device_name == (
        "xeon-platinum-8480c"
    )
    with pytest.raises(UnknownNameError):
        device_sol(device=cpu, catalog=catalog, sol_device="no-such-gpu")


def test_unknown_gpu_has_no_sol_and_a_reason() -> None:
    gpu = BenchDevice(kind="cuda", index=0, name="Imaginary GPU 1", num_threads=1)
    sol = device_sol(device=gpu, catalog=load_catalog())
    assert sol.device_name is None
    assert sol.compute("bf16") == (None, sol.note)
    assert "--sol-device" in sol.note


def test_missing_row_is_explained() -> None:
    sol = DeviceSol(device_name="x", flop_per_s={"fp32": 1.0})
    peak, note = sol.compute("bf16")
    assert peak is None
    assert "no bf16 compute figure" in note

"""GEMM, STREAM, launch and copy suites on the CPU (tiny sizes: these test the method, not the machine)."""

from __future__ import annotations

import time

import pytest

from lightspeed.bench import (
    DeviceSol,
    GemmShape,
    best_per_dtype,
    model_shapes,
    resolve_device,
    run_copy,
    run_gemm,
    run_launch,
    run_membw,
    supported_dtypes,
)
from lightspeed.bench.gemm import _GemmCase, check_dtype
from lightspeed.bench.membw import _parse_cache_size, _Stream, array_elements
from lightspeed.errors import UnsupportedError, UserInputError
from lightspeed.workload import AttentionSpec, TransformerSpec

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

CPU_SOL = DeviceSol(device_name="test-cpu", flop_per_s={"fp32": 1e12}, memory_bandwidth_bytes_per_s=1e11)


def _llama_like() -> TransformerSpec:
    # Llama-3-8B shapes (Meta's config.json): hidden 4096, 32 heads, 8 KV heads, FFN 14336, vocab 128256.
    return TransformerSpec(
        name="llama-like",
        display_name="Llama-like",
        num_layers=32,
        hidden_size=4096,
        ffn_hidden_size=14336,
        vocab_size=128256,
        attention=AttentionSpec(kind="gqa", num_heads=32, num_kv_heads=8, head_dim=128),
    )


def test_model_shapes_split_by_tensor_parallel_rank() -> None:
    shapes = {
        shape.label.split(" ", 1)[1]: shape for shape in model_shapes(_llama_like(), tp=2, num_tokens=64)
    }
    # column-parallel: outputs split; row-parallel: inputs split (Megatron-LM)
    assert (shapes["qkv tp=2"].n, shapes["qkv tp=2"].k) == ((32 + 2 * 8) * 128 // 2, 4096)
    assert (shapes["attention out tp=2"].n, shapes["attention out tp=2"].k) == (4096, 32 * 128 // 2)
    assert (shapes["mlp up tp=2"].n, shapes["mlp up tp=2"].k) == (2 * 14336 // 2, 4096)
    assert (shapes["mlp down tp=2"].n, shapes["mlp down tp=2"].k) == (4096, 14336 // 2)
    assert shapes["lm head tp=2"].n == 128256 // 2
    assert all(shape.m == 64 for shape in shapes.values())
    with pytest.raises(UserInputError, match="tensor parallel"):
        model_shapes(_llama_like(), tp=0)


def test_gemm_rate_is_flop_over_time_and_checked() -> None:
    device = resolve_device("cpu")
    shapes = [GemmShape(m=64, n=48, k=32, label="tiny"), GemmShape(m=128, n=128, k=128, label="small")]
    results = run_gemm(device=device, sol=CPU_SOL, dtypes=["fp32", "bf16"], shapes=shapes, quick=True)
    assert [(r.dtype, r.details["m"]) for r in results] == [
        ("fp32", 64),
        ("fp32", 128),
        ("bf16", 64),
        ("bf16", 128),
    ]
    assert all(result.correct for result in results)
    first = results[0]
    assert first.flop_per_call == 2 * 64 * 48 * 32
    assert first.unit == "FLOP/s"
    assert first.fraction_of_sol == pytest.approx(first.value / 1e12)
    assert first.stats.min <= first.value <= first.stats.max
    assert results[2].sol is None  # the test SOL has no bf16 row, and says so
    assert "bf16" in results[2].sol_note
    best = best_per_dtype(results)
    assert set(best) == {"fp32", "bf16"}
    assert best["fp32"].value == max(r.value for r in results if r.dtype == "fp32")


def test_gemm_check_catches_a_wrong_product() -> None:
    device = resolve_device("cpu")
    case = _GemmCase(torch, device, GemmShape(m=64, n=64, k=64), "fp32")
    case.run()
    assert case.correct()
    case.out[0, 0] += 100.0
    assert not case.correct()


def test_all_dtypes_are_the_supported_ones() -> None:
    found = supported_dtypes(resolve_device("cpu"))
    assert "fp32" in found
    assert "tf32" not in found  # a GPU tensor-core mode


def test_gemm_refuses_dtypes_the_device_lacks() -> None:
    device = resolve_device("cpu")
    with pytest.raises(UnsupportedError, match="tf32"):
        check_dtype(torch, device, "tf32")
    with pytest.raises(UserInputError, match="unsupported GEMM dtype"):
        check_dtype(torch, device, "int3")


def test_stream_byte_counts_and_check() -> None:
    device = resolve_device("cpu")
    results = run_membw(device=device, sol=CPU_SOL, array_bytes=2**20, quick=True)
    by_name = {result.name: result for result in results}
    elements = 2**20 // 8
    # STREAM: copy and scale move 2 x 8 bytes per element, add and triad 3 x 8
    assert by_name["stream copy"].details["bytes_moved"] == 16 * elements
    assert by_name["stream triad"].details["bytes_moved"] == 24 * elements
    for result in results:
        assert result.correct
        assert result.value == result.stats.max  # best of N, as STREAM reports
        assert result.fraction_of_sol == pytest.approx(result.value / 1e11)


def test_stream_check_catches_a_wrong_kernel() -> None:
    stream = _Stream(torch, resolve_device("cpu"), 4096)
    stream.kernel("triad")()
    assert stream.correct("triad")
    stream.a += 1e-6
    assert not stream.correct("triad")


def test_arrays_are_four_times_the_last_level_cache() -> None:
    assert array_elements(cache_bytes=32 * 2**20) == 4 * 32 * 2**20 // 8
    assert array_elements(cache_bytes=None) == 64 * 2**20 // 8  # floor when the cache is unknown
    assert array_elements(cache_bytes=2**30, array_bytes=2**20) == 2**20 // 8
    with pytest.raises(UserInputError, match="too small"):
        array_elements(cache_bytes=None, array_bytes=100)
    assert _parse_cache_size("32768K") == 32 * 2**20
    assert _parse_cache_size("2 MB") == 2 * 2**20
    assert _parse_cache_size("big") is None


def test_launch_counts_every_op() -> None:
    (result,) = run_launch(device=resolve_device("cpu"), sol=CPU_SOL, quick=True)
    assert result.name == "dispatch"
    assert result.unit == "s"
    assert result.correct
    assert result.sol is None
    assert 0 < result.value < 1e-2


def test_copy_needs_a_gpu() -> None:
    with pytest.raises(UnsupportedError, match="needs a CUDA GPU"):
        run_copy(device=resolve_device("cpu"), sol=CPU_SOL)


def test_device_choice() -> None:
    assert resolve_device("cpu").kind == "cpu"
    with pytest.raises(UserInputError, match="unknown device"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(UnsupportedError, match="no CUDA GPU is visible"):
            resolve_device("cuda")


def test_gemm_warms_the_device_first_and_keeps_no_warmup_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first size of a sweep used to be timed on a cold device (thread pools, BLAS heuristics,
    clocks): 1.2 GFLOP/s at 256^3 went into the store and its history. Now the device runs the
    first shape untimed for warmup_s before any timing, and only the timed sizes are results."""
    from lightspeed.bench.runtime import Timer

    events: list[tuple[str, tuple[int, ...], float]] = []
    run, timed = _GemmCase.run, Timer.time

    def counted_run(self: _GemmCase) -> None:
        events.append(("call", tuple(self.out.shape), time.perf_counter()))
        run(self)

    def counted_time(self: Timer, work: object, **options: int) -> list[float]:
        events.append(("timed", (), time.perf_counter()))
        return timed(self, work, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(_GemmCase, "run", counted_run)
    monkeypatch.setattr(Timer, "time", counted_time)
    shapes = [GemmShape(m=16, n=16, k=16, label="first"), GemmShape(m=24, n=24, k=24, label="second")]
    results = run_gemm(
        device=resolve_device("cpu"), sol=CPU_SOL, dtypes=["fp32"], shapes=shapes, quick=True, warmup_s=0.05
    )
    first_timed = next(index for index, event in enumerate(events) if event[0] == "timed")
    warm = [event for event in events[:first_timed] if event[1] == (16, 16)]
    assert len(warm) >= 3
    assert events[first_timed][2] - warm[0][2] >= 0.05  # the warm-up ran its whole budget first
    assert [result.details["label"] for result in results] == ["first", "second"]  # no warm-up result

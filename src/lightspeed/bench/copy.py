"""Host-device copy bandwidth: host-to-device and device-to-host, pinned and pageable.

Method (nvbandwidth's copy-engine test, REFERENCE.md section 5): one
``copy_`` of a random buffer per repetition timed with CUDA events, warm-up
first, the result checked element for element on sampled positions. Pinned
(page-locked) host memory lets the copy engine DMA directly; pageable memory
goes through a staging buffer and is slower. The SOL is the host link's
per-direction figure (PCIe Gen5 x16 ~63 GB/s), not the bidirectional total.
GPU only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from lightspeed.bench.results import BenchResult, make_result
from lightspeed.bench.runtime import BenchDevice, ProgressCallback, Timer, import_torch, require_gpu
from lightspeed.bench.sol import DeviceSol
from lightspeed.units import MIB

DIRECTIONS: Final = ("h2d", "d2h")
MEMORY_KINDS: Final = ("pinned", "pageable")
_NUM_CHECKED: Final = 4096


def copy_sizes(*, quick: bool) -> tuple[int, ...]:
    """Copy sizes in bytes: 1 MiB to 1 GiB (quick: 64 MiB and 256 MiB)."""
    if quick:
        return (int(64 * MIB), int(256 * MIB))
    return tuple(int(MIB * 4**power) for power in range(6))


def _buffers(torch: Any, device: BenchDevice, num_bytes: int, pinned: bool) -> tuple[Any, Any]:
    count = num_bytes // 4
    host = torch.randn(count, dtype=torch.float32)
    if pinned:
        host = host.pin_memory()
    gpu = torch.empty(count, dtype=torch.float32, device=device.torch_name)
    return host, gpu


def _measure(
    torch: Any, device: BenchDevice, timer: Timer, *, num_bytes: int, direction: str, memory: str, quick: bool
) -> tuple[list[float], bool]:
    host, gpu = _buffers(torch, device, num_bytes, memory == "pinned")
    source, target = (host, gpu) if direction == "h2d" else (gpu, host)
    if direction == "d2h":
        gpu.copy_(host)  # give the device buffer known contents to copy back
        host.zero_()
    # A pageable copy is staged through a pinned buffer by the host, so only the host clock
    # (with a synchronize) sees all of it; a pinned copy is one DMA that CUDA events time.
    seconds = timer.time(
        lambda: target.copy_(source, non_blocking=True),
        warmup=3,
        repeats=5 if quick else 20,
        wall_clock=memory == "pageable",
    )
    timer.synchronize()
    index = torch.randint(0, host.numel(), (_NUM_CHECKED,))
    correct = bool(torch.equal(gpu[index.to(device.torch_name)].cpu(), host[index]))
    return [num_bytes / sample for sample in seconds], correct


def run_copy(
    *,
    device: BenchDevice,
    sol: DeviceSol,
    sizes: Sequence[int] | None = None,
    directions: Sequence[str] = DIRECTIONS,
    memory_kinds: Sequence[str] = MEMORY_KINDS,
    quick: bool = False,
    progress: ProgressCallback | None = None,
) -> list[BenchResult]:
    """Bytes/s of each copy, beside the host link's per-direction bandwidth."""
    require_gpu(device, "copy", "host-to-device and device-to-host copies")
    torch = import_torch()
    timer = Timer(torch, device)
    peak = sol.host_link_bytes_per_s
    note = sol.note if peak is not None else (sol.note or "no host-link figure for this device")
    chosen = tuple(sizes) if sizes is not None else copy_sizes(quick=quick)
    cases = [(d, m, s) for d in directions for m in memory_kinds for s in chosen]
    results: list[BenchResult] = []
    for position, (direction, memory, num_bytes) in enumerate(cases):
        if progress is not None:
            progress(f"copy {direction} {memory}", position, len(cases))
        samples, correct = _measure(
            torch, device, timer, num_bytes=num_bytes, direction=direction, memory=memory, quick=quick
        )
        results.append(
            make_result(
                suite="copy",
                device=device.torch_name,
                sol_device=sol.device_name,
                name=f"{direction} {memory}",
                dtype=None,
                size_bytes=num_bytes,
                samples=samples,
                unit="B/s",
                best="median",
                sol=peak,
                sol_note=note,
                correct=correct,
                details={"direction": direction, "memory": memory},
            )
        )
    if progress is not None:
        progress("copy done", len(cases), len(cases))
    return results

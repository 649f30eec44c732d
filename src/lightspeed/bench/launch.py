"""Launch and dispatch latency: what each tiny operation costs before any work.

* ``dispatch``: back-to-back in-place adds on a one-element tensor; time per
  op. On a CPU this is PyTorch's dispatcher overhead; on a GPU the host-side
  launch rate (the GPU runs the kernels asynchronously behind it).
* ``launch+sync`` (GPU): one launch followed by ``synchronize``: the round trip
  a small dependent kernel pays.
* ``graph`` (GPU): the same launches captured once in a CUDA graph and
  replayed, which is how launch overhead is hidden.

Each sample averages many ops (one timer read costs about a microsecond); the
check is that the tensor counted every op.

The same concept read from a profile: :mod:`lightspeed.trace.launch` finds launch overhead in a
trace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from lightspeed.bench.results import BenchResult, make_result
from lightspeed.bench.runtime import (
    BenchDevice,
    ProgressCallback,
    Timer,
    import_torch,
    load_average_1min,
    with_load_note,
)
from lightspeed.bench.sol import DeviceSol

_NO_SOL_NOTE: Final = "latency has no catalog SOL; compare with the engine's kernel_launch_s"


def _counter(torch: Any, device: BenchDevice) -> Any:
    return torch.zeros(1, dtype=torch.float64, device=device.torch_name)


def _case(
    torch: Any, device: BenchDevice, timer: Timer, *, name: str, ops_per_sample: int, quick: bool
) -> tuple[list[float], bool]:
    counter = _counter(torch, device)
    work: Callable[[], object]
    if name == "graph":
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream(device=device.torch_name)
        with torch.cuda.stream(stream):
            counter.add_(1.0)  # warm up on a side stream before capture, as torch requires
        torch.cuda.synchronize(device.index)
        with torch.cuda.graph(graph):
            for _ in range(ops_per_sample):
                counter.add_(1.0)
        work = graph.replay
        inner, per_call_ops = 1, ops_per_sample
    elif name == "launch+sync":

        def work() -> None:
            counter.add_(1.0)
            torch.cuda.synchronize(device.index)

        inner, per_call_ops = ops_per_sample, 1
    else:
        work = lambda: counter.add_(1.0)  # noqa: E731 - one tiny op, timed many times
        inner, per_call_ops = ops_per_sample, 1
    counter.zero_()
    warmup, repeats = 2, (5 if quick else 20)
    seconds = timer.time(work, warmup=warmup, repeats=repeats, inner=inner, wall_clock=name == "launch+sync")
    timer.synchronize()
    expected = float((warmup + repeats * inner) * per_call_ops)
    correct = float(counter.item()) == expected
    return [sample / per_call_ops for sample in seconds], correct


def run_launch(
    *, device: BenchDevice, sol: DeviceSol, quick: bool = False, progress: ProgressCallback | None = None
) -> list[BenchResult]:
    """Seconds per tiny op: dispatch (CPU and GPU), launch+sync and CUDA-graph replay (GPU)."""
    load_start = load_average_1min()
    torch = import_torch()
    timer = Timer(torch, device)
    names = ("dispatch", "launch+sync", "graph") if device.is_gpu else ("dispatch",)
    ops_per_sample = 200 if quick else 1000
    results: list[BenchResult] = []
    for position, name in enumerate(names):
        if progress is not None:
            progress(f"launch {name}", position, len(names))
        seconds, correct = _case(torch, device, timer, name=name, ops_per_sample=ops_per_sample, quick=quick)
        results.append(
            make_result(
                suite="launch",
                device=device.torch_name,
                sol_device=sol.device_name,
                name=name,
                dtype=None,
                num_ops_per_sample=ops_per_sample,
                samples=seconds,
                unit="s",
                best="median",
                sol=None,
                sol_note=_NO_SOL_NOTE,
                correct=correct,
                details={"device": device.torch_name, "ops_per_sample": ops_per_sample},
            )
        )
    if progress is not None:
        progress("launch done", len(names), len(names))
    return with_load_note(results, device=device, load_start=load_start)

"""Measure on a GPU what the engine's decode-step floors and GEMM prices assume.

Usage (on a machine with a CUDA GPU; a CPU run with --device cpu --tiny only checks the script):
    python benchmarks/gpu_kernel_floors.py --out benchmarks/data/h200-kernels-measured.tsv

Every case is a chain of ``kernels`` GEMMs on *distinct* weights (together at least 2 GiB, many
times the L2), captured in one CUDA graph and replayed: back to back as a decode step runs them,
each kernel streaming its weights from HBM. The time per kernel is the median replay over the
chain length. The cases:

* ``floor``: one row (m = 1) against weights of 0.25 MiB to 224 MiB, k = 4,096, bf16. A line
  ``time = fixed + bytes / bandwidth`` through them gives the fixed GPU time a kernel costs
  beyond streaming its bytes (``sol/data/runtime.toml`` [launch] gpu_kernel_us, taken from a
  blog's H100 figure) and the bandwidth GEMV kernels reach. The same chain launched eagerly
  (no graph, no synchronisation inside) gives the host's cost of issuing one kernel
  (``kernel_launch_us``, where the host, not the GPU, is the bound).
* ``dense``: Llama 3.1 8B (TP1) and Llama 3.1 70B (TP8) projections from 1 to 16,384 rows,
  bf16 (``torch.mm``) and fp8 e4m3 with per-tensor scales (``torch._scaled_mm``).
* ``grouped``: the expert GEMMs of Mixtral 8x7B (8 experts) and Qwen3-30B-A3B (128 experts)
  with 1 to 2,048 rows per expert, bf16 (``torch._grouped_mm``, one kernel), fp8 e4m3 with
  row-wise scales (``torch._scaled_grouped_mm``) and as one bf16 ``torch.mm`` per expert
  (``loop``, what a stack without a grouped kernel runs).

Writes one TSV row per case (microseconds per kernel, min/median/max over the replays) with
the device, driver, PyTorch and CUDA versions in its header. ``benchmarks/kernel_anchors.py``
compares the engine's prices with such a file.
"""

from __future__ import annotations

import argparse
import datetime
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

CHAIN_BYTES = 2 * 2**30
MAX_KERNELS = 1024
MIN_KERNELS = 8
REPLAYS = 10
SMI_FIELDS = "driver_version,clocks.max.sm,clocks.max.mem,power.limit"
WARMUP_REPLAYS = 3
FLOOR_K = 4096
FLOOR_N = (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 28672)
DENSE_SHAPES = (
    ("llama-3.1-8b qkv", 6144, 4096),
    ("llama-3.1-8b up+gate", 28672, 4096),
    ("llama-3.1-8b down", 4096, 14336),
    ("llama-3.1-70b tp8 qkv", 1280, 8192),
    ("llama-3.1-70b tp8 up+gate", 7168, 8192),
    ("llama-3.1-70b tp8 down", 8192, 3584),
)
DENSE_ROWS = (1, 4, 16, 64, 256, 1024, 4096, 16384)
GROUPED_SHAPES = (
    ("mixtral-8x7b up+gate", 8, 28672, 4096, (1, 4, 16, 64, 128, 256, 512, 1024, 2048)),
    ("mixtral-8x7b down", 8, 4096, 14336, (1, 4, 16, 64, 128, 256, 512, 1024, 2048)),
    ("qwen3-30b-a3b up+gate", 128, 1536, 2048, (1, 4, 16, 64, 256)),
    ("qwen3-30b-a3b down", 128, 2048, 768, (1, 4, 16, 64, 256)),
)
COLUMNS = (
    "kind",
    "impl",
    "dtype",
    "label",
    "groups",
    "m",
    "n",
    "k",
    "kernels",
    "weight_bytes",
    "us_per_kernel",
    "us_min",
    "us_max",
    "note",
)


@dataclass(frozen=True)
class Case:
    kind: str
    impl: str
    dtype: str
    label: str
    groups: int
    m: int
    n: int
    k: int

    @property
    def weight_bytes(self) -> int:
        return self.groups * self.n * self.k * (1 if self.dtype == "fp8" else 2)


class Runner:
    """Builds a case's chain and times it on one device."""

    def __init__(self, device: torch.device, *, tiny: bool) -> None:
        self.device = device
        self.gpu = device.type == "cuda"
        self.chain_bytes = 64 * 2**20 if tiny else CHAIN_BYTES

    def kernels_for(self, case: Case) -> int:
        return max(MIN_KERNELS, min(MAX_KERNELS, math.ceil(self.chain_bytes / case.weight_bytes)))

    def measure(self, case: Case, *, graph: bool = True) -> tuple[int, list[float]]:
        """Kernels in the chain and the seconds per kernel of each timed replay."""
        kernels = self.kernels_for(case)
        calls = [self._call(case) for _ in range(kernels)]

        def chain() -> None:
            for call in calls:
                call()

        run = self._graphed(chain) if graph and self.gpu else chain
        for _ in range(WARMUP_REPLAYS):
            run()
        samples = [self._time(run) / kernels for _ in range(REPLAYS)]
        return kernels, samples

    def _time(self, run: Callable[[], None]) -> float:
        if not self.gpu:
            start = time.perf_counter()
            run()
            return time.perf_counter() - start
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        begin.record()
        run()
        end.record()
        end.synchronize()
        return float(begin.elapsed_time(end)) * 1e-3

    def _graphed(self, chain: Callable[[], None]) -> Callable[[], None]:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            chain()  # allocations and kernel choices happen outside the capture
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            chain()
        return graph.replay

    def _call(self, case: Case) -> Callable[[], Any]:
        if case.kind == "grouped":
            return self._grouped(case)
        if case.dtype == "fp8":
            return self._fp8(case)
        x = torch.randn(case.m, case.k, device=self.device, dtype=torch.bfloat16)
        weight = torch.randn(case.n, case.k, device=self.device, dtype=torch.bfloat16)
        out = torch.empty(case.m, case.n, device=self.device, dtype=torch.bfloat16)
        return lambda: torch.mm(x, weight.t(), out=out)

    def _fp8(self, case: Case) -> Callable[[], Any]:
        e4m3 = torch.float8_e4m3fn
        x = torch.randn(case.m, case.k, device=self.device).to(e4m3)
        weight = torch.randn(case.n, case.k, device=self.device).to(e4m3)
        one = torch.ones((), device=self.device)
        return lambda: torch._scaled_mm(x, weight.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    def _grouped(self, case: Case) -> Callable[[], Any]:
        rows = case.groups * case.m
        ends = torch.arange(1, case.groups + 1, device=self.device, dtype=torch.int32) * case.m
        if case.dtype == "fp8":
            e4m3 = torch.float8_e4m3fn
            x8 = torch.randn(rows, case.k, device=self.device).to(e4m3)
            weight8 = torch.randn(case.groups, case.n, case.k, device=self.device).to(e4m3)
            scale_x = torch.ones(rows, device=self.device)
            scale_w = torch.ones(case.groups, case.n, device=self.device)
            return lambda: torch._scaled_grouped_mm(
                x8, weight8.transpose(-2, -1), scale_x, scale_w, offs=ends, out_dtype=torch.bfloat16
            )
        x = torch.randn(rows, case.k, device=self.device, dtype=torch.bfloat16)
        weight = torch.randn(case.groups, case.n, case.k, device=self.device, dtype=torch.bfloat16)
        if case.impl == "loop":
            shape = (case.m, case.n)
            outs = [torch.empty(shape, device=self.device, dtype=torch.bfloat16) for _ in range(case.groups)]
            parts = [x[g * case.m : (g + 1) * case.m] for g in range(case.groups)]

            def loop() -> None:
                for g in range(case.groups):
                    torch.mm(parts[g], weight[g].t(), out=outs[g])

            return loop
        return lambda: torch._grouped_mm(x, weight.transpose(-2, -1), offs=ends)


def cases(tiny: bool) -> Iterator[Case]:
    scale = 16 if tiny else 1
    for n in FLOOR_N:
        yield Case("floor", "graph", "bf16", "gemv", 1, 1, max(1, n // scale), FLOOR_K // scale)
    for n in FLOOR_N:
        yield Case("floor", "eager", "bf16", "gemv", 1, 1, max(1, n // scale), FLOOR_K // scale)
    for dtype in ("bf16", "fp8"):
        for label, n, k in DENSE_SHAPES:
            for m in DENSE_ROWS:
                if dtype == "fp8" and m % 16:
                    continue  # _scaled_mm wants every dimension a multiple of 16
                yield Case("dense", "graph", dtype, label, 1, m // scale or 1, n // scale, k // scale)
    for impl, dtype in (("grouped_mm", "bf16"), ("grouped_mm", "fp8"), ("loop", "bf16")):
        for label, groups, n, k, rows in GROUPED_SHAPES:
            for m in rows:
                yield Case("grouped", impl, dtype, label, groups, m, n // scale, k // scale)


def header(device: torch.device) -> list[str]:
    lines = [
        f"# measured {datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')} by "
        "benchmarks/gpu_kernel_floors.py (lightspeed), one run",
        f"# torch {torch.__version__}, CUDA {torch.version.cuda}, python {sys.version.split()[0]}",
    ]
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        memory_gib = props.total_memory / 2**30
        lines.append(f"# device {props.name}, {props.multi_processor_count} SMs, {memory_gib:.1f} GiB")
        smi = subprocess.run(
            ["nvidia-smi", f"--query-gpu={SMI_FIELDS}", "--format=csv"],
            capture_output=True,
            text=True,
            check=False,
        )
        lines += [f"# nvidia-smi {line}" for line in smi.stdout.strip().splitlines()]
    lines.append(
        "# each case: a chain of `kernels` GEMMs on distinct weights (>= 2 GiB together), "
        f"replayed {REPLAYS} times after {WARMUP_REPLAYS} warm-ups; us per kernel = replay / kernels"
    )
    return lines


def warm(device: torch.device, seconds: float) -> None:
    """Raise the clocks before the first case (MAMF's method warms a GPU the same way)."""
    if device.type != "cuda":
        return
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(8):
            torch.mm(a, a)
        torch.cuda.synchronize()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true", help="small shapes (a check of the script)")
    parser.add_argument("--warmup-s", type=float, default=5.0)
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: use --device cpu --tiny to check the script", file=sys.stderr)
        return 2
    runner = Runner(device, tiny=args.tiny)
    warm(device, args.warmup_s)
    lines = [*header(device), "\t".join(COLUMNS)]
    for case in cases(args.tiny):
        note = ""
        try:
            kernels, samples = runner.measure(case, graph=case.impl != "eager")
            us = [s * 1e6 for s in samples]
            values = [f"{statistics.median(us):.3f}", f"{min(us):.3f}", f"{max(us):.3f}"]
        except (RuntimeError, TypeError, ValueError, NotImplementedError) as error:
            kernels, values = runner.kernels_for(case), ["", "", ""]
            note = str(error).splitlines()[0][:160] if str(error) else type(error).__name__
        fields = [case.kind, case.impl, case.dtype, case.label, case.groups, case.m, case.n, case.k]
        row = [str(f) for f in fields] + [str(kernels), str(case.weight_bytes), *values, note]
        lines.append("\t".join(row))
        print("\t".join(row), flush=True)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

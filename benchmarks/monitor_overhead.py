"""What the monitor costs: CPU time per sample, and the slowdown of a CPU training loop beside it.

    python benchmarks/monitor_overhead.py [--repeats 7] [--steps 60] [--no-peer] [--out FILE.json]

Part 1, CPU time per sample (thread CPU clock, best of 5 runs of 200 samples each):

- lightspeed ``HostBackend.read()`` (CPU, memory, network, disks) and with a
  watched process tree (``pid=`` this process, as ``monitor run`` watches its command);
- the sampler thread's whole tick (every backend read, merging, notes, the
  capture line encoded and written), measured with the thread's own CPU clock
  (``pthread_getcpuclockid``) while a real :class:`Monitor` samples at 50 ms;
- peer: nvitop's host panel poll (``nvitop.host``: cpu_percent, virtual_memory,
  swap_memory, load_average: what its TUI reads per refresh);
- peer: dcgm-exporter-style polling (every DCGM_FI_DEV_* field through NVML) and
  lightspeed's ``NvmlBackend.read()``: only where NVML finds a GPU.

Part 2, slowdown: a CPU training loop (a 2-layer MLP, torch, 1 thread) runs
``--steps`` steps bare, beside a lightspeed Monitor (host backend watching this
process) at 1 s and 100 ms, and beside an nvitop-style polling thread at 1 s
and 100 ms; configurations are interleaved ``--repeats`` times and the median
step time of each is compared with the bare loop's.

The peer runs in this process (its poll's CPU time and the slowdown it causes are
measured here): nvitop is imported from this environment when it has it, else from
its own virtual environment (``--peer-venv``, default ``/work/venvs/nvitop``,
created with nvitop 1.7.2 before anything is timed), whose packages come after this
environment's, so that both tools read through the same psutil. When nvitop cannot
be had the script says so in one line and exits with code 2; ``--no-peer`` measures
lightspeed alone and the record says no peer was compared (``"peer_compared": false``).

Writes ``benchmarks/results/monitor_overhead.json``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _peers import PeerUnavailableError, PythonPeer, python_peer, run_main, site_packages  # a sibling script

from lightspeed.errors import LightspeedError
from lightspeed.monitor import HostBackend, Monitor, NvmlBackend


def cpu_per_call_s(call: Callable[[], Any], *, calls: int = 200, repeats: int = 5) -> float:
    """Best-of-``repeats`` thread CPU time of ``calls`` calls, per call."""
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time()
        for _ in range(calls):
            call()
        best = min(best, time.thread_time() - start)
    return best / calls


NVITOP = PythonPeer("nvitop 1.7.2", "nvitop==1.7.2", "nvitop.host")
WITHOUT_PEER = "pass --no-peer to measure lightspeed alone"


def nvitop_poll(venv: Path) -> tuple[Callable[[], Any], str]:
    """nvitop's host-panel poll, imported into this process, and nvitop's version: from this
    environment when it has nvitop, else from its own environment ``venv`` (installed there
    when absent), whose packages are searched after this environment's."""
    if importlib.util.find_spec("nvitop") is None:
        python = python_peer(NVITOP, venv, venv_option="--peer-venv", without=WITHOUT_PEER)
        sys.path.append(str(site_packages(python)))
    try:
        host = importlib.import_module("nvitop.host")
    except ImportError as error:
        raise PeerUnavailableError(
            f"nvitop cannot be imported in this process ({error}); remove {venv} to install it "
            f"again or {WITHOUT_PEER}"
        ) from error

    def poll() -> Any:
        return (host.cpu_percent(), host.virtual_memory(), host.swap_memory(), host.load_average())

    return poll, importlib.metadata.version("nvitop")


def sampler_tick_cpu_s(interval_s: float = 0.05, duration_s: float = 4.0) -> tuple[float, int]:
    """CPU seconds of the sampler thread per tick, from the thread's own CPU clock."""
    with tempfile.TemporaryDirectory() as folder:
        monitor = Monitor(
            backends=[HostBackend(pid=os.getpid())],
            interval_s=interval_s,
            capture_path=Path(folder) / "c.jsonl",
        )
        monitor.start()
        monitor.wait_ready()
        clock = time.pthread_getcpuclockid(monitor._thread.ident or 0)
        first_cpu, first_samples = time.clock_gettime(clock), monitor.num_samples
        time.sleep(duration_s)
        cpu, samples = time.clock_gettime(clock) - first_cpu, monitor.num_samples - first_samples
        monitor.stop()
    return cpu / max(samples, 1), samples


def gpu_polls() -> dict[str, float]:
    """NVML reads (lightspeed's backend, and dcgm-exporter's default DCGM_FI_DEV_* fields) on a GPU."""
    try:
        backend = NvmlBackend()
        backend.open()
    except LightspeedError as error:
        return {"not_run": str(error)}  # type: ignore[dict-item]
    try:
        import pynvml

        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]

        def exporter_style() -> None:  # the default-counters.csv fields, one NVML call each
            for handle in handles:
                pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
                pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM)
                pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)
                pynvml.nvmlDeviceGetPowerUsage(handle)
                pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
                pynvml.nvmlDeviceGetPcieThroughput(handle, pynvml.NVML_PCIE_UTIL_TX_BYTES)
                pynvml.nvmlDeviceGetPcieThroughput(handle, pynvml.NVML_PCIE_UTIL_RX_BYTES)
                pynvml.nvmlDeviceGetUtilizationRates(handle)
                pynvml.nvmlDeviceGetMemoryInfo(handle)

        return {
            "lightspeed_nvml_read_s": cpu_per_call_s(backend.read, calls=50),
            "dcgm_exporter_style_nvml_s": cpu_per_call_s(exporter_style, calls=50),
            "num_gpus": float(len(handles)),
        }
    finally:
        backend.close()


def training_loop(steps: int) -> Callable[[], list[float]]:
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    inputs = torch.randn(64, 256)

    def run() -> list[float]:
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            loss = model(inputs).square().mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            times.append(time.perf_counter() - start)
        return times

    return run


class Poller:
    """A thread that calls ``poll`` every ``interval_s`` (how nvitop refreshes its host panel)."""

    def __init__(self, poll: Callable[[], Any], interval_s: float) -> None:
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(poll, interval_s), daemon=True)

    def _run(self, poll: Callable[[], Any], interval_s: float) -> None:
        while not self.stop.wait(interval_s):
            poll()

    def __enter__(self) -> Poller:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def slowdowns(steps: int, repeats: int, poll: Callable[[], Any] | None) -> dict[str, dict[str, float]]:
    run = training_loop(steps)
    run()  # warm up
    configs: dict[str, Callable[[], Any]] = {
        "bare": _Null,
        "lightspeed 1 s": lambda: Monitor(backends=[HostBackend(pid=os.getpid())], interval_s=1.0),
        "lightspeed 100 ms": lambda: Monitor(backends=[HostBackend(pid=os.getpid())], interval_s=0.1),
    }
    if poll is not None:
        configs["nvitop-style 1 s"] = lambda: Poller(poll, 1.0)
        configs["nvitop-style 100 ms"] = lambda: Poller(poll, 0.1)
    medians: dict[str, list[float]] = {name: [] for name in configs}
    for _ in range(repeats):
        for name, make in configs.items():
            with make():
                medians[name].append(statistics.median(run()))
    bare = statistics.median(medians["bare"])
    return {
        name: {
            "median_step_s": statistics.median(values),
            "slowdown": statistics.median(values) / bare - 1.0,
            "spread": (max(values) - min(values)) / statistics.median(values),
        }
        for name, values in medians.items()
    }


class _Null:
    def __enter__(self) -> _Null:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "monitor_overhead.json"
    )
    parser.add_argument(
        "--peer-venv",
        type=Path,
        default=Path("/work/venvs/nvitop"),
        help="nvitop's virtual environment, used when this one lacks nvitop (created when absent)",
    )
    parser.add_argument(
        "--no-peer",
        action="store_true",
        help="measure lightspeed alone, without nvitop (the record says no peer was compared)",
    )
    args = parser.parse_args()
    # the peer first: a missing one stops the run before anything is timed
    poll, peer = (None, "not run (--no-peer)") if args.no_peer else nvitop_poll(args.peer_venv)
    host = HostBackend()
    host.open()
    tree = HostBackend(pid=os.getpid())
    tree.open()
    per_sample: dict[str, Any] = {
        "lightspeed_host_read_s": cpu_per_call_s(host.read),
        "lightspeed_host_read_with_process_tree_s": cpu_per_call_s(tree.read),
    }
    tick, ticks = sampler_tick_cpu_s()
    per_sample["lightspeed_sampler_tick_s"] = tick
    per_sample["sampler_ticks_measured"] = ticks
    per_sample["nvitop_host_poll_s"] = cpu_per_call_s(poll) if poll is not None else "not run (--no-peer)"
    per_sample["gpu"] = gpu_polls()
    result = {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "peer_compared": poll is not None,
        "peer": peer if poll is None else f"nvitop {peer}",
        "cpu_per_sample": per_sample,
        "training_loop": slowdowns(args.steps, args.repeats, poll),
        "steps": args.steps,
        "repeats": args.repeats,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    run_main(main)

"""The engine's GEMM prices against GEMMs this project measured on an NVIDIA H200.

Usage:
    python benchmarks/measured_kernels.py [--out benchmarks/results/measured_kernels.json]

``benchmarks/data/h200-kernels/run*.tsv`` hold two runs of ``benchmarks/gpu_kernel_floors.py`` on
one H200 SXM lent to this project (4 December 2026; PyTorch 2.11, CUDA 13.0, driver 580): chains
of GEMMs on distinct weights replayed in a CUDA graph, as a decode step runs them. A case's time
is the mean of the runs that have it (they agree within 0.8% at the median, 23% at worst, on the
eager cases, which the host's dispatch bounds). Nothing in the engine was fitted on them.

Each case is priced as :func:`~lightspeed.sol.infer.iteration.gemm_time_s` prices a projection
on a ``dgx-h200`` GPU, at the hardware's ceilings (a serving profile's kernel efficiency set to
1, as these are plain cuBLAS and CUTLASS kernels with no serving stack around them), and the
error of the engine's time is reported per regime:

* ``decode``: up to 64 rows per GEMM (per expert for grouped ones), where the weights' traffic
  bounds a kernel; ``middle``: 128 to 1,024 rows, near the ridge; ``compute``: 4,096 rows and more.
* the ``floor`` chain (one row against 0.25-224 MiB of weights) fitted to
  ``time = fixed + bytes / bandwidth`` over the cases of at least 8 MiB: the fixed GPU time a
  kernel costs beyond its traffic (``sol/data/runtime.toml`` [launch] ``gpu_kernel_us``) and the
  bandwidth GEMV kernels stream at; the eager chain's time per kernel is the host's issue cost.
* every case against the catalog's roofline (HBM bandwidth and dense peak): none may beat it.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from lightspeed.catalog import load_catalog
from lightspeed.sol import InferencePlan, load_serving_stack
from lightspeed.sol.infer.inference_hardware import InferenceHardware, inference_hardware_for
from lightspeed.sol.infer.iteration import gemm_time_s

DATA = Path(__file__).parent / "data" / "h200-kernels"
RESULTS = Path(__file__).parent / "results" / "measured_kernels.json"
SYSTEM = "dgx-h200"
STACK = "trtllm-2025"
KEY = ("kind", "impl", "dtype", "label", "groups", "m", "n", "k")
FLOOR_FIT_MIN_BYTES = 8 * 2**20
# one-row kernels this small are all fixed time (0.5 us of traffic at most); eager ones this small
# are bound by the host's issue of each kernel
SMALL_KERNEL_MAX_BYTES = 2 * 2**20
EAGER_HOST_BOUND_MAX_BYTES = 8 * 2**20
# rows per GEMM (per expert) bounding each regime
DECODE_MAX_ROWS = 64
COMPUTE_MIN_ROWS = 4096


def _read(path: Path) -> list[dict[str, str]]:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


def cases(folder: Path = DATA) -> list[dict[str, Any]]:
    """Every measured case with its time (us per kernel) as the mean over the runs that have it."""
    times: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for path in sorted(folder.glob("run*.tsv")):
        for row in _read(path):
            if row["us_per_kernel"]:
                times[tuple(row[key] for key in KEY)].append(float(row["us_per_kernel"]))
    out = []
    for key, values in times.items():
        case: dict[str, Any] = dict(zip(KEY, key, strict=True))
        for name in ("groups", "m", "n", "k"):
            case[name] = int(case[name])
        case["measured_us"] = statistics.fmean(values)
        case["runs"] = len(values)
        out.append(case)
    return out


def weight_bytes(case: dict[str, Any]) -> float:
    """Bytes of weights one kernel of the case streams."""
    return float(case["groups"] * case["n"] * case["k"] * (1 if case["dtype"] == "fp8" else 2))


def flop(case: dict[str, Any]) -> float:
    """2 m n k per group."""
    return 2.0 * case["groups"] * case["m"] * case["n"] * case["k"]


def hardware(precision: str) -> InferenceHardware:
    """One H200 of a DGX H200 at the hardware's ceilings (kernel efficiency 1)."""
    stack = dataclasses.replace(load_serving_stack(STACK), kernel_efficiency=1.0)
    cluster = load_catalog().resolve_cluster(SYSTEM, 1)
    return inference_hardware_for(cluster, InferencePlan(precision=precision), None, stack)


def regime(case: dict[str, Any]) -> str:
    """``decode``, ``middle`` or ``compute`` by rows per GEMM."""
    if case["m"] <= DECODE_MAX_ROWS:
        return "decode"
    return "compute" if case["m"] >= COMPUTE_MIN_ROWS else "middle"


def priced(measured: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The graph-replayed cases with the engine's time and the error of it."""
    machines = {precision: hardware(precision) for precision in ("bf16", "fp8")}
    out = []
    for case in measured:
        if case["impl"] == "eager":
            continue
        groups = float(case["groups"])
        if case["impl"] == "loop":  # one GEMM per expert, each its own kernel
            one = gemm_time_s(machines[case["dtype"]], float(case["m"]), case["n"], case["k"])
            engine_s = groups * float(np.ravel(one)[0])
        else:
            engine_s = float(
                np.ravel(
                    gemm_time_s(
                        machines[case["dtype"]], float(case["m"]), case["n"], case["k"], groups=groups
                    )
                )[0]
            )
        out.append(
            {
                **case,
                "regime": regime(case),
                "engine_us": engine_s * 1e6,
                "time_error": engine_s * 1e6 / case["measured_us"] - 1.0,
            }
        )
    return out


def floor_fit(measured: list[dict[str, Any]]) -> dict[str, float]:
    """Least squares of ``us = fixed + bytes / bandwidth`` over the one-row graph chain's cases
    of at least 8 MiB; the smallest cases' time; and the eager chain's host time per kernel."""
    floor = [c for c in measured if c["kind"] == "floor" and c["impl"] == "graph"]
    big = [c for c in floor if weight_bytes(c) >= FLOOR_FIT_MIN_BYTES]
    slope, intercept = np.polyfit([weight_bytes(c) for c in big], [c["measured_us"] for c in big], 1)
    small = [c["measured_us"] for c in floor if weight_bytes(c) < SMALL_KERNEL_MAX_BYTES]
    eager = [c for c in measured if c["kind"] == "floor" and c["impl"] == "eager"]
    host = [c["measured_us"] for c in eager if weight_bytes(c) <= EAGER_HOST_BOUND_MAX_BYTES]
    return {
        "fixed_us": float(intercept),
        "bandwidth_bytes_per_s": float(1e6 / slope),
        "cases_fitted": len(big),
        "smallest_kernels_us": float(statistics.median(small)),
        "eager_host_us_per_kernel": float(statistics.median(host)),
    }


def roofline_violations(measured: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cases faster than the catalog's H200 roofline (its HBM bandwidth and dense peak)."""
    accelerator = load_catalog().accelerator("h200-sxm")
    peak = {p: accelerator.compute[p].dense_per_s for p in ("bf16", "fp8")}
    out = []
    for case in measured:
        if case["impl"] == "eager":
            continue
        bound_s = max(
            weight_bytes(case) / accelerator.memory_bandwidth_bytes_per_s, flop(case) / peak[case["dtype"]]
        )
        if case["measured_us"] * 1e-6 < bound_s:
            out.append({**case, "roofline_us": bound_s * 1e6})
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Median signed and absolute error per (kind and implementation, precision, regime)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        kind = row["kind"] if row["kind"] != "grouped" else f"grouped {row['impl']}"
        groups[f"{kind} {row['dtype']} {row['regime']}"].append(row["time_error"])
    return {
        name: {
            "n": len(errors),
            "median": statistics.median(errors),
            "median_abs": statistics.median(abs(e) for e in errors),
        }
        for name, errors in sorted(groups.items())
    }


def check(folder: Path = DATA) -> dict[str, Any]:
    """Every comparison of the module docs."""
    measured = cases(folder)
    rows = priced(measured)
    return {
        "cases": rows,
        "floor": floor_fit(measured),
        "roofline_violations": roofline_violations(measured),
        "summary": summary(rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = check()
    print("| GEMMs | dtype | regime | cases | engine at ceilings, median signed | median abs |")
    print("|---|---|---|---:|---:|---:|")
    for name, entry in result["summary"].items():
        kind, dtype, where = name.rsplit(" ", 2)
        print(
            f"| {kind} | {dtype} | {where} | {entry['n']} | {entry['median']:+.1%} "
            f"| {entry['median_abs']:.1%} |"
        )
    floor = result["floor"]
    print(
        f"\none-row GEMM chain (>= 8 MiB, {floor['cases_fitted']} cases): "
        f"fixed {floor['fixed_us']:.2f} us a kernel + "
        f"bytes at {floor['bandwidth_bytes_per_s'] / 1e12:.2f} TB/s; kernels under 2 MiB take "
        f"{floor['smallest_kernels_us']:.2f} us; "
        f"eager launches {floor['eager_host_us_per_kernel']:.1f} us a kernel"
    )
    print(f"cases faster than the catalog's roofline: {len(result['roofline_violations'])}")
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

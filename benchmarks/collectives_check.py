"""The engine's all-reduce cost against measured nccl-tests curves inside one NVLink domain.

Usage:
    python benchmarks/collectives_check.py [--out benchmarks/results/collectives_check.json]

``benchmarks/data/nccl-all-reduce.tsv`` holds four published ``all_reduce_perf`` sweeps (8 x H100
and 8 x H200 with NCCL's NVLS algorithm, 4 GB200 GPUs of one NVL72 rack with rings, 8 x H20),
none of which the engine's ring-protocol constants were set from (those are NCCL's own tuner
constants, ``sol/data/runtime.toml`` [collectives.protocols]); the one constant read from these
tables, the in-switch reduction's latency, is read from the two NVLS tables as printed below.

For every size the script prints the measured time, the engine's (:func:`all_reduce_s` on the
cluster's fabric as the engines build it, ``hardware_for``) and the engine's without ring
protocols (one alpha-beta cost at every size, as before them), and per table and size band
(under 1 MiB, 1-64 MiB, above 64 MiB) the median of measured over engine.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import functools
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from lightspeed.catalog import load_catalog
from lightspeed.sol.core.collectives import Fabric, all_reduce_s
from lightspeed.sol.core.hardware import hardware_for

TABLE = Path(__file__).parent / "data" / "nccl-all-reduce.tsv"
MIB = 2**20
BANDS = (
    ("under 1 MiB", 0, MIB),
    ("1-64 MiB", MIB, 64 * MIB + 1),
    ("above 64 MiB", 64 * MIB + 1, float("inf")),
)


def measured_rows() -> list[dict[str, Any]]:
    """The table's rows, each with its time in microseconds (derived from the bus bandwidth where
    the source prints only that: ``size / (busbw x n / (2 (n - 1)))``)."""
    lines = [line for line in TABLE.read_text().splitlines() if not line.startswith("#")]
    rows = []
    for row in csv.DictReader(lines, delimiter="\t"):
        gpus = int(row["gpus"])
        size = float(row["size_bytes"])
        if row["time_us"]:
            time_us = float(row["time_us"])
        else:
            algbw = float(row["busbw_gbps"]) * 1e9 * gpus / (2.0 * (gpus - 1))
            time_us = size / algbw * 1e6
        rows.append(
            {
                "table": row["table"],
                "system": row["system"],
                "gpus": gpus,
                "size_bytes": size,
                "time_us": time_us,
            }
        )
    return rows


@functools.cache
def _fabric(system: str) -> Fabric:
    """The fabric the engines build for one node of ``system`` (read once per system)."""
    return hardware_for(load_catalog().cluster(system), "bf16").fabric


def engine_times_us(rows: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """(engine, engine without ring protocols) microseconds per row."""
    engine, plain = [], []
    for row in rows:
        fabric = _fabric(row["system"])
        alpha_beta = dataclasses.replace(fabric, ring_protocols=None)
        engine.append(float(all_reduce_s(fabric, row["size_bytes"], row["gpus"])) * 1e6)
        plain.append(float(all_reduce_s(alpha_beta, row["size_bytes"], row["gpus"])) * 1e6)
    return engine, plain


def in_switch_residuals_us(rows: list[dict[str, Any]]) -> list[float]:
    """Measured time minus the bytes at the in-switch bandwidth, NVLS tables, 8 MiB to 1 GiB: the
    figures ``in_switch_latency_us`` is the median of."""
    out = []
    for row in rows:
        if row["table"] not in ("nd-h100-v5", "nd-h200-v5") or not 8 * MIB <= row["size_bytes"] <= 1024 * MIB:
            continue
        fabric = _fabric(row["system"])
        link = fabric.scale_up.bandwidth_per_gpu_bytes_per_s * fabric.reduction_efficiency
        out.append(row["time_us"] - row["size_bytes"] / link * 1e6)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "collectives_check.json"
    )
    args = parser.parse_args()
    rows = measured_rows()
    engine, plain = engine_times_us(rows)
    ratios: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    print(f"{'table':12} {'GPUs':>4} {'size':>10} {'measured us':>12} {'engine':>9} {'alpha-beta':>10}")
    for row, new, old in zip(rows, engine, plain, strict=True):
        size = row["size_bytes"]
        label = f"{row['table']:12} {row['gpus']:4d} {size / MIB:9.3f}M"
        print(f"{label} {row['time_us']:12.1f} {new:9.1f} {old:10.1f}")
        band = next(name for name, low, high in BANDS if low <= size < high)
        ratios[(row["table"], band)].append((row["time_us"] / new, row["time_us"] / old))
    summary = {}
    print("\nmedian measured / engine (engine without ring protocols)")
    for (table, band), pairs in sorted(ratios.items()):
        new_ratio = statistics.median(p[0] for p in pairs)
        old_ratio = statistics.median(p[1] for p in pairs)
        summary[f"{table} {band}"] = {"engine": new_ratio, "alpha_beta": old_ratio, "sizes": len(pairs)}
        print(f"  {table:12} {band:13} {new_ratio:5.2f} ({old_ratio:5.2f})  {len(pairs)} sizes")
    residuals = in_switch_residuals_us(rows)
    median = statistics.median(residuals)
    print(
        f"\nNVLS tables, 8 MiB-1 GiB: measured minus bytes at the in-switch bandwidth {min(residuals):.0f}-"
        f"{max(residuals):.0f} us, median {median:.0f} us (runtime.toml in_switch_latency_us)"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"bands": summary, "in_switch_residual_median_us": statistics.median(residuals)}, indent=1)
        + "\n"
    )
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()

"""The training engine's step time against training steps this project measured on an H200.

Usage:
    python benchmarks/measured_training.py [--out benchmarks/results/measured_training.json]

``benchmarks/data/h200-training/*.json`` are the outputs of ``benchmarks/gpu_train_step.py`` on
one H200 SXM lent to this project (4 December 2026; PyTorch 2.11, CUDA 13.0): Llama 3.2 1B (micro-
batch 4) and 3B (micro-batch 2) at 4,096 tokens, plain PyTorch eager and with each block compiled,
bf16 autocast, fused AdamW, no recomputation, 25 timed steps after 5 warm-up ones under the
goodput tracker and ``lightspeed monitor run``. Nothing in the engine was fitted on them.

Each is predicted as ``plan train --system dgx-h200 --gpus 1 --seq 4096 --global-batch B
--micro-batch B --zero 0 --recompute none`` with the profile that describes it: PyTorch 2.11 is a
2026 release, whose SDPA runs cuDNN attention on Hopper, so ``torchtitan-2026`` (eager) or
``torchtitan-2026-compile`` (Inductor-fused elementwise kernels); and again with the 2024-25
profiles of the same code (``torchtitan-2024``, ``-compile``: SDPA on FlashAttention-2), which is
what showed the attention kernel's share. The error is the engine's step time over the measured
median, minus one.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from lightspeed.catalog import load_catalog
from lightspeed.sol import TrainingPlan, estimate_training
from lightspeed.workload import load_models

DATA = Path(__file__).parent / "data" / "h200-training"
RESULTS = Path(__file__).parent / "results" / "measured_training.json"
SYSTEM = "dgx-h200"


def measurements(folder: Path = DATA) -> list[dict[str, Any]]:
    """The measured runs, in file-name order."""
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))]


def stack_of(run: dict[str, Any], year: int = 2026) -> str:
    """The training stack profile that describes the run's software in ``year``: eager or
    compiled torchtitan (2026: PyTorch 2.11's SDPA on cuDNN attention; 2024: FlashAttention-2)."""
    return f"torchtitan-{year}-compile" if run["compile"] else f"torchtitan-{year}"


def _estimate(run: dict[str, Any], stack: str) -> Any:
    plan = TrainingPlan(
        zero_stage=0,
        micro_batch_size=run["micro_batch"],
        global_batch_size=run["micro_batch"],
        seq_len=run["seq"],
        recompute="none",
    )
    return estimate_training(
        model=load_models().get(run["model"]),
        cluster=load_catalog().resolve_cluster(SYSTEM, 1),
        plan=plan,
        stack=stack,
        check_fit=True,
    )


def predict(run: dict[str, Any]) -> dict[str, Any]:
    """The engine's step time, MFU and memory for the run's plan on one GPU of a DGX H200 with
    the 2026 profile (cuDNN attention, the device's best fused kernel), and its step time with the
    2024-25 profile (FlashAttention-2)."""
    estimate = _estimate(run, stack_of(run))
    flash2 = _estimate(run, stack_of(run, 2024))
    return {
        "model": run["model"],
        "seq": run["seq"],
        "compile": run["compile"],
        "stack": stack_of(run),
        "measured_step_s": run["step_s_median"],
        "engine_step_s": estimate.step_time_s,
        "engine_mfu": estimate.mfu,
        "measured_peak_memory_gib": run.get("peak_memory_gib"),
        "engine_memory_gib": estimate.memory_per_gpu_bytes / 2**30,
        "engine_memory_parts_gib": {name: value / 2**30 for name, value in estimate.memory_bytes.items()},
        "time_error": estimate.step_time_s / run["step_s_median"] - 1.0,
        "stack_2024": stack_of(run, 2024),
        "engine_step_2024_s": flash2.step_time_s,
        "time_error_2024": flash2.step_time_s / run["step_s_median"] - 1.0,
    }


def check(folder: Path = DATA) -> dict[str, Any]:
    """Every run's prediction and the median |error|, with the 2026 and the 2024-25 profiles."""
    rows = [predict(run) for run in measurements(folder)]
    return {
        "rows": rows,
        "median_abs_error": statistics.median(abs(row["time_error"]) for row in rows),
        "max_abs_error": max(abs(row["time_error"]) for row in rows),
        "median_abs_error_2024": statistics.median(abs(row["time_error_2024"]) for row in rows),
        "max_abs_error_2024": max(abs(row["time_error_2024"]) for row in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = check()
    print(
        "| model | sequence | profile | measured step | engine step | error | 2024-25 profile (FA2) "
        "| error | memory: peak / engine |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for row in result["rows"]:
        print(
            f"| {row['model']} | {row['seq']:,} | {row['stack']} | {row['measured_step_s'] * 1e3:.0f} ms "
            f"| {row['engine_step_s'] * 1e3:.0f} ms | {row['time_error']:+.1%} "
            f"| {row['engine_step_2024_s'] * 1e3:.0f} ms | {row['time_error_2024']:+.1%} "
            f"| {row['measured_peak_memory_gib']:.1f} / {row['engine_memory_gib']:.1f} GiB |"
        )
    print(
        f"median |error| {result['median_abs_error']:.1%}, max {result['max_abs_error']:.1%}; with the "
        f"2024-25 profiles {result['median_abs_error_2024']:.1%}, max {result['max_abs_error_2024']:.1%}"
    )
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

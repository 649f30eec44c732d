"""The training engine's step time against training steps this project measured on an H200.

Usage:
    python benchmarks/measured_training.py [--out benchmarks/results/measured_training.json]

``benchmarks/data/h200-training/*.json`` are the outputs of ``benchmarks/gpu_train_step.py`` on
one H200 SXM lent to this project (4 December 2026; PyTorch 2.11, CUDA 13.0): Llama 3.2 1B (micro-
batch 4) and 3B (micro-batch 2) at 4,096 tokens, plain PyTorch eager and with each block compiled,
bf16 autocast, fused AdamW, no recomputation, 25 timed steps after 5 warm-up ones under the
goodput tracker and ``lightspeed monitor run``. Nothing in the engine was fitted on them.

Each is predicted as ``plan train --system dgx-h200 --gpus 1 --seq 4096 --global-batch B
--micro-batch B --zero 0 --recompute none`` with the profile that describes it: ``torchtitan-2024``
(eager, PyTorch SDPA) or ``torchtitan-2024-compile`` (Inductor-fused elementwise kernels). The
error is the engine's step time over the measured median, minus one.
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


def stack_of(run: dict[str, Any]) -> str:
    """The training stack profile that describes the run's software: eager or compiled torchtitan."""
    return "torchtitan-2024-compile" if run["compile"] else "torchtitan-2024"


def _estimate(run: dict[str, Any], attention_impl: str | None) -> Any:
    plan = TrainingPlan(
        zero_stage=0,
        micro_batch_size=run["micro_batch"],
        global_batch_size=run["micro_batch"],
        seq_len=run["seq"],
        recompute="none",
        attention_impl=attention_impl,
    )
    return estimate_training(
        model=load_models().get(run["model"]),
        cluster=load_catalog().resolve_cluster(SYSTEM, 1),
        plan=plan,
        stack=stack_of(run),
        check_fit=True,
    )


def predict(run: dict[str, Any]) -> dict[str, Any]:
    """The engine's step time and MFU for the run's plan on one GPU of a DGX H200, with the
    profile's attention (FlashAttention-2: PyTorch's SDPA of 2024-25) and with the device's best
    fused attention kernel (``--attention flash``)."""
    estimate = _estimate(run, None)
    best = _estimate(run, "flash")
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
        "engine_step_best_attention_s": best.step_time_s,
        "time_error_best_attention": best.step_time_s / run["step_s_median"] - 1.0,
    }


def check(folder: Path = DATA) -> dict[str, Any]:
    """Every run's prediction and the median |error|, with either attention kernel."""
    rows = [predict(run) for run in measurements(folder)]
    return {
        "rows": rows,
        "median_abs_error": statistics.median(abs(row["time_error"]) for row in rows),
        "max_abs_error": max(abs(row["time_error"]) for row in rows),
        "best_attention_median_abs_error": statistics.median(
            abs(row["time_error_best_attention"]) for row in rows
        ),
        "best_attention_max_abs_error": max(abs(row["time_error_best_attention"]) for row in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = check()
    print(
        "| model | sequence | profile | measured step | engine step | error | with the best attention "
        "| error | memory: peak / engine |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for row in result["rows"]:
        print(
            f"| {row['model']} | {row['seq']:,} | {row['stack']} | {row['measured_step_s'] * 1e3:.0f} ms "
            f"| {row['engine_step_s'] * 1e3:.0f} ms | {row['time_error']:+.1%} "
            f"| {row['engine_step_best_attention_s'] * 1e3:.0f} ms | {row['time_error_best_attention']:+.1%} "
            f"| {row['measured_peak_memory_gib']:.1f} / {row['engine_memory_gib']:.1f} GiB |"
        )
    print(
        f"median |error| {result['median_abs_error']:.1%}, max {result['max_abs_error']:.1%}; with the best "
        f"attention kernel {result['best_attention_median_abs_error']:.1%}, max "
        f"{result['best_attention_max_abs_error']:.1%}"
    )
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

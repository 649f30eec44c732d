"""Out-of-sample check: TensorRT-LLM's perf-overview throughput tables (dense and MoE models).

Usage:
    python benchmarks/perf_overview_check.py [--out benchmarks/results/perf_overview_check.json]

The table (``benchmarks/data/trtllm-perf-overview-dense.tsv``, read from
NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md @00f37686) lists
``trtllm-bench throughput`` results for Llama 3.3 70B, Llama 3.1 405B and Llama 3.1 8B
on B200, GB200, H200 and H100 at ten ISL/OSL pairs: 100 rows, of which four (the
1000/1000 column of 70B on B200, H200 and H100 and of 8B on H100) are shipped
validation rows the engine's values are fitted on. The other 96 were never fitted on;
this script predicts every row with ``validate`` and reports the error per model and GPU,
signed (positive: predicted faster than measured), and split by whether the outputs are
longer than the prompts (decode-heavy) or not. The MoE tables of the same page (Llama 4
Scout and Maverick, Qwen3 235B-A22B and 30B-A3B: 110 rows,
``benchmarks/data/trtllm-perf-overview-moe.tsv``, none fitted on) are reported the same way
and apart. So are TensorRT-LLM's 2023 tables (``benchmarks/data/trtllm-2023-performance.tsv``:
the v0.6.1 ``performance.md`` peak-throughput tables on H100 FP8 and A100 FP16, its v0.5 L40S
table and v0.5 first-token latencies at batch 1: 57 rows of GPT-J 6B, Llama 2 7B and 70B and
Falcon 180B under ``gptSessionBenchmark``'s static batches, none fitted on; plus the v0.5.0 blog
``H100vsA100.md``'s GPT-J rows at batch 64, throughput and first-token latency, 4 rows), which
check the ``trtllm-2023`` profile: its GEMMs, its decode kernel's reads of a grouped-query KV
cache, and a prefill of 64 prompts at once (the only published first-token latencies at a batch
above 1 here). The fourth table (``benchmarks/data/trtllm-perf-overview-v017.tsv``) is the same
page at TensorRT-LLM 0.17 (@258c7540, TensorRT engines, January 2025): 207 rows of Llama 3.1 8B,
70B (TP 1, 2, 4 and 8 on H200; 2, 4 and 8 on H100; 4 and 8 on A100) and 405B, Mistral 7B, Mixtral
8x7B (TP 1-8) and 8x22B on H200, H100, L40S and A100, none fitted on: the same model at every TP
on one GPU is what separates the tensor-parallel costs from the rest. Its ids carry the TP
(``L70tp8-H200-128-4096``). The fifth (``benchmarks/data/trtllm-online-serving-v014.tsv``,
:func:`check_online`) is the page's "Online Serving Measurements" table (TensorRT-LLM 0.14 behind
Triton, BF16, 500 requests): mean TTFT and ITL of Llama 3.1 70B (TP 4) and 8B on H100 and H200 at
2 to 32 requests per second and with every request sent at once, 144 figures, none fitted on,
reported by metric and rate (positive: predicted slower than measured).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from lightspeed.catalog import load_catalog
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.workload import load_models

TABLE = Path(__file__).parent / "data" / "trtllm-perf-overview-dense.tsv"
MOE_TABLE = Path(__file__).parent / "data" / "trtllm-perf-overview-moe.tsv"
TABLE_2023 = Path(__file__).parent / "data" / "trtllm-2023-performance.tsv"
TABLE_V017 = Path(__file__).parent / "data" / "trtllm-perf-overview-v017.tsv"
TABLE_ONLINE = Path(__file__).parent / "data" / "trtllm-online-serving-v014.tsv"
IN_SAMPLE = {"L70-B200-1000-1000", "L70-H200-1000-1000", "L70-H100-1000-1000", "L8-H100-1000-1000"}
FIRST_TOKEN = "first-token latency (batch 1)"
FIRST_TOKEN_AT_BATCH = "first-token latency at a batch above 1"


def _regime(row_id: str) -> str:
    """Decode-heavy (outputs longer than prompts), prefill-heavy or even, or a first-token latency
    (at batch 1, or at the batch its id names), from an id such as ``L70-B200-1000-2000``,
    ``L70-H100-TTFT-2048`` or ``GJ-A100-TTFT64-128``."""
    parts = row_id.split("-")
    if parts[-2] == "TTFT":
        return FIRST_TOKEN
    if parts[-2].startswith("TTFT"):
        return FIRST_TOKEN_AT_BATCH
    return "decode-heavy (OSL > ISL)" if int(parts[-1]) > int(parts[-2]) else "prefill-heavy or even"


def _group(row_id: str) -> str:
    model, gpu = row_id.split("-")[:2]
    return f"{model} {gpu}"


def _summary(errors: list[float]) -> dict[str, float]:
    return {
        "n": len(errors),
        "median_error": statistics.median(errors),
        "median_abs_error": statistics.median(abs(error) for error in errors),
        "max_abs_error": max(abs(error) for error in errors),
    }


def _errors(table: Path) -> tuple[list[Any], list[str], dict[str, float]]:
    """(rows, refusals, signed errors by id) of ``table`` predicted by ``validate``."""
    report = validate_published(
        path=table, catalog=load_catalog(), models=load_models(), infer=inference_predictor()
    )
    rows = [row for row in report.rows if row.kind == "infer"]
    refused = [f"{row.id}: {row.reason}" for row in rows if row.status != "ok"]
    errors = {
        row.id: row.predicted / row.measured - 1.0
        for row in rows
        if row.status == "ok" and row.predicted is not None
    }
    return rows, refused, errors


def check_online(table: Path = TABLE_ONLINE) -> dict[str, Any]:
    """Predict the online table and summarise by metric and rate (ids end ``-Q{rate}-{metric}``)."""
    rows, refused, errors = _errors(table)
    groups: dict[str, list[float]] = defaultdict(list)
    for row_id, error in errors.items():
        rate, metric = row_id.split("-")[-2:]
        groups[f"{metric} {rate}"].append(error)
        groups[metric].append(error)
    return {
        "table": str(table),
        "num_rows": len(rows),
        "refused": refused,
        "held_out": _summary(list(errors.values())),
        "within_20_percent": sum(abs(error) <= 0.2 for error in errors.values()),
        "by_group": {name: _summary(values) for name, values in sorted(groups.items())},
        "by_regime": {},
        "rows": errors,
    }


def check(table: Path = TABLE) -> dict[str, Any]:
    """Predict ``table`` and summarise the errors (see the module docs)."""
    rows, refused, errors = _errors(table)
    held_out = {key: value for key, value in errors.items() if key not in IN_SAMPLE}
    by_group: dict[str, list[float]] = defaultdict(list)
    by_regime: dict[str, list[float]] = defaultdict(list)
    for row_id, error in held_out.items():
        by_group[_group(row_id)].append(error)
        by_regime[_regime(row_id)].append(error)
    return {
        "table": str(table),
        "num_rows": len(rows),
        "refused": refused,
        "held_out": _summary(list(held_out.values())),
        "in_sample": {row_id: errors[row_id] for row_id in sorted(IN_SAMPLE) if row_id in errors},
        "by_group": {name: _summary(values) for name, values in sorted(by_group.items())},
        "by_regime": {name: _summary(values) for name, values in sorted(by_regime.items())},
        "rows": errors,
    }


def _print(result: dict[str, Any]) -> None:
    held = result["held_out"]
    print(
        f"{held['n']} held-out rows: median |error| {held['median_abs_error']:.1%}, "
        f"median signed {held['median_error']:+.1%}, max {held['max_abs_error']:.1%}; "
        f"refused {len(result['refused'])}"
    )
    print("| model GPU | n | median signed | median abs | max abs |")
    print("|---|---:|---:|---:|---:|")
    for name, values in [*result["by_group"].items(), *result["by_regime"].items()]:
        print(
            f"| {name} | {values['n']} | {values['median_error']:+.1%} | "
            f"{values['median_abs_error']:.1%} | {values['max_abs_error']:.1%} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/perf_overview_check.json"))
    args = parser.parse_args()
    results = {
        "dense": check(TABLE),
        "moe": check(MOE_TABLE),
        "trtllm-2023": check(TABLE_2023),
        "trtllm-0.17": check(TABLE_V017),
        "online-0.14": check_online(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    for name, result in results.items():
        print(f"## {name}")
        _print(result)
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()

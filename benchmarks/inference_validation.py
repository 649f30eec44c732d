"""Inference validation accuracy against published rows, beside two peer estimators, in one run.

Usage:
    python benchmarks/inference_validation.py [--table FILE.tsv] [--no-peer]
        [--out benchmarks/results/inference_validation.json]

Measures, in one run on this machine:

1. lightspeed's prediction of every inference row of the structured rows shipped
   with lightspeed (or of ``--table``, a free-text table) with the shipped
   values: per-row error, median, p90, max.
2. Peer llm-analysis 0.2.2 (``analysis.infer``, in its own virtual environment
   under ``/work/venvs/llm-analysis`` or ``$PEER_VENV``) on the rows it can
   express: static batches on GPUs it knows (A100, H100), twice: with its
   default efficiencies (1.0) and with lightspeed's family defaults (GEMM
   ceiling, streaming efficiency), so that the comparison is of models, not knobs.
   The environment is created (or made again) before anything runs; when
   llm-analysis cannot be installed or run the script says so in one line and
   exits with code 2. ``--no-peer`` leaves it out, and the record then says no
   peer was compared (``"peer_compared": false``).
3. Peer LLM-Viewer, as quoted in the rows' ``derived`` field (the table's
   ``derived_or_check`` column).
4. Sensitivity: the median error when each of the two inference parameters that
   move predictions (streaming efficiency, KV-cache memory fraction) is moved
   by about +-10%: the defaults were set from sources, not fit, and this shows
   how much the result leans on them.

Speed of the deployment search (points per second) is measured too, on the
seed's GPT-MoE-1.8T scenario.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from _peers import LLM_ANALYSIS, PeerUnavailableError, last_line, python_peer, run_main  # a sibling script
from _peers import LLM_ANALYSIS_VENV as PEER_VENV

from lightspeed.catalog import load_catalog
from lightspeed.sol import ServingLoad, inference_predictor, search_inference, validate_published
from lightspeed.sol.infer import inference_hardware as infer_cost_module
from lightspeed.sol.validation import ValidationReport, validate_builtin
from lightspeed.sol.validation.published import first_number, read_table
from lightspeed.sol.validation.structured import load_published_runs
from lightspeed.workload import load_models

# Rows llm-analysis can express: (row id, its model config, its GPU, its dtype, tp, batch, ISL, OSL, metric).
PEER_ROWS = (
    ("I11", "upstage_Llama-2-70b-instruct-v2", "h100-sxm-80gb", "w8a8e16", 4, 64, 128, 128, "total"),
    ("I13", "decapoda-research_llama-7b-hf", "a100-sxm-80gb", "w16a16e16", 1, 256, 128, 128, "total"),
    ("I14", "decapoda-research_llama-7b-hf", "a100-sxm-80gb", "w16a16e16", 1, 1, 2048, 1, "ttft"),
)
PEER_SCRIPT = """
import json, logging, sys
from llm_analysis.analysis import infer
logging.disable(logging.CRITICAL)
rows, efficiencies = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out = {}
for row_id, model, gpu, dtype, tp, batch, isl, osl, metric in rows:
    for label, (flops, hbm) in efficiencies[row_id].items():
        r = infer(model_name=model, gpu_name=gpu, dtype_name=dtype, log_level="CRITICAL", tp_size=tp,
                  batch_size_per_gpu=batch, seq_len=isl, num_tokens_to_generate=osl,
                  flops_efficiency=flops, hbm_memory_efficiency=hbm)
        value = r["prefill_latency"] if metric == "ttft" else batch * osl / r["total_latency"]
        out.setdefault(row_id, {})[label] = value
print(json.dumps(out))
"""


def _report(table: Path | None) -> ValidationReport:
    """Every row predicted with the shipped values: the structured rows, or a free-text table."""
    catalog, models = load_catalog(), load_models()
    if table is None:
        return validate_builtin(catalog=catalog, models=models)
    return validate_published(path=table, catalog=catalog, models=models, infer=inference_predictor())


def lightspeed_rows(table: Path | None) -> dict[str, Any]:
    report = _report(table)
    rows = {
        row.id: {
            "metric": row.metric,
            "measured": row.measured,
            "predicted": row.predicted,
            "error": row.rel_error,
        }
        for row in report.rows
        if row.kind == "infer"
    }
    return {"rows": rows, "summary": report.summary["infer"].to_dict()}


def _quoted(texts: dict[str, str]) -> dict[str, float]:
    quoted = {}
    for row_id, text in texts.items():
        if "llm-viewer" not in text.lower():
            continue
        value = first_number(text.split("est", 1)[-1])
        if value is not None:
            quoted[row_id] = value / 1e3 if re.search(r"\bms\b", text) else value
    return quoted


def llm_viewer_rows(table: Path | None) -> dict[str, float]:
    """LLM-Viewer's estimates where the rows quote them ('LLM-Viewer est 8,934.54', '... 100.9 ms')."""
    if table is None:
        runs = load_published_runs(catalog=load_catalog(), models=load_models())
        return _quoted({run.id: run.derived for run in runs if run.kind == "infer"})
    rows = read_table(table)
    return _quoted({row.row_id: row.text("derived_or_check") for row in rows if row.kind == "infer"})


WITHOUT_PEER = "pass --no-peer to leave it out"


def llm_analysis_rows(python: Path, measured: dict[str, float]) -> dict[str, Any]:
    """llm-analysis (run by ``python``, its environment's) on the rows it can express, with its
    defaults and with lightspeed's efficiencies."""
    ours = {"A100": (0.80, 0.80), "H100": (0.55, 0.80)}  # family GEMM ceiling, streaming efficiency
    efficiencies = {
        row[0]: {
            "defaults": (1.0, 1.0),
            "lightspeed efficiencies": ours["A100" if "a100" in row[2] else "H100"],
        }
        for row in PEER_ROWS
    }
    completed = subprocess.run(
        [str(python), "-c", PEER_SCRIPT, json.dumps(PEER_ROWS), json.dumps(efficiencies)],
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise PeerUnavailableError(
            f"{LLM_ANALYSIS.name} failed in {python} ({last_line(completed.stderr) or 'no message'}); "
            f"remove {PEER_VENV} to install it again or {WITHOUT_PEER}"
        )
    predicted = json.loads(completed.stdout.strip().splitlines()[-1])
    return {
        row_id: {
            label: {"predicted": value, "error": (value - measured[row_id]) / measured[row_id]}
            for label, value in values.items()
        }
        for row_id, values in predicted.items()
    }


def sensitivity(table: Path | None) -> dict[str, dict[str, float]]:
    """Median and mean absolute error with one inference parameter moved (the shipped file is not touched)."""
    base = infer_cost_module.load_inference_parameters()
    original = infer_cost_module.load_inference_parameters
    medians: dict[str, dict[str, float]] = {}
    for field, values in (
        ("stream_memory_efficiency", (0.7, 0.9)),
        ("kv_cache_memory_fraction", (0.8, 0.95)),
    ):
        for value in values:
            changed = dataclasses.replace(base, **{field: value})
            setattr(infer_cost_module, "load_inference_parameters", lambda path=None, p=changed: p)  # noqa: B010
            try:
                report = _report(table)
            finally:
                setattr(infer_cost_module, "load_inference_parameters", original)  # noqa: B010
            errors = [
                abs(row.rel_error) for row in report.rows if row.kind == "infer" and row.rel_error is not None
            ]
            medians[f"{field}={value}"] = {
                "median": statistics.median(errors),
                "mean": statistics.fmean(errors),
            }
    return medians


def search_speed(repeats: int) -> dict[str, float]:
    catalog, models = load_catalog(), load_models()
    rates, points = [], 0
    for _ in range(repeats):
        started = time.perf_counter()
        result = search_inference(
            model=models.get("gpt-moe-1.8t"),
            cluster=catalog.resolve_cluster("gb200-nvl72"),
            load=ServingLoad(32768, 1024),
            precision="nvfp4",
            max_ttft_s=5.0,
            max_tpot_s=0.05,
            disaggregated=True,
        )
        rates.append(result.num_points_evaluated / (time.perf_counter() - started))
        points = result.num_points_evaluated
    return {"points": points, "points_per_s_median": statistics.median(rates)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parents[1]
    parser.add_argument("--table", type=Path, help="a free-text table (default: the shipped structured rows)")
    parser.add_argument("--out", type=Path, default=root / "benchmarks/results/inference_validation.json")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--no-peer",
        action="store_true",
        help="leave llm-analysis out (the record says no peer was compared)",
    )
    args = parser.parse_args()
    # the peer first: a missing one stops the run before anything is measured
    python = (
        None
        if args.no_peer
        else python_peer(LLM_ANALYSIS, PEER_VENV, venv_option="PEER_VENV", without=WITHOUT_PEER)
    )
    ours = lightspeed_rows(args.table)
    measured = {row_id: row["measured"] for row_id, row in ours["rows"].items()}
    viewer = llm_viewer_rows(args.table)
    result = {
        "table": str(args.table) if args.table else "structured rows shipped with lightspeed",
        "lightspeed": ours,
        "llm_viewer_quoted": {
            row_id: {"predicted": value, "error": (value - measured[row_id]) / measured[row_id]}
            for row_id, value in viewer.items()
        },
        "peer_compared": python is not None,
        "llm_analysis": {"skipped": "not run (--no-peer)"}
        if python is None
        else llm_analysis_rows(python, measured),
        "sensitivity_abs_error": sensitivity(args.table),
        "search_speed": search_speed(args.repeats),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    run_main(main)

"""lightspeed beside NVIDIA's AIConfigurator on the same published inference rows, in one run.

Usage:
    python benchmarks/aiconfigurator_compare.py [--tables T1.tsv T2.tsv]
        [--out benchmarks/results/aiconfigurator_compare] [--version 0.12.0]

What it does, in one run on this machine:

1. Creates a virtual environment under ``OUT/venv`` (first run only, or again when it
   cannot import the peer) and installs ``aiconfigurator==VERSION`` from PyPI into it with
   pip: the peer runs as a program (``aiconfigurator cli estimate``), its code and data
   never enter this repository. When it cannot be installed the script says so in one
   line and exits with code 2, before predicting anything.
2. Predicts every inference row (``kind = infer``) of the tables with lightspeed
   (``validate_published`` with the shipped defaults; load-dependent rows simulated).
3. Asks the peer for the same deployment: the row's model (the peer's bundled config of
   the same architecture, named in the table when it is a stand-in), GPU, TP / attention
   DP / EP, weight and KV formats, ISL/OSL, and the batch per replica (the row's batch or
   concurrency per replica; for a throughput row at the most load, the KV-cache-limited
   batch lightspeed computed, since the peer's single-point estimate needs a batch). It reads
   TTFT, TPOT, tokens/s per GPU and per user from the peer's printed estimate and scales
   per-GPU figures to the row's GPUs. Rows the peer cannot express (no config, no system,
   cross-node expert parallelism) are listed with the peer's reason.
4. Writes ``OUT/compare.json`` and ``OUT/compare.md`` (the per-row table and the medians:
   on the rows both predict, and on all rows each predicts).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from _peers import (  # a sibling script
    MissingPrerequisiteError,
    PeerUnavailableError,
    PythonPeer,
    python_peer,
    run_main,
)

from lightspeed.catalog import load_catalog
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.sol.validation.infer_predict import inference_row_setup
from lightspeed.sol.validation.published import read_table
from lightspeed.workload import load_models

DEFAULT_TABLES = ("../shared/validation/published-dev.tsv", "../shared/validation/published-dev-2025.tsv")
# lightspeed model -> the peer's bundled config of that architecture (a stand-in says so)
PEER_MODELS = {
    "llama-3-8b": ("meta-llama/Meta-Llama-3.1-8B", ""),
    "llama-3-70b": ("meta-llama/Meta-Llama-3.1-70B", ""),
    "llama-2-70b": (
        "meta-llama/Meta-Llama-3.1-70B",
        "Llama 3.1 70B config (Llama 2 70B: same layers, 32k vocab)",
    ),
    "llama-3-405b": ("meta-llama/Meta-Llama-3.1-405B", ""),
    "deepseek-v3": ("deepseek-ai/DeepSeek-V3", ""),
    "mixtral-8x7b": ("mistralai/Mixtral-8x7B-v0.1", ""),
}
PEER_SYSTEMS = {
    "h100-sxm": "h100_sxm",
    "h200-sxm": "h200_sxm",
    "b200": "b200_sxm",
    "a100-sxm": "a100_sxm",
    "gb200": "gb200",
    "b300": "b300_sxm",
}
GEMM_MODES = {"fp8": "fp8", "nvfp4": "nvfp4", "bf16": "bfloat16", "fp16": "bfloat16"}
PEER_TIMEOUT_S = 600
_NUMBER = r"([0-9][0-9,]*\.?[0-9]*)"
_FIELDS = {
    "ttft_s": (re.compile(rf"TTFT:\s*{_NUMBER}\s*ms"), 1e-3),
    "tpot_s": (re.compile(rf"TPOT:\s*{_NUMBER}\s*ms"), 1e-3),
    "tokens_per_s_per_gpu": (re.compile(rf"tokens/s/gpu:\s*{_NUMBER}"), 1.0),
    "tokens_per_s_per_user": (re.compile(rf"tokens/s/user:\s*{_NUMBER}"), 1.0),
    "requests_per_s": (re.compile(rf"seq/s:\s*{_NUMBER}"), 1.0),
}


def peer_program(out: Path, version: str) -> Path:
    """The peer's command, in its own virtual environment under ``out`` (created once, made again
    when it cannot import the peer)."""
    peer = PythonPeer(f"aiconfigurator {version}", f"aiconfigurator=={version}", "aiconfigurator.main")
    python = python_peer(peer, out / "venv", venv_option="--out")
    program = python.parent / "aiconfigurator"
    if not program.exists():
        raise PeerUnavailableError(
            f"{peer.name} installed no 'aiconfigurator' program in {program.parent}; "
            f"remove {out / 'venv'} to install it again"
        )
    return program


def _batch(row: dict[str, Any], setup: Any) -> int:
    """Sequences per replica, per attention-DP rank where the replica has several (the peer's
    batch is a rank's)."""
    plan = row.get("plan") or {}
    load = setup.load
    ranks = max(setup.plan.num_replicas, 1) * max(setup.plan.dp_attention, 1)
    if load.concurrency is not None:
        return max(1, round(load.concurrency / ranks))
    batch = plan.get("batch_per_replica") or plan.get("mean_running")
    return max(1, round(float(batch) / setup.plan.dp_attention)) if batch else 1


def peer_command(
    program: Path, row: dict[str, Any], setup: Any, cluster: Any
) -> tuple[list[str] | None, str]:
    """(the peer's command for this row, a note), or (None, why it cannot be expressed)."""
    peer_model = PEER_MODELS.get(setup.model.name)
    if peer_model is None:
        return None, f"the peer bundles no config of {setup.model.name}"
    system = PEER_SYSTEMS.get(cluster.system.accelerator.name)
    if system is None:
        return None, f"the peer has no system for {cluster.system.accelerator.name}"
    plan = setup.plan
    if setup.batching == "decode" or plan.stage_gpus > cluster.system.scale_up_domain_size:
        return None, "a decode pool across nodes (cross-node expert parallelism)"
    gemm = GEMM_MODES.get(plan.precision)
    if gemm is None:
        return None, f"no peer quantization mode for {plan.precision}"
    command = [
        str(program),
        "cli",
        "estimate",
        "--log-level",
        "ERROR",
        "--model-path",
        peer_model[0],
        "--system",
        system,
        "--isl",
        str(setup.load.input_tokens),
        "--osl",
        str(setup.load.output_tokens),
        "--batch-size",
        str(_batch(row, setup)),
        "--tp-size",
        str(plan.tp),
        "--gemm-quant-mode",
        gemm,
    ]
    kv = (row.get("plan") or {}).get("kv_precision") or (
        "fp8" if plan.precision in ("fp8", "nvfp4") else "bfloat16"
    )
    command += ["--kvcache-quant-mode", "fp8" if kv == "fp8" else "bfloat16"]
    if setup.model.moe is not None:
        command += ["--moe-quant-mode", gemm if gemm != "fp8" else "fp8_block"]
        command += ["--moe-ep-size", str(plan.ep), "--moe-tp-size", str(plan.stage_gpus // plan.ep)]
        if plan.dp_attention > 1:
            command += ["--attention-dp-size", str(plan.dp_attention)]
    if setup.batching == "static" and setup.load.output_tokens == 1:
        command += ["--estimate-mode", "static_ctx"]
    return command, peer_model[1]


def run_peer(command: list[str]) -> tuple[dict[str, float] | None, str]:
    """The peer's figures, or None and the last line it printed."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PEER_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return None, f"no answer in {PEER_TIMEOUT_S} s"
    text = done.stdout + done.stderr
    figures = {}
    for key, (pattern, scale) in _FIELDS.items():
        match = pattern.search(text)
        if match:
            figures[key] = float(match.group(1).replace(",", "")) * scale
    if "tokens_per_s_per_gpu" not in figures and "ttft_s" not in figures:
        lines = [line for line in text.splitlines() if line.strip() and "eprecat" not in line]
        return None, (lines[-1].strip() if lines else f"exit {done.returncode}")[:200]
    return figures, ""


def peer_value(metric: str, figures: dict[str, float], setup: Any, num_gpus: int) -> float | None:
    """The row's metric from the peer's figures (per-GPU throughput scaled to the row's GPUs)."""
    per_gpu = figures.get("tokens_per_s_per_gpu")
    osl, isl = setup.load.output_tokens, setup.load.input_tokens
    values = {
        "output_tokens_per_s": None if per_gpu is None else per_gpu * num_gpus,
        "output_tokens_per_s_per_gpu": per_gpu,
        "output_tokens_per_s_per_user": figures.get("tokens_per_s_per_user"),
        "ttft_s": figures.get("ttft_s"),
        "tpot_s": figures.get("tpot_s"),
        "total_tokens_per_s": None if per_gpu is None else per_gpu * num_gpus * (isl + osl) / osl,
    }
    return values.get(metric)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def compare(tables: list[Path], program: Path) -> dict[str, Any]:
    catalog, models = load_catalog(), load_models()
    rows = []
    for table in tables:
        report = validate_published(path=table, catalog=catalog, models=models, infer=inference_predictor())
        predicted = {row.id: row.to_dict() for row in report.rows if row.kind == "infer"}
        for published in read_table(table):
            if published.kind != "infer":
                continue
            ours = predicted[published.row_id]
            entry: dict[str, Any] = {
                "table": table.name,
                "id": published.row_id,
                "metric": ours["metric"],
                "measured": ours["measured"],
                "lightspeed": ours["predicted"],
                "lightspeed_error": ours["rel_error"],
                "peer": None,
                "peer_error": None,
                "peer_note": "",
            }
            try:
                setup, cluster = inference_row_setup(published, catalog, models)
            except Exception as error:  # a row lightspeed cannot read: the peer gets nothing either
                entry["peer_note"] = f"row not read: {error}"
                rows.append(entry)
                continue
            command, note = peer_command(program, ours, setup, cluster)
            if command is None:
                entry["peer_note"] = note
            else:
                figures, why = run_peer(command)
                value = (
                    None
                    if figures is None
                    else peer_value(ours["metric"], figures, setup, setup.plan.num_gpus)
                )
                entry["peer_note"] = note or why
                entry["peer_command"] = " ".join(command[1:])
                if value is not None and ours["measured"]:
                    entry["peer"] = value
                    entry["peer_error"] = (value - ours["measured"]) / ours["measured"]
            rows.append(entry)
            print(
                entry["id"],
                "lightspeed",
                entry["lightspeed_error"],
                "peer",
                entry["peer_error"],
                entry["peer_note"],
            )
    both = [row for row in rows if row["lightspeed_error"] is not None and row["peer_error"] is not None]
    ours_all = [abs(row["lightspeed_error"]) for row in rows if row["lightspeed_error"] is not None]
    peer_all = [abs(row["peer_error"]) for row in rows if row["peer_error"] is not None]
    return {
        "rows": rows,
        "num_rows": len(rows),
        "num_both": len(both),
        "median_both_lightspeed": _median([abs(row["lightspeed_error"]) for row in both]),
        "median_both_peer": _median([abs(row["peer_error"]) for row in both]),
        "median_all_lightspeed": _median(ours_all),
        "num_lightspeed": len(ours_all),
        "median_all_peer": _median(peer_all),
        "num_peer": len(peer_all),
    }


def _percent(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value * 100:+.1f}%"


def markdown(result: dict[str, Any], version: str) -> str:
    lines = [
        f"| row | metric | measured | lightspeed | error | AIConfigurator {version} | error | peer note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        ours = "-" if row["lightspeed"] is None else format(row["lightspeed"], ",.4g")
        peer = "-" if row["peer"] is None else format(row["peer"], ",.4g")
        lines.append(
            f"| {row['id']} | {row['metric']} | {row['measured']:,.4g} | {ours} | "
            f"{_percent(row['lightspeed_error'])} | {peer} | {_percent(row['peer_error'])} | "
            f"{row['peer_note'] or ''} |"
        )
    lines.append("")
    lines.append(
        f"Rows both predict: {result['num_both']}; median |error| lightspeed "
        f"{_percent(result['median_both_lightspeed'])}, "
        f"AIConfigurator {_percent(result['median_both_peer'])}. "
        f"All rows each predicts: lightspeed {result['num_lightspeed']} rows, median "
        f"{_percent(result['median_all_lightspeed'])}; AIConfigurator {result['num_peer']} rows, median "
        f"{_percent(result['median_all_peer'])}."
    )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", type=Path, default=[Path(table) for table in DEFAULT_TABLES])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/aiconfigurator_compare"))
    parser.add_argument("--version", default="0.12.0")
    args = parser.parse_args()
    missing = [str(table) for table in args.tables if not table.is_file()]
    if missing:
        raise MissingPrerequisiteError(
            f"no table {', '.join(missing)}; pass the published tables with --tables"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    program = peer_program(args.out, args.version)
    result = compare(list(args.tables), program)
    result["peer"] = f"aiconfigurator {args.version} (PyPI), {sys.platform}"
    (args.out / "compare.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "compare.md").write_text(markdown(result, args.version))
    print(markdown(result, args.version))
    print(f"wrote {args.out / 'compare.json'} and {args.out / 'compare.md'}")


if __name__ == "__main__":
    run_main(main)

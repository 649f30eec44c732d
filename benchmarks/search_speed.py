"""Plan-search speed: lightspeed's vectorized search vs a per-plan loop and vs a peer.

Usage:
    python benchmarks/search_speed.py [--repeats 5] [--no-peer] [--out benchmarks/results/search_speed.json]

Measures, in one run on this machine:

1. ``search_training`` of Llama-3 405B on 16,384 H100 (DGX H100 over NDR) over
   every TP/PP/DP/CP/VPP/micro-batch/recompute/ZeRO combination (TP not capped to
   the NVLink domain), median of ``--repeats`` runs: plans evaluated per second.
2. The same engine called plan by plan (``estimate_training`` in a Python loop) on
   a sample of those plans: what vectorizing buys.
3. The peer llm-analysis 0.2.2 (``pip install llm-analysis``, in its own virtual
   environment under ``/work/venvs/llm-analysis`` or ``$PEER_VENV``, created on first
   use), timing its ``analysis.train`` on LLaMA-65B for 48 TP/PP/micro-batch
   configurations: configurations per second. Calculon, the other peer REFERENCE.md
   cites (~384 plans/s on 2 cores), is not on PyPI; its published figure is quoted.

The peer is set up and timed first: when it cannot be installed or run, the script
says so in one line and exits with code 2 before timing anything. ``--no-peer``
times lightspeed alone; the record then says no peer was compared
(``"peer_compared": false``).

Target (issue 3): >= 100,000 plans/s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

from _peers import LLM_ANALYSIS as PEER  # a sibling script
from _peers import LLM_ANALYSIS_VENV as PEER_VENV
from _peers import PeerUnavailableError, last_line, python_peer, run_main

from lightspeed.catalog import load_catalog
from lightspeed.sol import TrainingPlan, estimate_training, search_training
from lightspeed.workload import load_models

WITHOUT_PEER = "pass --no-peer to time lightspeed alone"
PEER_SCRIPT = """
import logging, time
from llm_analysis.analysis import train
logging.disable(logging.CRITICAL)
configs = [(tp, pp, mb) for tp in (1, 2, 4, 8) for pp in (1, 2, 4, 8) for mb in (1, 2, 4)]
for _ in range(2):  # warm up imports and caches
    train(model_name="decapoda-research_llama-65b-hf", gpu_name="h100-sxm-80gb", dtype_name="w16a16e16",
          log_level="CRITICAL", tp_size=1, pp_size=1, total_num_gpus=64, batch_size_per_gpu=1, seq_len=2048,
          global_batch_size=1024, flops_efficiency=0.5, hbm_memory_efficiency=0.9)
started = time.perf_counter()
for tp, pp, mb in configs:
    train(model_name="decapoda-research_llama-65b-hf", gpu_name="h100-sxm-80gb", dtype_name="w16a16e16",
          log_level="CRITICAL", tp_size=tp, pp_size=pp, total_num_gpus=64, batch_size_per_gpu=mb,
          seq_len=2048, global_batch_size=1024, flops_efficiency=0.5, hbm_memory_efficiency=0.9)
print(len(configs) / (time.perf_counter() - started))
"""


def vectorized(repeats: int) -> dict[str, float]:
    catalog, models = load_catalog(), load_models()
    model = models.get("llama-3-405b")
    cluster = catalog.cluster("dgx-h100", num_accelerators=16384)
    rates, counts = [], []
    for _ in range(repeats):
        result = search_training(model=model, cluster=cluster, global_batch_size=2048, seq_len=8192, top=5)
        rates.append(result.plans_per_s)
        counts.append(result.num_plans_evaluated)
    best = result.plans[0]
    return {
        "plans_evaluated": float(counts[-1]),
        "plans_per_s": statistics.median(rates),
        "best_step_time_s": best.step_time_s,
        "best_mfu": best.mfu,
    }


def per_plan_loop(sample: int) -> float:
    catalog, models = load_catalog(), load_models()
    model = models.get("llama-3-405b")
    cluster = catalog.cluster("dgx-h100", num_accelerators=16384)
    plans = [
        TrainingPlan(
            tp=tp,
            pp=pp,
            dp=16384 // (tp * pp),
            micro_batch_size=mb,
            global_batch_size=2048,
            seq_len=8192,
            recompute=recompute,
            uneven_pipeline=True,
        )
        for tp in (4, 8)
        for pp in (8, 16)
        for mb in (1,)
        for recompute in ("none", "selective", "full")
    ]
    plans = (plans * (sample // len(plans) + 1))[:sample]
    started = time.perf_counter()
    for plan in plans:
        estimate_training(model=model, cluster=cluster, plan=plan)
    return len(plans) / (time.perf_counter() - started)


def peer_rate(python: Path) -> float:
    """llm-analysis's configurations per second, run by ``python`` (its environment's)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"}
    completed = subprocess.run(
        [str(python), "-c", PEER_SCRIPT], capture_output=True, text=True, env=env, check=False
    )
    if completed.returncode != 0:
        raise PeerUnavailableError(
            f"{PEER.name} failed in {python} ({last_line(completed.stderr) or 'no message'}); "
            f"remove {PEER_VENV} to install it again or {WITHOUT_PEER}"
        )
    return float(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "search_speed.json")
    parser.add_argument(
        "--no-peer",
        action="store_true",
        help="time lightspeed alone, without llm-analysis (the record says no peer was compared)",
    )
    args = parser.parse_args()
    peer = None  # set up and timed first: a missing peer stops the run before lightspeed is timed
    if not args.no_peer:
        peer = peer_rate(python_peer(PEER, PEER_VENV, venv_option="PEER_VENV", without=WITHOUT_PEER))
    search = vectorized(args.repeats)
    loop = per_plan_loop(120)
    result = {
        "machine": {"cpus": os.cpu_count()},
        "lightspeed_search": search,
        "lightspeed_per_plan_loop_plans_per_s": loop,
        "peer_compared": peer is not None,
        "peer": "not run (--no-peer)" if peer is None else PEER.requirement,
        "llm_analysis_configs_per_s": peer,
        "calculon_published_plans_per_s": 384.0,
        "target_plans_per_s": 100_000.0,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    rate = search["plans_per_s"]
    print(f"lightspeed search: {search['plans_evaluated']:,.0f} plans, {rate:,.0f} plans/s (median)")
    print(f"lightspeed plan-by-plan loop: {loop:,.0f} plans/s ({rate / loop:,.0f}x slower)")
    if peer is not None:
        print(f"llm-analysis 0.2.2: {peer:,.0f} configurations/s ({rate / peer:,.0f}x slower)")
    else:
        print("llm-analysis: not run (--no-peer); no peer compared in this run")
    print(f"Calculon (published): 384 plans/s ({rate / 384:,.0f}x slower); target 100,000 plans/s")


if __name__ == "__main__":
    run_main(main)

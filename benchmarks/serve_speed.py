"""Serving-simulator speed: 100,000 requests, against a bare event loop and a per-iteration loop.

Usage:
    python benchmarks/serve_speed.py [--requests 100000] [--repeats 3]
        [--out benchmarks/results/serve_speed.json]

Measures, in one run on this machine (median of ``--repeats``):

1. ``simulate`` of 100,000 requests in two deployments:
   * ``llama-70b``: Llama 3 70B, tp=8 fp8 on one DGX H100, Poisson 10 req/s,
     2,000 prompt / 200 output tokens (the issue's example);
   * ``llama-8b-x8``: Llama 3 8B, 8 replicas of tp=1 fp8, Poisson 150 req/s,
     log-normal lengths (prompts mean 1,000 sd 800, outputs mean 250 sd 200,
     ShareGPT-like), least-loaded router;
   with the events the run handled (arrivals + iteration ends) per second and the
   decode steps it represents.
2. The floor of any Python discrete-event simulator on the same number of events: a
   bare ``heapq`` loop that pushes and pops one tuple per event and does nothing else.
3. The same simulator with its multi-step decode runs switched off (every decode
   iteration an event, as a per-iteration simulator such as Vidur steps), on the first
   tenth of the requests, scaled to the whole run.

Target (issue 27): 100,000 requests in at most 5 s on this 2-core machine. The wall time
depends on what else runs on the machine; the process's CPU time (``cpu_s``) is reported
beside it.
"""

from __future__ import annotations

import argparse
import heapq
import json
import statistics
import time
from pathlib import Path
from typing import Any

from lightspeed.catalog import load_catalog
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import (
    ArrivalProcess,
    LengthDistribution,
    ServingWorkload,
    generate_requests,
    simulate,
    simulated_deployment,
)
from lightspeed.sol.serve.engine import Engine
from lightspeed.workload import load_models

SCENARIOS: dict[str, dict[str, Any]] = {
    "llama-70b": {
        "model": "llama-3-70b",
        "plan": InferencePlan(tp=8, precision="fp8"),
        "arrivals": ArrivalProcess.poisson(10.0),
        "inputs": LengthDistribution.fixed(2000),
        "outputs": LengthDistribution.fixed(200),
    },
    "llama-8b-x8": {
        "model": "llama-3-8b",
        "plan": InferencePlan(tp=1, replicas=8, precision="fp8"),
        "arrivals": ArrivalProcess.poisson(150.0),
        "inputs": LengthDistribution.lognormal(1000.0, 800.0, 1, 8000),
        "outputs": LengthDistribution.lognormal(250.0, 200.0, 1, 2000),
    },
}


def _workload(scenario: dict[str, Any], count: int) -> ServingWorkload:
    return ServingWorkload(
        arrivals=scenario["arrivals"],
        input_lengths=scenario["inputs"],
        output_lengths=scenario["outputs"],
        num_requests=count,
    )


def bare_heapq_loop(num_events: int) -> float:
    """Seconds to push and pop ``num_events`` (time, sequence, kind, subject, version) tuples."""
    events: list[tuple[float, int, int, int, int]] = []
    started = time.perf_counter()
    clock = 0.0
    for sequence in range(num_events):
        heapq.heappush(events, (clock + 0.001, sequence, 0, 0, 0))
        clock = heapq.heappop(events)[0]
    return time.perf_counter() - started


class _StepByStep(Engine):
    """The engine with multi-step decode runs off: one event per decode iteration."""

    def _stretch(
        self, replica: Any, time: float, duration: float, shape: tuple[Any, ...]
    ) -> tuple[int, float]:
        return 1, duration


def step_by_step_s(name: str, count: int) -> float:
    scenario = SCENARIOS[name]
    catalog, models = load_catalog(), load_models()
    workload = _workload(scenario, count)
    deployment = simulated_deployment(
        model=models.get(scenario["model"]), cluster=catalog.cluster("dgx-h100"), plan=scenario["plan"]
    )
    requests = generate_requests(workload, seed=0)
    started = time.perf_counter()
    _StepByStep(deployment, requests, seed=0).run()
    return time.perf_counter() - started


def measure(name: str, count: int, repeats: int) -> dict[str, float]:
    scenario = SCENARIOS[name]
    catalog, models = load_catalog(), load_models()
    times, cpu_times, result = [], [], None
    for _ in range(repeats):
        started, cpu_started = time.perf_counter(), time.process_time()
        result = simulate(
            model=models.get(scenario["model"]),
            cluster=catalog.cluster("dgx-h100"),
            plan=scenario["plan"],
            workload=_workload(scenario, count),
        )
        times.append(time.perf_counter() - started)
        cpu_times.append(time.process_time() - cpu_started)
    assert result is not None
    events = int(result.outcome.iteration_s.size) + result.num_requests
    wall = statistics.median(times)
    tenth = step_by_step_s(name, count // 10) * 10
    return {
        "requests": float(result.num_requests),
        "wall_s": wall,
        "cpu_s": statistics.median(cpu_times),
        "events": float(events),
        "events_per_s": events / wall,
        "decode_steps_represented": float(result.num_iterations),
        "cost_model_evaluations": float(result.num_cost_evaluations),
        "bare_heapq_loop_s": bare_heapq_loop(events),
        "step_by_step_s_extrapolated": tenth,
        "ttft_p50_s": result.ttft.p50_s,
        "tpot_p50_s": result.tpot.p50_s,
        "output_tokens_per_s": result.output_tokens_per_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/serve_speed.json"))
    args = parser.parse_args()
    results = {name: measure(name, args.requests, args.repeats) for name in SCENARIOS}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    for name, row in results.items():
        print(
            f"{name}: {row['requests']:,.0f} requests in {row['wall_s']:.2f} s "
            f"({row['cpu_s']:.2f} s of CPU) "
            f"({row['events']:,.0f} events, {row['events_per_s']:,.0f} events/s, "
            f"{row['decode_steps_represented']:,.0f} decode steps, "
            f"{row['cost_model_evaluations']:.0f} cost evaluations); "
            f"bare heapq loop on as many events {row['bare_heapq_loop_s']:.2f} s; "
            f"one event per iteration {row['step_by_step_s_extrapolated']:.1f} s (from a tenth)"
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

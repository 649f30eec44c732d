"""False-positive rate and power of the regression gate vs a threshold-only gate.

A threshold-only gate (what asv's ``--factor`` and pytest-benchmark's
``--benchmark-compare-fail=median:5%`` do) fails whenever the median moved by
more than the threshold. On noisy runners that flags changes that are only
noise. This script draws many synthetic baseline/current pairs, both under
the null (no real change) and with a real slowdown, and counts how often each
gate fails. It writes ``benchmarks/results/regression_false_positives_n<samples>.json``.

Run: ``python benchmarks/regression_false_positives.py [--draws 400]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from lightspeed.gate import MetricSamples, compare_samples

THRESHOLD = 0.05
SCENARIOS = {
    # name: (spread description, sampler(rng, n) for one series of step times in seconds)
    "quiet runner (1% normal noise)": lambda rng, n: rng.normal(1.0, 0.01, n),
    "noisy runner (10% normal noise)": lambda rng, n: rng.normal(1.0, 0.10, n),
    "shared runner (lognormal, sigma 0.3)": lambda rng, n: rng.lognormal(0.0, 0.3, n),
    "slow path 20% of steps (bimodal)": lambda rng, n: (
        np.where(rng.random(n) < 0.2, 2.0, 1.0) * rng.normal(1.0, 0.02, n)
    ),
}


def _series(values: np.ndarray) -> MetricSamples:
    return MetricSamples(metric="step_time_s", unit="s", lower_is_better=True, samples=tuple(values.tolist()))


def _threshold_only(base: np.ndarray, cur: np.ndarray) -> bool:
    return bool(np.median(cur) / np.median(base) - 1.0 > THRESHOLD)


def _rates(sampler, rng: np.random.Generator, num_draws: int, num_samples: int, slowdown: float) -> dict:  # type: ignore[no-untyped-def]
    gate = naive = 0
    for _ in range(num_draws):
        base = sampler(rng, num_samples)
        cur = sampler(rng, num_samples) * (1.0 + slowdown)
        verdict = compare_samples(baseline=_series(base), current=_series(cur), threshold_fraction=THRESHOLD)
        gate += verdict.verdict == "regression"
        naive += _threshold_only(base, cur)
    return {"lightspeed_gate": gate / num_draws, "threshold_only": naive / num_draws}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--samples", type=int, default=10, help="samples per series")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument(
        "--out", type=Path, default=None, help="result file (default: benchmarks/results/...)"
    )
    args = parser.parse_args()
    out = args.out or Path(__file__).parent / "results" / f"regression_false_positives_n{args.samples}.json"
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    rows = []
    for name, sampler in SCENARIOS.items():
        null = _rates(sampler, rng, args.draws, args.samples, 0.0)
        real = _rates(sampler, rng, args.draws, args.samples, 0.15)
        rows.append({"scenario": name, "false_positive_rate": null, "power_at_15pct_slowdown": real})
        print(
            f"{name:40s} false positives: gate {null['lightspeed_gate']:6.1%}  threshold-only "
            f"{null['threshold_only']:6.1%}   detects +15%: gate {real['lightspeed_gate']:6.1%}  "
            f"threshold-only {real['threshold_only']:6.1%}"
        )
    elapsed_s = time.perf_counter() - started
    num_comparisons = 2 * len(SCENARIOS) * args.draws
    per_comparison_ms = elapsed_s / num_comparisons * 1e3
    print(f"{num_comparisons} comparisons in {elapsed_s:.1f} s ({per_comparison_ms:.2f} ms each)")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "threshold": THRESHOLD,
                "draws": args.draws,
                "samples_per_series": args.samples,
                "seed": args.seed,
                "seconds_per_comparison": elapsed_s / num_comparisons,
                "scenarios": rows,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()

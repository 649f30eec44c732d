"""CPU GEMM fp32 against the CPU's theoretical peak, with the ceiling explained in numbers.

    python benchmarks/bench_gemm_cpu.py [--quick] [--out FILE.json]

Runs the ``lightspeed bench gemm`` sweep (fp32, square and rectangular shapes,
median of timed repetitions after warm-up, every product checked) and
compares the best shape with the peak from the catalog's microarchitecture
table (``lightspeed hw detect``): sockets x cores x clock x FMA units x lanes
x 2. Target: >= 80% of that peak, or the measured ceiling explained. The
explanation is the clock the measurement implies: best FLOP/s / (cores x
FLOP per cycle per core), set beside the clock the peak assumed (in a VM
without cpufreq that is the host's nominal clock; turbo lifts the real one).

Writes ``benchmarks/results/bench_gemm_cpu.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from lightspeed.bench import DeviceSol, best_per_dtype, resolve_device, run_gemm
from lightspeed.catalog import detect_cpu

TARGET_FRACTION = 0.80
RESULTS = Path(__file__).resolve().parent / "results" / "bench_gemm_cpu.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the reduced sweep")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    local = detect_cpu()
    if local.peak is None:
        raise SystemExit(f"no CPU peak for this machine: {'; '.join(local.assumptions)}")
    peak = local.peak
    sol = DeviceSol(device_name="local cpu", flop_per_s={"fp32": peak.fp32_flop_per_s}, note=peak.formula)
    device = resolve_device("cpu")
    start = time.perf_counter()
    results = run_gemm(device=device, sol=sol, dtypes=["fp32"], quick=args.quick)
    elapsed_s = time.perf_counter() - start
    best = best_per_dtype(results)["fp32"]

    num_cores = peak.num_sockets * peak.num_cores_per_socket
    flop_per_cycle_per_core = peak.fp32_flop_per_s / (num_cores * peak.clock_hz)
    implied_clock_hz = best.value / (num_cores * flop_per_cycle_per_core)
    fraction = best.value / peak.fp32_flop_per_s
    summary = {
        "cpu": local.info.model_name,
        "microarchitecture": local.microarchitecture,
        "peak_fp32_flop_per_s": peak.fp32_flop_per_s,
        "peak_formula": peak.formula,
        "peak_assumptions": list(peak.assumptions),
        "best_shape": f"{best.details['m']}x{best.details['n']}x{best.details['k']}",
        "best_fp32_flop_per_s": best.value,
        "best_fraction_of_peak": fraction,
        "meets_target": fraction >= TARGET_FRACTION,
        "flop_per_cycle_per_core": flop_per_cycle_per_core,
        "assumed_clock_hz": peak.clock_hz,
        "implied_clock_hz": implied_clock_hz,
        "all_correct": all(result.correct for result in results),
        "num_threads": device.num_threads,
        "elapsed_s": elapsed_s,
        "python": platform.python_version(),
        "points": [
            {
                "shape": f"{r.details['m']}x{r.details['n']}x{r.details['k']}",
                "median_flop_per_s": r.value,
                "min": r.stats.min,
                "max": r.stats.max,
                "correct": r.correct,
            }
            for r in results
        ],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"peak: {peak.formula}")
    for point in summary["points"]:
        rate = point["median_flop_per_s"] / 1e9
        print(f"  {point['shape']:>16}  {rate:8.1f} GFLOP/s  correct={point['correct']}")
    print(
        f"best {summary['best_shape']}: {best.value / 1e9:.1f} GFLOP/s = {fraction:.1%} of peak "
        f"(target {TARGET_FRACTION:.0%}: {'met' if summary['meets_target'] else 'NOT met'})"
    )
    print(
        f"{flop_per_cycle_per_core:.0f} FLOP/cycle/core x {num_cores} cores: the best rate implies "
        f"{implied_clock_hz / 1e9:.2f} GHz against the {peak.clock_hz / 1e9:.2f} GHz the peak assumes"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

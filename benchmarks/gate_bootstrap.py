"""Cost of the regression gate's bootstrap of the median against resampling whole series.

The gate's interval of the median's change needs ``num_resamples`` bootstrap medians of
each side. The textbook way (and ``scipy.stats.bootstrap``) draws ``num_resamples``
resamples of all ``n`` values: O(num_resamples x n) time and memory. The gate draws the
resample's middle order statistics directly from their exact law
(:func:`lightspeed.gate.compare.bootstrap_medians`): O(num_resamples). This script times
both on the same series in the same run, records the peak memory each allocates
(tracemalloc, which sees numpy's buffers), and checks that they draw the same law: the
two-sample Kolmogorov-Smirnov statistic between the gate's and the textbook's bootstrap
medians, and the 95% percentile intervals side by side.

Run: ``python benchmarks/gate_bootstrap.py [--sizes 1000,10000,100000] [--resamples 2000] [--law-check]``
(writes ``benchmarks/results/gate_bootstrap.json``). scipy is optional: when it is
installed its ``bootstrap`` is timed too.
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from lightspeed.gate.compare import bootstrap_medians

try:  # the peer is optional: numpy's textbook resampling is always measured
    from scipy import stats as scipy_stats
except ImportError:  # pragma: no cover - depends on the environment
    scipy_stats = None

BATCH_VALUES = 20_000_000  # textbook resampling in batches of at most this many values (160 MB)


def _textbook_medians(values: np.ndarray, *, num_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of ``num_resamples`` whole resamples with replacement, in bounded batches."""
    batch = max(1, BATCH_VALUES // len(values))
    medians = []
    for start in range(0, num_resamples, batch):
        rows = min(batch, num_resamples - start)
        picks = rng.integers(0, len(values), size=(rows, len(values)))
        medians.append(np.median(values[picks], axis=1))
    return np.concatenate(medians)


def _scipy_interval(values: np.ndarray, *, num_resamples: int, seed: int) -> tuple[float, float]:
    result = scipy_stats.bootstrap(
        (values,),
        np.median,
        n_resamples=num_resamples,
        method="percentile",
        confidence_level=0.95,
        batch=max(1, BATCH_VALUES // len(values)),
        random_state=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _measure(run: Callable[[], Any]) -> tuple[Any, float, float]:
    """(result, seconds, peak MiB allocated) of one call."""
    tracemalloc.start()
    started = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - started
    _, peak_bytes = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, seconds, peak_bytes / 2**20


def _interval(medians: np.ndarray) -> tuple[float, float]:
    low, high = np.quantile(medians, [0.025, 0.975])
    return float(low), float(high)


def _ks_statistic(first: np.ndarray, second: np.ndarray) -> float:
    """Largest gap between the two empirical distribution functions."""
    grid = np.sort(np.concatenate([first, second]))
    first_cdf = np.searchsorted(np.sort(first), grid, side="right") / len(first)
    second_cdf = np.searchsorted(np.sort(second), grid, side="right") / len(second)
    return float(np.max(np.abs(first_cdf - second_cdf)))


def _row(size: int, *, num_resamples: int, seed: int) -> dict[str, Any]:
    values = np.sort(np.random.default_rng(seed).lognormal(0.0, 0.3, size))
    exact, exact_s, exact_mib = _measure(
        lambda: bootstrap_medians(values, num_resamples=num_resamples, rng=np.random.default_rng(seed + 1))
    )
    textbook, textbook_s, textbook_mib = _measure(
        lambda: _textbook_medians(values, num_resamples=num_resamples, rng=np.random.default_rng(seed + 2))
    )
    row: dict[str, Any] = {
        "samples_per_side": size,
        "gate_exact": {"seconds": exact_s, "peak_mib": exact_mib, "interval_95": _interval(exact)},
        "textbook_resampling": {
            "seconds": textbook_s,
            "peak_mib": textbook_mib,
            "interval_95": _interval(textbook),
        },
        # 1.36 * sqrt(2 / m) is the 5% critical value of the two-sample KS statistic
        "ks_statistic": _ks_statistic(exact, textbook),
        "ks_critical_5pct": 1.36 * (2.0 / num_resamples) ** 0.5,
    }
    if scipy_stats is not None:
        interval, scipy_s, scipy_mib = _measure(
            lambda: _scipy_interval(values, num_resamples=num_resamples, seed=seed + 3)
        )
        row["scipy_bootstrap"] = {"seconds": scipy_s, "peak_mib": scipy_mib, "interval_95": interval}
    return row


def _law_check(seed: int) -> list[dict[str, Any]]:
    """The same law at many resamples: odd and even small series, where the order statistics tie."""
    checks = []
    for size, num_resamples in ((10, 200_000), (11, 200_000), (1000, 200_000), (10_000, 10_000)):
        values = np.sort(np.random.default_rng(seed).lognormal(0.0, 0.3, size))
        exact = bootstrap_medians(values, num_resamples=num_resamples, rng=np.random.default_rng(seed + 1))
        textbook = _textbook_medians(values, num_resamples=num_resamples, rng=np.random.default_rng(seed + 2))
        check = {
            "samples_per_side": size,
            "resamples": num_resamples,
            "ks_statistic": _ks_statistic(exact, textbook),
            "ks_critical_5pct": 1.36 * (2.0 / num_resamples) ** 0.5,
        }
        print(
            f"law check n={size:>6,} resamples={num_resamples:,}: KS {check['ks_statistic']:.4f}"
            f" (5% critical {check['ks_critical_5pct']:.4f})",
            flush=True,
        )
        checks.append(check)
    return checks


def _print(row: dict[str, Any]) -> None:
    line = f"n={row['samples_per_side']:>7,}"
    for name in ("gate_exact", "textbook_resampling", "scipy_bootstrap"):
        if name in row:
            part = row[name]
            low, high = part["interval_95"]
            line += (
                f" | {name}: {part['seconds'] * 1e3:9.1f} ms {part['peak_mib']:8.1f} MiB"
                f" [{low:.4f}, {high:.4f}]"
            )
    line += f" | KS {row['ks_statistic']:.3f} (5% critical {row['ks_critical_5pct']:.3f})"
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="samples per side, comma separated")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--law-check", action="store_true", help="also compare the two laws at 10,000-200,000 resamples"
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "gate_bootstrap.json")
    args = parser.parse_args()
    sizes = [int(part) for part in args.sizes.split(",") if part.strip()]
    rows = []
    for size in sizes:
        row = _row(size, num_resamples=args.resamples, seed=args.seed)
        _print(row)
        rows.append(row)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload: dict[str, Any] = {"resamples": args.resamples, "seed": args.seed, "rows": rows}
    if args.law_check:
        payload["law_check"] = _law_check(args.seed)
    args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

"""Import cost of lightspeed's curated, lazily loaded API, against the eager alternative
and against the layout before the restructuring (issue 11), in the same run.

Each case runs in a fresh interpreter ``--repeat`` times; the figures are the minimum
(robust on a shared machine: load only adds time) and the median wall time, minus the
same statistic of an empty interpreter (``python -c pass``), and the
number of ``lightspeed`` modules the case leaves in ``sys.modules``. The "before"
cases import the tree of commit ``--before`` (extracted with ``git archive``), so
both layouts run with the same interpreter and site-packages.

    python benchmarks/import_time.py [--repeat 15] [--before 28be343]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "import_time.json"

COUNT = "; import sys; print(sum(1 for m in sys.modules if m == 'lightspeed' or m.startswith('lightspeed.')))"
CASES_NOW = {
    "import lightspeed (lazy API)": "import lightspeed",
    "import lightspeed; first use of ls.estimate_training": "import lightspeed as ls; ls.estimate_training",
    "eager equivalent: import every package the API names": (
        "import lightspeed.api, lightspeed.sol, lightspeed.goodput, lightspeed.trace, "
        "lightspeed.store, lightspeed.gate"
    ),
    "import lightspeed.store": "import lightspeed.store",
    "import lightspeed.cli.main (CLI start-up)": "import lightspeed.cli.main",
}
CASES_BEFORE = {
    "import lightspeed.store": "import lightspeed.store",
    "import lightspeed.cli.main (CLI start-up)": "import lightspeed.cli.main",
}


def _run(code: str, pythonpath: Path | None) -> tuple[float, int]:
    env = None
    if pythonpath is not None:
        env = {"PYTHONPATH": str(pythonpath), "PATH": "/usr/bin:/bin"}
    started = time.perf_counter()
    output = subprocess.run(
        [sys.executable, "-c", code + COUNT], check=True, capture_output=True, text=True, env=env
    ).stdout
    return time.perf_counter() - started, int(output.strip().splitlines()[-1])


def _measure(code: str, repeat: int, pythonpath: Path | None, baseline_s: float) -> dict[str, float]:
    runs = [_run(code, pythonpath) for _ in range(repeat)]
    times = [t for t, _ in runs]
    return {
        "min_ms": round((min(times) - baseline_s) * 1e3, 1),
        "median_ms": round((statistics.median(times) - baseline_s) * 1e3, 1),
        "num_lightspeed_modules": runs[0][1],
    }


def extract_tree(commit: str, into: Path) -> Path:
    """The ``src`` tree of ``commit``, extracted under ``into`` (also used by validate_speed.py)."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "src"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--before", default="28be343", help="commit of the layout before issue 11")
    args = parser.parse_args()
    baseline = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        baseline.append(time.perf_counter() - started)
    baseline_s = min(baseline)
    results: dict[str, object] = {"python_empty_min_ms": round(baseline_s * 1e3, 1), "repeat": args.repeat}
    now = {name: _measure(code, args.repeat, None, baseline_s) for name, code in CASES_NOW.items()}
    with tempfile.TemporaryDirectory() as folder:
        src = extract_tree(args.before, Path(folder))
        before = {name: _measure(code, args.repeat, src, baseline_s) for name, code in CASES_BEFORE.items()}
    results["now"] = now
    results[f"before ({args.before})"] = before
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Reading Nsight Systems SQLite exports: lightspeed against nsys-tui, a reader from PyPI, same run.

Inputs: the largest export of ``../shared/data/nsight/nsys`` (real, small), and
a large export made from a real one by tiling it in time: every row of
``concurrent.s16.sqlite``'s kernel, memcpy, memset, CUDA runtime and NVTX
tables repeated ``--copies`` times, each copy shifted past the last (and its
correlation ids moved), written to a temporary folder and never committed.

Each tool runs in its own process, three times; the table shows the median
in-process time (imports excluded: interpreter start-up would dominate the
small file) and the largest peak resident memory (``os.wait4``):

- lightspeed: ``load_trace`` (kernels, copies, memsets, CUDA calls and NVTX
  ranges into the trace table), then ``summarize`` + ``top_kernels``;
- nsys-tui 0.1.5 (github.com/GindaChen/nsys-tui, MIT): ``Profile(path)``,
  then per GPU ``kernels``, ``gpu_threads``, ``runtime_index`` and
  ``nvtx_events`` (what its viewer loads), then ``gpu_summary``. It reads
  kernels, not copies or memsets.

Both compute each kernel's total GPU time; the run checks that they agree
(nsys-tui rounds to the microsecond). nsys-tui lives in its own virtual
environment (``--peer-venv``, default ``/work/venvs/nsys-tui``), created here
when absent (or made again when it cannot import nsys-tui), before anything is timed;
it is never a dependency of lightspeed. When nsys-tui cannot be installed or run the
script says so in one line and exits with code 2. (nsys2prv 0.5.8, the other PyPI
reader tried, needs columns these exports lack, such as greenContext.)

Usage::

    python benchmarks/nsys_load.py [--copies 4000] [--repeats 3] [--out benchmarks/results/nsys_load.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _peers import PeerUnavailableError, PythonPeer, input_files, last_line, python_peer, run_main

REPO = Path(__file__).resolve().parents[1]
NSYS_DIR = Path(os.environ.get("LIGHTSPEED_SHARED", REPO.parent / "shared")) / "data" / "nsight" / "nsys"
PEER_REQUIREMENT = "nsys-tui==0.1.5"
PEER = PythonPeer("nsys-tui 0.1.5", PEER_REQUIREMENT, "nsys_tui.profile")
TILE_SOURCE = "concurrent.s16.sqlite"
TILED_TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "NVTX_EVENTS",
)

_LIGHTSPEED = """
import json, sys, time
from lightspeed.trace import load_trace, summarize, top_kernels
from lightspeed.trace.kernels import shorten_name
started = time.perf_counter()
trace = load_trace(sys.argv[1])
loaded = time.perf_counter()
summarize(trace)
kernels = top_kernels(trace, top=10**6, kinds=("computation", "communication")).kernels
done = time.perf_counter()
totals = {}
for k in kernels:
    totals[shorten_name(k.name)] = totals.get(shorten_name(k.name), 0.0) + k.total_s * 1e3
print(json.dumps({"load_s": loaded - started, "total_s": done - started,
                  "num_rows": trace.ranks[0].events.num_events, "kernel_ms": totals}))
"""

_PEER = """
import json, sys, time
import nsys_tui.profile as profile, nsys_tui.summary as summary
started = time.perf_counter()
prof = profile.open(sys.argv[1])
rows = 0
for device in prof.meta.devices:
    kernels = prof.kernels(device)
    threads = prof.gpu_threads(device)
    calls = prof.runtime_index(threads, prof.meta.time_range)
    ranges = prof.nvtx_events(threads, prof.meta.time_range) if threads and prof.meta.nvtx_count else []
    rows += len(kernels) + sum(len(c) for c in calls.values()) + len(ranges)
loaded = time.perf_counter()
totals = {}
for device in prof.meta.devices:
    for k in summary.gpu_summary(prof, device)["top_kernels"]:
        totals[k["name"]] = totals.get(k["name"], 0.0) + k["total_ms"]
done = time.perf_counter()
print(json.dumps({"load_s": loaded - started, "total_s": done - started, "num_rows": rows,
                  "kernel_ms": totals}))
"""

# Forks the command from a small launcher so that the child's peak RSS is its own.
_LAUNCHER = """
import json, os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    json.dump({"max_rss_kib": usage.ru_maxrss, "code": os.waitstatus_to_exitcode(status)}, out)
"""


def measured(command: list[str]) -> tuple[dict[str, Any], int]:
    """Run ``command`` (it prints one JSON object); return that object and the peak RSS in bytes."""
    with tempfile.TemporaryDirectory() as temp:
        report = Path(temp) / "usage.json"
        done = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, str(report), *command], capture_output=True, check=False
        )
        usage = json.loads(report.read_text())
    if usage["code"] != 0:
        raise RuntimeError(f"{command[0]} failed: {last_line(done.stderr.decode()) or 'no message'}")
    return json.loads(done.stdout), usage["max_rss_kib"] * 1024


def tile_export(source: Path, target: Path, copies: int) -> int:
    """``source`` with the rows of its activity tables repeated ``copies`` times in time; rows written."""
    shutil.copyfile(source, target)
    target.chmod(0o644)
    with sqlite3.connect(target) as db:
        present = [
            t for t in TILED_TABLES if db.execute("SELECT 1 FROM sqlite_master WHERE name=?", (t,)).fetchone()
        ]
        bounds = [db.execute(f'SELECT min(start), max("end") FROM {t}').fetchone() for t in present]
        span = max(high for _, high in bounds) - min(low for low, _ in bounds) + 1000
        db.execute(
            "CREATE TEMP TABLE copies AS WITH RECURSIVE c(n) AS "
            f"(SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < {copies - 1}) SELECT n FROM c"
        )
        rows = 0
        for table in present:
            columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
            shifted = [
                f'"{c}" + n * {span}' if c in ("start", "end")
                else f'"{c}" + n * 1000000000' if c == "correlationId"
                else f'"{c}"'
                for c in columns
            ]  # fmt: skip
            select = f"SELECT {', '.join(shifted)} FROM {table}, copies"
            db.execute(f"INSERT INTO {table} SELECT * FROM ({select})")
            rows += db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        db.commit()
    return rows


def run(python: str, code: str, path: Path, repeats: int) -> dict[str, Any]:
    results = [measured([python, "-c", code, str(path)]) for _ in range(repeats)]
    return {
        "load_s": statistics.median(r["load_s"] for r, _ in results),
        "load_and_kernel_totals_s": statistics.median(r["total_s"] for r, _ in results),
        "max_rss_bytes": max(rss for _, rss in results),
        "num_rows_read": results[0][0]["num_rows"],
        "kernel_ms": results[0][0]["kernel_ms"],
    }


def agreement_ms(ours: dict[str, float], theirs: dict[str, float]) -> float:
    """Largest |difference| of a kernel's total GPU time (ms), over the kernels both report."""
    shared = set(ours) & set(theirs)
    if shared != set(theirs):
        return float("inf")
    return max(abs(ours[name] - theirs[name]) for name in shared)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--copies", type=int, default=4000, help="copies of the tiled export's rows")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--peer-venv",
        type=Path,
        default=Path("/work/venvs/nsys-tui"),
        help="nsys-tui's virtual environment (created, or made again, when it cannot import nsys-tui)",
    )
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "nsys_load.json")
    args = parser.parse_args()
    largest = max(input_files(NSYS_DIR, "*.sqlite", "Nsight Systems exports"), key=lambda p: p.stat().st_size)
    peer = str(python_peer(PEER, args.peer_venv, venv_option="--peer-venv"))
    results = []
    with tempfile.TemporaryDirectory() as temp:
        tiled = Path(temp) / f"tiled-{args.copies}.sqlite"
        num_rows = tile_export(NSYS_DIR / TILE_SOURCE, tiled, args.copies)
        inputs = [
            (largest.name, largest, "real"),
            (f"{TILE_SOURCE} x {args.copies}", tiled, f"{num_rows} rows"),
        ]
        for label, path, what in inputs:
            ours = run(sys.executable, _LIGHTSPEED, path, args.repeats)
            try:
                theirs = run(peer, _PEER, path, args.repeats)
            except RuntimeError as error:
                raise PeerUnavailableError(
                    f"{PEER.name} failed on {label} ({error}); remove {args.peer_venv} to install it again"
                ) from error
            results.append(
                {
                    "input": label,
                    "what": what,
                    "file_bytes": path.stat().st_size,
                    "lightspeed": {k: v for k, v in ours.items() if k != "kernel_ms"},
                    "nsys_tui": {k: v for k, v in theirs.items() if k != "kernel_ms"},
                    "load_speedup": theirs["load_s"] / ours["load_s"],
                    "kernel_totals_max_difference_ms": agreement_ms(ours["kernel_ms"], theirs["kernel_ms"]),
                }
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"peer": PEER_REQUIREMENT, "results": results}, indent=2) + "\n")
    print(f"{'input':32} {'MB':>7} {'tool':10} {'rows read':>10} {'load':>9} {'+totals':>9} {'peak RSS':>9}")
    for row in results:
        for tool in ("lightspeed", "nsys_tui"):
            r = row[tool]
            print(
                f"{row['input']:32} {row['file_bytes'] / 1e6:7.1f} {tool:10} {r['num_rows_read']:>10} "
                f"{r['load_s'] * 1e3:7.1f}ms {r['load_and_kernel_totals_s'] * 1e3:7.1f}ms "
                f"{r['max_rss_bytes'] / 2**20:6.0f}MiB"
            )
        print(
            f"{'':32} load speedup {row['load_speedup']:.2f}x; kernel totals agree within "
            f"{row['kernel_totals_max_difference_ms']:.4f} ms"
        )
    return 0


if __name__ == "__main__":
    run_main(main)

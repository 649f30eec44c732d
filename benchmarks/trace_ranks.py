"""A 64-rank trace set: lightspeed serially, with --jobs N, on a local Ray, and HTA's multi-rank analysis.

The set is generated from the two real ranks of ``../shared/data/traces/trace_filter``
(a 128-rank job's sampled ranks 0 and 1): rank r copies real rank r mod 2,
tiled ``--tiles`` times in time (ids and step numbers shifted, as
``trace_vs_hta.py`` tiles), offset by r x 7 us and renumbered
(``distributedInfo.rank = r``). It is written to a temporary folder, never
committed.

Three commands run on the same folder, each in its own process tree:

- ``lightspeed trace summary DIR --json`` (one process, ranks one after another);
- ``lightspeed trace summary DIR --json --jobs N`` (N worker processes);
- ``lightspeed trace summary DIR --json --engine ray`` (one Ray task per rank file on a local Ray
  started by the command; its start-up is part of the time). These three run with ``--no-cache``
  (every run parses); then Ray again with an empty Parquet cache (each task writes its rank's
  Parquet) and with that cache warm (a second analysis);
- HTA 0.5.0: ``TraceAnalysis(trace_dir=DIR)`` (its own multi-rank parse, with its
  multiprocessing pool) then ``get_temporal_breakdown()``, in HTA's own virtual
  environment (``--hta-venv``, created when absent, as ``trace_vs_hta.py`` does, before anything
  is timed). When HTA cannot be installed the script says so in one line and exits with code 2;
  ``--skip-hta`` leaves it out, and the record then says no peer was compared.

For each: wall time, the peak resident memory of the whole process tree
(sampled every 20 ms from /proc: parent, pool and workers added up), of its
largest single process, and the CPU time of the whole tree. The answers are compared in the same
run: serial and parallel lightspeed must agree exactly; HTA's idle / compute /
non-compute % per rank are compared with lightspeed's (largest difference in
percentage points).

Usage::

    python benchmarks/trace_ranks.py [--ranks 64] [--tiles 10] [--jobs 2] [--skip-hta]
                                     [--repeat 3] [--folder DIR] [--out benchmarks/results/trace_ranks.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _peers import HTA, input_files, python_peer, run_main
from trace_vs_hta import _shifted  # the same time tiling as the single-trace benchmark

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = Path(os.environ.get("LIGHTSPEED_SHARED", REPO.parent / "shared")) / "data" / "traces"
SOURCES = ("trace_filter/sampled_rank-0.json.gz", "trace_filter/sampled_rank-1.json.gz")
COMPARED = ("idle_pct", "compute_pct", "non_compute_pct")

# HTA's own multi-rank path: TraceAnalysis parses every rank (with its process pool), then the
# temporal breakdown of all ranks; prints its rows as JSON.
_HTA_SCRIPT = """
import json, logging, sys, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
analysis = TraceAnalysis(trace_dir=sys.argv[1])
frame = analysis.get_temporal_breakdown(visualize=False)
print(json.dumps([{"rank": int(r["rank"]), "idle_pct": float(r["idle_time_pctg"]),
                   "compute_pct": float(r["compute_time_pctg"]),
                   "non_compute_pct": float(r["non_compute_time_pctg"])} for _, r in frame.iterrows()]))
"""


def _tiled_events(source: Path, tiles: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with gzip.open(source) as handle:
        document = json.loads(handle.read())
    events = document.pop("traceEvents")
    times = [(e["ts"], e["ts"] + e.get("dur", 0)) for e in events if "ts" in e]
    span = max(end for _, end in times) - min(start for start, _ in times) + 1000
    steps = [int(m.group(1)) for e in events if (m := re.match(r"ProfilerStep#(\d+)", e.get("name", "")))]
    num_steps = max(steps) - min(steps) + 1 if steps else 0
    tiled = [
        _shifted(event, copy, copy * span, num_steps)
        for copy in range(tiles)
        for event in events
        if not (copy and event.get("ph") == "M")
    ]
    return document, tiled


def generate(folder: Path, *, num_ranks: int, tiles: int) -> int:
    """Write ``num_ranks`` rank files into ``folder`` (64 ranks of 10 tiles: ~6 minutes on 2 cores);
    return the total number of events."""
    bases = [_tiled_events(SHARED_TRACES / source, tiles) for source in SOURCES]
    total = 0
    for rank in range(num_ranks):
        header, events = bases[rank % 2]
        offset = 7.0 * rank
        moved = [{**event, "ts": event["ts"] + offset} if "ts" in event else event for event in events]
        document = {
            **header,
            "distributedInfo": {**header.get("distributedInfo", {}), "rank": rank, "world_size": num_ranks},
            "traceEvents": moved,
        }
        with gzip.open(folder / f"rank-{rank}.json.gz", "wt", compresslevel=1) as handle:
            json.dump(document, handle)
        total += len(moved)
    return total


def _tree(root: int) -> dict[int, tuple[int, float]]:
    """``pid -> (resident bytes, CPU seconds so far)`` of ``root`` and all its descendants (/proc)."""
    parents: dict[int, int] = {}
    usage: dict[int, tuple[int, float]] = {}
    page, ticks = os.sysconf("SC_PAGE_SIZE"), os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        usage[int(entry)] = (int(fields[21]) * page, (int(fields[11]) + int(fields[12])) / ticks)
    members, changed = {root}, True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in members and pid not in members:
                members.add(pid)
                changed = True
    return {pid: usage[pid] for pid in members if pid in usage}


def measured(command: list[str]) -> dict[str, Any]:
    """Run ``command``: its stdout, wall time, peak tree RSS and largest process RSS."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    peak = [0]
    per_process: dict[int, tuple[int, float]] = {}  # pid -> (largest RSS seen, CPU seconds last seen)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            now = _tree(process.pid)
            peak[0] = max(peak[0], sum(rss for rss, _ in now.values()))
            for pid, (rss, cpu) in now.items():
                per_process[pid] = (max(rss, per_process.get(pid, (0, 0.0))[0]), cpu)
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout_chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: stdout_chunks.append(process.stdout.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    _, status, usage = os.wait4(process.pid, 0)
    wall_s = time.perf_counter() - started
    done.set()
    sampler.join()
    reader.join()
    stderr = process.stderr.read().decode()[-2000:]  # type: ignore[union-attr]
    return {
        "stdout": b"".join(stdout_chunks).decode(),
        "code": os.waitstatus_to_exitcode(status),
        "stderr": stderr,
        "wall_s": wall_s,
        "peak_tree_rss_bytes": peak[0],
        # the largest single process: the command itself (wait4) or any worker (sampled)
        "max_process_rss_bytes": max([usage.ru_maxrss * 1024, *(rss for rss, _ in per_process.values())]),
        "num_processes": len(per_process),
        # CPU of the whole tree: the command's own (wait4) plus what was last sampled of the others
        "cpu_s": usage.ru_utime
        + usage.ru_stime
        + sum(cpu for pid, (_, cpu) in per_process.items() if pid != process.pid),
    }


def _summary(run: dict[str, Any]) -> dict[str, Any]:
    keys = ("wall_s", "cpu_s", "peak_tree_rss_bytes", "max_process_rss_bytes", "num_processes", "code")
    return {key: run[key] for key in keys if key in run}


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median wall time, with every run's wall time beside it (the machine is shared)."""
    ordered = sorted(runs, key=lambda run: run["wall_s"])
    return {**ordered[len(ordered) // 2], "all_wall_s": [run["wall_s"] for run in runs]}


def _ray_with_cache(lightspeed: list[str], folder: Path) -> dict[str, Any]:
    """Ray with an empty Parquet cache (each task writes its rank's Parquet), then with it warm."""
    runs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="lightspeed-cache-") as cache:
        os.environ["LIGHTSPEED_CACHE"] = cache
        try:
            for name in ("empty_cache", "warm_cache"):
                run = measured([*lightspeed, str(folder), "--json", "--engine", "ray"])
                print(f"--engine ray, {name}: {_summary(run)}", file=sys.stderr)
                runs[name] = {**_summary(run), "stdout": run["stdout"]}
        finally:
            os.environ.pop("LIGHTSPEED_CACHE", None)
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--tiles", type=int, default=10, help="copies in time of each real rank")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--hta-venv",
        type=Path,
        default=Path("/work/venvs/hta"),
        help="HTA's virtual environment (created, or made again, when it cannot import HTA)",
    )
    parser.add_argument(
        "--skip-hta", action="store_true", help="leave HTA out (the record says no peer was compared)"
    )
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="lightspeed runs of each kind, alternated")
    parser.add_argument("--folder", type=Path, default=None, help="generate into (or reuse) this folder")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "trace_ranks.json")
    args = parser.parse_args()
    for source in SOURCES:
        input_files(SHARED_TRACES, source, "real ranks to copy")
    # the peer first: a missing one stops the run before anything is timed
    hta_python = None if args.skip_hta else python_peer(HTA, args.hta_venv, venv_option="--hta-venv")
    load_at_start = os.getloadavg()[0]  # the machine is shared: say how busy it was
    lightspeed = [sys.executable, "-m", "lightspeed", "trace", "summary"]
    with tempfile.TemporaryDirectory(prefix="lightspeed-ranks-") as temp:
        folder = args.folder or Path(temp)
        folder.mkdir(parents=True, exist_ok=True)
        if len(list(folder.glob("rank-*.json.gz"))) != args.ranks:
            generate(folder, num_ranks=args.ranks, tiles=args.tiles)
        num_events = (
            args.ranks * sum(len(_tiled_events(SHARED_TRACES / s, args.tiles)[1]) for s in SOURCES) // 2
        )
        size = sum(path.stat().st_size for path in folder.iterdir())
        print(f"{args.ranks} ranks, {num_events} events, {size / 2**20:.1f} MiB gzipped", file=sys.stderr)
        serial_runs, parallel_runs, ray_runs = [], [], []
        plain = [*lightspeed, str(folder), "--json", "--no-cache"]
        for _ in range(args.repeat):  # alternated, so that a busy spell on the machine hits all
            serial_runs.append(measured(plain))
            print(f"serial: {_summary(serial_runs[-1])}", file=sys.stderr)
            parallel_runs.append(measured([*plain, "--jobs", str(args.jobs)]))
            print(f"--jobs {args.jobs}: {_summary(parallel_runs[-1])}", file=sys.stderr)
            if not args.skip_ray:
                ray_runs.append(measured([*plain, "--engine", "ray"]))
                print(f"--engine ray: {_summary(ray_runs[-1])}", file=sys.stderr)
        serial, parallel = _median_run(serial_runs), _median_run(parallel_runs)
        ray = _median_run(ray_runs) if ray_runs else None
        ray_cached = None if args.skip_ray else _ray_with_cache(lightspeed, folder)
        hta = None if hta_python is None else measured([str(hta_python), "-c", _HTA_SCRIPT, str(folder)])
        if hta is not None:
            print(f"HTA: {_summary(hta)}", file=sys.stderr)
    for name, run in (("serial", serial), ("parallel", parallel), ("ray", ray), ("hta", hta)):
        if run is not None and run["code"] != 0:
            print(f"{name} failed: {run['stderr']}", file=sys.stderr)
            return 1
    ours = json.loads(serial["stdout"])
    identical = all(json.loads(run["stdout"]) == ours for run in parallel_runs)
    cached_outputs = [json.loads(run.pop("stdout")) for run in (ray_cached or {}).values()]
    ray_identical = all(json.loads(run["stdout"]) == ours for run in ray_runs) and all(
        output == ours for output in cached_outputs
    )
    worst_pp = None
    if hta is not None:
        theirs = {row["rank"]: row for row in json.loads(hta["stdout"])}
        worst_pp = max(abs(rank[key] - theirs[rank["rank"]][key]) for rank in ours for key in COMPARED)
    result = {
        "command": "python benchmarks/trace_ranks.py "
        f"--ranks {args.ranks} --tiles {args.tiles} --jobs {args.jobs} --repeat {args.repeat}"
        + (" --skip-hta" if args.skip_hta else ""),
        "load_average_1min_at_start": load_at_start,
        "load_average_1min_at_end": os.getloadavg()[0],
        "num_ranks": args.ranks,
        "num_events": num_events,
        "gzipped_bytes": size,
        "cpu_count": os.cpu_count(),
        "lightspeed_serial": {**_summary(serial), "all_wall_s": serial["all_wall_s"]},
        "lightspeed_jobs": {"jobs": args.jobs, **_summary(parallel), "all_wall_s": parallel["all_wall_s"]},
        "lightspeed_ray": None if ray is None else {**_summary(ray), "all_wall_s": ray["all_wall_s"]},
        "lightspeed_ray_cache": ray_cached,
        "peer_compared": hta is not None,
        "hta_multirank": None if hta is None else _summary(hta),
        "parallel_equals_serial": identical,
        "ray_equals_serial": ray_identical,
        "speedup_ray_vs_serial": None if ray is None else serial["wall_s"] / ray["wall_s"],
        "ranks_per_s_ray_one_node": None if ray is None else args.ranks / ray["wall_s"],
        "speedup_jobs_vs_serial": serial["wall_s"] / parallel["wall_s"],
        "speedup_jobs_vs_hta": None if hta is None else hta["wall_s"] / parallel["wall_s"],
        "max_difference_vs_hta_pp": worst_pp,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0 if identical else 1


if __name__ == "__main__":
    run_main(main)

"""lightspeed's trace summary against HTA (Holistic Trace Analysis 0.5.0): same answers, time, memory.

For every trace folder of ``../shared/data/traces`` and for a large trace made
by tiling a real one in time to >= 2 million events (written to a temporary
folder, never committed), run in separate processes:

- HTA: ``benchmarks/trace_hta_worker.py summary DIR`` in HTA's own virtual
  environment (temporal breakdown, comm/comp overlap, kernel-type breakdown);
- lightspeed: ``python -m lightspeed trace summary DIR --json`` (the same
  three analyses plus step times).

Each process's wall time and peak resident memory come from ``os.wait4`` in a
small launcher process (see ``measured``); both tools also report the time
of their load + analyses inside the process (imports excluded), the
"in-process" speedup, since interpreter start-up dominates small traces.
Answers are compared in the same run: largest difference, in percentage
points, of idle/compute/non-compute % and comm/comp overlap %. lightspeed runs
with ``--no-cache`` there (every run parses).

On the tiled trace the floor is measured in the same run too (issue 30):
``gunzip -c FILE > /dev/null`` as a process, and each installed inflater
(python-isal, zlib-ng, zlib) inflating the file in-process; then the Parquet
cache: ``trace summary`` with an empty cache (parse + write) and again (read
from the cache), in fresh processes, each also timed in-process; the cached
command's time is split into interpreter start-up (``python -c pass``), imports
(``-X importtime``), load (hash the file, read and check the entry), catalog,
summary and the rest (argument parsing, JSON output, exit). ``-X importtime``
does not see the modules lazy packages load through ``importlib.import_module``,
so the same command is also split by phase in one process
(``cache_second_phases``: start-up, importing the CLI, the command itself, and
the interpreter's teardown after it). lightspeed's modules are compiled to
bytecode first, as an installed package has them.

HTA is installed into a separate virtual environment (``--hta-venv``,
default ``/work/venvs/hta``), created here when absent (or made again when it
cannot import HTA) before anything is timed; it is never a dependency of
lightspeed. When HTA cannot be installed the script says so in one line and
exits with code 2. ``--write-golden`` also stores HTA's numbers for
every trace as test fixtures (``tests/fixtures/traces/hta_expected``).

Usage::

    python benchmarks/trace_vs_hta.py [--events 2000000] [--skip-large] [--write-golden]
                                      [--out benchmarks/results/trace_vs_hta.json]
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
from pathlib import Path
from typing import Any

from _peers import HTA, input_files, python_peer, run_main  # a sibling script

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = Path(os.environ.get("LIGHTSPEED_SHARED", REPO.parent / "shared")) / "data" / "traces"
WORKER = REPO / "benchmarks" / "trace_hta_worker.py"
GOLDEN_DIR = REPO / "tests" / "fixtures" / "traces" / "hta_expected"
TILE_SOURCE = "negative_queue_length_values_check/rank0.json.gz"
COMPARED = ("idle_pct", "compute_pct", "non_compute_pct", "comm_comp_overlap_pct")


def compile_bytecode() -> None:
    """Compile lightspeed's modules once (``__pycache__`` beside them, which git ignores), as an
    installed package ships them: with ``PYTHONDONTWRITEBYTECODE`` set, as in some shells, each
    lightspeed process would otherwise compile every module it imports again (~0.1-0.15 s, a fifth
    of a cached command). Python reads bytecode that exists whatever that variable says."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "src" / "lightspeed")], check=True)


def trace_dirs(root: Path) -> list[Path]:
    """Every folder under ``root`` that directly holds trace files."""
    return sorted({p.parent for p in root.rglob("*.json.gz")})


# Runs one command and reports its own wall time and peak RSS. A child's peak RSS
# starts from its parent's at fork, so the command is forked from this small
# launcher rather than from the benchmark process (which holds tiled traces).
_LAUNCHER = """
import json, os, sys, time
started, started_at = time.perf_counter(), time.time()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
ended_at = time.time()
with open(sys.argv[1], "w") as out:
    json.dump({"wall_s": time.perf_counter() - started, "max_rss_kib": usage.ru_maxrss,
               "cpu_s": usage.ru_utime + usage.ru_stime, "code": os.waitstatus_to_exitcode(status),
               "started_at": started_at, "ended_at": ended_at}, out)
"""

# CPU seconds (user + system) of the last process ``measured`` ran: on this shared 2-core machine
# wall time includes waiting for a core; CPU time is the work, and is what the ratios are also
# given in (docs/benchmarks.md states the load each run saw).
LAST_CPU_S: dict[str, float] = {}
# When (time.time()) the launcher forked the last process ``measured`` ran, and when it had ended.
LAST_SPAN: dict[str, float] = {}


def measured(command: list[str]) -> tuple[str, float, int, int]:
    """Run ``command``; return its stdout, wall seconds, peak RSS bytes and exit code."""
    with tempfile.TemporaryDirectory() as temp:
        report = Path(temp) / "usage.json"
        done = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, str(report), *command],
            capture_output=True,
            cwd=REPO,
            check=False,
        )
        usage = json.loads(report.read_text())
    text = done.stdout.decode()
    LAST_CPU_S["cpu_s"] = usage["cpu_s"]
    LAST_SPAN.update(started_at=usage["started_at"], ended_at=usage["ended_at"])
    if usage["code"] != 0:
        text = text or done.stderr.decode()[-2000:]
    return text, usage["wall_s"], usage["max_rss_kib"] * 1024, usage["code"]


def run_hta(python: Path, folder: Path, mode: str) -> dict[str, Any]:
    text, wall_s, rss, code = measured([str(python), str(WORKER), mode, str(folder)])
    result: dict[str, Any] = json.loads(text) if code == 0 else {"errors": {"process": text}}
    result.update(process_wall_s=wall_s, process_max_rss_bytes=rss, process_cpu_s=LAST_CPU_S["cpu_s"])
    return result


# In-process time of lightspeed's load + summary (imports excluded), as the HTA worker reports its own;
# also its parts: load (for a cache hit: hash the file, read and check the entry), catalog, summary.
_LIGHTSPEED_TIMER = """
import json, resource, sys, time
from lightspeed.catalog import load_catalog
from lightspeed.errors import TraceError
from lightspeed.trace import load_trace, summarize
# lightspeed's packages are lazy: load the modules the analysis uses before the clock, as HTA's
# worker has imported its own (their cost is in each process's wall and CPU time)
import lightspeed.trace.breakdown, lightspeed.trace.cache, lightspeed.trace.io.kineto, lightspeed.trace.loader
if sys.argv[2] == "cache":
    import pyarrow.parquet
faults, started = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.perf_counter()
parts = {}
try:
    trace = load_trace(sys.argv[1], cache=sys.argv[2] == "cache")
    parts["load_s"] = time.perf_counter() - started
    catalog = load_catalog()
    parts["catalog_s"] = time.perf_counter() - started - parts["load_s"]
    summarize(trace, catalog=catalog)
    parts["summary_s"] = time.perf_counter() - started - parts["load_s"] - parts["catalog_s"]
except TraceError:
    pass
# minor page faults: first touches of memory, slow on a virtual machine whose host backs it lazily
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
print(json.dumps({"wall_s": time.perf_counter() - started, **parts, "minor_faults": faults}))
"""


def run_lightspeed(folder: Path, *, cache: bool = False) -> dict[str, Any]:
    """One ``trace summary`` process and one in-process timing (both parse unless ``cache``)."""
    command = [sys.executable, "-m", "lightspeed", "trace", "summary", str(folder), "--json"]
    text, wall_s, rss, code = measured(command if cache else [*command, "--no-cache"])
    cpu_s = LAST_CPU_S["cpu_s"]
    ranks = json.loads(text) if code == 0 else None
    in_process = time_in_process(folder, "cache" if cache else "parse")
    return {
        "ranks": ranks,
        "error": None if code == 0 else text.strip(),
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "in_process_s": in_process["wall_s"],
        "in_process_parts": in_process,
        "max_rss_bytes": rss,
    }


def time_in_process(folder: Path, mode: str) -> dict[str, float]:
    """Seconds of load + summary inside a fresh process (imports excluded; ``wall_s``) and of each
    part (``load_s``, ``catalog_s``, ``summary_s``); ``mode``: parse or cache."""
    timed, _, _, timer_code = measured([sys.executable, "-c", _LIGHTSPEED_TIMER, str(folder), mode])
    return json.loads(timed) if timer_code == 0 else {"wall_s": float("nan")}


# The warm command's phases in its own process (the same command as ``python -m lightspeed``):
# when its first line runs, when the CLI is imported, when the command is done, and when the
# interpreter's teardown begins (the exit handler registered first runs last).
_COMMAND_PHASES = """
import atexit, json, sys, time
begun = time.time()
phases = {"begun_at": begun}
report = sys.argv[1]
def write():
    phases["teardown_at"] = time.time()
    with open(report, "w") as out:
        json.dump(phases, out)
atexit.register(write)
from lightspeed.cli.main import main
phases["cli_imported_at"] = time.time()
code = main(sys.argv[2:])
phases["done_at"] = time.time()
sys.exit(code)
"""


def command_phases(arguments: list[str]) -> dict[str, float]:
    """Seconds of a ``lightspeed`` command's phases, all in one fresh process: start-up (fork,
    interpreter, site), importing the CLI, the command (the modules it loads on first use, its
    work, its output) and the interpreter's teardown after the command (freeing every module
    and array, joining library threads); with the whole process's wall time."""
    with tempfile.TemporaryDirectory() as temp:
        report = Path(temp) / "phases.json"
        _, wall_s, _, code = measured([sys.executable, "-c", _COMMAND_PHASES, str(report), *arguments])
        if code != 0 or not report.exists():
            return {"wall_s": wall_s}
        at = json.loads(report.read_text())
    return {
        "wall_s": wall_s,
        "start_up_s": at["begun_at"] - LAST_SPAN["started_at"],
        "cli_import_s": at["cli_imported_at"] - at["begun_at"],
        "command_s": at["done_at"] - at["cli_imported_at"],
        "teardown_s": LAST_SPAN["ended_at"] - at["teardown_at"],
    }


def import_seconds(command: list[str]) -> float:
    """Seconds ``command`` (a Python command line) spends importing modules: the top-level entries
    of ``-X importtime`` (which itself adds a little)."""
    done = subprocess.run(
        [command[0], "-X", "importtime", *command[1:]], capture_output=True, text=True, cwd=REPO, check=False
    )
    top = re.findall(r"^import time:\s+\d+ \|\s+(\d+) \| (\S.*)$", done.stderr, flags=re.MULTILINE)
    return sum(int(micro_s) for micro_s, _ in top) / 1e6


def compare(hta: dict[str, Any], ours: dict[str, Any]) -> float | None:
    """Largest |lightspeed - HTA| in percentage points over the compared fields, None if either failed."""
    if not ours["ranks"] or "temporal_breakdown" not in hta:
        return None
    theirs = {row["rank"]: dict(row) for row in hta["temporal_breakdown"]}
    for row in hta.get("comm_comp_overlap", []):
        theirs.setdefault(row["rank"], {})["comm_comp_overlap_pct"] = row["comm_comp_overlap_pct"]
    worst = 0.0
    for rank in ours["ranks"]:
        expected = theirs.get(rank["rank"], {})
        for key in COMPARED:
            a, b = rank.get(key), expected.get(key)
            if a is None or b is None:
                if (a is None) != (b is None):
                    return float("inf")
                continue
            worst = max(worst, abs(a - b))
    return worst


def tile_trace(source: Path, target: Path, min_events: int) -> int:
    """Repeat ``source``'s events in time (ids and step numbers shifted) until >= ``min_events``."""
    with gzip.open(source) as handle:
        document = json.loads(handle.read())
    events = document["traceEvents"]
    times = [(e["ts"], e["ts"] + e.get("dur", 0)) for e in events if "ts" in e]
    span = max(end for _, end in times) - min(start for start, _ in times) + 1000
    steps = [int(m.group(1)) for e in events if (m := re.match(r"ProfilerStep#(\d+)", e.get("name", "")))]
    num_steps = max(steps) - min(steps) + 1 if steps else 0
    repeats = -(-min_events // len(events))
    tiled = []
    for copy in range(repeats):
        for event in events:
            if copy and event.get("ph") == "M":
                continue
            tiled.append(_shifted(event, copy, copy * span, num_steps))
    document["traceEvents"] = tiled
    with gzip.open(target, "wt", compresslevel=1) as handle:
        json.dump(document, handle)
    return len(tiled)


def _shifted(event: dict[str, Any], copy: int, offset: float, num_steps: int) -> dict[str, Any]:
    shifted = dict(event)
    if "ts" in shifted:
        shifted["ts"] = shifted["ts"] + offset
    if isinstance(shifted.get("id"), int):
        shifted["id"] += copy * 10**9
    args = shifted.get("args")
    if isinstance(args, dict):
        args = dict(args)
        for key in ("correlation", "External id"):
            if isinstance(args.get(key), int) and args[key] > 0:
                args[key] += copy * 10**9
        shifted["args"] = args
    match = re.match(r"ProfilerStep#(\d+)", shifted.get("name", ""))
    if match:
        shifted["name"] = f"ProfilerStep#{int(match.group(1)) + copy * num_steps}"
    return shifted


def write_golden(python: Path) -> None:
    """Store HTA's numbers for every trace of ../shared/data/traces."""
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for folder in trace_dirs(SHARED_TRACES):
        relative = folder.relative_to(SHARED_TRACES).as_posix()
        result = run_hta(python, folder, "golden")
        for key in ("wall_s", "max_rss_bytes", "process_wall_s", "process_max_rss_bytes"):
            result.pop(key, None)
        golden = {
            "trace": relative,
            "tool": f"HTA {result.pop('hta_version', '?')} (holistictraceanalysis on PyPI)",
            "command": f"python benchmarks/trace_vs_hta.py --write-golden  "
            f"(runs: benchmarks/trace_hta_worker.py golden ../shared/data/traces/{relative})",
            **result,
        }
        path = GOLDEN_DIR / f"{relative.replace('/', '__')}.json"
        path.write_text(json.dumps(golden, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path.relative_to(REPO)}", file=sys.stderr)


def benchmark(python: Path, folders: list[tuple[str, Path, int]]) -> list[dict[str, Any]]:
    rows = []
    for label, folder, num_events in folders:
        hta = run_hta(python, folder, "summary")
        ours = run_lightspeed(folder)
        row = {
            "trace": label,
            "num_events": num_events,
            "hta_wall_s": hta["process_wall_s"],
            "hta_max_rss_bytes": hta["process_max_rss_bytes"],
            "hta_errors": hta.get("errors", {}),
            "lightspeed_wall_s": ours["wall_s"],
            "lightspeed_max_rss_bytes": ours["max_rss_bytes"],
            "lightspeed_error": ours["error"],
            "speedup": hta["process_wall_s"] / ours["wall_s"],
            "hta_cpu_s": hta["process_cpu_s"],
            "lightspeed_cpu_s": ours["cpu_s"],
            "cpu_speedup": hta["process_cpu_s"] / ours["cpu_s"],
            "hta_in_process_s": hta.get("wall_s", float("nan")),
            "lightspeed_in_process_s": ours["in_process_s"],
            "in_process_speedup": hta.get("wall_s", float("nan")) / ours["in_process_s"],
            "memory_ratio": ours["max_rss_bytes"] / hta["process_max_rss_bytes"],
            "max_diff_pp": compare(hta, ours),
        }
        rows.append(row)
        print(_line(row), file=sys.stderr)
    return rows


def _line(row: dict[str, Any]) -> str:
    diff = row["max_diff_pp"]
    cells = [
        row["trace"],
        f"{row['num_events']:,}",
        f"{row['hta_wall_s']:.2f}",
        f"{row['lightspeed_wall_s']:.2f}",
        f"{row['speedup']:.1f}x",
        f"{row['hta_cpu_s']:.2f}",
        f"{row['lightspeed_cpu_s']:.2f}",
        f"{row['cpu_speedup']:.1f}x",
        f"{row['in_process_speedup']:.1f}x",
        f"{row['hta_max_rss_bytes'] / 2**20:.0f}",
        f"{row['lightspeed_max_rss_bytes'] / 2**20:.0f}",
        f"{row['memory_ratio']:.2f}",
        "-" if diff is None else f"{diff:.3f}",
    ]
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| trace | events | HTA s | lightspeed s | speedup | HTA CPU s | lightspeed CPU s | CPU speedup "
    "| in-process speedup | HTA MiB | lightspeed MiB | memory ratio | max diff (pp) |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def count_events(folder: Path) -> int:
    """Events in a folder's trace files (all phases, as a trace viewer counts them)."""
    total = 0
    for path in folder.glob("*.json.gz"):
        with gzip.open(path) as handle:
            total += len(json.loads(handle.read()).get("traceEvents", []))
    return total


_INFLATE = """
import json, os, sys, time
from pathlib import Path
from lightspeed.trace.io.source import trace_blocks, inflater
os.environ["LIGHTSPEED_INFLATER"] = sys.argv[2]
started, cpu = time.perf_counter(), time.process_time()
size = sum(len(block) for block in trace_blocks(Path(sys.argv[1])))
print(json.dumps({"inflater": inflater().name, "wall_s": time.perf_counter() - started,
                  "cpu_s": time.process_time() - cpu, "bytes": size}))
"""


def floor_and_cache(folder: Path) -> dict[str, Any]:
    """gunzip and every installed inflater on the tiled file; then summary with an empty and a
    warm Parquet cache (a fresh cache folder, fresh processes), all in this run."""
    source = next(folder.glob("*.json.gz"))
    _, gunzip_s, _, code = measured(["sh", "-c", f"gunzip -c '{source}' > /dev/null"])
    assert code == 0
    gunzip_cpu_s = LAST_CPU_S["cpu_s"]
    inflaters = []
    for name in ("isal", "zlib-ng", "zlib"):
        text, _, _, code = measured([sys.executable, "-c", _INFLATE, str(source), name])
        if code == 0:
            inflaters.append(json.loads(text))
    parse = run_lightspeed(folder)
    with tempfile.TemporaryDirectory(prefix="lightspeed-cache-") as cache:
        os.environ["LIGHTSPEED_CACHE"] = cache
        try:
            os.environ["LIGHTSPEED_CACHE"] = str(Path(cache) / "cold")
            cold_in_process = time_in_process(folder, "cache")["wall_s"]  # an empty cache: parse + write
            os.environ["LIGHTSPEED_CACHE"] = str(Path(cache) / "warm")
            first = run_lightspeed(folder, cache=True)  # the command parses and writes; its timer reads
            second = run_lightspeed(folder, cache=True)  # both read the entry the command wrote
            command = [sys.executable, "-m", "lightspeed", "trace", "summary", str(folder), "--json"]
            second_imports_s = import_seconds(command)
            second_phases = command_phases(["trace", "summary", str(folder), "--json"])
        finally:
            os.environ.pop("LIGHTSPEED_CACHE", None)
    same = first["ranks"] == second["ranks"] == parse["ranks"]
    _, start_up_s, _, _ = measured([sys.executable, "-c", "pass"])
    parts = second["in_process_parts"]
    breakdown = {
        "interpreter_start_s": start_up_s,
        "imports_s": second_imports_s,
        **{f"{name}_s": parts.get(f"{name}_s", float("nan")) for name in ("load", "catalog", "summary")},
    }
    breakdown["rest_s"] = second["wall_s"] - sum(breakdown.values())
    result = {
        "gunzip_wall_s": gunzip_s,
        "gunzip_cpu_s": gunzip_cpu_s,
        "inflaters": inflaters,
        "parse_wall_s": parse["wall_s"],
        "parse_cpu_s": parse["cpu_s"],
        "parse_over_gunzip_cpu": parse["cpu_s"] / gunzip_cpu_s,
        "parse_in_process_s": parse["in_process_s"],
        "parse_over_gunzip": parse["wall_s"] / gunzip_s,
        "cache_first_wall_s": first["wall_s"],
        "cache_first_cpu_s": first["cpu_s"],
        "cache_first_in_process_s": cold_in_process,
        "cache_second_wall_s": second["wall_s"],
        "cache_second_cpu_s": second["cpu_s"],
        "second_over_first_parse_cpu": second["cpu_s"] / parse["cpu_s"],
        "cache_second_in_process_s": second["in_process_s"],
        "second_over_first_parse_in_process": second["in_process_s"] / parse["in_process_s"],
        "second_over_first_parse_wall": second["wall_s"] / parse["wall_s"],
        "cached_answers_identical": same,
        "cache_second_breakdown": breakdown,
        "cache_second_phases": second_phases,
        "parse_in_process_parts": parse["in_process_parts"],
        "cache_second_in_process_parts": second["in_process_parts"],
    }
    print(json.dumps(result, indent=1), file=sys.stderr)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--hta-venv",
        type=Path,
        default=Path(os.environ.get("LIGHTSPEED_HTA_VENV", "/work/venvs/hta")),
        help="HTA's virtual environment (created, or made again, when it cannot import HTA)",
    )
    parser.add_argument("--events", type=int, default=2_000_000, help="events of the tiled trace")
    parser.add_argument("--skip-large", action="store_true", help="only the traces of ../shared")
    parser.add_argument(
        "--write-golden", action="store_true", help="also write tests/fixtures/traces/hta_expected"
    )
    parser.add_argument("--only-large", action="store_true", help="only the tiled trace")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "trace_vs_hta.json")
    args = parser.parse_args()
    input_files(SHARED_TRACES, "**/*.json.gz", "traces")
    python = python_peer(HTA, args.hta_venv, venv_option="--hta-venv")
    compile_bytecode()
    load_at_start = os.getloadavg()[0]
    if args.write_golden:
        write_golden(python)
    folders = (
        []
        if args.only_large
        else [
            (d.relative_to(SHARED_TRACES).as_posix(), d, count_events(d)) for d in trace_dirs(SHARED_TRACES)
        ]
    )
    floor: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory(prefix="lightspeed-tiled-") as temp:
        if not args.skip_large:
            target = Path(temp) / "rank0.json.gz"
            num_events = tile_trace(SHARED_TRACES / TILE_SOURCE, target, args.events)
            folders.append((f"tiled {TILE_SOURCE}", Path(temp), num_events))
        print(HEADER, file=sys.stderr)
        rows = benchmark(python, folders)
        if not args.skip_large:
            floor = floor_and_cache(Path(temp))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "command": " ".join(["python", *sys.argv]),
        "load_average_1min_at_start": load_at_start,
        "load_average_1min_at_end": os.getloadavg()[0],
        "rows": rows,
        "tiled_floor_and_cache": floor,
    }
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_main(main)

"""Which engine should run analyses on the cached columns: numpy, DuckDB or Polars (issue 30)?

The Parquet cache (``lightspeed.trace.cache``) holds each rank's events as
columns. This script times, in fresh processes on the same cached file, one
representative analysis three ways and checks they agree:

- per kernel name: count, total, min, median and max of GPU kernel durations
  (what ``trace kernels`` computes), over the kernel rows;

by numpy on the columns as the cache hands them over (``load_trace`` from the
cache, then numpy: what lightspeed does), by DuckDB SQL on the Parquet file,
and by Polars on the Parquet file. Each process's time is split into the
engine's import, the load and the query; the total is what a command pays.

Usage::

    python benchmarks/trace_cache_engines.py [--trace FILE.json.gz] [--repeat 5]
                                             [--out benchmarks/results/trace_cache_engines.json]

Without ``--trace`` the 2M-event tiled trace of ``trace_vs_hta.py`` is made in
a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

# Each engine: a script run in a fresh process; argv[1] is the cached Parquet file, argv[2] the trace.
_NUMPY = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from lightspeed.trace import load_trace
t1 = time.perf_counter()
table = load_trace(sys.argv[2]).ranks[0].events
t2 = time.perf_counter()
kernels = table.category_mask(["kernel"])
names, durations = table.name_id[kernels], table.duration_ns[kernels]
order = np.lexsort((durations, names))
names, durations = names[order], durations[order]
starts = np.flatnonzero(np.r_[True, names[1:] != names[:-1]])
ends = np.r_[starts[1:], names.size]
rows = sorted(
    (table.names[names[a]], int(b - a), int(durations[a:b].sum()), int(durations[a]),
     float(np.median(durations[a:b])), int(durations[b - 1]))
    for a, b in zip(starts.tolist(), ends.tolist())
)
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "query_s": t3 - t2, "rows": rows}))
"""

_DUCKDB = """
import json, sys, time
t0 = time.perf_counter()
import duckdb
import pyarrow.parquet as pq
t1 = time.perf_counter()
meta = json.loads(pq.read_schema(sys.argv[1]).metadata[b"lightspeed"])
kernel = meta["categories"].index("kernel")
t2 = time.perf_counter()
found = duckdb.sql(
    "SELECT name_id, count(*), sum(duration_ns), min(duration_ns), median(duration_ns), max(duration_ns) "
    f"FROM read_parquet('{sys.argv[1]}') WHERE category_id = {kernel} GROUP BY name_id"
).fetchall()
rows = sorted((meta["names"][r[0]], int(r[1]), int(r[2]), int(r[3]), float(r[4]), int(r[5])) for r in found)
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "query_s": t3 - t2, "rows": rows}))
"""

_POLARS = """
import json, sys, time
t0 = time.perf_counter()
import polars as pl
import pyarrow.parquet as pq
t1 = time.perf_counter()
meta = json.loads(pq.read_schema(sys.argv[1]).metadata[b"lightspeed"])
kernel = meta["categories"].index("kernel")
t2 = time.perf_counter()
found = (
    pl.scan_parquet(sys.argv[1]).filter(pl.col("category_id") == kernel).group_by("name_id")
    .agg(pl.len(), pl.col("duration_ns").sum().alias("t"), pl.col("duration_ns").min().alias("lo"),
         pl.col("duration_ns").median().alias("med"), pl.col("duration_ns").max().alias("hi"))
    .collect().rows()
)
rows = sorted((meta["names"][r[0]], int(r[1]), int(r[2]), int(r[3]), float(r[4]), int(r[5])) for r in found)
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "query_s": t3 - t2, "rows": rows}))
"""

ENGINES = {"numpy (lightspeed)": _NUMPY, "duckdb": _DUCKDB, "polars": _POLARS}


def _run(script: str, parquet: Path, trace: Path, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", script, str(parquet), str(trace)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--out", type=Path, default=REPO / "benchmarks" / "results" / "trace_cache_engines.json"
    )
    args = parser.parse_args()
    load_at_start = os.getloadavg()[0]  # the machine is shared: say how busy it was
    with tempfile.TemporaryDirectory(prefix="lightspeed-engines-") as temp:
        trace = args.trace
        if trace is None:
            sys.path.insert(0, str(REPO / "benchmarks"))
            from trace_vs_hta import SHARED_TRACES, TILE_SOURCE, tile_trace

            trace = Path(temp) / "rank0.json.gz"
            tile_trace(SHARED_TRACES / TILE_SOURCE, trace, 2_000_000)
        env = {**os.environ, "LIGHTSPEED_CACHE": str(Path(temp) / "cache")}
        _run(_NUMPY, Path("-"), trace, env)  # parses and writes the cache entry
        (parquet,) = (Path(temp) / "cache" / "traces").glob("*/rank-0.parquet")
        parquet_bytes = parquet.stat().st_size
        results: dict[str, Any] = {}
        reference = None
        for _ in range(args.repeat):  # interleaved: a busy spell hits every engine
            for name, script in ENGINES.items():
                run = _run(script, parquet, trace, env)
                rows = run.pop("rows")
                reference = reference or rows
                if rows != reference:
                    raise SystemExit(f"{name} disagrees with numpy")
                results.setdefault(name, []).append(run)
    summary = {
        name: {key: statistics.median(run[key] for run in runs) for key in ("import_s", "load_s", "query_s")}
        for name, runs in results.items()
    }
    for row in summary.values():
        row["total_s"] = row["import_s"] + row["load_s"] + row["query_s"]
    record = {
        "command": " ".join(["python", *sys.argv]),
        "load_average_1min_at_start": load_at_start,
        "load_average_1min_at_end": os.getloadavg()[0],
        "parquet_bytes": parquet_bytes,
        "num_kernel_names": len(reference or []),
        "median_of": args.repeat,
        "engines": summary,
        "answers_identical": True,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How a trace cache entry's columns are best stored: bytes on disk against the time (and page
faults) of reading them back in a fresh process, and which Arrow memory pool to read them with.

From the entry ``lightspeed`` wrote for a trace (``--trace``; parsed here into a temporary cache
when needed), the rank's event columns are written again in each layout, then read back, in
fresh processes taking turns (``--rounds``), as a cached analysis reads them:

- ``wide``: every column as the table holds it (``int64``/``int32``), the layout before issue 30's
  last follow-up; ``narrow``: the narrowest exact type (what the cache writes,
  ``lightspeed.trace.cache_columns.narrow``);
- each with ``lz4``, no compression (``none``), ``zstd``, and dictionary encoding of the id
  columns with lz4 (``dict``);
- read: every column (``all``, as an analysis of every field would) or one (``one``: the
  categories, what an analysis's GPU mask reads; ``trace summary`` now reads no column of the
  table, only the GPU events kept beside it); narrow columns are then widened to the table's
  types, as the cache does (into Arrow's memory pool; and, for narrow lz4, by numpy's
  ``astype`` too: ``numpy``).

Then the cached ``trace summary`` (load + catalog + summary, as ``trace_vs_hta.py`` times it)
under each memory pool pyarrow offers (``ARROW_DEFAULT_MEMORY_POOL`` for that child only).
Reports median and minimum seconds, minor page faults and file bytes::

    python benchmarks/trace_cache_layouts.py --trace /tmp/tiled/rank0.json.gz --rounds 7
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
LAYOUTS = {  # name -> keywords of pyarrow.parquet.write_table
    "lz4": {"compression": "lz4", "use_dictionary": False},
    "none": {"compression": "none", "use_dictionary": False},
    "zstd": {"compression": "zstd", "use_dictionary": False},
    "dict": {"compression": "lz4", "use_dictionary": ["name_id", "category_id", "stream", "tid"]},
}
# One read in a fresh process: seconds and minor page faults of opening the file, reading the
# chosen columns and widening them to the table's types (into Arrow's pool, as the cache does).
_READ = """
import json, resource, sys, time
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
from lightspeed.trace.cache_columns import TABLE_TYPES, widen
path, columns, by_numpy = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] == "numpy"
faults, started = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.perf_counter()
with pq.ParquetFile(path) as parquet:
    for name in columns or parquet.schema_arrow.names:
        array = parquet.read(columns=[name], use_threads=False).column(0).combine_chunks()
        dtype = np.dtype(str(array.type).replace("double", "float64"))
        values = np.frombuffer(array.buffers()[1], dtype=dtype)
        if values.dtype != TABLE_TYPES[name]:  # numpy's astype: fresh pages; widen: Arrow's pool
            values = values.astype(TABLE_TYPES[name]) if by_numpy else widen(values, 1, TABLE_TYPES[name])
print(json.dumps({"s": time.perf_counter() - started,
                  "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults}))
"""


def _child(arguments: list[str], environment: dict[str, str] | None = None) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), **(environment or {})}
    done = subprocess.run([sys.executable, *arguments], capture_output=True, text=True, env=env, check=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def write_layouts(entry_file: Path, folder: Path) -> dict[str, Path]:
    """The entry's table columns again in every layout, wide and narrow."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lightspeed.trace.cache_columns import TABLE_TYPES, narrow, widen

    parquet = pq.ParquetFile(entry_file)
    scales = json.loads(parquet.metadata.metadata[b"lightspeed"])["scales"]
    stored = {name: np.asarray(parquet.read(columns=[name]).column(0)) for name in parquet.schema_arrow.names}
    wide = {name: widen(values, scales.get(name, 1), TABLE_TYPES[name]) for name, values in stored.items()}
    forms = {"wide": wide, "narrow": {name: narrow(name, values).values for name, values in wide.items()}}
    files = {}
    for form, columns in forms.items():
        table = pa.table({name: pa.array(values) for name, values in columns.items()})
        for layout, keywords in LAYOUTS.items():
            files[f"{form} {layout}"] = target = folder / f"{form}-{layout}.parquet"
            pq.write_table(table, target, row_group_size=table.num_rows, write_statistics=False, **keywords)
    return files


# trace_vs_hta.py's in-process timer of a cached summary (load + catalog + summary)
_SUMMARY = (REPO / "benchmarks" / "trace_vs_hta.py").read_text().split('_LIGHTSPEED_TIMER = """')[1]
_SUMMARY = _SUMMARY.split('"""')[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, required=True, help="a Kineto trace file (the tiled one)")
    parser.add_argument("--rounds", type=int, default=7)
    default_out = REPO / "benchmarks" / "results" / "trace_cache_layouts.json"
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lightspeed-layouts-") as temp:
        cache = Path(temp) / "cache"
        environment = {"LIGHTSPEED_CACHE": str(cache)}
        parse = f"from lightspeed.trace import load_trace; load_trace({str(args.trace)!r}); print('{{}}')"
        _child(["-c", parse], environment)  # the entry, written once
        entry = next(cache.glob("traces/*/rank-0.parquet"))
        files = write_layouts(entry, Path(temp))
        reads: dict[str, list[dict[str, float]]] = {}
        pools: dict[str, list[dict[str, float]]] = {}
        for _ in range(args.rounds):
            for name, path in files.items():
                for columns in ("all", "one"):
                    chosen = [] if columns == "all" else ["category_id"]
                    reads.setdefault(f"{name} {columns}", []).append(
                        _child(["-c", _READ, str(path), json.dumps(chosen), "arrow"])
                    )
            narrow_lz4 = str(files["narrow lz4"])  # widened by numpy instead, as the cache did before
            reads.setdefault("narrow lz4 all numpy", []).append(
                _child(["-c", _READ, narrow_lz4, "[]", "numpy"])
            )
            for pool in ("mimalloc", "jemalloc", "system"):
                timed = _child(
                    ["-c", _SUMMARY, str(args.trace), "cache"],
                    {**environment, "ARROW_DEFAULT_MEMORY_POOL": pool},
                )
                pools.setdefault(pool, []).append(timed)
        sizes = {name: path.stat().st_size for name, path in files.items()}
    record: dict[str, Any] = {
        "command": " ".join(["python", *sys.argv]),
        "load_average_1min": os.getloadavg()[0],
        "reads": {key: _summary_of(rows, ("s", "faults")) for key, rows in reads.items()},
        "file_bytes": sizes,
        "cached_summary_by_pool": {
            key: _summary_of(rows, ("wall_s", "minor_faults")) for key, rows in pools.items()
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    for key, row in record["reads"].items():
        print(
            f"{key:22s} {sizes[' '.join(key.split()[:2])] / 1e6:6.1f} MB  {row['s_median']:.4f} s "
            f"(min {row['s_min']:.4f})  {row['faults_median']:.0f} faults",
            file=sys.stderr,
        )
    for key, row in record["cached_summary_by_pool"].items():
        print(
            f"pool {key:9s} {row['wall_s_median']:.4f} s (min {row['wall_s_min']:.4f})  "
            f"{row['minor_faults_median']:.0f} faults",
            file=sys.stderr,
        )
    return 0


def _summary_of(rows: list[dict[str, float]], keys: tuple[str, ...]) -> dict[str, float]:
    summary: dict[str, float] = {}
    for key in keys:
        values = [row[key] for row in rows]
        summary[f"{key}_median"], summary[f"{key}_min"] = statistics.median(values), min(values)
    return summary


if __name__ == "__main__":
    sys.exit(main())

"""``lightspeed validate`` on large tables (issue 29): linear, and 20,000 rows within 20 s.

Tables are built from the repository's published rows (``published-dev.tsv``):

- ``repeated N``: the rows repeated to N rows (ids made unique), as a benchmark
  sweep exported twice, or the same configuration measured many times;
- ``distinct N``: the same, with each row's source text made unique, so that no two
  rows share a setup and every row is predicted (the engine's cost per row).

Each case runs the CLI in a fresh interpreter (``--json`` to a file, and the
terminal table), and the same cases run against the tree of commit ``--before``
(extracted with ``git archive``) in the same run: the peer is lightspeed before
this change. The figures are wall seconds of the whole command (start-up included).

    python benchmarks/validate_speed.py [--before e45acff] [--skip-before-20k]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from import_time import extract_tree  # benchmarks/ is on the path when this script runs

REPO = Path(__file__).resolve().parents[1]
DEV = REPO / "tests" / "data" / "shared" / "validation" / "published-dev.tsv"
RESULTS = REPO / "benchmarks" / "results" / "validate_speed.json"
TARGET_S = 20.0  # issue 29: 20,000 rows in at most 20 s


def build_table(folder: Path, num_rows: int, *, distinct: bool) -> Path:
    """``num_rows`` rows cycling through the dev rows, ids unique (and sources, when ``distinct``)."""
    lines = DEV.read_text(encoding="utf-8").splitlines()
    header, rows = lines[0], [line for line in lines[1:] if line.strip()]
    columns = header.split("\t")
    id_at, source_at = columns.index("id"), columns.index("source")
    out = [header]
    for index in range(num_rows):
        cells = rows[index % len(rows)].split("\t")
        cells[id_at] = f"{cells[id_at]}-{index}"
        if distinct:
            cells[source_at] += f" (copy {index})"
        out.append("\t".join(cells))
    path = folder / f"{'distinct' if distinct else 'repeated'}-{num_rows}.tsv"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def _run(source: Path, table: Path, as_json: bool) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run: on a shared machine the CPU time is the steadier figure."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    args = [sys.executable, "-m", "lightspeed", "validate", str(table), *(["--json"] if as_json else [])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="e45acff", help="commit to compare with (the peer)")
    parser.add_argument("--skip-before-20k", action="store_true", help="leave out the slowest peer case")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        before = extract_tree(args.before, folder / "before")
        now = REPO / "src"
        tables = {
            "repeated 2,000": build_table(folder, 2_000, distinct=False),
            "repeated 20,000": build_table(folder, 20_000, distinct=False),
            "distinct 2,000": build_table(folder, 2_000, distinct=True),
        }
        cases = []
        for name, table in tables.items():
            for version, source in (("now", now), (f"before ({args.before})", before)):
                if version != "now" and name == "repeated 20,000" and args.skip_before_20k:
                    continue
                for as_json in (True, False):
                    wall, cpu = _run(source, table, as_json)
                    cases.append(
                        {"table": name, "version": version, "json": as_json, "wall_s": wall, "cpu_s": cpu}
                    )
                    shown = "--json" if as_json else "table"
                    print(f"{name:16s} {version:18s} {shown:7s} wall {wall:7.2f} s  cpu {cpu:7.2f} s")
    RESULTS.write_text(json.dumps({"target_s": TARGET_S, "cases": cases}, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()

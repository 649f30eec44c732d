"""How fast and how lean a damaged trace is refused, beside reading the same file once.

Writes a synthetic Kineto trace of about ``--gib`` GiB (whole events), then:

- a copy with one bad byte 1,000 bytes in: ``lightspeed trace summary`` must stop
  at the first chunk, naming the absolute offset;
- a file of NUL bytes of the same size: refused at byte 0;
- the intact file: parsed to the end (the reference for time and memory).

Each run is a fresh process; wall time and peak RSS
(GNU ``time``'s ``%M``) are measured, beside the time ``cat`` takes to read the file (the floor of any
reader that looks at every byte). Results go to ``benchmarks/results/trace_damage.json``.

    PYTHONPATH=src python benchmarks/trace_damage.py --gib 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EVENT = {
    "ph": "X",
    "cat": "kernel",
    "name": "void gemm_kernel<float>(int, int)",
    "pid": 0,
    "tid": 7,
    "ts": 1700000000000.5,
    "dur": 12.25,
    "args": {"stream": 7, "correlation": 1, "device": 0},
}


def write_trace(path: Path, size_bytes: int) -> None:
    one = json.dumps(EVENT).encode()
    block = b", ".join([one] * 10_000)
    with path.open("wb") as handle:
        handle.write(b'{"schemaVersion": 1, "traceEvents": [')
        written = 0
        while written < size_bytes:
            if written:
                handle.write(b", ")
            handle.write(block)
            written += len(block) + 2
        handle.write(b"]}")


def measure(command: list[str], folder: Path) -> dict[str, object]:
    """Wall time and peak RSS of one run (GNU time's %M: this process alone)."""
    report = folder / "time.txt"
    started = time.perf_counter()
    completed = subprocess.run(
        ["/usr/bin/time", "-f", "%M", "-o", str(report), *command],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    peak_kib = float(report.read_text(encoding="ascii").split()[-1])
    return {
        "exit_code": completed.returncode,
        "wall_s": round(elapsed, 3),
        "peak_rss_mib": round(peak_kib / 1024, 1),
        "stderr": completed.stderr.strip().splitlines()[-1] if completed.stderr.strip() else "",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0, help="Size of each file in GiB.")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/trace_damage.json"))
    args = parser.parse_args()
    size = int(args.gib * 2**30)
    lightspeed = [sys.executable, "-m", "lightspeed.cli.main", "trace", "summary"]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        damaged, nul, intact = root / "damaged.json", root / "nul.json", root / "intact.json"
        write_trace(intact, size)
        write_trace(damaged, size)
        with damaged.open("r+b") as handle:
            handle.seek(1000)
            handle.write(b"\x07")
        with nul.open("wb") as handle:
            handle.truncate(size)
        started = time.perf_counter()
        subprocess.run(["cat", str(intact)], stdout=subprocess.DEVNULL, check=True)
        cat_s = time.perf_counter() - started
        runs = {
            "nul_file": measure([*lightspeed, str(nul)], root),
            "bad_byte_at_1000": measure([*lightspeed, str(damaged)], root),
            "intact": measure([*lightspeed, str(intact)], root),
        }
    result = {"file_bytes": size, "cat_s": round(cat_s, 3), "runs": runs, "cpu_count": os.cpu_count()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

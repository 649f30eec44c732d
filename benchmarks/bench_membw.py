"""STREAM triad through lightspeed against an independent memory-bandwidth tool, in the same run.

    python benchmarks/bench_membw.py [--rounds 5] [--array-mib 256] [--out FILE.json]

The peer is Debian's ``mbw`` (MEMCPY test). If ``mbw`` is not on PATH the
script installs it with ``apt-get install -y mbw`` (it says so; needs root
and a Debian/Ubuntu package mirror) and records that it did; when that cannot
be done it says so in one line and exits with code 2, before timing anything.

Fair comparison: both single-threaded (mbw has no threads; lightspeed runs
with ``torch.set_num_threads(1)``), both on arrays of ``--array-mib`` MiB
(>= 4x the last-level cache), rounds interleaved so that load from other
processes hits both alike, best round of each (STREAM's convention). mbw
prints MiB/s of bytes copied; a copy reads and writes each byte, so its
traffic in STREAM's counting is 2 x that figure (MiB converted to 1e6-byte MB
as STREAM reports). Target: lightspeed's triad within 10% of mbw's copy
traffic. lightspeed's own copy is reported too.

Writes ``benchmarks/results/bench_membw.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

import torch
from _peers import PeerUnavailableError, last_line, run_main, system_program  # a sibling script

from lightspeed.bench import DeviceSol, resolve_device, run_membw

TARGET = 0.10
MIB = 2**20
RESULTS = Path(__file__).resolve().parent / "results" / "bench_membw.json"


def mbw_copy_traffic_bytes_per_s(mbw: str, array_mib: int) -> float:
    """Best MEMCPY round of mbw, as read+write traffic in bytes/s."""
    done = subprocess.run(
        [mbw, "-q", "-n", "10", "-t", "0", str(array_mib)], capture_output=True, text=True, check=False
    )
    rates = [
        float(value)
        for value in re.findall(r"^\d+\s+Method: MEMCPY.*Copy: ([0-9.]+) MiB/s", done.stdout, re.M)
    ]
    if done.returncode != 0 or not rates:
        why = last_line(done.stderr) or last_line(done.stdout) or f"exit code {done.returncode}"
        raise PeerUnavailableError(f"{mbw} gave no MEMCPY rate ({why}); check that it runs: {mbw} -q 16")
    return 2.0 * max(rates) * MIB


def lightspeed_rates(array_mib: int) -> dict[str, float]:
    device = resolve_device("cpu")
    results = run_membw(device=device, sol=DeviceSol.unknown("benchmark"), array_bytes=array_mib * MIB)
    if not all(result.correct for result in results):
        raise SystemExit("a STREAM kernel failed its check")
    return {result.name: result.value for result in results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--array-mib", type=int, default=256)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    mbw, installed = system_program("mbw", "mbw")
    torch.set_num_threads(1)
    ours: list[dict[str, float]] = []
    peer: list[float] = []
    for round_index in range(args.rounds):  # interleaved: background load hits both alike
        ours.append(lightspeed_rates(args.array_mib))
        peer.append(mbw_copy_traffic_bytes_per_s(mbw, args.array_mib))
        print(f"round {round_index + 1}: triad {ours[-1]['stream triad'] / 1e9:.2f} GB/s, "
              f"mbw copy traffic {peer[-1] / 1e9:.2f} GB/s")  # fmt: skip
    triad = max(rates["stream triad"] for rates in ours)
    copy = max(rates["stream copy"] for rates in ours)
    reference = max(peer)
    difference = triad / reference - 1.0
    summary = {
        "array_mib": args.array_mib,
        "threads": 1,
        "rounds": args.rounds,
        "mbw_installed_by_script": installed,
        "lightspeed_triad_bytes_per_s": triad,
        "lightspeed_copy_bytes_per_s": copy,
        "mbw_memcpy_traffic_bytes_per_s": reference,
        "triad_vs_mbw": difference,
        "within_target": abs(difference) <= TARGET,
        "rounds_lightspeed": ours,
        "rounds_mbw": peer,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    print(
        f"lightspeed triad {triad / 1e9:.2f} GB/s (copy {copy / 1e9:.2f}) vs mbw memcpy traffic "
        f"{reference / 1e9:.2f} GB/s: {difference:+.1%} (target within {TARGET:.0%}: "
        f"{'met' if summary['within_target'] else 'NOT met'})"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    run_main(main)

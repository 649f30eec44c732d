"""The parsed catalog kept between commands, against parsing its TOML files each time.

Usage:
    python benchmarks/catalog_cache.py [--repeats 7] [--out benchmarks/results/catalog_cache.json]

In fresh processes (as every CLI command is), ``load_catalog()`` timed inside the process:
with ``LIGHTSPEED_CATALOG_CACHE=off`` (the ~80 TOML files parsed and checked) and with a warm
entry in a temporary cache folder; and, as the floor in the same run, the import of
``lightspeed.catalog`` alone. Medians of ``--repeats`` runs, interleaved.
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

TIMER = (
    "import time; t = time.perf_counter(); from lightspeed.catalog import load_catalog; "
    "t1 = time.perf_counter(); load_catalog(); print(time.perf_counter() - t1, t1 - t)"
)


def _timed(env: dict[str, str]) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", TIMER], env=env, capture_output=True, text=True, check=True)
    load, imports = (float(value) for value in out.stdout.split())
    return load, imports


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/catalog_cache.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        cached_env = {**os.environ, "LIGHTSPEED_CACHE": cache, "LIGHTSPEED_CATALOG_CACHE": "on"}
        parse_env = {**os.environ, "LIGHTSPEED_CATALOG_CACHE": "off"}
        _timed(cached_env)  # writes the entry
        parse, cached, imports = [], [], []
        for _ in range(args.repeats):
            seconds, imported = _timed(parse_env)
            parse.append(seconds)
            imports.append(imported)
            cached.append(_timed(cached_env)[0])
    result = {
        "command": " ".join(["python", *sys.argv]),
        "load_average_1min": os.getloadavg()[0],
        "parse_s": statistics.median(parse),
        "cached_s": statistics.median(cached),
        "import_lightspeed_catalog_s": statistics.median(imports),
        "runs": {"parse_s": parse, "cached_s": cached},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(
        f"load_catalog in a fresh process: parse {result['parse_s'] * 1e3:.1f} ms, cached entry "
        f"{result['cached_s'] * 1e3:.1f} ms ({result['parse_s'] / result['cached_s']:.1f}x); "
        f"importing lightspeed.catalog first: {result['import_lightspeed_catalog_s'] * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    main()

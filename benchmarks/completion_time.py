"""Time of one Tab press (shell completion runs ``lightspeed`` once per press) against
``lightspeed --help`` and against the tree of ``--before`` (completion importing every
subcommand), in the same run.

Each case runs ``--repeat`` times in a fresh interpreter; the figures are the minimum (robust
on a shared machine: load only adds time) and the median wall time.

    python benchmarks/completion_time.py [--repeat 7] [--before 61bb712]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from import_time import extract_tree

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "completion_time.json"
START = "import sys; from lightspeed.cli.main import main; sys.exit(main())"
CASES = {  # name -> (words typed after 'lightspeed', whether it is a Tab press)
    "lightspeed --help": (["--help"], False),
    "Tab after 'lightspeed ' (subcommand names)": ([""], True),
    "Tab after 'lightspeed plan train --model llama' (model names)": (
        ["plan", "train", "--model", "llama"],
        True,
    ),
}


def _once(words: list[str], tab: bool, src: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    argv = [sys.executable, "-c", START]
    if tab:
        env |= {
            "_LIGHTSPEED_COMPLETE": "bash_complete",
            "COMP_WORDS": " ".join(["lightspeed", *words]),
            "COMP_CWORD": str(len(words)),
        }
    else:
        argv += words
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def _measure(words: list[str], tab: bool, src: Path, repeat: int) -> dict[str, float]:
    times = [_once(words, tab, src) for _ in range(repeat)]
    return {"min_ms": round(min(times) * 1e3, 1), "median_ms": round(statistics.median(times) * 1e3, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--before", default="61bb712", help="a commit whose completion imported all commands")
    args = parser.parse_args()
    now = {name: _measure(*case, REPO / "src", args.repeat) for name, case in CASES.items()}
    with tempfile.TemporaryDirectory() as folder:
        src = extract_tree(args.before, Path(folder))
        before = {name: _measure(*case, src, args.repeat) for name, case in list(CASES.items())[:2]}
    results = {"repeat": args.repeat, "now": now, f"before ({args.before})": before}
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

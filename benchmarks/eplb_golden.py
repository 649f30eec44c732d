"""Golden outputs of DeepSeek's EPLB, so the placement tests compare against it in any clone.

Usage:
    python benchmarks/eplb_golden.py [--eplb PATH] [--out tests/fixtures/eplb/rebalance_experts.json]
    python benchmarks/eplb_golden.py --check     # EPLB now still says what the file holds (exit 1 if not)

EPLB (deepseek-ai/EPLB, MIT) is a peer program kept outside the repository
(``../shared/peers/eplb/eplb.py``, or ``--eplb PATH``; it needs torch). This
script runs its ``rebalance_experts`` on a fixed set of inputs and writes, per
case, the inputs, EPLB's ``phy2log`` and ``logcnt``, and the load of every
GPU's busiest slot set computed here from EPLB's own output (each physical
replica of expert ``e`` takes ``load[e] / logcnt[e]``; GPU ``g`` holds slots
``g * replicas / gpus`` onward), with provenance: the peer's commit and file
hash, the command, torch's version and the date. lightspeed's code is not
used to make the file, so tests/sol/test_experts.py can hold lightspeed's
balancer to it in any clone, with no test skipped for want of the peer.
``--check`` re-runs EPLB on the same inputs and compares with the file (run it
when the peer changes; ``benchmarks/moe_balance.py`` compares the balancers on
DeepSeek-V3-size loads in one run).

Cases: EPLB's README example (2 layers x 12 experts, 16 replicas, 4 groups, 2
nodes, 8 GPUs); four 12-layer x 64-expert Zipf loads (200,000 tokens per
layer, skew 0.6-1.2) on hierarchical and global layouts; and one
DeepSeek-V3-shaped case (4 layers x 256 experts, 288 replicas, 8 groups, 4
nodes, 32 GPUs).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peers import run_main
from moe_balance import README_LOAD, load_eplb  # a sibling script, not a package

REPO = Path(__file__).resolve().parents[1]
DEFAULT_EPLB = REPO.parent / "shared" / "peers" / "eplb" / "eplb.py"
DEFAULT_OUT = REPO / "tests" / "fixtures" / "eplb" / "rebalance_experts.json"
# the commit ../shared/peers/README.md names for eplb/eplb.py
EPLB_REPOSITORY = "https://github.com/deepseek-ai/EPLB"
EPLB_COMMIT = "d52c72d5b2f2fb4c41afbf8eb21366820239913d"
# (name, layers, experts, zipf skew, replicas, groups, nodes, gpus)
ZIPF_CASES = (
    ("zipf-1.0 80 replicas, 8 groups, 4 nodes, 16 GPUs", 12, 64, 1.0, 80, 8, 4, 16),
    ("zipf-0.6 96 replicas, 8 groups, 2 nodes, 16 GPUs", 12, 64, 0.6, 96, 8, 2, 16),
    ("zipf-1.2 72 replicas, 8 groups, 1 node, 8 GPUs", 12, 64, 1.2, 72, 8, 1, 8),
    ("zipf-0.8 64 replicas, 8 groups, 4 nodes, 16 GPUs", 12, 64, 0.8, 64, 8, 4, 16),
    ("deepseek-v3 shape zipf-0.8 288 replicas, 8 groups, 4 nodes, 32 GPUs", 4, 256, 0.8, 288, 8, 4, 32),
)
TOKENS_PER_LAYER = 200_000


def zipf_load(seed: int, layers: int, experts: int, skew: float) -> list[list[int]]:
    """Token counts per layer drawn from a Zipf popularity, the ranks shuffled per layer (plain numpy)."""
    rng = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, experts + 1) ** skew
    shares = popularity / popularity.sum()
    return [rng.multinomial(TOKENS_PER_LAYER, rng.permutation(shares)).tolist() for _ in range(layers)]


def busiest_gpu_loads(
    load: list[list[int]], phy2log: np.ndarray, logcnt: np.ndarray, gpus: int
) -> list[float]:
    """Per layer, the largest GPU load of EPLB's placement: each replica takes load / its expert's copies."""
    weights = np.asarray(load, dtype=np.float64)
    busiest = []
    for layer in range(weights.shape[0]):
        per_replica = weights[layer, phy2log[layer]] / logcnt[layer, phy2log[layer]]
        busiest.append(float(per_replica.reshape(gpus, -1).sum(axis=1).max()))
    return busiest


def run_case(
    eplb: Any, name: str, load: list[list[int]], layout: tuple[int, int, int, int]
) -> dict[str, Any]:
    import torch

    replicas, groups, nodes, gpus = layout
    phy2log, _, logcnt = eplb.rebalance_experts(torch.tensor(load), replicas, groups, nodes, gpus)
    return {
        "name": name,
        "num_replicas": replicas,
        "num_groups": groups,
        "num_nodes": nodes,
        "num_gpus": gpus,
        "load": load,
        "phy2log": phy2log.tolist(),
        "logcnt": logcnt.tolist(),
        "busiest_gpu_load": busiest_gpu_loads(load, phy2log.numpy(), logcnt.numpy(), gpus),
    }


def cases(eplb: Any) -> list[dict[str, Any]]:
    found = [run_case(eplb, "EPLB README example", README_LOAD, (16, 4, 2, 8))]
    for seed, (name, layers, experts, skew, *layout) in enumerate(ZIPF_CASES, start=7):
        found.append(run_case(eplb, name, zipf_load(seed, layers, experts, skew), tuple(layout)))  # type: ignore[arg-type]
    return found


def compact_json(document: Any) -> str:
    """Indented JSON with every list of numbers on one line (a layer per line, easy to diff)."""
    text = json.dumps(document, indent=1)
    return re.sub(r"\[[\d.,\s-]*\]", lambda match: re.sub(r"\s+", "", match.group()).replace(",", ", "), text)


def check(found: list[dict[str, Any]], path: Path) -> int:
    """0 when EPLB's outputs now equal the golden file's, case by case; 1 (naming the cases) if not."""
    golden = {case["name"]: case for case in json.loads(path.read_text(encoding="utf-8"))["cases"]}
    differ = [
        case["name"]
        for case in found
        if case["name"] not in golden
        or any(case[key] != golden[case["name"]][key] for key in ("phy2log", "logcnt"))
    ]
    print(f"{path}: {len(found) - len(differ)} of {len(found)} cases as EPLB says now")
    if differ:
        print("differ: " + ", ".join(differ) + " (rerun without --check to rewrite the file)")
    return 1 if differ else 0


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eplb", type=Path, default=DEFAULT_EPLB)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--check", action="store_true", help="compare EPLB now with --out; write nothing")
    args = parser.parse_args()
    eplb = load_eplb(args.eplb)
    if args.check:
        sys.exit(check(cases(eplb), args.out))
    document = {
        "provenance": {
            "peer": f"DeepSeek EPLB, {EPLB_REPOSITORY} at commit {EPLB_COMMIT} (MIT licence)",
            "peer_file": "../shared/peers/eplb/eplb.py",
            "peer_sha256": hashlib.sha256(args.eplb.read_bytes()).hexdigest(),
            "function": "rebalance_experts(weight, num_replicas, num_groups, num_nodes, num_gpus)",
            "command": "python benchmarks/eplb_golden.py",
            "torch": torch.__version__,
            "date": datetime.date.today().isoformat(),
            "busiest_gpu_load": "computed by the script from EPLB's phy2log and logcnt, not by lightspeed",
        },
        "cases": cases(eplb),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(compact_json(document) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {len(document['cases'])} cases")


if __name__ == "__main__":
    run_main(main)

"""Expert placement: lightspeed's balancer against DeepSeek's EPLB, quality and time, same run.

Usage:
    python benchmarks/moe_balance.py [--repeats 3] [--seed 0] [--out benchmarks/results/moe_balance.json]

EPLB (deepseek-ai/EPLB, MIT) is imported from ``../shared/peers/eplb`` (or
``--eplb PATH``); it needs torch. Measured, in one run:

1. EPLB's README example (2 layers x 12 experts, 16 replicas, 4 groups, 2
   nodes, 8 GPUs): per-layer busiest GPU over mean GPU, both balancers.
2. DeepSeek-V3-size loads (58 MoE layers x 256 experts, 65,536 tokens per
   layer, top-8) drawn from Zipf (s = 0.6, 0.8, 1.0, 1.2) and Dirichlet
   (concentration 1.0, 0.3) popularity, each on four layouts: EP32 prefill with
   288 replicas over 4 nodes and 8 groups (hierarchical), EP32 with 288 in one
   global pool, EP64 with 320 over 8 nodes (hierarchical), and EP320 decode with
   one replica per GPU over 40 nodes (global; 8 groups do not divide 40 nodes).

For every case: the busiest GPU over the mean GPU summed over layers
(sum of busiest / sum of means, the slowdown of a pass through all layers),
the worst layer, layers where each is better, a lower bound no placement under
the same policy can beat (per layer: the mean GPU and the smallest possible
largest replica, within the best groups-to-nodes split when hierarchical), and
the median wall time of ``--repeats`` calls of each balancer's public entry
point (``lightspeed.sol.balance_experts`` builds its record too).
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from _peers import PeerUnavailableError, run_main  # a sibling script

from lightspeed.moe import balance_experts, synthetic_load
from lightspeed.moe.placement import gpu_loads, replicate

REPO = Path(__file__).resolve().parents[1]
README_LOAD = [
    [90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86],
    [20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27],
]
LAYOUTS = (  # (name, replicas, groups, nodes, gpus)
    ("EP32 prefill, 4 nodes, hierarchical", 288, 8, 4, 32),
    ("EP32, one global pool", 288, 8, 1, 32),
    ("EP64, 8 nodes, hierarchical", 320, 8, 8, 64),
    ("EP320 decode, 1 per GPU, global", 320, 8, 40, 320),
)
SKEWS = (("zipf", 0.6), ("zipf", 0.8), ("zipf", 1.0), ("zipf", 1.2), ("dirichlet", 1.0), ("dirichlet", 0.3))


def load_eplb(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("eplb_peer", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise PeerUnavailableError(
            f"EPLB not found at {path}; pass --eplb PATH to deepseek-ai/EPLB's eplb.py"
        )
    module = importlib.util.module_from_spec(spec)
    sys.modules["eplb_peer"] = module
    spec.loader.exec_module(module)
    return module


def timed(function: Any, repeats: int) -> tuple[Any, float]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return result, statistics.median(times)


def _node_splits(num_groups: int, num_nodes: int) -> list[list[tuple[int, ...]]]:
    """Every split of the groups into equal unordered blocks, one per node."""
    size = num_groups // num_nodes

    def split(items: tuple[int, ...]) -> list[list[tuple[int, ...]]]:
        if not items:
            return [[]]
        first, rest = items[0], items[1:]
        found = []
        for others in itertools.combinations(rest, size - 1):
            remaining = tuple(item for item in rest if item not in others)
            found += [[(first, *others), *tail] for tail in split(remaining)]
        return found

    return split(tuple(range(num_groups)))


def _pool_bound(weights: np.ndarray, replicas: int, gpus: int) -> np.ndarray:
    """One pool of ``gpus`` GPUs and ``replicas`` slots: no GPU is below the mean, and some GPU
    holds the largest replica, at least the smallest possible one (largest remainder)."""
    counts = replicate(weights, replicas)
    return np.maximum(weights.sum(axis=1) / gpus, (weights / counts).max(axis=1))


def lower_bound(weights: np.ndarray, replicas: int, groups: int, nodes: int, gpus: int) -> np.ndarray:
    """Per layer, a busiest-GPU load no placement under the policy can beat: the pool bound, and
    with the hierarchical policy the best over every groups-to-nodes split of its worst node."""
    if nodes == 1 or groups % nodes:
        return _pool_bound(weights, replicas, gpus)
    layers = weights.shape[0]
    by_group = weights.reshape(layers, groups, -1)
    best = np.full(layers, np.inf)
    for split in _node_splits(groups, nodes):
        worst = np.zeros(layers)
        for block in split:
            node = by_group[:, list(block)].reshape(layers, -1)
            worst = np.maximum(worst, _pool_bound(node, replicas // nodes, gpus // nodes))
        best = np.minimum(best, worst)
    return best


def compare(
    eplb: ModuleType, weights: np.ndarray, layout: tuple[str, int, int, int, int], repeats: int
) -> dict:
    import torch

    name, replicas, groups, nodes, gpus = layout
    tensor = torch.tensor(weights)
    theirs, eplb_s = timed(lambda: eplb.rebalance_experts(tensor, replicas, groups, nodes, gpus)[0], repeats)
    ours, ours_s = timed(
        lambda: balance_experts(
            load=weights, num_replicas=replicas, num_groups=groups, num_nodes=nodes, num_gpus=gpus
        ),
        repeats,
    )
    ours_max = np.asarray(ours.gpu_load).max(axis=1)
    theirs_max = gpu_loads(weights, theirs.numpy(), gpus).max(axis=1)
    means = weights.sum(axis=1) / gpus
    bound = lower_bound(weights, replicas, groups, nodes, gpus)
    return {
        "layout": name,
        "replicas": replicas,
        "groups": groups,
        "nodes": nodes,
        "gpus": gpus,
        "policy": ours.policy,
        "lightspeed": float(ours_max.sum() / means.sum()),
        "eplb": float(theirs_max.sum() / means.sum()),
        "lower_bound": float(bound.sum() / means.sum()),
        "lightspeed_worst_layer": float((ours_max / means).max()),
        "eplb_worst_layer": float((theirs_max / means).max()),
        "layers_lightspeed_better": int((ours_max < theirs_max * (1 - 1e-9)).sum()),
        "layers_eplb_better": int((theirs_max < ours_max * (1 - 1e-9)).sum()),
        "lightspeed_s": ours_s,
        "eplb_s": eplb_s,
    }


def readme_example(eplb: ModuleType) -> dict:
    import torch

    weights = np.array(README_LOAD, dtype=np.float64)
    theirs = eplb.rebalance_experts(torch.tensor(README_LOAD), 16, 4, 2, 8)[0].numpy()
    theirs_loads = gpu_loads(weights, theirs, 8)
    ours = balance_experts(load=weights, num_replicas=16, num_groups=4, num_nodes=2, num_gpus=8)
    return {
        "eplb_per_layer": (theirs_loads.max(axis=1) / theirs_loads.mean(axis=1)).tolist(),
        "lightspeed_per_layer": list(ours.gpu_load_max_over_mean),
        "lightspeed_phy2log": [list(row) for row in ours.phy2log],
        "eplb_phy2log": theirs.tolist(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eplb", type=Path, default=REPO.parent / "shared" / "peers" / "eplb" / "eplb.py")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "moe_balance.json")
    args = parser.parse_args()
    eplb = load_eplb(args.eplb)
    cases = []
    for distribution, skew in SKEWS:
        load = synthetic_load(
            num_layers=58, num_experts=256, distribution=distribution, skew=skew, num_tokens=65_536, top_k=8,
            seed=args.seed,
        )  # fmt: skip
        weights = load.array()
        hottest = float((weights.max(axis=1) / weights.mean(axis=1)).mean())
        for layout in LAYOUTS:
            case = compare(eplb, weights, layout, args.repeats)
            case.update(distribution=distribution, skew=skew, hottest_over_mean=hottest)
            cases.append(case)
            print(
                f"{distribution} {skew:g} | {case['layout']}: lightspeed {case['lightspeed']:.4f} "
                f"({case['lightspeed_s'] * 1e3:.0f} ms), EPLB {case['eplb']:.4f} "
                f"({case['eplb_s'] * 1e3:.0f} ms), bound {case['lower_bound']:.4f}"
            )
    result = {"readme_example": readme_example(eplb), "deepseek_v3_size": cases}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result["readme_example"], indent=2))


if __name__ == "__main__":
    run_main(main)

"""MIG packing quality: the planner's exact packing vs first-fit and vs the slice-count lower bound.

Usage:
    python benchmarks/mig_packing.py [--mixes 300] [--seed 17] [--out benchmarks/results/mig_packing.json]

Measures, in one run:

1. For ``--mixes`` random demands on an H100 80GB (0-4 instances of each of
   1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb), the GPUs used by
   :func:`lightspeed.mig.layout.min_gpus` (exact search over valid layouts),
   by first-fit decreasing (largest instances first, each into the first GPU
   where a valid placement is free: what a scheduler placing slices one at a
   time does), and the physical lower bound ``max(ceil(compute slices / 7),
   ceil(memory slices / 8), 4g/7g instances)``. Every layout is re-checked
   against the placement rules.
2. ``lightspeed mig plan`` on ``examples/mig-workloads.toml``: GPUs of the MIG
   plan, whole GPUs and time-sharing, and the time one plan takes.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from pathlib import Path

from lightspeed.catalog import MigGeometry, load_catalog, load_mig_geometries
from lightspeed.mig import MigPlacement, check_layout, plan_mig, read_workloads
from lightspeed.mig.layout import min_gpus
from lightspeed.workload import load_models

PROFILES = ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")
REPO = Path(__file__).resolve().parents[1]


def lower_bound(geometry: MigGeometry, demand: dict[str, int]) -> int:
    """No packing beats the slices it must hold (and 4g/7g instances need a GPU each)."""
    compute = sum(geometry.profile(n).num_compute_slices * c for n, c in demand.items())
    memory = sum(geometry.profile(n).num_memory_slices * c for n, c in demand.items())
    exclusive = demand.get("4g.40gb", 0) + demand.get("7g.80gb", 0)
    return max(math.ceil(compute / 7), math.ceil(memory / 8), exclusive)


def first_fit(geometry: MigGeometry, demand: dict[str, int]) -> int:
    """Largest instances first, each at the first free valid slot of the first GPU that has one."""
    items = sorted(
        (n for n, c in demand.items() for _ in range(c)),
        key=lambda n: -geometry.profile(n).num_compute_slices,
    )
    gpus: list[list[MigPlacement]] = []
    for name in items:
        for layout in [*gpus, []]:
            start = _free_start(geometry, layout, name)
            if start is not None:
                if not layout:
                    gpus.append(layout)
                layout.append(MigPlacement(start, name))
                break
    return len(gpus)


def _free_start(geometry: MigGeometry, layout: list[MigPlacement], name: str) -> int | None:
    for start in geometry.profile(name).placements:
        try:
            check_layout(geometry, [*layout, MigPlacement(start, name)])
        except ValueError:
            continue
        return start
    return None


def packing(mixes: int, seed: int) -> dict[str, object]:
    geometry = load_mig_geometries()["h100-sxm"]
    generator = random.Random(seed)
    exact_total = first_total = bound_total = first_worse = exact_above_bound = 0
    timings = []
    for _ in range(mixes):
        demand = {name: generator.randint(0, 4) for name in PROFILES}
        started = time.perf_counter()
        layouts = min_gpus(geometry, demand)
        timings.append(time.perf_counter() - started)
        assert layouts is not None
        for layout in layouts:
            check_layout(geometry, layout)
        exact, first, bound = len(layouts), first_fit(geometry, demand), lower_bound(geometry, demand)
        assert bound <= exact <= first
        exact_total, first_total, bound_total = exact_total + exact, first_total + first, bound_total + bound
        first_worse += first > exact
        exact_above_bound += exact > bound
    return {
        "mixes": mixes,
        "gpus_exact": exact_total,
        "gpus_first_fit": first_total,
        "gpus_lower_bound": bound_total,
        "mixes_where_first_fit_uses_more": first_worse,
        "mixes_where_exact_is_above_the_bound": exact_above_bound,
        "median_pack_s": statistics.median(timings),
    }


def example_plan() -> dict[str, object]:
    catalog = load_catalog()
    started = time.perf_counter()
    plan = plan_mig(
        services=read_workloads(REPO / "examples" / "mig-workloads.toml"),
        accelerator=catalog.accelerator("h100-sxm"),
        catalog=catalog,
        models=load_models(),
    )
    elapsed = time.perf_counter() - started
    return {
        "strategies": {s.name: s.num_gpus for s in plan.strategies},
        "choice": plan.choice,
        "plan_s": elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mixes", type=int, default=300)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "mig_packing.json")
    args = parser.parse_args()
    result = {"packing": packing(args.mixes, args.seed), "example": example_plan()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

"""The cost model against the seed's and DeepSeek's published figures, and against a ratio of peaks.

    python benchmarks/cost_seed_claims.py [--out FILE.json]

Three checks, the first and third against an independent figure in the same run, the second a
consistency check of the seed with itself:

1. seed claim 17, "100 H100 -> ~50 Blackwell": the engine's matched B200 count
   for a training and two serving workloads, beside the spreadsheet answer
   (100 x dense peak of H100 / dense peak of B200 at the workload's format)
   and the seed's 50, with the engine's per-GPU speed-up beside the ratio of
   peaks; GPU TDP before/after beside the seed's 70 -> 50 kW;
2. seed claims 5 and 15: GB200 NVL72 rack power from the catalog's parts
   beside the catalog's printed 120-132 kW, and 8 racks beside "~1 MW". Not
   independent: the parts (18 x 6 kW + 20 kW) and the 120-132 kW both come from
   the seed (no NVIDIA datasheet prints a rack power), so agreement only shows
   the seed's figures agree with each other;
3. DeepSeek-V3: the engine's pre-training GPU-hours + the report's context
   extension and post-training at $2 per GPU-hour beside the published $5.576M.

Writes ``benchmarks/results/cost_seed_claims.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lightspeed.catalog import load_catalog, load_power
from lightspeed.cost import Prices, compare_upgrade, cost_workload, deepseek_cost, rack_plan, training_cost
from lightspeed.tour.scenarios import DEEPSEEK_PRETRAIN_GPU_HOURS, DEEPSEEK_TOKENS, deepseek_v3_training
from lightspeed.workload import load_models

RESULTS = Path(__file__).resolve().parent / "results" / "cost_seed_claims.json"
WORKLOADS = ("llama-3-70b-pretrain", "llama-3-70b-chat", "llama-3-70b-chat-narrowest")
PEAK_ROW = {"bf16": "bf16", "fp8": "fp8", "nvfp4": "fp4"}
SEED_CONSISTENCY = (
    "consistency of the seed with itself, not an independent figure: the parts (18 x 6 kW + 20 kW) "
    "and the catalog's printed 120-132 kW both come from the seed; no NVIDIA datasheet prints a rack power"
)


def _upgrade(catalog, models, power) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
    old, new = catalog.system("dgx-h100"), catalog.system("dgx-b200")
    upgrade = compare_upgrade(
        catalog=catalog,
        models=models,
        old_system=old,
        old_gpus=100,
        new_system=new,
        workloads=[cost_workload(name) for name in WORKLOADS],
        power=power,
    )
    rows = []
    for match in upgrade.matches:
        old_peak = old.accelerator.dense_flop_per_s(PEAK_ROW[match.old.precision])
        new_peak = new.accelerator.dense_flop_per_s(PEAK_ROW[match.new.precision])
        rows.append(
            {
                "workload": match.workload,
                "precision": f"{match.old.precision} -> {match.new.precision}",
                "engine_new_gpus": match.new_gpus,
                "engine_exact_gpus": round(match.new_gpu_equivalent, 1),
                "peak_ratio_gpus": round(100 * old_peak / new_peak, 1),
                "engine_per_gpu_ratio": round(match.per_gpu_ratio, 2),
                "peak_ratio": round(new_peak / old_peak, 2),
                "seed_gpus": 50,
                "gpu_tdp_kw": [match.power_before.gpus_tdp_w / 1e3, match.power_after.gpus_tdp_w / 1e3],
                "seed_kw": [70.0, 50.0],
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    catalog, models, power = load_catalog(), load_models(), load_power()

    upgrade = _upgrade(catalog, models, power)
    rack = catalog.system("gb200-nvl72")
    plan = rack_plan(cluster=catalog.cluster("gb200-nvl72", num_nodes=8), power=power["gb200-nvl72"])
    training = training_cost(
        estimate=deepseek_v3_training(catalog, models),
        cluster=catalog.cluster("hgx-h800", num_accelerators=2048),
        power=power["hgx-h800"],
        num_tokens=DEEPSEEK_TOKENS,
        prices=Prices(electricity_usd_per_kwh=0.0, cloud_usd_per_gpu_hour={"h800-sxm": 2.0}),
    )
    deepseek = deepseek_cost(training=training, published_pretrain_gpu_hours=DEEPSEEK_PRETRAIN_GPU_HOURS)
    result = {
        "upgrade_100_h100": upgrade,
        "nvl72_rack_kw": {
            "from_parts": plan.rack_power_w / 1e3,
            "catalog_printed_seed": [rack.power_min_w / 1e3, rack.power_max_w / 1e3],  # type: ignore[operator]
            "check": SEED_CONSISTENCY,
        },
        "nvl72_8_racks_mw": {"from_parts": plan.site_it_power_w / 1e6, "seed": 1.0},
        "deepseek_v3_usd": {
            "engine": deepseek.predicted_total_usd,
            "published": deepseek.published_total_usd,
            "ratio": deepseek.ratio,
            "engine_pretrain_gpu_hours": deepseek.predicted_pretrain_gpu_hours,
            "published_pretrain_gpu_hours": deepseek.published_pretrain_gpu_hours,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

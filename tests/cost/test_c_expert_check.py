"""``lightspeed cost``: the defects of the expert check (round 10, task C), one test or more each.

Golden values are hand calculations written out here: a day is 86,400 s, a year 8,766 h;
DGX H100 rated 10.2 kW (8 GPUs), DGX B200 14.3 kW, 0.82 of the rating drawn while working;
GB200 NVL72 one 72-GPU rack; the example prices (examples/prices.toml): $0.1/kWh, PUE 1.3 air /
1.15 liquid, 4 years, 5% other opex, $2 per H100-hour, $3.5 per B200-hour, $250k per DGX H100,
$400k per DGX B200, $3M per NVL72 rack.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.catalog import load_catalog, load_power
from lightspeed.cost import Prices, compare_upgrade, cost_workload, size_fleet
from lightspeed.cost.fleet import MAX_TOKENS_PER_DAY, MAX_TOKENS_PER_DAY_TEXT
from lightspeed.cost.workloads import plan_counts, training_point
from lightspeed.workload import load_models

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_PRICES = str(REPO / "examples" / "prices.toml")
CATALOG, MODELS, POWER = load_catalog(), load_models(), load_power()
PRETRAIN = cost_workload("llama-3-70b-pretrain")
CHAT = cost_workload("llama-3-70b-chat")
DAY_S = 86_400.0
HOURS_PER_YEAR = 8_766.0


def _rate(system: str, count: int) -> float:
    """Training tokens/s of the best plan on ``count`` systems (0 where no plan fits)."""
    point = training_point(
        catalog=CATALOG, models=MODELS, system=CATALOG.system(system), num_systems=count, workload=PRETRAIN
    )
    return 0.0 if point is None else point.tokens_per_s


def _training_fleet(tokens_per_day: float, *systems: str) -> dict[str, int]:
    sizing = size_fleet(
        catalog=CATALOG,
        models=MODELS,
        systems=[CATALOG.system(name) for name in systems],
        workload=PRETRAIN,
        power=POWER,
        tokens_per_day=tokens_per_day,
    )
    return {option.system: option.num_systems for option in sizing.options}


# -- 1: the training fleet search past counts that hold no plan ----------------------------------


def test_c_plan_counts_round_up_to_powers_of_two() -> None:
    # 117 is odd: 118 is a multiple of 2, 120 of 4 and 8, 128 of 16 up to 128 (a power of two)
    assert plan_counts(117) == [117, 118, 120, 128]
    assert plan_counts(64) == [64]


def test_c_b200_fleet_for_1e11_tokens_a_day_is_the_fewest_systems() -> None:
    target = 1e11 / DAY_S  # 1,157,407 tokens/s
    count = _training_fleet(1e11, "dgx-b200")["dgx-b200"]
    assert count == 64
    assert _rate("dgx-b200", count) >= target
    assert all(_rate("dgx-b200", fewer) < target for fewer in range(1, count))  # none fewer reaches it


def test_c_h100_row_of_5e10_tokens_a_day_is_sized_not_an_abort() -> None:
    target = 5e10 / DAY_S  # 578,704 tokens/s
    counts = _training_fleet(5e10, "dgx-h100", "dgx-b200", "gb200-nvl72")
    assert set(counts) == {"dgx-h100", "dgx-b200", "gb200-nvl72"}
    assert counts["dgx-h100"] == 80
    assert _rate("dgx-h100", 80) >= target > _rate("dgx-h100", 79)
    for system, count in counts.items():
        assert _rate(system, count) >= target > _rate(system, count - 1), system


def test_c_upgrade_of_2048_h100_finds_128_b200() -> None:
    upgrade = compare_upgrade(
        catalog=CATALOG,
        models=MODELS,
        old_system=CATALOG.system("dgx-h100"),
        old_gpus=2048,
        new_system=CATALOG.system("dgx-b200"),
        workloads=[PRETRAIN],
        power=POWER,
    )
    match = upgrade.matches[0]
    assert (match.new.num_systems, match.new_gpus) == (128, 1024)
    assert match.new.tokens_per_s >= match.old_tokens_per_s
    assert _rate("dgx-b200", 127) == 0.0  # no plan on 127
    assert _rate("dgx-b200", 126) < match.old_tokens_per_s  # the previous count with a plan


def test_c_a_system_that_cannot_reach_the_target_is_a_row_not_an_abort(run_cli) -> None:  # type: ignore[no-untyped-def]
    # 1e7 requests/s x 512 tokens = 5.12e9 tokens/s: a DGX H100 serves 6,579 tokens/s at the bounds,
    # so 778,000 of them (over the 100,000 cap); an NVL72 rack serves 185.5K: 27,600 racks
    args = ("cost", "fleet", "--workload", "llama-3-70b-chat", "--requests-per-s", "1e7")
    result = run_cli(*args, "--systems", "dgx-h100,gb200-nvl72", "--json")
    assert result.code == 0, result.err
    sizing = json.loads(result.out)
    assert [option["system"] for option in sizing["options"]] == ["gb200-nvl72"]
    assert sizing["options"][0]["num_systems"] == math.ceil(
        5.12e9 / sizing["options"][0]["point"]["tokens_per_s"]
    )
    assert [row["system"] for row in sizing["unreachable"]] == ["dgx-h100"]
    assert "up to 100,000" in sizing["unreachable"][0]["reason"]
    text = run_cli(*args, "--systems", "dgx-h100,gb200-nvl72").out
    assert "not reached" in text
    assert "note: dgx-h100: no whole number of dgx-h100 up to 100,000" in " ".join(text.split())
    one_line_error(run_cli(*args, "--systems", "dgx-h100"), "up to 100,000")  # every candidate short


# -- 2: the per-GPU claim holds where whole racks round the count up ------------------------------


def test_c_nvl72_verdict_holds_per_gpu_and_names_the_rack_rounding() -> None:
    upgrade = compare_upgrade(
        catalog=CATALOG,
        models=MODELS,
        old_system=CATALOG.system("dgx-h100"),
        old_gpus=100,
        new_system=CATALOG.system("gb200-nvl72"),
        workloads=[CHAT],
        power=POWER,
    )
    match = upgrade.matches[0]
    assert match.new_gpus == 72  # one rack, the smallest purchase
    assert match.new_gpu_equivalent < 50  # fewer than 50 GPUs do the work
    assert match.per_gpu_ratio == pytest.approx(100 / match.new_gpu_equivalent)  # per GPU: old / exact
    assert match.per_gpu_ratio >= 1.6
    assert match.seed_holds
    assert "per GPU holds" in match.verdict
    assert f"round {match.new_gpu_equivalent:.1f} up to 72" in match.verdict
    assert "does not hold" not in match.verdict


# -- 3: utilisation: TCO and cloud price the same working hours ----------------------------------


def _half_day_prices() -> Prices:
    return Prices(
        electricity_usd_per_kwh=0.1,
        pue_air=1.3,
        utilisation=0.5,
        cloud_usd_per_gpu_hour={"h100-sxm": 2.0},
        system_purchase_usd={"dgx-h100": 250_000.0},
    )


def test_c_serving_fleet_at_half_utilisation_prices_the_same_twelve_hours() -> None:
    sizing = size_fleet(
        catalog=CATALOG,
        models=MODELS,
        systems=[CATALOG.system("dgx-h100")],
        workload=CHAT,
        power=POWER,
        requests_per_s=50,
        prices=_half_day_prices(),
    )
    option = sizing.options[0]
    assert option.tco is not None
    assert sizing.target_tokens_per_s == 50 * 512  # served at this rate while working
    # cloud: GPUs x $2 x 24 h x 0.5 = 12 hours rented a day
    assert option.cloud_usd_per_day == pytest.approx(option.num_gpus * 2.0 * 12.0)
    # energy: the systems at 10.2 kW x 0.82 x PUE 1.3 for 8,766 h x 0.5 = the same 12 hours a day
    facility_w = option.num_systems * 10_200.0 * 0.82 * 1.3
    assert option.tco.energy_per_year_j == pytest.approx(facility_w * HOURS_PER_YEAR * 0.5 * 3600.0)
    assert option.tco.energy_per_year_j / 365.25 == pytest.approx(facility_w * 12.0 * 3600.0)
    assert any("works 12 h a day" in line for line in sizing.assumptions)


def test_c_training_fleet_at_half_utilisation_makes_the_days_tokens_in_twelve_hours() -> None:
    sizing = size_fleet(
        catalog=CATALOG,
        models=MODELS,
        systems=[CATALOG.system("dgx-h100")],
        workload=PRETRAIN,
        power=POWER,
        tokens_per_day=2e10,
        prices=_half_day_prices(),
    )
    rate = 2e10 / (0.5 * DAY_S)  # 462,963 tokens/s for 12 hours
    assert sizing.target_tokens_per_s == pytest.approx(rate)
    option = sizing.options[0]
    assert option.tokens_per_s >= rate
    assert option.tokens_per_s * 12 * 3600 >= 2e10  # the day's tokens in the working hours
    assert option.cloud_usd_per_day == pytest.approx(option.num_gpus * 2.0 * 12.0)


def test_c_fleet_without_prices_works_around_the_clock() -> None:
    sizing = size_fleet(
        catalog=CATALOG,
        models=MODELS,
        systems=[CATALOG.system("dgx-h100")],
        workload=PRETRAIN,
        power=POWER,
        tokens_per_day=2e10,
    )
    assert sizing.target_tokens_per_s == pytest.approx(2e10 / DAY_S)
    assert (sizing.utilisation, sizing.assumptions) == (1.0, ())


# -- 4: a fleet is at least one system -----------------------------------------------------------


def test_c_a_tiny_serving_target_is_one_system_of_each(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("cost", "fleet", "--workload", "llama-3-70b-chat", "--requests-per-s", "1e-7", "--json")
    assert result.code == 0, result.err
    options = json.loads(result.out)["options"]
    assert [option["num_systems"] for option in options] == [1, 1, 1]


# -- 5 and 10: the bounds of the drawn share, stated -----------------------------------------------


def test_c_idle_gpus_of_a_held_node_and_the_drawn_peak_are_stated_bounds(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = (
        "cost",
        "infer",
        "--model",
        "llama-3-8b",
        "--system",
        "dgx-h100",
        "--gpus",
        "2",
        "--max-tpot",
        "50ms",
    )
    payload = json.loads(run_cli(*args, "--json").out)
    lines = payload["assumptions"]
    idle = [line for line in lines if "held but not used" in line]
    assert len(idle) == 1
    assert "the 6 GPUs" in idle[0]  # 8 held - 2 used
    assert "upper bound" in idle[0]
    assert "0 W, a lower bound" in idle[0]
    assert any("IT draw = rated x 0.82 under infer" in line and "upper bound" in line for line in lines)
    assert "held but not used" in " ".join(run_cli(*args).out.split())


def test_c_training_energy_is_labelled_an_upper_bound(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = ("cost", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--global-batch", "64")
    payload = json.loads(run_cli(*args, "--gpus", "8", "--tokens", "1e9", "--json").out)
    drawn = [line for line in payload["assumptions"] if line.startswith("IT draw = rated x 0.82 under train")]
    assert len(drawn) == 1
    assert "peak" in drawn[0]
    assert "upper bound" in drawn[0]
    measured = json.loads(run_cli(*args, "--gpus", "8", "--tokens", "1e9", "--power-w", "8000", "--json").out)
    assert not any(line.startswith("IT draw") for line in measured["assumptions"])  # a measured mean


# -- 6: an NVL72 is a whole rack -----------------------------------------------------------------


def test_c_two_nvl72_racks_in_one_rack_are_refused(run_cli) -> None:  # type: ignore[no-untyped-def]
    one_line_error(
        run_cli("cost", "cluster", "--systems-per-rack", "2", "--racks", "2"),
        "--systems-per-rack",
        "gb200-nvl72 is a whole rack",
    )
    result = run_cli(
        "cost", "cluster", "--system", "dgx-h100", "--systems-per-rack", "2", "--racks", "2", "--json"
    )
    assert result.code == 0, result.err
    plan = json.loads(result.out)["rack_plan"]
    assert (plan["systems_per_rack"], plan["rack_power_w"]) == (2, 2 * 10_200.0)
    single = run_cli("cost", "cluster", "--systems-per-rack", "1", "--racks", "2", "--json")
    assert single.code == 0, single.err


# -- 7: one limit for --tokens-per-day -----------------------------------------------------------


def test_c_tokens_per_day_has_one_limit(run_cli) -> None:  # type: ignore[no-untyped-def]
    assert MAX_TOKENS_PER_DAY == 1e16
    one_line_error(
        run_cli("cost", "fleet", "--workload", "llama-3-70b-pretrain", "--tokens-per-day", "1e17"),
        "--tokens-per-day",
        f"(0, {MAX_TOKENS_PER_DAY_TEXT}]",
    )
    help_text = " ".join(run_cli("cost", "fleet", "--help").out.split())
    assert MAX_TOKENS_PER_DAY_TEXT == "1e16"
    assert f"up to {MAX_TOKENS_PER_DAY_TEXT}" in help_text


# -- 8: an empty --plot ----------------------------------------------------------------------------


def test_c_an_empty_plot_path_is_refused_and_writes_nothing(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    here = Path.cwd()
    os.chdir(tmp_path)
    try:
        args = ("cost", "upgrade", "--from", "100xh100-sxm", "--to", "b200", "--prices", EXAMPLE_PRICES)
        args = (*args, "--workload", "llama-3-70b-chat")
        one_line_error(run_cli(*args, "--plot", ""), "an empty value names nothing to write")
        one_line_error(run_cli(*args, "--plot", " "), "a blank value (' ') names nothing to write")
    finally:
        os.chdir(here)
    assert list(tmp_path.iterdir()) == []


# -- 9: the old cluster in whole systems -----------------------------------------------------------


def test_c_upgrade_counts_the_old_gpus_in_whole_systems() -> None:
    prices = Prices(
        electricity_usd_per_kwh=0.1,
        pue_air=1.3,
        cloud_usd_per_gpu_hour={"h100-sxm": 2.0},
        system_purchase_usd={"dgx-h100": 250_000.0, "dgx-b200": 400_000.0},
    )
    upgrade = compare_upgrade(
        catalog=CATALOG,
        models=MODELS,
        old_system=CATALOG.system("dgx-h100"),
        old_gpus=100,
        new_system=CATALOG.system("dgx-b200"),
        workloads=[CHAT],
        power=POWER,
        prices=prices,
    )
    before = upgrade.matches[0].power_before
    assert (before.num_systems, before.num_held_gpus) == (13, 104)  # ceil(100 / 8) whole DGX H100
    assert before.rated_power_w == pytest.approx(13 * 10_200.0)  # 132.6 kW
    assert before.gpus_tdp_w == pytest.approx(100 * 700.0)  # the seed's GPU-TDP convention: 100 GPUs
    payback = upgrade.matches[0].payback
    assert payback is not None
    assert payback.inputs["old_capex_usd"] == pytest.approx(13 * 250_000.0)  # $3.25M
    assert payback.old_rent_per_year_usd == pytest.approx(100 * 2.0 * HOURS_PER_YEAR)  # rent: 100 GPUs
    assert any(
        line.startswith("100 GPUs are 13 whole dgx-h100 (104 GPUs held)") for line in upgrade.assumptions
    )


# -- 11: the fleet caption without prices ---------------------------------------------------------


def test_c_fleet_caption_without_prices_says_the_columns_need_them(run_cli) -> None:  # type: ignore[no-untyped-def]
    text = " ".join(
        run_cli("cost", "fleet", "--workload", "llama-3-70b-chat", "--requests-per-s", "5").out.split()
    )
    assert "TCO/year and cloud/day need --prices FILE" in text
    assert "from the prices file" not in text
    priced = run_cli(
        "cost", "fleet", "--workload", "llama-3-70b-chat", "--requests-per-s", "5", "--prices", EXAMPLE_PRICES
    ).out
    assert "from the prices file" in " ".join(priced.split())


# -- 12 and 13: the seed page and the benchmark say what they check --------------------------------


def test_c_seed_page_claim_15_flow_is_by_hand_and_lists_what_is_not_checked() -> None:
    rows = {
        line.split("|")[1].strip(): line
        for line in (REPO / "docs" / "seed.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| ")
    }
    claim = rows["15"]
    # 0.85 x 128 kW = 108.8 kW; 108.8 / (4.186 x 12) x 60 = 130 L/min, / (4.186 x 10) x 60 = 156 L/min
    low, high = (round(108.8 / (4.186 * rise) * 60) for rise in (12, 10))
    assert (low, high) == (130, 156)
    assert f"{low} L/min" in claim
    assert f"{high} L/min" in claim
    assert "low end" in claim
    assert "143 L/min" not in claim
    assert "lightspeed computes no flow" in claim
    assert "40.8 kW" in claim  # 4 x 10.2 kW, beside the seed's 50-60 kW
    assert "weight" in claim
    assert "docs/cost.md" not in claim.split("|")[4]  # the where column points where the figures are
    assert (
        "MLPerf's warning that per-GPU figures are not its primary comparison metric is the seed's"
        in rows["3"]
    )
    assert "cost cluster --racks 8" not in rows["14"]
    assert "hw show gb300-nvl72" in rows["14"]


def test_c_benchmark_calls_its_rack_power_check_a_consistency_check() -> None:
    script = (REPO / "benchmarks" / "cost_seed_claims.py").read_text(encoding="utf-8")
    assert "consistency check of the seed with itself" in script
    results = json.loads(
        (REPO / "benchmarks" / "results" / "cost_seed_claims.json").read_text(encoding="utf-8")
    )
    assert "not an independent figure" in results["nvl72_rack_kw"]["check"]

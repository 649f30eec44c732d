"""The cost model: hand calculations, the seed's power and ROI claims, bad inputs.

Golden values are written out here: kWh = kW x hours x PUE, the seed's figures
(SEED.md claims 15 and 17) and DeepSeek-V3's technical report (Table 1:
2.664M H800 GPU-hours of pre-training, $5.576M at $2 per GPU-hour in total).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from lightspeed.catalog import Catalog, load_power
from lightspeed.cost import (
    Prices,
    cluster_power,
    compare_upgrade,
    cost_workload,
    deepseek_cost,
    load_prices,
    parse_fleet,
    rack_plan,
    size_fleet,
    tco_per_year,
    training_cost,
)
from lightspeed.errors import DataFileError, LightspeedError, UnknownNameError, UserInputError
from lightspeed.tour.scenarios import DEEPSEEK_PRETRAIN_GPU_HOURS, deepseek_v3_training
from lightspeed.workload import ModelRegistry

POWER = load_power()
HOURS_PER_YEAR = 365.25 * 24


def test_cluster_power_of_100_h100_by_hand() -> None:
    draw = cluster_power(
        power=POWER["dgx-h100"], gpus_per_system=8, num_gpus=100, gpu_tdp_w=700.0, pue=1.3, workload="train"
    )
    assert draw.gpus_tdp_w == pytest.approx(100 * 700.0)  # the seed's 70 kW
    assert draw.rated_power_w == pytest.approx(12.5 * 10_200.0)  # 12.5 DGX H100 at 10.2 kW
    assert draw.it_power_w == pytest.approx(12.5 * 8_364.0)  # 8.4 kW measured of 10.2 kW: share 0.82
    assert draw.facility_power_w == pytest.approx(12.5 * 8_364.0 * 1.3)
    assert draw.liquid_heat_w == 0.0  # air-cooled


def test_measured_power_replaces_the_estimate() -> None:
    draw = cluster_power(
        power=POWER["dgx-h100"], gpus_per_system=8, num_gpus=16, pue=1.5, measured_power_w=12e3
    )
    assert draw.it_power_w == 12e3
    assert draw.facility_power_w == pytest.approx(18e3)
    assert draw.basis == "measured mean power"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -5.0, 0.0, 2e9])
def test_measured_power_must_be_a_plausible_power(bad: float) -> None:
    with pytest.raises(UserInputError, match="measured power"):
        cluster_power(power=POWER["dgx-h100"], gpus_per_system=8, num_gpus=8, measured_power_w=bad)


def test_tco_per_year_by_hand() -> None:
    prices = Prices(
        electricity_usd_per_kwh=0.12,
        pue_air=1.5,
        utilisation=0.5,
        depreciation_years=5.0,
        other_opex_share_per_year=0.05,
        system_purchase_usd={"dgx-h100": 400_000.0},
    )
    draw = cluster_power(power=POWER["dgx-h100"], gpus_per_system=8, num_gpus=8, pue=prices.pue("air"))
    tco = tco_per_year(power=draw, prices=prices)
    hours = HOURS_PER_YEAR * 0.5
    kwh = 8.364 * hours * 1.5  # kWh = kW x h x PUE
    assert tco.energy_per_year_j / 3.6e6 == pytest.approx(kwh)
    assert tco.electricity_per_year_usd == pytest.approx(kwh * 0.12)
    expected = 400_000 / 5 + kwh * 0.12 + 0.05 * 400_000
    assert tco.total_per_year_usd == pytest.approx(expected)
    assert tco.usd_per_gpu_hour == pytest.approx(expected / (8 * hours))
    assert tco.inputs["pue"] == 1.5
    assert tco.inputs["system_purchase_usd.dgx-h100"] == 400_000.0


def test_deepseek_cost_from_the_engine_beside_the_report(catalog: Catalog, models: ModelRegistry) -> None:
    estimate = deepseek_v3_training(catalog, models)
    cluster = catalog.cluster("hgx-h800", num_accelerators=2048)
    prices = Prices(electricity_usd_per_kwh=0.1, cloud_usd_per_gpu_hour={"h800-sxm": 2.0})
    training = training_cost(
        estimate=estimate, cluster=cluster, power=POWER["hgx-h800"], num_tokens=14.8e12, prices=prices
    )
    hours = 14.8e12 / estimate.tokens_per_s * 2048 / 3600
    assert training.gpu_hours == pytest.approx(hours)
    assert training.cloud_usd == pytest.approx(hours * 2.0)
    result = deepseek_cost(training=training, published_pretrain_gpu_hours=DEEPSEEK_PRETRAIN_GPU_HOURS)
    assert result.published_total_usd == pytest.approx(5.576e6)
    assert result.predicted_total_usd == pytest.approx((hours + 119e3 + 5e3) * 2.0)
    # the engine predicts pre-training within 15% of the report's 2.664M GPU-hours
    assert result.predicted_pretrain_gpu_hours == pytest.approx(2.664e6, rel=0.15)
    assert result.ratio == pytest.approx(1.0, abs=0.15)


def test_gb200_nvl72_rack_and_8_rack_site_from_parts(catalog: Catalog) -> None:
    record = POWER["gb200-nvl72"]
    assert sum(part.power_w for part in record.parts) == pytest.approx(18 * 6e3 + 20e3)
    racks = catalog.cluster("gb200-nvl72", num_nodes=8)
    plan = rack_plan(cluster=racks, power=record, site_budget_w=1.0e6)
    assert 120e3 <= plan.rack_power_w <= 132e3  # seed claims 5 and 15: 120-132 kW per rack
    assert plan.num_racks == 8
    assert plan.num_gpus == 576
    assert plan.site_it_power_w == pytest.approx(1e6, rel=0.05)  # "8 racks ~1 MW"
    assert plan.liquid_heat_w == pytest.approx(0.85 * plan.site_it_power_w)  # liquid takes ~85%
    assert plan.fits_site is False  # 1.024 MW does not fit 1 MW
    roomy = rack_plan(cluster=racks, power=record, pue=1.1, site_budget_w=1.2e6)
    assert roomy.site_facility_power_w == pytest.approx(1.024e6 * 1.1)
    assert roomy.fits_site is True


def test_rack_plan_of_air_cooled_nodes(catalog: Catalog) -> None:
    plan = rack_plan(cluster=catalog.cluster("dgx-h100", num_nodes=13), power=POWER["dgx-h100"])
    assert plan.num_racks == math.ceil(13 / 4)
    assert plan.rack_power_w == pytest.approx(4 * 10.2e3)
    assert plan.air_heat_w == pytest.approx(13 * 10.2e3)


@pytest.mark.parametrize("pue", [math.nan, 0.9, 9.0])
def test_rack_plan_rejects_bad_pue(catalog: Catalog, pue: float) -> None:
    with pytest.raises(UserInputError, match="PUE"):
        rack_plan(cluster=catalog.cluster("dgx-h100"), power=POWER["dgx-h100"], pue=pue)


UPGRADE_PRICES = Prices(
    electricity_usd_per_kwh=0.10,
    pue_air=1.3,
    other_opex_share_per_year=0.05,
    cloud_usd_per_gpu_hour={"h100-sxm": 2.0},
    system_purchase_usd={"dgx-h100": 250_000.0, "dgx-b200": 400_000.0},
)


@pytest.fixture(scope="module")
def upgrade(catalog: Catalog, models: ModelRegistry):  # type: ignore[no-untyped-def]
    return compare_upgrade(
        catalog=catalog,
        models=models,
        old_system=catalog.system("dgx-h100"),
        old_gpus=100,
        new_system=catalog.system("dgx-b200"),
        workloads=[cost_workload("llama-3-70b-pretrain"), cost_workload("llama-3-70b-chat")],
        power=POWER,
        prices=UPGRADE_PRICES,
    )


def test_upgrade_reproduces_the_seeds_100_h100_to_about_50_b200(upgrade) -> None:  # type: ignore[no-untyped-def]
    for match in upgrade.matches:
        assert 40 <= match.new_gpus <= 62, match.workload  # seed claim 17: ~50 for 100, within 25%
        assert match.seed_holds
        assert match.power_before.gpus_tdp_w == pytest.approx(70e3)  # 100 x 700 W
        assert match.power_after.gpus_tdp_w == pytest.approx(match.new_gpus * 1000.0)
        assert 40e3 <= match.power_after.gpus_tdp_w <= 62e3  # seed: ~50 kW


def test_upgrade_match_is_the_fewest_systems_reaching_the_old_rate(  # type: ignore[no-untyped-def]
    upgrade, catalog: Catalog, models: ModelRegistry
) -> None:
    from lightspeed.cost.workloads import training_point

    train, serve = upgrade.matches
    assert train.new.tokens_per_s >= train.old_tokens_per_s
    fewer = training_point(
        catalog=catalog,
        models=models,
        system=catalog.system("dgx-b200"),
        num_systems=train.new.num_systems - 1,
        workload=cost_workload("llama-3-70b-pretrain"),
    )
    assert fewer is None or fewer.tokens_per_s < train.old_tokens_per_s
    per_system = serve.new.tokens_per_s
    assert serve.new_gpus // 8 * per_system >= serve.old_tokens_per_s > (serve.new_gpus // 8 - 1) * per_system


def test_upgrade_payback_by_hand(upgrade) -> None:  # type: ignore[no-untyped-def]
    match = upgrade.matches[0]
    capex = match.new_gpus / 8 * 400_000.0
    kwh = match.power_after.it_power_w / 1e3 * 1.3 * HOURS_PER_YEAR
    opex = kwh * 0.10 + 0.05 * capex
    rent = 100 * 2.0 * HOURS_PER_YEAR
    assert match.payback.vs_renting_years == pytest.approx(capex / (rent - opex))
    assert 1.0 <= match.payback.vs_renting_years <= 2.0  # seed: 1-2 years for 24/7 work, at these prices
    old_opex = match.power_before.it_power_w / 1e3 * 1.3 * HOURS_PER_YEAR * 0.10 + 0.05 * 13 * 250_000.0
    assert match.payback.vs_keeping_years == pytest.approx(capex / (old_opex - opex))
    assert match.payback.vs_keeping_years > 10  # power savings alone do not pay back a new cluster fast


def test_upgrade_sensitivities_rank_the_inputs_that_move_the_answer(upgrade) -> None:  # type: ignore[no-untyped-def]
    rows = [row for row in upgrade.matches[0].sensitivities if row.answer.startswith("payback")]
    assert len(rows) == 3
    swings = [row.swing for row in rows]
    assert swings == sorted(swings, reverse=True)
    price = next(row for row in rows if row.input == "new purchase price")
    assert price.low_answer < price.base_answer < price.high_answer  # dearer hardware pays back later


def test_fleet_for_a_serving_target(catalog: Catalog, models: ModelRegistry) -> None:
    sizing = size_fleet(
        catalog=catalog,
        models=models,
        systems=[catalog.system("dgx-h100"), catalog.system("gb200-nvl72")],
        workload=cost_workload("llama-3-70b-chat"),
        power=POWER,
        requests_per_s=50.0,
    )
    assert sizing.target_tokens_per_s == pytest.approx(50.0 * 512)
    for option in sizing.options:
        per_system = option.point.tokens_per_s
        assert option.tokens_per_s >= sizing.target_tokens_per_s > (option.num_systems - 1) * per_system
        assert option.num_racks == math.ceil(option.num_systems / POWER[option.system].systems_per_rack)
        assert option.tco is None


@pytest.mark.parametrize("target", [math.nan, -1.0, 0.0, math.inf])
def test_fleet_rejects_bad_targets(catalog: Catalog, models: ModelRegistry, target: float) -> None:
    with pytest.raises(UserInputError, match="tokens-per-day"):
        size_fleet(
            catalog=catalog,
            models=models,
            systems=[catalog.system("dgx-h100")],
            workload=cost_workload("llama-3-70b-pretrain"),
            power=POWER,
            tokens_per_day=target,
        )


def test_parse_fleet(catalog: Catalog) -> None:
    assert parse_fleet(catalog, "100xh100-sxm")[0].name == "dgx-h100"
    assert parse_fleet(catalog, "b200") == (catalog.system("dgx-b200"), None)
    assert parse_fleet(catalog, "2xgb200-nvl72")[0].name == "gb200-nvl72"
    with pytest.raises(UserInputError):
        parse_fleet(catalog, "0xh100-sxm")
    with pytest.raises(UnknownNameError):
        parse_fleet(catalog, "100xh1000")


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"electricity_usd_per_kwh": -0.1}, "electricity_usd_per_kwh"),
        ({"pue_air": math.nan}, "pue_air"),
        ({"pue_liquid": 0.95}, "pue_liquid"),
        ({"utilisation": 0.0}, "utilisation"),
        ({"depreciation_years": math.inf}, "depreciation_years"),
        ({"cloud_usd_per_gpu_hour": {"b200": -3.0}}, "cloud_usd_per_gpu_hour.b200"),
        ({"system_purchase_usd": {"dgx-b200": 1e15}}, "system_purchase_usd.dgx-b200"),
    ],
)
def test_prices_reject_bad_values(changes: dict[str, object], words: str) -> None:
    settings: dict[str, object] = {"electricity_usd_per_kwh": 0.1, **changes}
    with pytest.raises(UserInputError, match=words.replace(".", r"\.")):
        Prices(**settings)  # type: ignore[arg-type]


def test_missing_price_names_the_key_to_add() -> None:
    prices = Prices(electricity_usd_per_kwh=0.1, cloud_usd_per_gpu_hour={"h100-sxm": 2.0})
    with pytest.raises(UserInputError, match=r"cloud_usd_per_gpu_hour\.b200.*add b200"):
        prices.gpu_hour_usd("b200")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('kind = "prices"\npue_air = 1.2\n', "electricity_usd_per_kwh"),
        ('kind = "prices"\nelectricity_usd_per_kwh = 0.1\npue_air = nan\n', "pue_air"),
        ('kind = "prices"\nelectricity_usd_per_kwh = 0.1\npue_liquid = 0.8\n', "pue_liquid"),
        ('kind = "prices"\nelectricity_usd_per_kwh = -2\n', "electricity_usd_per_kwh"),
        ('kind = "prices"\nelectricity_usd_per_kwh = 0.1\nelectricity_usd_per_kw = 1\n', "unknown key"),
        ('kind = "prices"\nelectricity_usd_per_kwh = 0.1\n[cloud_usd_per_gpu_hour.b200]\nx = 1\n', "b200"),
        ('kind = "prices"\nelectricity_usd_per_kwh = 0.1\n[cloud_usd_per_gpu_hour\n', "invalid TOML"),
        ('kind = "model"\nelectricity_usd_per_kwh = 0.1\n', "not a prices file"),
    ],
)
def test_prices_file_errors_are_one_line(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LightspeedError) as error:
        load_prices(path)
    assert isinstance(error.value, DataFileError)
    message = str(error.value)
    assert words in message
    assert "\n" not in message
    assert str(path) in message


def test_example_prices_file_loads() -> None:
    path = Path(__file__).resolve().parents[2] / "examples" / "prices.toml"
    prices = load_prices(path)
    assert prices.cloud_usd_per_gpu_hour["h800-sxm"] == 2.0  # DeepSeek-V3's assumed rate
    assert prices.pue_liquid < prices.pue_air

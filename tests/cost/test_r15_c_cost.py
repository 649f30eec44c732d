"""Cost and catalog views: the defects of the round-15 expert check (task C).

Golden values are hand calculations written out here: DGX H100 rated 10.2 kW for 8 GPUs (NVIDIA
DGX H100 user guide), 0.82 of the rating drawn while working (Latif et al.); the example prices
(examples/prices.toml): $2 per H100-hour, $250,000 per DGX H100, PUE 1.3 in an air-cooled room;
GB200 NVL72: 120-132 kW per rack (seed claim 5).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.catalog import load_catalog, load_power
from lightspeed.catalog.views import describe
from lightspeed.cost import SystemCost, compare_upgrade, cost_workload, load_prices
from lightspeed.cost.workloads import best_training_rate, rate_counts, training_point
from lightspeed.errors import DataFileError
from lightspeed.report.cost import render_system_costs
from lightspeed.report.html_cost import NOTHING_TO_PRICE, cost_section, served_plan
from lightspeed.report.html_sections import PredictedStep
from lightspeed.workload import load_models

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_PRICES = REPO / "examples" / "prices.toml"
CATALOG, MODELS, POWER = load_catalog(), load_models(), load_power()
PRETRAIN = cost_workload("llama-3-70b-pretrain")
DGX_H100 = CATALOG.system("dgx-h100")


def _rate(num_gpus: int) -> float:
    return best_training_rate(
        catalog=CATALOG, models=MODELS, system=DGX_H100, num_gpus=num_gpus, workload=PRETRAIN
    )[0]


def _plan_rate(num_nodes: int) -> float:
    point = training_point(
        catalog=CATALOG, models=MODELS, system=DGX_H100, num_systems=num_nodes, workload=PRETRAIN
    )
    return 0.0 if point is None else point.tokens_per_s


# -- 1: the old cluster's rate is the fastest whole-node plan it holds ------------------------------


def test_r15_c_old_rate_is_the_fastest_whole_node_plan_the_gpus_hold() -> None:
    # 100 H100 hold 12 whole DGX H100 (96 GPUs); 104 hold 13: each runs the fastest plan on any
    # whole number of nodes up to that, and the GPUs no plan uses add nothing
    fastest_12 = max(_plan_rate(nodes) for nodes in range(1, 13))
    fastest_13 = max(fastest_12, _plan_rate(13))
    assert _rate(100) == pytest.approx(fastest_12)
    assert _rate(104) == pytest.approx(fastest_13)
    assert _rate(96) == pytest.approx(fastest_12)
    assert _rate(100) <= _rate(104)  # 4 more GPUs never lower the rate


def test_r15_c_counts_tried_are_nested_and_whole() -> None:
    for most in range(1, 700):
        counts = list(rate_counts(most))
        assert counts == sorted(set(counts), reverse=True)
        assert all(1 <= count <= most for count in counts)
        assert set(counts) <= set(rate_counts(most + 1))  # a larger fleet tries every count again
        if most < 64:
            assert counts == list(range(most, 0, -1))  # every count up to 63
    # above 64, 32 evenly spaced counts per doubling: multiples of 2 from 64, of 4 from 128
    assert [count for count in rate_counts(200) if count >= 128] == list(range(200, 127, -4))


def test_r15_c_same_hardware_never_buys_fewer_gpus_doing_more(run_cli) -> None:  # type: ignore[no-untyped-def]
    for old in ("13xdgx-h100", "100xh100-sxm"):
        args = ("cost", "upgrade", "--from", old, "--to", "dgx-h100", "--workload", PRETRAIN.name, "--json")
        result = run_cli(*args)
        assert result.code == 0, result.err
        match = json.loads(result.out)["upgrade"]["matches"][0]
        assert match["new_gpus"] <= match["old_gpus"]
        # the new nodes are a subset of the old ones: they cannot do more than the old cluster
        assert match["new"]["tokens_per_s"] == pytest.approx(match["old_tokens_per_s"])
        assert match["per_gpu_ratio"] == pytest.approx(1.0)  # the same GPU, the same plan


def test_r15_c_upgrade_says_which_old_gpus_the_plan_uses(run_cli) -> None:  # type: ignore[no-untyped-def]
    upgrade = compare_upgrade(
        catalog=CATALOG,
        models=MODELS,
        old_system=DGX_H100,
        old_gpus=100,
        new_system=CATALOG.system("dgx-b200"),
        workloads=[PRETRAIN],
        power=POWER,
    )
    match = upgrade.matches[0]
    assert match.old.num_gpus % 8 == 0
    assert match.old.num_gpus <= 100
    assert match.old_tokens_per_s == pytest.approx(match.old.tokens_per_s)
    assert match.per_gpu_ratio == pytest.approx(
        match.new.tokens_per_s_per_gpu / match.old.tokens_per_s_per_gpu
    )
    text = run_cli("cost", "upgrade", "--from", "100xh100-sxm", "--to", "b200", "--workload", PRETRAIN.name)
    assert text.code == 0, text.err
    assert f"on {match.old.num_gpus} of the 100 GPUs (the fastest plan they hold)" in text.out


def test_r15_c_fewer_gpus_than_one_system_say_so(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = ("cost", "upgrade", "--from", "4xh100-sxm", "--to", "b200", "--workload", PRETRAIN.name)
    one_line_error(run_cli(*args), "does not fit 4 GPUs", "whole systems of 8 GPUs")


# -- 2: notes with a TOML section name are printed as written -----------------------------------------


def test_r15_c_system_cost_note_keeps_its_brackets(capsys: pytest.CaptureFixture[str]) -> None:
    note = "add mi300x = <USD> under [cloud_usd_per_gpu_hour]; [bold]x[/bold]"
    cost = SystemCost("mi300x-platform", 8, 1.0, None, None, None, None, note, {"[odd]": "[b]v[/b]"})
    render_system_costs([cost], "infer")
    out = " ".join(capsys.readouterr().out.split())
    assert "under [cloud_usd_per_gpu_hour]; [bold]x[/bold]" in out
    assert "[odd]=[b]v[/b]" in out


def test_r15_c_compare_systems_names_the_price_table(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = ("compare", "systems", "mi300x-platform", "dgx-h100", "--workload", "infer", "--model")
    result = run_cli(*args, "llama-3-70b", "--max-tpot", "50ms", "--prices", str(EXAMPLE_PRICES))
    assert result.code == 0, result.err
    assert "under [cloud_usd_per_gpu_hour]" in " ".join(result.out.split())


# -- 3: the report prices serving plans as cost infer does -------------------------------------------


def _served(run_cli, tmp_path: Path) -> dict[str, object]:  # type: ignore[no-untyped-def]
    args = ("plan", "infer", "--model", "llama-3-70b", "--system", "dgx-h100", "--isl", "2048")
    result = run_cli(*args, "--osl", "512", "--tp", "2", "--json")
    assert result.code == 0, result.err
    data: dict[str, object] = json.loads(result.out)
    return data


def _number(cell: str) -> float:
    return float(cell.replace("$", "").replace(",", "").split()[0])


def test_r15_c_report_prices_a_serving_plan(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = _served(run_cli, tmp_path)
    tokens_per_s = float(data["output_tokens_per_s"])  # type: ignore[arg-type]
    prices = load_prices(EXAMPLE_PRICES)
    section = cost_section(
        [], catalog=CATALOG, power=POWER, prices=prices, served=[served_plan(data, source="pi.json")]
    )
    assert section.skipped_reason is None
    (table,) = section.tables
    (row,) = table.rows
    cells = dict(zip(table.headers, row, strict=True))
    assert cells["GPUs"] == "8"
    # one DGX H100: 10.2 kW x 0.82 drawn x PUE 1.3 = 10.873 kW at the facility
    facility_w = 10.2e3 * 0.82 * 1.3
    assert _number(cells["energy per output token"]) == pytest.approx(facility_w / tokens_per_s, rel=2e-3)
    # rented: 8 GPUs x $2 an hour / output tokens an hour x 1e6
    cloud = 8 * 2.0 / (tokens_per_s * 3600.0) * 1e6
    assert _number(cells["cloud $ per million tokens"]) == pytest.approx(cloud, rel=1e-3)
    # owned: $250,000 / 4 years + 5% a year + the facility's kWh at $0.1, over 8,766 hours a year
    owned_per_hour = 250_000 / 4 / 8766 + 0.05 * 250_000 / 8766 + facility_w / 1e3 * 0.1
    owned = owned_per_hour / (tokens_per_s * 3600.0) * 1e6
    assert _number(cells["owned $ per million tokens"]) == pytest.approx(owned, rel=1e-3)
    assert "system_purchase_usd.dgx-h100=250,000" in table.caption


def test_r15_c_report_prices_training_and_serving_side_by_side(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    step = PredictedStep(
        model="llama-3-8b",
        system="1 x dgx-h100 over ib-ndr",
        num_gpus=8,
        step_time_s=2.0,
        breakdown_s={"compute": 2.0},
        mfu=None,
        bound=None,
        bound_part=None,
        fits=True,
    )
    served = served_plan(_served(run_cli, tmp_path), source="pi.json")
    section = cost_section(
        [step], catalog=CATALOG, power=POWER, prices=load_prices(EXAMPLE_PRICES), served=[served]
    )
    assert [table.headers[0] for table in section.tables] == ["plan", "serving plan"]
    assert section.tables[1].rows[0][0].startswith("serving llama-3-70b on 1 x dgx-h100")
    empty = cost_section([], catalog=CATALOG, power=POWER, prices=load_prices(EXAMPLE_PRICES))
    assert empty.skipped_reason == NOTHING_TO_PRICE
    assert "plan infer" in NOTHING_TO_PRICE


def test_r15_c_a_bad_serving_plan_names_the_field() -> None:
    with pytest.raises(DataFileError, match="num_gpus"):
        served_plan({"num_gpus": 0, "output_tokens_per_s": 1.0}, source="pi.json")
    with pytest.raises(DataFileError, match="output_tokens_per_s"):
        served_plan({"num_gpus": 8, "output_tokens_per_s": -1.0}, source="pi.json")


# -- 4: the prices file takes catalog aliases ---------------------------------------------------------


def _prices(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(f'kind = "prices"\nelectricity_usd_per_kwh = 0.1\n{body}', encoding="utf-8")
    return path


def test_r15_c_prices_resolve_aliases_to_catalog_names(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    path = _prices(tmp_path, "[cloud_usd_per_gpu_hour]\nh100 = 2\n[system_purchase_usd]\ndgxh100 = 250000\n")
    prices = load_prices(path)
    assert prices.cloud_usd_per_gpu_hour == {"h100-sxm": 2.0}
    assert prices.system_purchase_usd == {"dgx-h100": 250000.0}
    result = run_cli("cost", "cluster", "--system", "dgx-h100", "--prices", str(path))
    assert result.code == 0, result.err
    assert "system_purchase_usd.dgx-h100=250,000" in " ".join(result.out.split())


def test_r15_c_two_names_of_one_record_are_refused(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    path = _prices(tmp_path, "[cloud_usd_per_gpu_hour]\nh100 = 2\nh100-sxm = 2.5\n")
    with pytest.raises(DataFileError, match="'h100' and 'h100-sxm' are both accelerator 'h100-sxm'"):
        load_prices(path)
    one_line_error(run_cli("cost", "cluster", "--prices", str(path)), "'h100' and 'h100-sxm'")


def test_r15_c_a_typo_is_still_refused(tmp_path: Path) -> None:
    path = _prices(tmp_path, "[system_purchase_usd]\ndgx-h1000 = 1\n")
    with pytest.raises(DataFileError, match="unknown system 'dgx-h1000'") as raised:
        load_prices(path)
    assert "dgx-h100" in str(raised.value)


# -- 5: hw show prints GB200 NVL72's power range -------------------------------------------------------


def test_r15_c_hw_show_prints_the_rack_power_range(run_cli) -> None:  # type: ignore[no-untyped-def]
    totals = describe(catalog=CATALOG, name="gb200-nvl72").totals
    assert totals is not None
    assert "120-132 kW" in totals.row("power").note
    text = run_cli("hw", "show", "gb200-nvl72")
    assert text.code == 0, text.err
    assert "printed power is a range, 120-132 kW" in " ".join(text.out.split())
    shown = json.loads(run_cli("hw", "show", "gb200-nvl72", "--json").out)
    assert shown["record"]["power_min_w"] == pytest.approx(120e3)
    assert shown["record"]["power_max_w"] == pytest.approx(132e3)
    power = [row for row in shown["totals"]["rows"] if row["key"] == "power"]
    assert "120-132 kW" in power[0]["note"]
    single = describe(catalog=CATALOG, name="dgx-h100").totals
    assert single is not None
    assert "range" not in single.row("power").note

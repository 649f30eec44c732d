"""``lightspeed cost`` after the expert check of the command group: --gpus honoured, targets and
counts of the wrong kind refused, the PUE and prices each figure used printed, missing prices
named, a budget under one step refused, one rate per GPU-hour, rated vs drawn site power, readable
magnitudes, the seed's claim only where it applies, idle hours stated, the committed benchmark
results current.

Golden values are hand calculations written out here: DGX H100 rated 10.2 kW, 0.82 drawn while
working; GB200 NVL72 128 kW a rack; 8,766 hours a year; the example prices
(examples/prices.toml): $0.1/kWh, PUE 1.3 air / 1.15 liquid, $2 per H100- and H800-hour,
$250k per DGX H100, $3M per NVL72 rack, no A100 prices.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.report.cost import energy, kw, years

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_PRICES = str(REPO / "examples" / "prices.toml")
HOURS = 365.25 * 24  # 8,766 hours a year
H100_IT_W = 10_200.0 * 0.82  # one DGX H100 at work: 8,364 W


def _json(result: Any) -> Any:
    assert result.code == 0, result.err
    return json.loads(result.out)


# -- 1: cost infer --gpus ------------------------------------------------------------------------


def test_infer_uses_the_gpus_asked_for(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = ("cost", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--isl", "2048", "--osl", "512")
    cost = _json(run_cli(*args, "--gpus", "2", "--prices", EXAMPLE_PRICES, "--json"))
    assert cost["num_gpus"] == 2
    assert cost["plan"].endswith("x2 replicas fp8")  # 8B fits one H100: one replica a GPU
    # the cloud rents the 2 GPUs used: 2 x $2 an hour over the output tokens of an hour
    rent = 2 * 2.0 / (cost["output_tokens_per_s"] * 3600.0) * 1e6
    assert cost["cloud_usd_per_million_tokens"] == pytest.approx(rent)
    power = cost["power"]  # power and ownership: the whole node the 2 GPUs sit in
    assert (power["num_gpus"], power["num_held_gpus"], power["rated_power_w"]) == (2, 8, 10_200.0)
    # a count the search cannot serve is its own refusal: 12 GPUs are 1.5 nodes
    one_line_error(run_cli(*args, "--gpus", "12"), "--gpus 12", "1.5 dgx-h100 nodes")


# -- 3: a target of the wrong kind ---------------------------------------------------------------


def test_fleet_refuses_a_target_of_the_wrong_kind(run_cli) -> None:  # type: ignore[no-untyped-def]
    fleet = ("cost", "fleet", "--systems", "dgx-b200")
    one_line_error(
        run_cli(
            *fleet, "--workload", "llama-3-70b-pretrain", "--tokens-per-day", "2e10", "--requests-per-s", "5"
        ),
        "--requests-per-s is for serving workloads; llama-3-70b-pretrain is training",
    )
    one_line_error(
        run_cli(
            *fleet, "--workload", "llama-3-70b-chat", "--requests-per-s", "50", "--tokens-per-day", "1e10"
        ),
        "--tokens-per-day is for training workloads; llama-3-70b-chat is serving",
    )


# -- 4: the PUE and the inputs each priced figure used --------------------------------------------


UPGRADE_CHAT = ("cost", "upgrade", "--from", "100xh100-sxm", "--to", "b200", "--workload", "llama-3-70b-chat")


def test_upgrade_prints_the_payback_inputs_and_the_pue_it_used(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*UPGRADE_CHAT, "--pue", "1", "--prices", EXAMPLE_PRICES)
    assert result.code == 0, result.err
    text = " ".join(result.out.split())  # the console wraps long lines
    assert "pue_old=1, pue_new=1" in text
    assert "pue_air" not in text  # the file's 1.3 was not used: it is not listed as an input
    assert "assumed: PUE 1 (dgx-h100, dgx-b200): --pue" in text
    payback = _json(run_cli(*UPGRADE_CHAT, "--pue", "1", "--prices", EXAMPLE_PRICES, "--json"))
    match = payback["upgrade"]["matches"][0]
    assert match["power_before"]["pue_source"] == match["power_after"]["pue_source"] == "--pue"
    # without prices the default PUE and its source are still named
    default = run_cli(*UPGRADE_CHAT)
    assert "assumed: PUE 1.56 (dgx-h100, dgx-b200): Uptime Institute" in " ".join(default.out.split())


def test_fleet_prints_its_inputs_and_pue(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = (
        "cost",
        "fleet",
        "--workload",
        "llama-3-70b-chat",
        "--requests-per-s",
        "5",
        "--systems",
        "dgx-h100",
    )
    result = run_cli(*args, "--prices", EXAMPLE_PRICES, "--pue", "1.1")
    assert result.code == 0, result.err
    text = " ".join(result.out.split())
    assert "inputs: system=dgx-h100, system_purchase_usd.dgx-h100=250,000" in text
    assert "pue=1.1" in text
    assert "cloud_usd_per_gpu_hour.h100-sxm=2" in text
    assert "assumed: PUE 1.1 (dgx-h100): --pue" in text
    sizing = _json(run_cli(*args, "--prices", EXAMPLE_PRICES, "--pue", "1.1", "--json"))
    assert sizing["options"][0]["power"]["pue_source"] == "--pue"  # one spelling, as in cluster
    cluster = _json(run_cli("cost", "cluster", "--system", "dgx-h100", "--pue", "1.1", "--json"))
    assert cluster["rack_plan"]["pue_source"] == "--pue"


# -- 5: a missing price is named, with how to add it ---------------------------------------------


def test_a_missing_price_is_named_in_cluster_infer_and_fleet(run_cli) -> None:  # type: ignore[no-untyped-def]
    # the wording is upgrade's refusal of the same gap, shared
    refusal = one_line_error(
        run_cli("cost", "upgrade", "--from", "100xh100-sxm", "--to", "a100", "--prices", EXAMPLE_PRICES)
    )
    wording = refusal.removeprefix("lightspeed: error: ")
    assert "no system_purchase_usd.dgx-a100" in wording
    assert "add dgx-a100 = <USD>" in wording
    owned = f"owned cost (TCO) not shown: {wording}"

    cluster = _json(run_cli("cost", "cluster", "--system", "dgx-a100", "--prices", EXAMPLE_PRICES, "--json"))
    assert cluster["tco"] is None
    assert cluster["notes"] == [owned]
    shown = run_cli("cost", "cluster", "--system", "dgx-a100", "--prices", EXAMPLE_PRICES)
    assert "note: owned cost (TCO) not shown" in shown.out

    infer = ("cost", "infer", "--model", "llama-3-8b", "--system", "dgx-a100", "--isl", "512", "--osl", "128")
    cost = _json(run_cli(*infer, "--prices", EXAMPLE_PRICES, "--json"))
    assert cost["cloud_usd_per_million_tokens"] is None
    assert cost["owned_usd_per_million_tokens"] is None
    assert cost["notes"][1] == owned
    assert "no cloud_usd_per_gpu_hour.a100-sxm" in cost["notes"][0]
    assert "add a100-sxm = <USD> under [cloud_usd_per_gpu_hour]" in cost["notes"][0]

    fleet = (
        "cost",
        "fleet",
        "--workload",
        "llama-3-70b-chat",
        "--requests-per-s",
        "5",
        "--systems",
        "dgx-a100",
    )
    sizing = _json(run_cli(*fleet, "--prices", EXAMPLE_PRICES, "--json"))
    assert sizing["options"][0]["notes"][1] == owned
    assert "note: dgx-a100: owned cost (TCO) not shown" in run_cli(*fleet, "--prices", EXAMPLE_PRICES).out


# -- 6: a budget below one optimizer step ------------------------------------------------------------


def test_train_refuses_fewer_tokens_than_one_step(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = (
        "cost",
        "train",
        "--model",
        "llama-3-8b",
        "--system",
        "dgx-h100",
        "--gpus",
        "8",
        "--global-batch",
        "64",
    )
    step_tokens = 64 * 4096  # global batch x the default 4,096-token sequences: 262,144
    one_line_error(
        run_cli(*args, "--tokens", str(step_tokens - 1)), "less than one optimizer step", f"{step_tokens:,}"
    )
    one_step = _json(run_cli(*args, "--tokens", str(step_tokens), "--json"))
    assert one_step["time_s"] == pytest.approx(one_step["step_s"])  # exactly one step


# -- 7: one rate per GPU-hour ------------------------------------------------------------------------


def test_deepseek_prices_everything_at_the_explicit_rate(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = (
        "cost",
        "train",
        "--scenario",
        "deepseek-v3",
        "--usd-per-gpu-hour",
        "3",
        "--prices",
        EXAMPLE_PRICES,
    )
    result = _json(run_cli(*args, "--json"))
    hours = result["predicted_pretrain_gpu_hours"]
    assert result["training"]["cloud_usd"] == pytest.approx(hours * 3.0)  # not the file's $2
    assert result["training"]["inputs"]["cloud_usd_per_gpu_hour.h800-sxm"] == 3.0
    assert result["training"]["inputs"]["usd_per_gpu_hour_source"] == "--usd-per-gpu-hour"
    assert result["predicted_total_usd"] == pytest.approx((hours + 119e3 + 5e3) * 3.0)
    assert (result["published_report_usd"], result["published_usd_per_gpu_hour"]) == (5.576e6, 2.0)
    assert result["published_total_usd"] == pytest.approx(5.576e6 * 3.0 / 2.0)  # rescaled, and said so
    table = run_cli(*args)
    assert "(published: rescaled)" in table.out
    assert "published total, at the report's $2/GPU-hour" in table.out
    assert "$5.576M" in table.out


# -- 8: counts the command computes, and repeated candidates --------------------------------------


def test_counts_the_command_computes_and_repeats_are_refused(run_cli) -> None:  # type: ignore[no-untyped-def]
    one_line_error(
        run_cli("cost", "upgrade", "--from", "100xh100-sxm", "--to", "7xb200"), "--to '7xb200'", "--to b200"
    )
    fleet = ("cost", "fleet", "--workload", "llama-3-70b-chat", "--requests-per-s", "5")
    one_line_error(
        run_cli(*fleet, "--systems", "64xdgx-h100"), "--systems '64xdgx-h100'", "--systems dgx-h100"
    )
    one_line_error(run_cli(*fleet, "--systems", "dgx-h100,dgx-h100"), "dgx-h100 more than once")
    one_line_error(run_cli(*fleet, "--systems", "dgx-h100,h100-sxm"), "dgx-h100 more than once")  # one system


# -- 9: rated and drawn site power -----------------------------------------------------------------


def test_cluster_shows_the_drawn_power_the_energy_is_priced_at(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = ("cost", "cluster", "--system", "gb200-nvl72", "--racks", "8", "--site-kw", "1200")
    payload = _json(run_cli(*args, "--prices", EXAMPLE_PRICES, "--json"))
    plan, tco = payload["rack_plan"], payload["tco"]
    drawn_w = 8 * 128e3 * 0.82  # 839.68 kW
    assert plan["site_it_power_w"] == pytest.approx(8 * 128e3)  # rated: 1.024 MW
    assert plan["drawn_it_power_w"] == pytest.approx(drawn_w)
    assert plan["drawn_facility_power_w"] == pytest.approx(drawn_w * 1.15)  # 965.6 kW
    assert tco["energy_per_year_j"] == pytest.approx(drawn_w * 1.15 * HOURS * 3600.0)  # 8.465 GWh
    text = run_cli(*args, "--prices", EXAMPLE_PRICES).out
    assert "site IT power, rated" in text
    assert "1.024 MW" in text
    assert "site IT power, drawn (rated x 0.82 under train)" in text
    assert "839.7 kW" in text
    assert "965.6 kW" in text
    assert "8.465 GWh" in text


# -- 10: magnitudes a reader can read ------------------------------------------------------------------


def test_large_and_small_magnitudes_read_with_si_prefixes(run_cli) -> None:  # type: ignore[no-untyped-def]
    assert energy(119.1e12 * 3600.0) == "119.1 TWh"
    assert energy(254.9e-3) == "0.2549 J"
    assert energy(296.8e3) == "296.8 kJ"
    assert kw(12.75e9) == "12.75 GW"
    assert kw(10_200.0) == "10.2 kW"
    assert years(150.3) == "150 years"
    assert years(1.545) == "1.5 years"
    result = run_cli(
        "cost", "cluster", "--gpus", "10000000", "--system", "dgx-h100", "--prices", EXAMPLE_PRICES
    )
    assert result.code == 0, result.err
    text = " ".join(result.out.split())
    # 1.25M DGX H100: 12.75 GW rated; drawn 10.455 GW x PUE 1.3 x 8,766 h = 119.1 TWh a year
    assert "12.75 GW" in text
    assert "119.1 TWh" in text
    assert "1,250,000 x dgx-h100" in text
    assert "e+0" not in text  # no scientific notation
    site = run_cli("cost", "cluster", "--system", "dgx-h100", "--gpus", "8").out
    assert "10.2 kW" in site
    assert "0.010 MW" not in site


# -- 11: the seed's claim where it applies --------------------------------------------------------------


def test_seed_claim_row_only_for_h100_to_b200_class(run_cli) -> None:  # type: ignore[no-untyped-def]
    backwards = (
        "cost",
        "upgrade",
        "--from",
        "100xb200",
        "--to",
        "h100-sxm",
        "--workload",
        "llama-3-70b-chat",
    )
    result = run_cli(*backwards)
    assert result.code == 0, result.err
    assert "seed claim 17" not in result.out
    assert "the seed's ~2x" not in result.out
    assert _json(run_cli(*backwards, "--json"))["upgrade"]["seed_claim"]["applies"] is False
    forward = run_cli(*UPGRADE_CHAT)
    assert "seed claim 17" in forward.out
    assert "the seed's reference figures" in " ".join(forward.out.split())


# -- 12: idle hours and --workload -------------------------------------------------------------------


def test_idle_hours_are_stated_and_workload_moves_the_drawn_rows(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    prices = tmp_path / "half.toml"
    prices.write_text(
        'kind = "prices"\nelectricity_usd_per_kwh = 0.1\nutilisation = 0.5\n'
        "[system_purchase_usd]\ndgx-h100 = 250000\n",
        encoding="utf-8",
    )
    payload = _json(run_cli("cost", "cluster", "--system", "dgx-h100", "--prices", str(prices), "--json"))
    # 4 DGX H100 (a rack) x 8,364 W x PUE 1.56 over half of 8,766 h: the idle half counted at 0 W
    assert payload["tco"]["energy_per_year_j"] == pytest.approx(4 * H100_IT_W * 1.56 * HOURS / 2 * 3600.0)
    assert "counted at 0 W" in payload["tco"]["assumptions"][0]
    assert "counted at 0 W" in run_cli("cost", "cluster", "--system", "dgx-h100", "--prices", str(prices)).out
    infer = run_cli("cost", "cluster", "--system", "dgx-h100", "--workload", "infer")
    assert infer.code == 0, infer.err
    assert "drawn (rated x 0.82 under infer)" in infer.out  # says what --workload set, without prices


# -- 2: the committed benchmark results are the current engine's ------------------------------------


def test_committed_cost_seed_claims_match_the_engine() -> None:
    from lightspeed.catalog import load_catalog, load_power
    from lightspeed.cost import compare_upgrade, cost_workload
    from lightspeed.workload import load_models

    committed = json.loads((REPO / "benchmarks" / "results" / "cost_seed_claims.json").read_text("utf-8"))
    catalog = load_catalog()
    upgrade = compare_upgrade(
        catalog=catalog,
        models=load_models(),
        old_system=catalog.system("dgx-h100"),
        old_gpus=100,
        new_system=catalog.system("dgx-b200"),
        workloads=[cost_workload(row["workload"]) for row in committed["upgrade_100_h100"]],
        power=load_power(),
    )
    for row, match in zip(committed["upgrade_100_h100"], upgrade.matches, strict=True):
        assert row["engine_new_gpus"] == match.new_gpus, row["workload"]
        assert row["engine_exact_gpus"] == pytest.approx(match.new_gpu_equivalent, abs=0.05), row["workload"]

"""``lightspeed cost``: the seed's claims end to end, JSON contracts, the tornado plot, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error

EXAMPLE_PRICES = str(Path(__file__).resolve().parents[2] / "examples" / "prices.toml")


def test_upgrade_json_and_tornado_plot(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plot = tmp_path / "tornado.png"
    result = run_cli(
        "cost", "upgrade", "--from", "100xh100-sxm", "--to", "b200", "--workload", "llama-3-70b-pretrain",
        "--prices", EXAMPLE_PRICES, "--plot", str(plot), "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    match = payload["upgrade"]["matches"][0]
    assert payload["upgrade"]["seed_claim"]["new_gpus"] == 50
    assert 40 <= match["new_gpus"] <= 62
    assert match["power_before"]["gpus_tdp_w"] == pytest.approx(70e3)
    assert match["payback"]["inputs"]["old_cloud_usd_per_gpu_hour"] == 2.0  # the inputs are stated
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert payload["plots"] == [str(plot)]


def test_upgrade_table_says_where_the_seed_holds(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("cost", "upgrade", "--from", "100xh100-sxm", "--to", "b200", "--prices", EXAMPLE_PRICES)
    assert result.code == 0, result.err
    assert "seed claim 17" in result.out
    assert "the seed's ~2x holds" in result.out
    assert "inputs: electricity_usd_per_kwh=0.1" in result.out


def test_nvfp4_serving_goes_beyond_the_seeds_2x_per_gpu(run_cli) -> None:  # type: ignore[no-untyped-def]
    # B200 against H100 serves Llama 3 70B chat at more than the seed's 2x per GPU in FP8, and more
    # again in NVFP4, though under 2x FP8's (half the weight bytes, the same KV cache); whole 8-GPU
    # systems round the replacement up, and the verdict is judged on those systems.
    result = run_cli(
        "cost", "upgrade", "--from", "100xh100-sxm", "--to", "b200", "--prices", EXAMPLE_PRICES, "--json"
    )  # fmt: skip
    assert result.code == 0, result.err
    matches = {match["workload"]: match for match in json.loads(result.out)["upgrade"]["matches"]}
    narrowest, fp8 = matches["llama-3-70b-chat-narrowest"], matches["llama-3-70b-chat"]
    assert narrowest["per_gpu_ratio"] > fp8["per_gpu_ratio"] > 2.0
    assert narrowest["per_gpu_ratio"] < 2.0 * fp8["per_gpu_ratio"]
    assert narrowest["new_gpus"] % 8 == 0
    assert narrowest["new_gpus"] < fp8["new_gpus"]
    # the seed's "2x+ per GPU, more with FP8/FP4": at most 62.5 new GPUs for 100 (2 / 1.25) holds,
    # and under 37.5 (2 / 0.75) is its "more", said as such, not as a miss
    assert narrowest["seed_holds"] is (narrowest["new_gpus"] <= 62.5)
    if narrowest["new_gpus"] < 37.5:
        assert "holds with room" in narrowest["verdict"]


def test_a_ratio_below_the_seeds_2x_does_not_hold_and_above_holds_with_room() -> None:
    from lightspeed.cost.upgrade import _verdict

    # 100 old GPUs: 70 new is a ratio of 1.43 (< 1.6: the claim misses); 32 new is 3.12 (> 2.67)
    assert "does not hold" in _verdict(100 / 70, 1.5, holds=False)
    assert "less than 1.6" in _verdict(100 / 70, 1.5, holds=False)
    assert "holds with room" in _verdict(100 / 32, 3.64, holds=True)
    assert "the seed's ~2x holds: 2.08" in _verdict(100 / 48, 2.2, holds=True)


def test_cluster_json_gives_the_nvl72_rack_and_site(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "cost", "cluster", "--system", "gb200-nvl72", "--racks", "8", "--site-kw", "1700", "--json"
    )
    assert result.code == 0, result.err
    plan = json.loads(result.out)["rack_plan"]
    assert 120e3 <= plan["rack_power_w"] <= 132e3
    assert plan["site_it_power_w"] == pytest.approx(8 * 128e3)
    assert plan["fits_site"] is True  # 1.024 MW of IT x PUE 1.56 = 1.597 MW


def test_cluster_pue_is_never_a_silent_1(run_cli) -> None:  # type: ignore[no-untyped-def]
    """Without the site's own PUE, the plan uses the Uptime Institute's 2024 industry average (1.56)
    and says so; it used to multiply by 1, as if cooling were free, and say nothing."""
    base = ("cost", "cluster", "--system", "gb200-nvl72", "--racks", "8")
    default = json.loads(run_cli(*base, "--json").out)["rack_plan"]
    assert default["pue"] == pytest.approx(1.56)
    assert default["site_facility_power_w"] == pytest.approx(8 * 128e3 * 1.56)
    assert "Uptime Institute" in default["pue_source"]
    table = run_cli(*base).out
    assert "x PUE 1.56" in table
    assert "Uptime Institute" in table
    assert "--pue" in table  # how to give the site's own
    given = json.loads(run_cli(*base, "--pue", "1.2", "--json").out)["rack_plan"]
    assert (given["pue"], given["pue_source"]) == (1.2, "--pue")
    assert given["site_facility_power_w"] == pytest.approx(8 * 128e3 * 1.2)
    priced = json.loads(run_cli(*base, "--prices", EXAMPLE_PRICES, "--json").out)["rack_plan"]
    assert priced["pue"] == 1.15  # the example's pue_liquid: the NVL72 is liquid-cooled
    assert "pue_liquid" in priced["pue_source"]
    one_line_error(run_cli(*base, "--pue", "0.9"), "--pue")


def test_cluster_money_names_its_currency(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = ("cost", "cluster", "--system", "gb200-nvl72", "--racks", "8", "--prices", EXAMPLE_PRICES)
    assert "USD" in run_cli(*args).out
    assert json.loads(run_cli(*args, "--json").out)["tco"]["currency"] == "USD"


def test_deepseek_scenario_json(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("cost", "train", "--scenario", "deepseek-v3", "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["published_total_usd"] == pytest.approx(5.576e6)
    assert payload["predicted_total_usd"] == pytest.approx(5.576e6, rel=0.15)


SITE_POWER = """
schema_version = 1
kind = "system-power"
system = "grand-teton-h100"
cooling = "air"
[sources.site]
title = "our own rack power audit"
url = ""
[node]
max_kw = 6.0
source = "site"
[draw]
training_share = 0.8
inference_share = 0.8
source = "site"
[rack]
nodes_per_rack = 4
liquid_heat_share = 0.0
source = "site"
"""


def test_a_power_file_given_with_catalog_prices_a_system_without_one(  # type: ignore[no-untyped-def]
    run_cli, tmp_path: Path
) -> None:
    # Meta publishes no power figure for Grand Teton: without a file the command says how to add one
    args = ("cost", "train", "--model", "llama-3.1-8b", "--system", "grand-teton-h100", "--gpus", "8")
    args += ("--global-batch", "16", "--seq", "8192", "--tokens", "1T", "--json")
    one_line_error(run_cli(*args), 'add a kind = "system-power" file for it with --catalog')
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "grand-teton-power.toml").write_text(SITE_POWER, encoding="utf-8")
    result = run_cli("--catalog", str(folder), *args)
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    # one host rated 6 kW, 80% drawn while training: 4.8 kW for the step the engine predicts, at the
    # facility x the default PUE every cost command uses without prices (1.56, Uptime Institute 2024)
    assert payload["power"]["it_power_w"] == pytest.approx(6000.0 * 0.8)
    assert payload["energy_per_step_j"] == pytest.approx(4800.0 * 1.56 * payload["step_s"])
    # the folder is still a catalog folder: the hardware and model loaders skip the power file
    assert run_cli("--catalog", str(folder), "hw", "show", "grand-teton-h100").code == 0
    assert run_cli("--catalog", str(folder), "model", "list").code == 0


def test_infer_and_fleet_tables(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "cost", "infer", "--model", "llama-3-70b", "--system", "dgx-h100", "--isl", "2048", "--osl", "512",
        "--max-tpot", "50ms", "--prices", EXAMPLE_PRICES,
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "cloud $ per million tokens" in result.out
    assert "cloud_usd_per_gpu_hour.h100-sxm=2" in result.out
    fleet = run_cli("cost", "fleet", "--workload", "llama-3-70b-chat", "--requests-per-s", "20", "--json")
    assert fleet.code == 0, fleet.err
    assert [option["system"] for option in json.loads(fleet.out)["options"]] == [
        "dgx-h100",
        "dgx-b200",
        "gb200-nvl72",
    ]


def _prices(tmp_path: Path, text: str) -> str:
    path = tmp_path / "prices.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_bad_inputs_are_one_line_errors(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    negative = _prices(tmp_path, 'kind = "prices"\nelectricity_usd_per_kwh = -0.1\n')
    one_line_error(run_cli("cost", "cluster", "--prices", negative), "electricity_usd_per_kwh")
    one_line_error(
        run_cli("cost", "train", "--scenario", "deepseek-v3", "--power-w", "nan"), "--power-w", "finite"
    )
    one_line_error(run_cli("cost", "upgrade", "--from", "h100-sxm", "--to", "b200"), "GPU count")
    one_line_error(run_cli("cost", "train", "--model", "llama-3-8b"), "--system", "--tokens")
    one_line_error(run_cli("cost", "cluster", "--site-kw", "-1"), "--site-kw")
    one_line_error(
        run_cli("cost", "upgrade", "--from", "100xh100-sxm", "--to", "b200", "--plot", "x.png"), "--prices"
    )
    one_line_error(run_cli("cost", "fleet", "--workload", "llama-3-70b-pretrain"), "--tokens-per-day")


def test_missing_price_key_is_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = _prices(
        tmp_path,
        'kind = "prices"\nelectricity_usd_per_kwh = 0.1\n[cloud_usd_per_gpu_hour]\nh100-sxm = 2.0\n',
    )
    result = run_cli(
        "cost", "upgrade", "--from", "100xh100-sxm", "--to", "b200", "--workload", "llama-3-70b-chat",
        "--prices", path,
    )  # fmt: skip
    one_line_error(result, "system_purchase_usd.dgx-b200")


def test_compare_systems_gains_cost_columns_with_prices(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = ["compare", "systems", "--workload", "infer", "--model", "llama-3-70b", "--max-tpot", "50ms"]
    result = run_cli(*args, "--systems", "dgx-h100", "mi300x-platform", "--prices", EXAMPLE_PRICES, "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    h100, mi300x = payload["costs"]
    rate = payload["systems"][0]["throughput_tokens_per_s"]
    assert h100["cloud_usd_per_million_tokens"] == pytest.approx(8 * 2.0 / (rate * 3600) * 1e6)
    assert h100["energy_per_token_j"] == pytest.approx(8.364e3 * 1.3 / rate)  # DGX H100 draw x PUE / tokens/s
    assert mi300x["facility_power_w"] is None
    assert "power data for mi300x-platform" in mi300x["note"]
    plain = run_cli(*args, "--systems", "dgx-h100", "--json")
    assert json.loads(plain.out)["costs"] is None


@pytest.mark.slow
def test_html_report_gains_a_cost_section_with_prices(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plan = run_cli(
        "plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "16",
        "--global-batch", "256", "--zero", "3", "--json",
    )  # fmt: skip
    assert plan.code == 0, plan.err
    step_s = json.loads(plan.out)["step_time_s"]
    estimate = tmp_path / "plan.json"
    estimate.write_text(plan.out, encoding="utf-8")
    page = tmp_path / "report.html"
    result = run_cli("report", "--from", str(estimate), "--prices", EXAMPLE_PRICES, "-o", str(page))
    assert result.code == 0, result.err
    html = page.read_text(encoding="utf-8")
    assert "Cost and energy of each predicted step" in html
    # 2 DGX H100 x 10.2 kW x 0.82 drawn x PUE 1.3; 16 GPUs x $2 per GPU-hour
    assert "21.7 kW" in html
    assert f"${16 * 2.0 * step_s / 3600:,.4g}" in html
    assert "cloud_usd_per_gpu_hour.h100-sxm=2" in html


def test_options_a_mode_would_ignore_are_refused(run_cli) -> None:  # type: ignore[no-untyped-def]
    one_line_error(
        run_cli("cost", "train", "--scenario", "deepseek-v3", "--model", "llama-3-8b"), "--model", "fixes"
    )
    one_line_error(
        run_cli("cost", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--global-batch", "64",
                "--tokens", "1e12", "--usd-per-gpu-hour", "2"),
        "--usd-per-gpu-hour: only with --scenario deepseek-v3",
    )  # fmt: skip
    # a price of 0 divided by zero in the seed's cost comparison
    one_line_error(
        run_cli("cost", "train", "--scenario", "deepseek-v3", "--usd-per-gpu-hour", "0"), "not above"
    )

"""``lightspeed cost`` and the seed's claims: the defects of the round-13 expert check (task C).

Golden values are hand calculations written out here: DGX H100 rated 10.2 kW (8 GPUs), DGX B200
14.3 kW (8 GPUs), 0.82 of the rating drawn while working; the example prices
(examples/prices.toml): $0.1/kWh, PUE 1.3 air / 1.15 liquid; the default PUE 1.56 (Uptime 2024).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.catalog import load_catalog, load_power
from lightspeed.cost import Prices, compare_upgrade, cost_workload, load_prices, parse_fleet
from lightspeed.cost.upgrade import _sensitivities, _Site
from lightspeed.errors import DataFileError, UnknownNameError, UserInputError
from lightspeed.report.html_cost import cost_section
from lightspeed.report.html_sections import PredictedStep
from lightspeed.tour.seed import memory_100t
from lightspeed.workload import load_models

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_PRICES = REPO / "examples" / "prices.toml"
CATALOG, MODELS, POWER = load_catalog(), load_models(), load_power()
NEW_GPUS_ROW = "new GPUs needed"
FACILITY_AFTER = "facility power after (kW)"


def _row(sensitivities, answer: str, name: str):  # type: ignore[no-untyped-def]
    rows = [row for row in sensitivities if row.answer == answer and row.input.startswith(name)]
    return rows[0] if rows else None


# -- 1: the sensitivity to the engine's throughput counts whole systems -------------------------------


def test_r13_c_throughput_sensitivity_buys_whole_dgx_b200() -> None:
    upgrade = compare_upgrade(
        catalog=CATALOG,
        models=MODELS,
        old_system=CATALOG.system("dgx-h100"),
        old_gpus=100,
        new_system=CATALOG.system("dgx-b200"),
        workloads=[cost_workload("llama-3-70b-chat")],
        power=POWER,
        prices=load_prices(EXAMPLE_PRICES),
    )
    match = upgrade.matches[0]
    exact = match.new_gpu_equivalent  # 35.6 B200 do the work of 100 H100 (bought as 5 DGX B200)
    assert (math.ceil(exact / 1.15 / 8), math.ceil(exact / 0.85 / 8)) == (4, 6)  # 31.0 -> 4, 41.9 -> 6
    row = _row(match.sensitivities, FACILITY_AFTER, NEW_GPUS_ROW)
    assert row is not None
    assert (row.low_input, row.high_input) == (32.0, 48.0)
    # whole DGX B200 at 14.3 kW x 0.82 x PUE 1.3: 4 -> 60.9752 kW, 5 -> 76.219 kW, 6 -> 91.4628 kW
    assert row.low_answer == pytest.approx(4 * 14.3 * 0.82 * 1.3)
    assert row.base_answer == pytest.approx(5 * 14.3 * 0.82 * 1.3)
    assert row.high_answer == pytest.approx(6 * 14.3 * 0.82 * 1.3)


def test_r13_c_throughput_sensitivity_moves_nothing_inside_one_rack() -> None:
    # 42.0 exact GPUs of one 72-GPU rack: / 1.15 = 36.5 and / 0.85 = 49.4 both fit that one rack
    rack_w = 128e3 * 0.82
    site = _Site(
        old_gpus=100,
        old_gpu_hour_usd=2.0,
        old_it_w=13 * 10.2e3 * 0.82,
        old_pue=1.3,
        old_capex_usd=None,
        new_capex_usd=3e6,
        new_it_w=rack_w,
        new_pue=1.15,
        electricity_usd_per_kwh=0.1,
        utilisation=1.0,
        other_share=0.05,
        new_systems=1,
        new_gpus_per_system=72,
        new_gpu_equivalent=42.0,
    )
    rows = _sensitivities(site)
    assert _row(rows, FACILITY_AFTER, NEW_GPUS_ROW) is None  # no swing: not among the inputs that move it
    assert _row(rows, "payback vs renting (years)", NEW_GPUS_ROW) is None
    assert all(
        row.base_answer == pytest.approx(rack_w * 1.15 / 1e3) for row in rows if row.answer == FACILITY_AFTER
    )


# -- 2: a count of a system name is systems, of an accelerator name GPUs ----------------------------------


def test_r13_c_count_of_a_system_is_systems() -> None:
    assert parse_fleet(CATALOG, "100xh100-sxm") == (CATALOG.system("dgx-h100"), 100)
    assert parse_fleet(CATALOG, "100xdgx-h100") == (CATALOG.system("dgx-h100"), 800)  # 100 x 8
    assert parse_fleet(CATALOG, "2xgb200-nvl72") == (CATALOG.system("gb200-nvl72"), 144)  # 2 x 72
    assert parse_fleet(CATALOG, "dgx-b200") == (CATALOG.system("dgx-b200"), None)
    assert parse_fleet(CATALOG, "a100") == (CATALOG.system("dgx-a100"), None)  # an alias stays a name


def test_r13_c_upgrade_says_what_the_count_counts(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = ("cost", "upgrade", "--to", "b200", "--workload", "llama-3-70b-chat")
    systems = run_cli(*args, "--from", "13xdgx-h100", "--json")
    assert systems.code == 0, systems.err
    upgrade = json.loads(systems.out)["upgrade"]
    assert upgrade["old_gpus"] == 104  # 13 x 8
    assert upgrade["old_fleet"] == "13 dgx-h100 systems (104 GPUs)"
    text = run_cli(*args, "--from", "100xh100-sxm")
    assert "100 GPUs of dgx-h100 (h100-sxm) -> dgx-b200" in text.out


# -- 4: a count that is not a whole number is named as such ---------------------------------------------


@pytest.mark.parametrize(
    "text", ["1.5xh100-sxm", "-1xh100-sxm", "nanxh100-sxm", "1e400xh100-sxm", "0xh100-sxm"]
)
def test_r13_c_a_count_must_be_whole(text: str) -> None:
    with pytest.raises(UserInputError) as info:
        parse_fleet(CATALOG, text)
    assert not isinstance(info.value, UnknownNameError)
    assert "must be a whole number of GPUs from 1 to 10,000,000" in str(info.value)


def test_r13_c_a_system_count_is_bounded_by_its_gpus(run_cli) -> None:  # type: ignore[no-untyped-def]
    # at most 10,000,000 GPUs: 1,250,000 DGX H100 of 8
    with pytest.raises(UserInputError, match="from 1 to 1,250,000"):
        parse_fleet(CATALOG, "1250001xdgx-h100")
    assert parse_fleet(CATALOG, "1250000xdgx-h100")[1] == 10_000_000
    one_line_error(run_cli("cost", "upgrade", "--from", "1.5xh100-sxm", "--to", "b200"), "whole number")
    with pytest.raises(UnknownNameError):  # an unknown name stays an unknown name
        parse_fleet(CATALOG, "1.5xh1000")


# -- 5: free electricity, in a file as in the library -------------------------------------------------


def test_r13_c_free_electricity_in_a_file_and_the_library(tmp_path: Path) -> None:
    free = tmp_path / "free.toml"
    free.write_text('kind = "prices"\nelectricity_usd_per_kwh = 0\n', encoding="utf-8")
    assert load_prices(free).electricity_usd_per_kwh == 0.0
    assert Prices(electricity_usd_per_kwh=0.0).electricity_usd_per_kwh == 0.0
    huge = tmp_path / "huge.toml"
    huge.write_text('kind = "prices"\nelectricity_usd_per_kwh = 1e300\n', encoding="utf-8")
    with pytest.raises(DataFileError) as in_file:  # one line naming the file
        load_prices(huge)
    with pytest.raises(UserInputError) as in_library:
        Prices(electricity_usd_per_kwh=1e300)
    for error in (in_file, in_library):  # the same range and fix in both
        assert "outside [0, 100]" in str(error.value)
        assert "give 0 (free, e.g. on-site power)" in str(error.value)


# -- 6 and 7: no prices, and idle hours, said where they apply ----------------------------------------

TRAIN = (
    *("cost", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "8"),
    *("--global-batch", "64", "--tokens", "1e9"),
)


def test_r13_c_money_without_prices_says_why(run_cli) -> None:  # type: ignore[no-untyped-def]
    payload = json.loads(run_cli(*TRAIN, "--json").out)
    assert payload["cloud_usd"] is None
    assert any("need --prices FILE" in note for note in payload["notes"])
    assert "note: electricity, cloud cost and owned cost need --prices FILE" in " ".join(
        run_cli(*TRAIN).out.split()
    )
    upgrade = compare_upgrade(
        catalog=CATALOG,
        models=MODELS,
        old_system=CATALOG.system("dgx-h100"),
        old_gpus=100,
        new_system=CATALOG.system("dgx-b200"),
        workloads=[cost_workload("llama-3-70b-chat")],
        power=POWER,
    )
    assert upgrade.matches[0].payback is None
    assert any("need --prices FILE" in note for note in upgrade.notes)


def test_r13_c_idle_hours_change_the_owned_cost_not_the_energy(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    def priced(utilisation: float) -> dict[str, object]:
        path = tmp_path / f"u{utilisation}.toml"
        path.write_text(
            f'kind = "prices"\nelectricity_usd_per_kwh = 0.1\nutilisation = {utilisation}\n'
            "[system_purchase_usd]\ndgx-h100 = 250000\n",
            encoding="utf-8",
        )
        result = run_cli(*TRAIN, "--prices", str(path), "--json")
        assert result.code == 0, result.err
        return json.loads(result.out)  # type: ignore[no-any-return]

    half, full = priced(0.5), priced(1.0)
    # the run's energy and electricity are those of its working time: the same at either utilisation
    assert half["energy_j"] == pytest.approx(full["energy_j"])
    assert half["electricity_usd"] == pytest.approx(full["electricity_usd"])
    # the owned cost per hour worked: capex / 4 years spread over half the hours, so more than at 1
    assert half["owned_usd"] > full["owned_usd"]  # type: ignore[operator]
    lines = [line for line in half["assumptions"] if "utilisation 0.5" in line]  # type: ignore[union-attr]
    assert len(lines) == 1
    assert lines[0].startswith("owned cost (TCO share): utilisation 0.5 leaves 50% of the year idle")
    assert "energy and electricity are a lower bound" not in lines[0]
    assert "the run's energy and electricity do not depend on the utilisation" in lines[0]


# -- 8: a workload that does not fit is left out, not the comparison ------------------------------------


def test_r13_c_workloads_that_do_not_fit_are_left_out(run_cli) -> None:  # type: ignore[no-untyped-def]
    upgrade = compare_upgrade(
        catalog=CATALOG,
        models=MODELS,
        old_system=CATALOG.system("dgx-h100"),
        old_gpus=4,
        new_system=CATALOG.system("dgx-b200"),
        workloads=[cost_workload(name) for name in ("llama-3-70b-pretrain", "llama-3-70b-chat")],
        power=POWER,
    )
    assert [match.workload for match in upgrade.matches] == ["llama-3-70b-chat"]
    assert [item.workload for item in upgrade.left_out] == ["llama-3-70b-pretrain"]
    assert "does not fit 4 GPUs" in upgrade.left_out[0].reason
    assert any("left out" in note and "--workload" in note for note in upgrade.notes)
    # only when no workload runs is the comparison refused, in the one reason
    one_line_error(
        run_cli(
            "cost", "upgrade", "--from", "4xh100-sxm", "--to", "b200", "--workload", "llama-3-70b-pretrain"
        ),
        "does not fit 4 GPUs",
    )


# -- 3: the report's cost section says what the cost commands say ----------------------------------------


def test_r13_c_report_cost_section_names_pue_missing_prices_and_bound(tmp_path: Path) -> None:
    lacking = tmp_path / "lacking.toml"  # the example prices without pue_* and h100-sxm
    lacking.write_text(
        'kind = "prices"\nelectricity_usd_per_kwh = 0.1\n[cloud_usd_per_gpu_hour]\nb200 = 3.5\n',
        encoding="utf-8",
    )
    step = PredictedStep(
        model="llama-3-8b",
        system="8 x dgx-h100 over ib-ndr",
        num_gpus=64,
        step_time_s=3.0,
        breakdown_s={},
        mfu=None,
        bound=None,
        bound_part=None,
        fits=True,
    )
    section = cost_section([step], catalog=CATALOG, power=POWER, prices=load_prices(lacking))
    # 8 DGX H100 x 10.2 kW x 0.82 x the default PUE 1.56 = 104.4 kW
    assert section.tables[0].rows[0][2] == f"{8 * 10.2 * 0.82 * 1.56:,.1f} kW"
    text = " ".join(section.paragraphs)
    assert "PUE 1.56 (dgx-h100): Uptime Institute" in text
    assert "cloud cost not shown" in text
    assert "cloud_usd_per_gpu_hour.h100-sxm" in text
    assert "upper bound" in text
    assert "peak" in text


# -- 9, 10 and claim 6: the seed's claims, said right ---------------------------------------------------


def test_r13_c_tour_b200_line_is_at_the_seeds_180_gb_and_names_the_unit_mix() -> None:
    line = next(line for line in memory_100t(CATALOG, MODELS).lines if "on b200-sxm" in line)
    # 200,041,174,925,312 B / 180e9 B = 1,111.3 -> 1,112 GPUs -> 139 nodes of 8 (+11% on ~1,000)
    assert "1,112 GPUs, 139 nodes of 8 at the 180 GB listed" in line
    assert "~1,000 GPUs: agrees (+11%)" in line
    # the seed's ~1,000: 200,041,174,925,312 / 2^40 = 181.94 TiB, / 0.180 = 1,010.8
    assert "181.9 TiB / 180 GB = 1,011, TiB divided by GB" in line
    assert "1,041 GPUs, 131 nodes of 8 at the 192.3 GB the driver reports" in line


def test_r13_c_seed_doc_rows() -> None:
    rows = {
        line.split("|")[1].strip(): line
        for line in (REPO / "docs" / "seed.md").read_text("utf-8").splitlines()
        if line.startswith("| ") and line.split("|")[1].strip().isdigit()
    }
    assert "1,112 B200 on 139 nodes" in rows["4"]
    assert "TiB divided by GB" in rows["4"]
    assert "108 PF for 8 GPUs, 13.5 PF" in rows["18"]
    assert "1.50x" in rows["18"]
    assert "tests/goodput/test_goodput_ledger.py" in rows["6"]
    assert (REPO / "tests" / "goodput" / "test_goodput_ledger.py").is_file()

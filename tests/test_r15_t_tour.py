"""Round-15 fixes of the tour and the reports (helper T): ``tour --sol-device``, the results store
checked before any step, ETTR as a percent, a step's parts in step order wherever they come from,
GPU-hours stored as GPU-hours, and the seed page and tour page matching what the commands print."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lightspeed.catalog import load_catalog
from lightspeed.errors import UnsupportedError
from lightspeed.report.html_sections import PredictedStep, step_section
from lightspeed.tour import steps as tour
from lightspeed.tour.seed import SCENARIOS, deepseek_v3_on_h800
from lightspeed.workload import load_models

REPO = Path(__file__).resolve().parents[1]
CPU_RECORD = "xeon-platinum-8480c"  # a CPU record of the shipped catalog ('lightspeed hw list')


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The state each step saw (one stand-in step: the real ones are not the point here)."""
    seen: list[Any] = []

    def probe(state: object) -> list[str]:
        seen.append(state)
        return []

    monkeypatch.setattr(tour, "STEPS", (("probe", "Probe", probe),))
    return seen


# -- 1: --sol-device, passed to the bench step and checked before any step -------------------------


def test_sol_device_names_a_cpu_record_for_the_bench_step(run_cli, tmp_path: Path, ran: list[Any]) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("tour", "--quick", "--sol-device", CPU_RECORD, "--out", str(tmp_path / "t"), "--json")
    assert result.code == 0, result.err
    assert [state.sol_device for state in ran] == [CPU_RECORD]


def test_the_bench_step_measures_against_the_named_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str | None] = []

    def sol(**kwargs: Any) -> None:
        asked.append(kwargs["sol_device"])
        raise UnsupportedError("stop here: the benchmarks are not the point")

    monkeypatch.setattr(tour, "resolve_device", lambda name: tour._CPU_FOR_CHECKS)
    monkeypatch.setattr(tour, "device_sol", sol)
    state = tour.TourState(out_dir=tmp_path, quick=True, catalog=None, models=None, sol_device=CPU_RECORD)  # type: ignore[arg-type]
    step = tour.run_step("bench", "Quick benchmarks", tour.step_bench, state)
    assert step.status == "skipped"
    assert asked == [CPU_RECORD]


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("h100-sxm", "--sol-device h100-sxm is an accelerator record (h100-sxm) but the tour benchmarks"),
        ("no-such-cpu", "unknown --sol-device record 'no-such-cpu'"),
    ],
)
def test_a_sol_device_the_tour_cannot_use_is_refused_first(  # type: ignore[no-untyped-def]
    run_cli, tmp_path: Path, ran: list[Any], name: str, said: str
) -> None:
    out = tmp_path / "t"
    result = run_cli("tour", "--quick", "--sol-device", name, "--out", str(out))
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert said in result.err
    assert "No such option" not in result.err
    assert ran == []
    assert not out.exists()  # refused before --out is created


# -- 2: the results store is checked before any step, creating nothing ------------------------------


def test_a_home_that_is_a_file_is_refused_before_any_step(  # type: ignore[no-untyped-def]
    run_cli, tmp_path: Path, ran: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.write_text("")
    monkeypatch.delenv("LIGHTSPEED_STORE", raising=False)
    monkeypatch.setenv("LIGHTSPEED_HOME", str(home))
    out = tmp_path / "t"
    result = run_cli("tour", "--quick", "--out", str(out), "--json")
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert f"LIGHTSPEED_HOME {home} is a file, not a folder" in result.err
    assert result.out == ""
    assert ran == []
    assert not out.exists()


def test_a_store_not_made_yet_is_fine_and_the_check_creates_nothing(  # type: ignore[no-untyped-def]
    run_cli, tmp_path: Path, ran: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "fresh-home"
    monkeypatch.delenv("LIGHTSPEED_STORE", raising=False)
    monkeypatch.setenv("LIGHTSPEED_HOME", str(home))
    result = run_cli("tour", "--quick", "--out", str(tmp_path / "t"), "--json")
    assert result.code == 0, result.err
    assert len(ran) == 1
    assert not (home / "results.sqlite").exists()  # the stand-in step stored nothing; the check made none


# -- 5: ETTR as a percent, parts in step order, GPU-hours in GPU-hours -------------------------------


def test_the_train_line_prints_ettr_as_a_percent() -> None:
    ledger = SimpleNamespace(
        steps=SimpleNamespace(count=24), total_s=8.67, num_restarts=1, goodput_fraction=0.018, ettr=0.0234
    )
    # 0.0234 x 100 = 2.34 -> 2.3%, as 'goodput report' prints it (not "ETTR 0.023")
    assert tour.ledger_line(ledger) == (  # type: ignore[arg-type]
        "24 steps in 8.67 s, 1 restart(s): goodput 1.8%, ETTR 2.3%"
    )


def test_a_step_breakdown_read_in_sorted_key_order_is_shown_in_step_order() -> None:
    # The results store keeps a payload's keys sorted: this is the order a stored prediction comes back in.
    stored = {
        "bubble": 1.0, "compute": 4.0, "dp_comm": 0.5, "memory_bound": 2.0, "optimizer": 0.25, "tp_comm": 1.5,
    }  # fmt: skip
    step = PredictedStep(
        model="m", system="s", num_gpus=8, step_time_s=sum(stored.values()), breakdown_s=stored,
        mfu=None, bound=None, bound_part=None, fits=None,
    )  # fmt: skip
    (table,) = step_section([step]).tables
    # a step's order (the engine's): compute, memory-bound kernels, TP, ..., the bubble, DP, optimizer
    assert [row[0] for row in table.rows] == [
        "compute",
        "memory-bound",
        "TP comm",
        "pipeline bubble",
        "DP comm",
        "optimizer",
    ]
    # 4 s of the 9.25 s step
    assert table.rows[0][2] == f"{4.0 / 9.25:.1%}"


def test_the_deepseek_gpu_hours_are_stored_as_gpu_hours() -> None:
    scenario = deepseek_v3_on_h800(load_catalog(), load_models())
    (hours,) = [record for record in scenario.records if record.metric == "gpu_hours"]
    # GPU-hours, as the published rows write them: not "h", which reads as hours of wall time
    assert hours.unit == "GPU-hours"
    assert 2.0e6 < hours.value < 3.0e6  # DeepSeek's 2.664M H800 GPU-hours, within the engine's error


# -- 3 and 4: the seed page and the tour page say what the commands print ----------------------------


def _seed_rows() -> dict[str, str]:
    return {
        line.split("|")[1].strip(): line
        for line in (REPO / "docs" / "seed.md").read_text("utf-8").splitlines()
        if line.startswith("| ") and line.split("|")[1].strip().isdigit()
    }


def test_claim_18_checks_the_inference_throughput(run_cli) -> None:  # type: ignore[no-untyped-def]
    row = _seed_rows()["18"]
    assert "45-50% more inference throughput" in row
    result = run_cli(
        "compare", "systems", "--workload", "infer", "--model", "llama-3.1-70b", "--systems", "dgx-b200",
        "dgx-b300", "--precision", "nvfp4", "--isl", "1000", "--osl", "1000", "--max-tpot", "50ms", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    text = result.out
    per_gpu = [float(value) for value in re.findall(r'"throughput_tokens_per_s_per_gpu": ([0-9.e+]+)', text)]
    assert len(per_gpu) == 2, text[:500]
    b200, b300 = per_gpu
    assert f"{b300:,.0f} tokens/s per GPU against {b200:,.0f}" in row
    assert f"{b300 / b200:.2f}x" in row
    assert b300 / b200 < 1.45  # below the seed's 45-50%: the row says it does not hold
    assert "does not hold" in row


def test_the_seed_and_tour_pages_print_what_the_tour_predicts() -> None:
    catalog, models = load_catalog(), load_models()
    lines = [line for _, function in SCENARIOS for line in function(catalog, models).lines]
    page = (REPO / "docs" / "tour.md").read_text("utf-8")
    block = page[page.index("## Output") : page.index("## `--json` contract")]
    missing = [line for line in lines if line.strip() not in block]
    assert missing == []
    assert "ETTR 0." not in block  # a percent, as the tour prints it now
    (gb200,) = [line for line in lines if line.startswith("1 x gb200-nvl72 over ib-ndr nvfp4")]
    ttft = re.search(r"TTFT ([0-9.]+ s)", gb200)
    assert ttft is not None
    assert f"GB200's TTFT at 32K input is {ttft.group(1)}" in _seed_rows()["10"]

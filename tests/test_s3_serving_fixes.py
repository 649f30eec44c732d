"""Issue 27, serving fixes S3: acceptance per draft position through the CLI and plan files, the
KV-transfer link named, JSON of a one-token output, the simulate report's served-rate wording and
the goodput of a run that falls behind (each golden value worked out by hand below)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from lightspeed.cli._infer import _options_of
from lightspeed.errors import UserInputError
from lightspeed.sol import ServingConfig, ServingSearchConfig
from lightspeed.sol.serve.run_metrics import LatencyStats, ServiceLevel, offered_rate, slo_result

SMALL = ("--model", "llama-3-8b", "--gpu", "h100-sxm", "--isl", "1000", "--osl", "200")

# --- 1: --acceptance one rate or one per draft position ---------------------------------------------


def test_s3_tokens_per_step_of_rates_per_position() -> None:
    """1 + 0.8 + 0.8 x 0.6 + 0.8 x 0.6 x 0.4 = 1 + 0.8 + 0.48 + 0.192 = 2.472."""
    config = ServingConfig(model="llama-3-8b", system="h100-sxm", draft_tokens=3, acceptance=(0.8, 0.6, 0.4))
    decoding = config.speculative_decoding()
    assert decoding is not None
    assert decoding.position_rates == (0.8, 0.6, 0.4)
    assert decoding.tokens_per_iteration == pytest.approx(2.472)


def test_s3_a_single_rate_still_reads_as_a_number() -> None:
    config = ServingConfig(model="llama-3-8b", system="h100-sxm", draft_tokens=3, acceptance=0.8)  # type: ignore[arg-type]
    assert config.acceptance == (0.8,)
    assert config.to_dict()["acceptance"] == 0.8  # plan files and JSON keep the number
    decoding = config.speculative_decoding()
    assert decoding is not None
    assert decoding.tokens_per_iteration == pytest.approx(1 + 0.8 + 0.64 + 0.512)


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"draft_tokens": 3, "acceptance": (0.8, 0.6)}, "--acceptance gives 2 rates and --draft-tokens is 3"),
        ({"draft_tokens": 2, "acceptance": (0.8, 1.0)}, "acceptance[1] must be a finite number >= 0 and < 1"),
        ({"draft_tokens": 2, "acceptance": (math.nan, 0.5)}, "acceptance[0] must be a finite number"),
    ],
)
def test_s3_bad_rates_per_position_are_refused(changes: dict[str, object], words: str) -> None:
    with pytest.raises(UserInputError, match=words.replace("[", r"\[").replace("]", r"\]")):
        ServingConfig(model="llama-3-8b", system="h100-sxm", **changes)  # type: ignore[arg-type]


def test_s3_a_depth_search_takes_one_rate() -> None:
    with pytest.raises(UserInputError, match="one --acceptance rate, not one per draft position"):
        ServingSearchConfig(
            model="llama-3-8b", system="dgx-h100", search_draft_tokens=3, acceptance=(0.8, 0.6, 0.4)
        )


def _infer_json(run_cli, *args: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    result = run_cli("plan", "infer", *args, "--json")
    assert result.code == 0, result.err
    payload: dict[str, object] = json.loads(result.out)
    return payload


def test_s3_plan_infer_takes_rates_per_position(run_cli) -> None:  # type: ignore[no-untyped-def]
    """The list's TPOT lies between uniform 0.4's (fewest tokens a pass) and uniform 0.8's."""
    tpot = {}
    for rates in ("0.4", "0.8,0.6,0.4", "0.8"):
        payload = _infer_json(run_cli, *SMALL, "--draft-tokens", "3", "--acceptance", rates)
        tpot[rates] = payload["tpot_s"]
        if rates == "0.8,0.6,0.4":
            speculative = payload["plan"]["speculative"]  # type: ignore[index]
            assert speculative["acceptance_rates"] == [0.8, 0.6, 0.4]
            assert speculative["acceptance_rate"] == 0.8
            assert payload["config"]["acceptance"] == [0.8, 0.6, 0.4]  # type: ignore[index]
            assert any("0.8, 0.6, 0.4 by position" in line for line in payload["assumptions"])  # type: ignore[attr-defined]
    assert tpot["0.8"] < tpot["0.8,0.6,0.4"] < tpot["0.4"]


def test_s3_simulate_takes_rates_per_position(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "simulate", *SMALL, "--arrival-rate", "2", "--requests", "200", "--draft-tokens", "3",
        "--acceptance", "0.8,0.6,0.4", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert json.loads(result.out)["plan"]["speculative"]["acceptance_rates"] == [0.8, 0.6, 0.4]


def test_s3_plan_files_save_the_list_and_load_an_old_number(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    saved = tmp_path / "plan.toml"
    result = run_cli(
        "plan",
        "infer",
        *SMALL,
        "--draft-tokens",
        "3",
        "--acceptance",
        "0.8,0.6,0.4",
        "--save-config",
        str(saved),
    )
    assert result.code == 0, result.err
    assert "acceptance = [0.8, 0.6, 0.4]" in saved.read_text()
    again = _infer_json(run_cli, "--config", str(saved))
    assert again["plan"]["speculative"]["acceptance_rates"] == [0.8, 0.6, 0.4]  # type: ignore[index]
    old = tmp_path / "old.toml"  # a plan file written before the list: one number
    old.write_text(saved.read_text().replace("acceptance = [0.8, 0.6, 0.4]", "acceptance = 0.6"))
    loaded = _infer_json(run_cli, "--config", str(old))
    assert loaded["plan"]["speculative"]["acceptance_rates"] == [0.6, 0.6, 0.6]  # type: ignore[index]
    assert loaded["config"]["acceptance"] == 0.6  # type: ignore[index]
    assert ServingConfig.from_file(old).acceptance == (0.6,)


def test_s3_a_plan_file_with_a_bad_rate_names_its_position(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'schema_version = 1\nkind = "serving-plan"\nmodel = "llama-3-8b"\nsystem = "h100-sxm"\n'
        "draft_tokens = 3\nacceptance = [0.8, 1.0, 0.4]\n"
    )
    result = run_cli("plan", "infer", "--config", str(bad))
    assert result.code == 2
    assert "draft position 2" in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_s3_the_simulate_command_gives_the_list_with_commas() -> None:
    config = ServingConfig(
        model="llama-3-8b",
        system="h100-sxm",
        draft_tokens=3,
        acceptance=(0.8, 0.6, 0.4),
        disaggregated=(1, 2),
    )
    words = _options_of(config)
    assert words[words.index("--acceptance") + 1] == "0.8,0.6,0.4"
    assert words[words.index("--disaggregated") + 1] == "1:2"


# --- 2: the KV-transfer link --------------------------------------------------------------------------

# Llama 3 70B: 80 layers x 8 KV heads x 128 head dims x (K and V) x 1 byte (FP8) = 163,840 bytes a
# token; a 4,096-token prompt over the 8 GPUs of its TP group: 83,886,080 bytes each.
KV_BYTES_PER_GPU = 80 * 8 * 128 * 2 * 1 * 4096 / 8
EFFICIENCY = 0.80  # collective_bandwidth_efficiency, sol/data/efficiency.toml (nccl-tests busbw)


@pytest.mark.parametrize(
    ("system", "tp", "link", "bytes_per_s"),
    [
        # two DGX H100: prefill and decode replicas on different nodes, over one 400 Gb/s NIC a GPU
        ("2xdgx-h100", "8", "InfiniBand NDR", 400e9 / 8),
        # one DGX H100 at TP 4: both replicas inside the node, over NVLink 4's 450 GB/s one way
        ("dgx-h100", "4", "NVLink 4", 450e9),
    ],
)
def test_s3_kv_transfer_names_its_link(run_cli, system: str, tp: str, link: str, bytes_per_s: float) -> None:  # type: ignore[no-untyped-def]
    args = ("--model", "llama-3-70b", "--system", system, "--precision", "fp8", "--tp", tp)
    args += ("--disaggregated", "1:1", "--isl", "4096", "--osl", "256")
    payload = _infer_json(run_cli, *args)
    assert link in str(payload["kv_transfer_link"])
    assert payload["kv_transfer_link_bytes_per_s"] == pytest.approx(bytes_per_s)
    per_gpu = KV_BYTES_PER_GPU * 8 / int(tp)
    expected = per_gpu / (bytes_per_s * EFFICIENCY)  # + a link latency and NCCL's base: microseconds
    assert payload["kv_transfer_s"] == pytest.approx(expected, abs=20e-6)
    text = run_cli("plan", "infer", *args)
    assert text.code == 0
    row = next(line for line in text.out.splitlines() if "KV transfer per request" in line)
    assert link in row
    assert "per GPU" in row


# --- 3: JSON of one output token --------------------------------------------------------------------


def test_s3_one_output_token_has_no_tpot_in_json(run_cli) -> None:  # type: ignore[no-untyped-def]
    payload = _infer_json(
        run_cli, "--model", "gemma-3-27b", "--gpu", "h100-sxm", "--isl", "32768", "--osl", "1"
    )
    assert payload["tpot_s"] is None
    assert payload["output_tokens_per_s_per_user"] is None
    intervals = payload["intervals"]
    assert intervals["tpot_s"] is None
    assert intervals["output_tokens_per_s_per_user"] is None
    assert isinstance(payload["ttft_s"], float)
    assert payload["ttft_s"] > 0


# --- 4: the served rate's words -----------------------------------------------------------------------

FP8 = ("--model", "llama-3-8b", "--gpu", "h100-sxm", "--precision", "fp8", "--isl", "1000", "--osl", "500")


def _requests_row(run_cli, *args: str) -> str:  # type: ignore[no-untyped-def]
    result = run_cli("simulate", *FP8, *args)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    start = next(index for index, line in enumerate(lines) if "requests/s" in line)
    return " ".join(line.strip("│ ") for line in lines[start : start + 3])


def test_s3_a_closed_loop_is_served_while_its_users_are_busy(run_cli) -> None:  # type: ignore[no-untyped-def]
    row = _requests_row(run_cli, "--concurrency", "64", "--requests", "1000")
    assert "to the last completion" in row
    assert "while all 64 users were busy" in row
    assert "the drain after the last left out" not in row


def test_s3_a_horizon_run_counts_to_the_horizon(run_cli) -> None:  # type: ignore[no-untyped-def]
    row = _requests_row(run_cli, "--arrival-rate", "40", "--requests", "5000", "--horizon", "60s")
    assert "over 60 s to the horizon" in row
    assert "to the last completion" not in row
    assert "the higher of every completion from the first arriv" in row


# --- 5: goodput of a run that falls behind ---------------------------------------------------------


def _scored(served: float, offered: float | None) -> float:
    """Ten requests: four good (finished within 1 s TTFT and 50 ms TPOT), two finished too slowly,
    four still in flight when the run stopped. Attainment 4 / 10 = 0.4."""
    ttft = np.array([0.5, 0.5, 0.5, 0.5, 2.0, 2.0, 3.0, 3.0, np.nan, np.nan])
    tpot = np.array([0.02, 0.02, 0.02, 0.02, 0.02, 0.02, np.nan, np.nan, np.nan, np.nan])
    finished = np.array([True] * 6 + [False] * 4)
    result = slo_result(
        ServiceLevel(ttft_s=1.0, tpot_s=0.05),
        ttft_s=ttft,
        tpot_s=tpot,
        ttft=LatencyStats.of(ttft),
        tpot=LatencyStats.of(tpot),
        requests_per_s=served,
        num_gpus=2,
        finished=finished,
        offered_requests_per_s=offered,
    )
    assert result.attainment == pytest.approx(0.4)
    assert result.goodput_requests_per_s_per_gpu == pytest.approx(result.goodput_requests_per_s / 2)
    return result.goodput_requests_per_s


def test_s3_goodput_counts_each_miss_once() -> None:
    # offered 10 req/s, served 6: 0.4 x 10 = 4 good requests a second, within the 6 served
    assert _scored(served=6.0, offered=10.0) == pytest.approx(4.0)
    # served only 3 a second: no more than that can be good
    assert _scored(served=3.0, offered=10.0) == pytest.approx(3.0)
    # kept up (served = offered = 10): 0.4 x 10, as before
    assert _scored(served=10.0, offered=10.0) == pytest.approx(4.0)
    # no offered rate (a closed loop): the share of what was served, 0.4 x 6
    assert _scored(served=6.0, offered=None) == pytest.approx(2.4)


def test_s3_offered_rate_is_arrivals_over_their_span() -> None:
    # five arrivals over 0..2 s: four gaps in 2 s, 2 req/s; the NaN (never arrived) left out
    assert offered_rate(np.array([0.0, 0.5, 1.0, 1.5, 2.0, np.nan])) == pytest.approx(2.0)
    assert math.isnan(offered_rate(np.array([1.0])))
    assert math.isnan(offered_rate(np.array([1.0, 1.0])))

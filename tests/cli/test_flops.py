"""``lightspeed flops``: the seed's 1.74e28, the claim check, MoE active vs total, bad input."""

from __future__ import annotations

import json

import pytest

from expect import one_line_error


def test_seed_100t_shows_6nd_with_numbers_and_the_claim(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("flops", "--model", "dense-100t", "--tokens", "29e12", "--claim", "1.2e29")
    assert result.code == 0
    assert "C = 6·N·D" in result.out
    assert "6 × 1.000e14 × 2.900e13 = 1.740e28 FLOP" in result.out
    assert "does not follow" in result.out
    assert "41.4 FLOP per parameter per token" in result.out


def test_json_has_total_formula_and_claim(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("flops", "--model", "dense-100t", "--tokens", "29T", "--claim", "1.2e29", "--json")
    payload = json.loads(result.out)
    assert payload["total_flop"] == pytest.approx(1.74e28, rel=0.001)
    assert payload["formula"] == "C = 6·N·D"
    assert payload["per_token"]["convention"] == "6N"
    assert payload["claim"]["agrees"] is False
    assert payload["claim"]["implied_flop_per_param_token"] == pytest.approx(41.4, abs=0.05)


def test_moe_shows_active_and_total(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("flops", "--model", "deepseek-v3", "--tokens", "14.8e12")
    assert result.code == 0
    assert "FLOPs follow the 37.55 B active parameters, not the 671 B total" in result.out
    payload = json.loads(run_cli("flops", "--model", "deepseek-v3", "--tokens", "14.8e12", "--json").out)
    assert payload["total_flop"] == pytest.approx(6 * 37_552_297_472 * 14.8e12)
    assert payload["dense_equivalent_flop"] == pytest.approx(6 * 671_026_419_200 * 14.8e12)


def test_convention_and_seq(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "flops",
        "--model",
        "mpt-7b",
        "--tokens",
        "1e9",
        "--seq",
        "2048",
        "--convention",
        "6N+attention",
        "--json",
    )
    payload = json.loads(result.out)
    assert payload["per_token"]["training_flop"] == 6 * 6_658_859_008 + 12 * 32 * 4096 * 2048
    assert payload["total_flop"] == pytest.approx(1e9 * payload["per_token"]["training_flop"])
    text = run_cli(
        "flops", "--model", "gpt-3-175b", "--tokens", "300e9", "--convention", "megatron", "--recompute"
    )
    assert "96·l·h²·(1 + s/(6h) + V/(16·l·h))" in text.out


def test_bad_inputs_are_one_line(run_cli) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("flops", "--model", "dense-100t", "--tokens", "lots"))
    one_line_error(run_cli("flops", "--model", "dense-100t", "--tokens", "0"))
    one_line_error(run_cli("flops", "--model", "dense-100t", "--tokens", "1e12", "--convention", "7N"))
    one_line_error(run_cli("flops", "--model", "dense-10t", "--tokens", "1e12"))
    one_line_error(run_cli("flops", "--model", "dense-100t"))

"""``lightspeed compare systems``: tables, the JSON contract, the decomposition, bad input."""

from __future__ import annotations

import json
import math

import pytest

from expect import one_line_error

INFER = [
    "compare",
    "systems",
    "--workload",
    "infer",
    "--model",
    "llama-3-70b",
    "--isl",
    "2048",
    "--osl",
    "256",
    "--max-tpot",
    "60ms",
]


def test_compare_systems_json_contract(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        *INFER, "--systems", "dgx-h100", "dgx-b200", "--precision", "fp8,auto", "--decompose", "--json"
    )
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert set(payload) >= {
        "workload",
        "model",
        "plan_family",
        "systems",
        "per_gpu_ratio",
        "fabric",
        "decomposition",
    }
    h100, b200 = payload["systems"]
    assert (h100["precision"], b200["precision"]) == ("fp8", "nvfp4")
    assert payload["per_gpu_ratio"][0] == 1.0
    assert payload["per_gpu_ratio"][1] > 1.0
    for system in payload["systems"]:
        assert system["infer"]["tpot_s"] <= 0.060
        assert {
            "plan",
            "throughput_tokens_per_s_per_gpu",
            "collectives",
            "limits",
            "slow_level_share",
        } <= set(system)
    decomposition = payload["decomposition"]
    factors = [factor["factor"] for factor in decomposition["factors"]]
    assert math.prod(factors) == pytest.approx(decomposition["ratio"])
    assert decomposition["ratio"] == pytest.approx(payload["per_gpu_ratio"][1], rel=1e-6)
    assert len(decomposition["coalitions"]) == 16
    assert {"name", "change", "factor", "alone_factor", "last_factor", "log_share"} <= set(
        decomposition["factors"][0]
    )
    # Llama 3 70B has 8 KV heads: its own attention, then MHA and an MLA-like latent
    sensitivity = payload["attention_sensitivity"]
    assert [case["name"] for case in sensitivity["cases"]] == ["as catalogued", "MHA", "MLA-like latent"]
    assert sensitivity["cases"][0]["decomposition"]["ratio"] == pytest.approx(decomposition["ratio"])
    ratios = [case["decomposition"]["ratio"] for case in sensitivity["cases"]]
    assert sensitivity["spread"] == pytest.approx(max(ratios) / min(ratios))


def test_compare_systems_training_table(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "compare",
        "systems",
        "--workload",
        "train",
        "--model",
        "llama-3-8b",
        "--global-batch",
        "64",
        "--seq",
        "2048",
        "--systems",
        "dgx-h100",
        "--systems",
        "2xdgx-h100@ib-ndr",
    )
    assert result.code == 0, result.err
    for text in ("best train plan per system", "dgx-h100", "limit:", "fabric seen by one GPU", "hop latency"):
        assert text in result.out


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--workload", "infer", "--model", "llama-3-8b"], ("name the systems",)),
        (["--workload", "train", "--model", "llama-3-8b", "--systems", "dgx-h100"], ("--global-batch",)),
        (
            [
                "--workload",
                "infer",
                "--model",
                "llama-3-8b",
                "--systems",
                "dgx-h100",
                "--precision",
                "fp8,bf16",
            ],
            ("2 precisions for 1 systems",),
        ),
        (
            ["--workload", "infer", "--model", "llama-3-8b", "--systems", "dgx-h100", "--decompose"],
            ("two systems",),
        ),
        (["--workload", "infer", "--model", "llama-3-8b", "--systems", "no-such-box"], ("no-such-box",)),
        (
            ["--workload", "infer", "--model", "llama-3-8b", "--systems", "dgx-h100", "--max-ttft", "soon"],
            ("--max-ttft",),
        ),
    ],
)
def test_compare_systems_bad_input(run_cli, args: list[str], words: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("compare", "systems", *args), *words)


def test_compare_systems_on_one_gpu_each(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "compare",
        "systems",
        "--workload",
        "infer",
        "--model",
        "llama-3-8b",
        "--systems",
        "dgx-h100",
        "dgx-b200",
        "--gpus",
        "1",
        "--json",
    )
    assert result.code == 0, result.err
    systems = json.loads(result.out)["systems"]
    assert [system["num_gpus"] for system in systems] == [1, 1]
    assert [system["precision"] for system in systems] == [
        "fp8",
        "nvfp4",
    ]  # auto: the narrowest tensor-core format

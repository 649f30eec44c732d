"""``goodput report`` options replace the FLOP per token and the peak the job start recorded.

Every expected number is worked out here. Llama 3 8B (d=4096, 32 layers, 32 heads of 128, 8 KV heads,
FFN 14336, vocabulary 128256, untied output head): per layer attention q,o 2 x 4096^2 + k,v
2 x 4096 x 1024 = 41,943,040, MLP 3 x 4096 x 14336 = 176,160,768, two norms 8,192 -> 218,112,000;
x 32 = 6,979,584,000; + output head 128256 x 4096 = 525,336,576 + final norm 4,096
-> N = 7,504,924,672 (the input embedding is a lookup, no FLOPs). 6N+causal-attention at 8192
tokens: 6N + 6 x 32 x 8192 x 4096 = 45,029,548,032 + 6,442,450,944 = 51,471,998,976 FLOP per token.
H100 SXM: 1,979 TFLOP/s BF16 with sparsity on NVIDIA's datasheet -> 989.5e12 dense; FP8 3,958 with
sparsity -> 1,979e12 dense.
"""

from __future__ import annotations

import json

import pytest

from lightspeed.errors import UserInputError
from lightspeed.goodput import build_ledger, read_run
from lightspeed.goodput.utilization import DEFAULT_CONVENTION

LLAMA3_8B_FLOP_PER_TOKEN_8K = 6 * 7_504_924_672 + 6 * 32 * 8192 * 4096
H100_BF16_DENSE = 989.5e12
H100_FP8_DENSE = 1979e12
TOKENS = 10 * 4096  # ten 1 s steps of 4096 tokens, nothing else: wall = productive = 10 s
WALL_S = 10.0


def _run(hand_log, **recorded):  # type: ignore[no-untyped-def]
    log = hand_log().start(0.0, num_accelerators=1, precision="bf16", **recorded)
    for index in range(10):
        log.step(index, float(index), float(index + 1), tokens=4096)
    return log.end(WALL_S).write().parent


def test_model_and_system_replace_recorded_flop_and_peak(hand_log) -> None:  # type: ignore[no-untyped-def]
    run_dir = _run(hand_log, model_flop_per_token=1e6, peak_flop_per_s=1e10)
    ledger = build_ledger(run=read_run(run_dir), model="llama-3-8b", system="h100-sxm", seq_len=8192)
    flops = ledger.utilization
    assert flops.model_flop_per_token == pytest.approx(LLAMA3_8B_FLOP_PER_TOKEN_8K)
    assert flops.convention == "6N+causal-attention"
    assert flops.peak_flop_per_s == pytest.approx(H100_BF16_DENSE)
    assert flops.peak_source == "catalog"
    expected = TOKENS * LLAMA3_8B_FLOP_PER_TOKEN_8K / (WALL_S * H100_BF16_DENSE)  # 21.3%
    assert ledger.mfu == pytest.approx(expected, rel=1e-9)


def test_system_alone_replaces_recorded_peak_keeps_recorded_flop(hand_log) -> None:  # type: ignore[no-untyped-def]
    run_dir = _run(hand_log, model_flop_per_token=1e6, peak_flop_per_s=1e10)
    ledger = build_ledger(run=read_run(run_dir), system="h100-sxm")
    assert ledger.utilization.model_flop_per_token == 1e6
    assert ledger.utilization.convention == "given"
    assert ledger.mfu == pytest.approx(TOKENS * 1e6 / (WALL_S * H100_BF16_DENSE), rel=1e-9)


def test_precision_replaces_recorded_peak_of_recorded_device(hand_log) -> None:  # type: ignore[no-untyped-def]
    run_dir = _run(hand_log, system="h100-sxm", model_flop_per_token=1e9, peak_flop_per_s=1e10)
    ledger = build_ledger(run=read_run(run_dir), precision="fp8")
    assert ledger.utilization.peak_flop_per_s == pytest.approx(H100_FP8_DENSE, rel=1e-3)
    assert ledger.mfu == pytest.approx(TOKENS * 1e9 / (WALL_S * H100_FP8_DENSE), rel=1e-3)


def test_recorded_figures_stay_without_options(hand_log) -> None:  # type: ignore[no-untyped-def]
    run_dir = _run(hand_log, model_flop_per_token=1e6, peak_flop_per_s=1e10)
    ledger = build_ledger(run=read_run(run_dir))
    assert ledger.utilization.peak_source == "given"
    assert ledger.mfu == pytest.approx(TOKENS * 1e6 / (WALL_S * 1e10), rel=1e-9)


def test_seq_len_without_model_or_precision_without_device_is_refused(hand_log) -> None:  # type: ignore[no-untyped-def]
    run = read_run(_run(hand_log, model_flop_per_token=1e6, peak_flop_per_s=1e10))
    with pytest.raises(UserInputError, match=r"seq_len=4096 .* no model"):
        build_ledger(run=run, seq_len=4096)
    with pytest.raises(UserInputError, match=r"precision=fp8 .* no device"):
        build_ledger(run=run, precision="fp8")


def test_cli_uses_the_options_not_the_recorded_figures(hand_log, run_cli) -> None:  # type: ignore[no-untyped-def]
    # The expert's run1: a recorded peak of 1 GFLOP/s made the options' MFU "240%" and refused it.
    run_dir = _run(hand_log, model_flop_per_token=1e6, peak_flop_per_s=1e9)
    args = ("--model", "llama-3-8b", "--system", "h100-sxm", "--seq-len", "8192", "--json")
    result = run_cli("goodput", "report", str(run_dir), *args)
    assert result.code == 0, result.err
    flops = json.loads(result.out)["utilization"]
    assert flops["model_flop_per_token"] == pytest.approx(LLAMA3_8B_FLOP_PER_TOKEN_8K)
    assert flops["peak_flop_per_s"] == pytest.approx(H100_BF16_DENSE)
    assert flops["device"] == "h100-sxm"


def test_cli_refusal_names_the_recorded_peak_it_divided_by(hand_log, run_cli) -> None:  # type: ignore[no-untyped-def]
    # 40960 tokens x 5.147e10 FLOP / (10 s x 1e9 FLOP/s) is far above 100%: the divisor is the recorded peak.
    run_dir = _run(hand_log, model_flop_per_token=1e6, peak_flop_per_s=1e9)
    result = run_cli("goodput", "report", str(run_dir), "--model", "llama-3-8b", "--seq-len", "8192")
    assert result.code == 2
    assert "the divisor is the peak the run recorded, 1 GFLOP/s per accelerator" in result.err
    assert "Traceback" not in result.err


def test_cli_refusal_names_the_catalog_peak_it_divided_by(hand_log, run_cli) -> None:  # type: ignore[no-untyped-def]
    run_dir = _run(hand_log, model="llama-3-8b", system="h100-sxm", seq_len=8192)
    result = run_cli("goodput", "report", str(run_dir), "--flop-per-token", "1e15")
    assert result.code == 2
    assert "the divisor is the bf16 dense peak of h100-sxm, 989.5 TFLOP/s per accelerator" in result.err


def test_docstring_names_the_default_convention() -> None:
    # The default is what plan train predicts MFU in (docs/goodput.md), not PaLM's 6N+attention.
    assert DEFAULT_CONVENTION == "6N+causal-attention"
    doc = build_ledger.__doc__ or ""
    assert "default ``6N+causal-attention``" in doc
    assert "6N+attention``" not in doc

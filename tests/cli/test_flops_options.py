"""``lightspeed flops`` options that would do nothing, and token counts that are not counts."""

from __future__ import annotations

import json

import pytest

from expect import one_line_error


@pytest.mark.parametrize("convention", [None, "6N", "6N-nonembedding"])
def test_causal_under_a_convention_without_attention_is_refused(run_cli, convention: str | None) -> None:  # type: ignore[no-untyped-def]
    # 6N counts no attention term, so halving it changes nothing: the flag must not pass silently
    args = ["flops", "--model", "llama-3-8b", "--tokens", "15e12", "--causal"]
    if convention is not None:
        args += ["--convention", convention]
    one_line_error(run_cli(*args), "--causal", "counts none")
    # where there is an attention term, --causal halves it: Llama 3 8B at 8,192 tokens,
    # 6N+attention adds 12·L·s·H·d = 12·32·8192·4096 per token, causal half of that
    base = ("flops", "--model", "llama-3-8b", "--tokens", "1e12", "--convention", "6N+attention", "--json")
    full = json.loads(run_cli(*base).out)["per_token"]
    causal = run_cli(*base, "--causal")
    assert causal.code == 0, causal.err
    halved = json.loads(causal.out)["per_token"]
    assert full["training_flop"] - halved["training_flop"] == pytest.approx(6 * 32 * 8192 * 4096)


@pytest.mark.parametrize(
    ("tokens", "said"), [("0.5", "below the minimum"), ("1.5", "whole"), ("0.999", "below the minimum")]
)
def test_tokens_are_whole_and_at_least_one(run_cli, tokens: str, said: str) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("flops", "--model", "llama-3-8b", "--tokens", tokens), "--tokens", said)
    one = run_cli("flops", "--model", "llama-3-8b", "--tokens", "1", "--json")  # the fewest: one token
    assert one.code == 0, one.err
    assert json.loads(one.out)["num_tokens"] == 1

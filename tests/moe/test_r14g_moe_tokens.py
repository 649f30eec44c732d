"""`moe stats` counts tokens as tokens: a load's counts are token-expert pairs, tokens are the pairs
over the load's top-k."""

from __future__ import annotations

import json
from pathlib import Path

from lightspeed.moe import ExpertLoad, load_stats
from lightspeed.moe.synthetic import synthetic_load


def test_tokens_are_the_pairs_over_top_k() -> None:
    # 10 tokens per layer, each routed to all 8 experts: 10 x 8 = 80 token-expert pairs, 10 tokens.
    load = synthetic_load(num_layers=2, num_experts=8, top_k=8, num_tokens=10, skew=1.0)
    stats = load_stats(load=load, num_gpus=2)
    assert stats.top_k == 8
    assert [layer.num_token_expert_pairs for layer in stats.layers] == [80.0, 80.0]
    assert [layer.num_tokens for layer in stats.layers] == [10.0, 10.0]


def test_tokens_are_unknown_without_a_top_k() -> None:
    load = ExpertLoad(counts=((3.0, 1.0), (2.0, 2.0)), layer_names=("0", "1"))
    (first, _) = load_stats(load=load, num_gpus=1).layers
    assert first.num_tokens is None
    assert first.num_token_expert_pairs == 4.0


def test_cli_shows_tokens_and_pairs(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "s1.json"
    synth = ("moe", "synth", "--layers", "2", "--experts", "8", "--top-k", "8", "--tokens", "10", "--out")
    assert run_cli(*synth, str(out)).code == 0
    result = run_cli("moe", "stats", str(out), "--json")
    assert result.code == 0, result.err
    layers = json.loads(result.out)["layers"]
    assert [(layer["num_tokens"], layer["num_token_expert_pairs"]) for layer in layers] == [
        (10, 80),
        (10, 80),
    ]
    text = run_cli("moe", "stats", str(out)).out
    assert "token-expert pairs" in text
    assert "top-8" in text

"""Speculative decoding's cost against TensorRT-LLM's published MTP table (tech blog 1,
"Autoregressive MTP Layers": DeepSeek-R1 on 8 B200, TP 8 / EP 4, NVFP4 experts, batch 1).

The ratio of each MTP depth's speed to the same deployment's speed without MTP leaves the
batch-1 floors' own error (issue 28) out, so it checks what speculation adds: the verify pass
over k + 1 tokens per sequence (more routed experts read) and k draft steps at the default
draft cost."""

from __future__ import annotations

import statistics
from types import ModuleType

import pytest

from lightspeed.sol.infer.plan import SpeculativeDecoding
from scripts import load_script

# The blog's table: MTP draft positions -> (mean tokens per verify pass, tokens/s of one user).
PUBLISHED = {1: (1.92, 198.0), 2: (2.58, 250.0), 3: (2.82, 253.0), 4: (2.99, 245.0), 5: (3.01, 239.0)}
WITHOUT_MTP = 111.0


def _benchmark() -> ModuleType:
    return load_script("benchmarks/decode_floors.py")


def test_the_table_is_the_blogs() -> None:
    module = _benchmark()
    assert module.MTP_TABLE == PUBLISHED
    assert module.R1_B200.measured_tokens_per_s_per_user == WITHOUT_MTP


@pytest.mark.parametrize("drafts", [1, 3, 5])
def test_the_acceptance_rate_yields_the_published_tokens_per_pass(drafts: int) -> None:
    tokens, _ = PUBLISHED[drafts]
    rate = _benchmark().acceptance_for(tokens, drafts)
    assert SpeculativeDecoding(drafts, rate).tokens_per_iteration == pytest.approx(tokens, rel=1e-9)


def test_mtp_speedups_match_the_published_table_with_the_default_draft_cost() -> None:
    # 1.78x, 2.25x, 2.28x, 2.21x, 2.15x over 111 tokens/s: each predicted within 6% (at most 5.5%
    # since a verify pass's busiest EP rank reads the experts its tokens reach, in the few expert
    # groups each token's router allows), their median
    # within 2.5%. Without the
    # draft steps' cost MTP 4 would come out 19% fast (2.63x); at 1/61 (one layer's share of the
    # model) 12% fast (2.48x): a batch-1 draft step is latency-bound.
    speedups = _benchmark().mtp_speedups()
    assert [entry["draft_tokens"] for entry in speedups] == [1, 2, 3, 4, 5]
    for entry in speedups:
        tokens, measured = PUBLISHED[entry["draft_tokens"]]
        assert entry["tokens_per_pass"] == tokens
        assert entry["measured_speedup"] == pytest.approx(measured / WITHOUT_MTP)
        assert entry["draft_cost_fraction"] == 0.05
        assert abs(entry["error"]) <= 0.06, entry
    assert statistics.median(abs(entry["error"]) for entry in speedups) <= 0.025
    # the speed-up flattens from 2 positions in both (measured 2.25x, 2.28x, 2.21x, within 3%): later
    # positions are rarely kept, and each adds a draft step and experts to read
    best = max(speedups, key=lambda entry: entry["predicted_speedup"])
    assert best["draft_tokens"] in (2, 3, 4)
    assert speedups[4]["predicted_speedup"] < best["predicted_speedup"]

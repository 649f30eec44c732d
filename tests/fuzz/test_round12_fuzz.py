"""The fuzz property (exit 2 with one line naming what is wrong, never a traceback) on the inputs
the twelfth round fixed: lengths of no tokens and SLO limits under the deployment's unloaded
latency. Each case names the words its one line must hold, so a refusal for another reason fails."""

from __future__ import annotations

import pytest

from fuzzing import check

SIMULATE = (
    "simulate", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--arrival-rate", "2", "--requests", "20",
    "--isl", "500", "--osl", "50",
)  # fmt: skip


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--isl-dist", "uniform:0-100"), "a length of 0 tokens"),
        (("--osl-dist", "uniform:0-0"), "output token"),
        (("--isl-dist", "lognormal:0"), "no spread"),
        (("--isl-dist", "file:"), "names no file"),
    ],
)
def test_round12_lengths_of_no_tokens_are_one_line(args: tuple[str, ...], words: str) -> None:
    outcome = check([*SIMULATE, *args])
    assert outcome.code == 2, outcome.out[:200]
    assert words in outcome.err, outcome.err
    assert len(outcome.err.strip().splitlines()) == 1


def test_round12_a_limit_under_the_unloaded_latency_is_refused_before_the_search() -> None:
    base = [arg for arg in SIMULATE if arg not in {"--arrival-rate", "2"}]
    outcome = check([*base, "--slo", "ttft=1ns,tpot=50ms", "--max-rate-at-slo"])
    assert outcome.code == 2, outcome.out[:200]
    assert "under this deployment's unloaded TTFT" in outcome.err, outcome.err

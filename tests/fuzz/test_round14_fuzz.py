"""The fuzz property (exit 2 with one line naming what is wrong, never a traceback) on the inputs
the fourteenth round refuses: a token budget below the sequence cap, fp8 and repeated dtypes in a
CPU GEMM sweep, plot and report outputs that cannot be written, a malformed exporter address and a
store path ending in a separator. Each case names the words its one line must hold, so a refusal
for another reason fails."""

from __future__ import annotations

import pytest

from fuzzing import check

SIMULATE = (
    "simulate", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--concurrency", "8", "--requests", "20",
    "--isl", "100", "--osl", "20",
)  # fmt: skip
GEMM = ("bench", "gemm", "--quick", "--no-save", "--device", "cpu")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((*SIMULATE, "--max-num-batched-tokens", "1", "--max-num-seqs", "64"), "--max-num-batched-tokens"),
        ((*SIMULATE, "--plot", "x.txt"), "x.txt"),
        ((*GEMM, "--dtype", "fp8"), "fp8"),
        ((*GEMM, "--dtype", "bf16,,fp32"), "empty item"),
        ((*GEMM, "--dtype", "bf16,bf16"), "given twice"),
        (("report", "-o", "r.pdf"), ".html"),
        (("report", "-o", "nosuch/r.html"), "nosuch"),
        (("doctor", "--exporter", "ftp://x"), "--exporter"),
    ],
)
def test_round14_refusals_are_one_line(args: tuple[str, ...], words: str) -> None:
    if args[:2] == ("bench", "gemm"):
        pytest.importorskip("torch")
    outcome = check(list(args))
    assert outcome.code == 2, outcome.out[:200]
    assert words in outcome.err, outcome.err
    assert len(outcome.err.strip().splitlines()) == 1


def test_round14_a_stage_count_of_zero_is_not_called_gpus() -> None:
    # --pp counts pipeline stages: "0 GPUs is below the minimum" named the wrong thing
    outcome = check(["simulate", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--pp", "0"])
    assert outcome.code == 2
    assert "'--pp': 0 is below the minimum" in outcome.err
    assert "GPUs" not in outcome.err.split("allowed")[0]

"""Round 12, FA2: what docs/sol.md and docs/workload.md say about the search's tie tolerance, the
"a plan that fits" suggestion and ``memory --training`` matches what the tool does."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from lightspeed.sol.core.uncertainty import load_bands
from lightspeed.sol.train.ranking import tolerance_of

DOCS = Path(__file__).resolve().parents[2] / "docs"
SOL = (DOCS / "sol.md").read_text(encoding="utf-8")
WORKLOAD = (DOCS / "workload.md").read_text(encoding="utf-8")
LLAMA_70B_PARAMS = 70_553_706_496
H100_DRIVER_BYTES = 81_559 * 2**20


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_tie_tolerance_in_the_doc_is_the_dense_hopper_one() -> None:
    """Dense Hopper training's 80% interval is +-0.2201 in log step time: half its width is 0.2201,
    e^0.2201 - 1 = 0.2462 (by hand, the series x + x^2/2 + x^3/6 + x^4/24 = 0.2201 + 0.02422 +
    0.001777 + 0.000098 = 0.2462)."""
    band = load_bands()["train/dense/hopper"]
    assert math.isclose(band.high, 0.2201, abs_tol=5e-4)
    by_hand = 0.2201 + 0.2201**2 / 2 + 0.2201**3 / 6 + 0.2201**4 / 24
    assert round(math.expm1((band.high - band.low) / 2), 4) == round(by_hand, 4) == 0.2462
    # the tie tolerance is capped at the error between plans of one source (round 15): 10%
    assert tolerance_of(band) == pytest.approx(0.10)
    bullet = _flat(SOL[SOL.index("**margin over the runner-up**") :].split("* **ties**")[0])
    assert "24.6%" in bullet
    assert "capped at 10%" in bullet
    assert "11.5%" not in bullet
    assert '"tolerance": 0.1,' in SOL
    assert '"tolerance": 0.2462' not in SOL


def test_fit_suggestion_replaces_the_options_it_names(run_cli) -> None:  # type: ignore[no-untyped-def]
    """docs/sol.md's example: the suggestion appended to the command repeats --zero and is refused;
    run with the command's --zero 0 taken out, as the doc now says, it runs."""
    assert "runs as written next to the rest" not in _flat(SOL)
    assert "after taking out the options it names" in _flat(SOL)
    base = ["plan", "train", "--model", "llama-3-70b", "--system", "dgx-h100", "--gpus", "64",
            "--global-batch", "64"]  # fmt: skip
    refused = run_cli(*base, "--zero", "0")
    assert refused.code == 2
    suggestion = refused.err.split("a plan that fits:")[1].split()
    assert "--zero-stage" in suggestion
    twice = run_cli(*base, "--zero", "0", *suggestion)
    assert twice.code == 2
    assert "given twice" in twice.err
    assert run_cli(*base, *suggestion).code == 0


def test_workload_doc_zero_1_example_is_the_tools_output(run_cli) -> None:  # type: ignore[no-untyped-def]
    """ZeRO-1 over 64 ranks with fp32 main gradients: 2 + 4 + 12/64 = 6.1875 bytes a parameter per
    rank, 436.55 GB = 5.1 H100s -> 6 a replica, 384 GPUs; the nominal 80 GiB gives 384 too."""
    per_replica = math.ceil((6 + 12 / 64) * LLAMA_70B_PARAMS / H100_DRIVER_BYTES)
    assert per_replica * 64 == 384
    result = run_cli(
        "memory", "--model", "llama-3-70b", "--training", "--zero", "1", "--dp", "64", "--system", "dgx-h100"
    )
    assert result.code == 0
    headline = _flat(result.out.split("assumptions:")[0])
    counts = re.search(r"384 x h100-sxm at .*? nominal = 48 nodes", headline)
    assert counts is not None
    assert counts.group(0) in _flat(WORKLOAD)
    assert "85.9 GB nominal" not in WORKLOAD
    assert f"{round((6 + 12 / 64) * LLAMA_70B_PARAMS):,}" in WORKLOAD

"""``compare systems`` says what each system's best plan assumes, as ``plan infer`` does: an A100
asked for "fp8" has no FP8 tensor cores, so its FP8 weights feed BF16 GEMMs."""

from __future__ import annotations

import pytest


def test_a100_fp8_says_weight_only(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "400")
    args = ["--workload", "infer", "--model", "llama-3-70b", "--precision", "fp8"]
    result = run_cli("compare", "systems", *args, "--systems", "dgx-a100", "dgx-b200")
    assert result.code == 0, result.err
    text = result.out
    line = (
        "assumed: a100-sxm has no fp8 tensor cores: weights stored in fp8, GEMMs in bf16 "
        "(weight-only quantization)"
    )
    assert line in text
    a100, b200 = text.index("1 x dgx-a100 over ib-hdr (fp8"), text.index("1 x dgx-b200 over ib-ndr (fp8")
    assert a100 < text.index(line) < b200  # in the A100's block, not the B200's
    assert text.count("has no fp8 tensor cores") == 1

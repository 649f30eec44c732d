"""r13 S: ``simulate --disaggregated 1:1`` on one GPU says in one line what the split needs."""

from __future__ import annotations


def test_r13_s_a_split_on_one_gpu_is_one_line_and_exit_2(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("simulate", "--model", "llama-3-8b", "--system", "h100-sxm", "--disaggregated", "1:1")
    assert result.code == 2
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert "the disaggregated split 1:1 needs 2 GPUs" in lines[0]
    assert "fix: a system of at least 2 GPUs" in lines[0]
    assert "Traceback" not in result.err

"""The refusal of an MFU above the peak names the step MFU it is about and the MFU over the wall time."""

from __future__ import annotations

from expect import one_line_error


def test_refusal_names_the_step_mfu_and_the_wall_time_mfu(hand_log, run_cli) -> None:  # type: ignore[no-untyped-def]
    # One rank, job 0..10 s, one 1 s step of 2000 tokens at 3.12e11 FLOP/token on one a100-sxm
    # (bf16 dense peak 312 TFLOP/s): step MFU = 2000 * 3.12e11 / (1 s * 3.12e14) = 200%,
    # MFU over the 10 s wall time = 20.0%.
    log = hand_log(rank=0, world_size=1).start(0.0, precision="bf16")
    run_dir = log.step(0, 1.0, 2.0, tokens=2000).end(10.0).write().parent
    result = run_cli(
        "goodput", "report", str(run_dir), "--system", "a100-sxm", "--flop-per-token", "3.12e11",
        "--num-accelerators", "1",
    )  # fmt: skip
    line = one_line_error(result, "step MFU would be 200% (MFU over the wall time 20.0%)", "above the peak")
    assert "--flop-per-token" in line

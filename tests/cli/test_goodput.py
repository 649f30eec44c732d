"""``lightspeed goodput``: the JSON contract, MLPerf logs, checkpoint planning, bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.goodput import Tracker

NS = 1_000_000_000
T0 = 1_700_000_000 * NS
H200_LORA = "data/mlperf/training_v4.0/NVIDIA/results/h200_ngc24.04_nemo/llama2_70b_lora/result_0.txt"


def _run_dir(tmp_path: Path, *, crash: bool = False) -> Path:
    """Two 1 s steps of 500 tokens after 1 s of init; the job ends at t = 4 s."""
    lines = [
        {"type": "job_start", "t_ns": T0, "run_id": "r", "rank": 0, "world_size": 1, "num_nodes": 2},
        {"type": "phase", "phase": "init", "step": 0, "start_ns": T0, "end_ns": T0 + NS},
        {"type": "step", "step": 0, "start_ns": T0 + NS, "end_ns": T0 + 2 * NS, "tokens": 500},
        {"type": "step", "step": 1, "start_ns": T0 + 2 * NS, "end_ns": T0 + 3 * NS, "tokens": 500},
    ]
    if not crash:
        lines.append({"type": "job_end", "t_ns": T0 + 4 * NS, "status": "ok"})
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    text = "\n".join(json.dumps({"v": 1, "seg": "a", **line}) for line in lines) + "\n"
    (run_dir / "rank-00000.jsonl").write_text(text, encoding="utf-8")
    return run_dir


def test_report_json_contract(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "goodput", "report", str(_run_dir(tmp_path)), "--json", "--sol-tokens-per-s-per-gpu", "400"
    )
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    for key in (
        "total_s",
        "productive_s",
        "badput_s",
        "goodput_fraction",
        "tokens_per_s",
        "mfu",
        "ettr",
        "steps",
    ):
        assert key in payload
    assert payload["total_s"] == pytest.approx(4.0)
    assert payload["productive_s"] == pytest.approx(2.0)
    assert payload["badput_s"]["init"] == pytest.approx(1.0)
    assert payload["badput_s"]["other"] == pytest.approx(1.0)
    assert payload["goodput_fraction"] == pytest.approx(0.5)
    assert payload["tokens_per_s"] == pytest.approx(1000 / 4)
    assert payload["efficiency"] == pytest.approx(250 / 400)  # 1 accelerator (world size 1)
    assert payload["mfu"] is None
    assert "no model recorded" in payload["utilization"]["reason"]
    assert payload["steps"]["count"] == 2
    assert payload["steps"]["median_s"] == pytest.approx(1.0)
    assert payload["ranks"][0]["rank"] == 0


def test_report_tables_and_plot(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plot = tmp_path / "ledger.png"
    result = run_cli("goodput", "report", str(_run_dir(tmp_path)), "--plot", str(plot))
    assert result.code == 0, result.err
    assert "Where the wall time went" in result.out
    assert "productive steps" in result.out
    assert plot.stat().st_size > 1000


def test_report_mfu_with_a_given_flop_per_token(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "goodput",
        "report",
        str(_run_dir(tmp_path)),
        "--json",
        "--flop-per-token",
        "1e9",
        "--system",
        "h100-sxm",
    )
    payload = json.loads(result.out)
    # 1000 tokens x 1e9 FLOP over 4 s on one H100 SXM (989.5 TFLOP/s dense bf16)
    assert payload["mfu"] == pytest.approx(1000 * 1e9 / (4.0 * 989.5e12))
    assert payload["step_mfu"] == pytest.approx(1000 * 1e9 / (2.0 * 989.5e12))


def test_report_mlperf_log_with_system_json(run_cli, shared: Path) -> None:  # type: ignore[no-untyped-def]
    system = shared / "data/mlperf/training_v4.0/NVIDIA/h200_ngc24.04_nemo.system.json"
    result = run_cli("goodput", "report", str(shared / H200_LORA), "--system", str(system), "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["source"] == "mllog"
    assert payload["details"]["time_to_train_s"] == pytest.approx((1714994988899 - 1714993577687) / 1000)
    assert payload["num_accelerators"] == 8
    assert payload["mfu"] is not None


def test_truncated_log_warns_on_stderr_and_reports(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_dir = _run_dir(tmp_path, crash=True)
    with (run_dir / "rank-00000.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"v": 1, "seg": "a", "type": "st')
    result = run_cli("goodput", "report", str(run_dir))
    assert result.code == 0
    assert "lightspeed: warning:" in result.err
    assert "rank-00000.jsonl:5" in result.err


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", "no such file or directory"),
        ("corrupt", "rank-00000.jsonl:2: not a JSON object"),
    ],
)
def test_report_bad_input_is_one_line_exit_2(run_cli, tmp_path: Path, setup: str, message: str) -> None:  # type: ignore[no-untyped-def]
    if setup == "missing":
        target = tmp_path / "nope"
    else:
        target = _run_dir(tmp_path)
        lines = (target / "rank-00000.jsonl").read_text().splitlines()
        lines.insert(1, "garbage")
        (target / "rank-00000.jsonl").write_text("\n".join(lines) + "\n")
    result = run_cli("goodput", "report", str(target))
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert message in result.err
    assert "Traceback" not in result.err


def test_plan_checkpoints_json_by_hand(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "goodput",
        "plan-checkpoints",
        "--nodes",
        "1",
        "--failures-per-node-day",
        "1",
        "--checkpoint-write-s",
        "100",
        "--restart-s",
        "0",
        "--json",
    )
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["young_interval_s"] == pytest.approx(math.sqrt(2 * 100 * 86400))
    assert payload["daly_interval_s"] == pytest.approx(math.sqrt(2 * 100 * 86400) - 100)
    assert len(payload["rows"]) == 13


@pytest.mark.slow
def test_plan_checkpoints_from_runs_with_plot(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plot = tmp_path / "ettr.svg"
    result = run_cli(
        "goodput",
        "plan-checkpoints",
        "--from",
        str(_run_dir(tmp_path, crash=True)),
        "--checkpoint-write-s",
        "1min",
        "--restart-s",
        "10min",
        "--interval",
        "1h",
        "--plot",
        str(plot),
    )
    assert result.code == 0, result.err
    # A single crashed segment is not a restart: 0 failures observed.
    assert "Observed: 0 failures" in result.out
    assert "Expected ETTR by checkpoint interval" in result.out
    assert plot.read_text().startswith("<?xml")


def test_plan_checkpoints_needs_a_rate(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "goodput", "plan-checkpoints", "--nodes", "4", "--checkpoint-write-s", "60", "--restart-s", "60"
    )
    assert result.code == 2
    assert "--failures-per-node-day" in result.err


def test_a_model_name_holding_markup_is_shown_as_written(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Tracker(model="[/]") used to crash the report with rich.errors.MarkupError
    run_dir = tmp_path / "run"
    tracker = Tracker(run_dir, model="[/]", system="h100-sxm", seq_len=8, rank=0, world_size=1)
    with tracker, tracker.step(tokens=8):
        pass
    result = run_cli("goodput", "report", str(run_dir))
    assert result.code == 0, result.err
    assert "[/]" in result.out


def test_plot_into_an_existing_folder_writes_inside_it(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # used to write plots.png and plots.svg beside the folder, in its parent
    folder = tmp_path / "plots"
    folder.mkdir()
    args = ["goodput", "plan-checkpoints", "--nodes", "8", "--failures-per-node-day", "0.01"]
    result = run_cli(*args, "--checkpoint-write-s", "60", "--restart-s", "60", "--plot", str(folder))
    assert result.code == 0, result.err
    assert sorted(path.name for path in folder.iterdir()) == ["goodput.png", "goodput.svg"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["plots"]
    bad = run_cli(*args, "--checkpoint-write-s", "60", "--restart-s", "60", "--plot", str(tmp_path / "x.jpg"))
    assert bad.code == 2
    assert "not a plot format" in bad.err


def test_report_publishes_to_tensorboard(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    board_dir = tmp_path / "tb"
    result = run_cli("goodput", "report", str(_run_dir(tmp_path)), "--tensorboard", str(board_dir), "--json")
    assert result.code == 0, result.err
    assert f"TensorBoard events in {board_dir}" in result.err
    board = EventAccumulator(str(board_dir))
    board.Reload()
    # two 1 s steps of 500 tokens (hand-written log above): 500 tokens/s each
    assert [(e.step, e.value) for e in board.Scalars("lightspeed/step_time_s")] == [(0, 1.0), (1, 1.0)]
    assert [e.value for e in board.Scalars("lightspeed/tokens_per_s")] == [500.0, 500.0]
    assert [e.value for e in board.Scalars("lightspeed/badput/init_s")] == [1.0, 1.0]
    # 2 s of steps in 4 s of wall time
    assert board.Scalars("lightspeed/ledger/goodput_fraction")[-1].value == pytest.approx(0.5)
    unused = tmp_path / "unused"
    run = str(_run_dir(tmp_path))
    two = run_cli("goodput", "report", run, run, "--tensorboard", str(unused))
    assert two.code == 2
    assert "publish one run" in two.err
    assert not unused.exists()  # refused before any sink was made


def test_a_system_or_model_named_on_the_command_line_must_exist(run_cli, shared: Path) -> None:  # type: ignore[no-untyped-def]
    # '--system nope' used to exit 0 with the lookup error folded into the MFU column
    one_line_error(
        run_cli("goodput", "report", str(shared / H200_LORA), "--system", "nope"), "unknown device 'nope'"
    )
    one_line_error(
        run_cli("goodput", "report", str(shared / H200_LORA), "--model", "nope"), "unknown model 'nope'"
    )


def test_mfu_above_the_peak_from_given_options_is_refused(run_cli, shared: Path) -> None:  # type: ignore[no-untyped-def]
    # one H200 cannot have trained what eight did: MFU came out at about 1000% and was printed
    result = run_cli(
        "goodput", "report", str(shared / H200_LORA), "--system", "h200-sxm", "--num-accelerators", "1"
    )
    line = one_line_error(result, "MFU would be", "above the peak", "--num-accelerators")
    assert "--system" in line


def test_a_precision_the_device_lacks_is_refused(run_cli, shared: Path) -> None:  # type: ignore[no-untyped-def]
    # the H200 has no FP4 tensor cores: the report printed MFU as unavailable and exited 0
    result = run_cli("goodput", "report", str(shared / H200_LORA), "--precision", "fp4")
    one_line_error(result, "--precision fp4", "h200-sxm has no fp4 compute figure", "fp8")


def _llama_3_8b_flop_per_token(*, causal: bool, seq_len: int = 8192) -> float:
    """Training FLOP per token of Llama 3 8B by hand (32 layers, hidden 4096, 8 KV heads of 128,
    FFN 14336, vocabulary 128256): 6N plus attention scores and values, 12·L·s·h over the full
    square, half that under the causal mask. The causal count (Megatron-Core's) multiplies the
    layers and the LM head; the full-square one (PaLM's) counts every parameter, the embedding too."""
    hidden, layers, kv, ffn, vocab = 4096, 32, 8 * 128, 14336, 128256
    per_layer = 2 * hidden * hidden + 2 * hidden * kv + 3 * hidden * ffn + 2 * hidden
    layers_and_head = layers * per_layer + hidden + vocab * hidden
    params = layers_and_head + (0 if causal else vocab * hidden)
    attention = (6 if causal else 12) * layers * seq_len * hidden
    return 6 * params + attention


def test_measured_and_predicted_mfu_count_flops_alike(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """goodput report and plan train default to one convention, so a measured MFU compares with the
    predicted one; --convention moves both the same way."""
    run = ("goodput", "report", str(_run_dir(tmp_path)), "--json", "--system", "h100-sxm")
    run += ("--model", "llama-3-8b", "--seq-len", "8192")
    plan = ("plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "8", "--tp", "2")
    plan += ("--global-batch", "8", "--seq", "8192", "--recompute", "full", "--json")
    measured = json.loads(run_cli(*run).out)["utilization"]
    predicted = causal_plan = json.loads(run_cli(*plan).out)
    causal = _llama_3_8b_flop_per_token(causal=True)
    assert measured["convention"] == predicted["flop_convention"] == "6N+causal-attention"
    assert measured["model_flop_per_token"] == pytest.approx(causal, rel=1e-9)
    assert predicted["model_flop_per_token"] == pytest.approx(causal, rel=1e-9)
    full = _llama_3_8b_flop_per_token(causal=False)
    measured = json.loads(run_cli(*run, "--convention", "6N+attention").out)["utilization"]
    predicted = json.loads(run_cli(*plan, "--convention", "6N+attention").out)
    assert measured["model_flop_per_token"] == pytest.approx(full, rel=1e-9)
    assert predicted["model_flop_per_token"] == pytest.approx(full, rel=1e-9)
    # the same step, more FLOPs counted: the MFU moves by the ratio of the counts, HFU not at all
    assert predicted["mfu"] / causal_plan["mfu"] == pytest.approx(full / causal, rel=1e-9)
    assert predicted["hfu"] == causal_plan["hfu"]


def _mllog_line(key: str, time_ms: int, **metadata: object) -> str:
    body = {"namespace": "", "time_ms": time_ms, "event_type": "POINT_IN_TIME", "key": key, "value": None}
    return ":::MLLOG " + json.dumps({**body, "metadata": metadata})


def test_outlier_blocks_are_named_in_the_plural(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A first block of 128 samples in 200 ms, then 64-sample blocks of 100 ms and one of 500 ms:
    scaled to the median size (64) the first takes 100 ms and the last is an outlier."""
    lines = [_mllog_line("init_start", 0), _mllog_line("init_stop", 10), _mllog_line("run_start", 10)]
    start_ms, samples = 10, 0
    for length_ms, size in ((200, 128), (100, 64), (100, 64), (100, 64), (500, 64)):
        lines.append(_mllog_line("block_start", start_ms))
        start_ms, samples = start_ms + length_ms, samples + size
        lines.append(_mllog_line("block_stop", start_ms, samples_count=samples))
    lines.append(_mllog_line("run_stop", start_ms, status="success"))
    path = tmp_path / "result_0.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli("goodput", "report", str(path))
    assert result.code == 0, result.err
    assert "Slowest outlier blocks (scaled)" in result.out

"""Round 16 fixes (helper G): the Hugging Face callback's job-wide token count, record_step stamps
from another clock, MLPerf option overrides, a system description of another run, run_stop counts of
0 or below, and the Lightning sanity check. Golden values are worked by hand from the log lines."""

from __future__ import annotations

import re
import sys
import time
import types
from pathlib import Path
from types import SimpleNamespace

import pytest

from lightspeed.errors import DataFileError, UserInputError
from lightspeed.goodput import (
    Tracker,
    build_ledger,
    hf_trainer_callback,
    lightning_callback,
    mllog_ledger,
    read_mllog,
    read_run,
    read_system_json,
)

V4 = Path("data/mlperf/training_v4.0/NVIDIA")
EOS_N8_LORA = V4 / "results/eos_n8_ngc24.04_nemo/llama2_70b_lora/result_0.txt"
EOS_N8_SYSTEM = V4 / "eos_n8_ngc24.04_nemo.system.json"
EOS_N64_SYSTEM = V4 / "eos_n64_ngc24.04_nemo.system.json"

# The eos_n8 llama2_70b_lora log, by hand: init_start at line 4 (1714861329540 ms), run_stop at line 60
# (1714861725920 ms, samples_count 3456 sequences of max_sequence_length 8192); its :::SYSJSON says
# Eos_n8, 8 nodes x 8 NVIDIA H100-SXM5-80GB. H100 SXM dense BF16 peak: 989.5 TFLOP/s (NVIDIA datasheet,
# 1979 TFLOP/s with sparsity).
WALL_S = (1714861725920 - 1714861329540) / 1000  # 396.38 s
SEQUENCES = 3456
TOKENS = SEQUENCES * 8192  # 28,311,552
GPUS = 8 * 8
H100_BF16_PEAK = 989.5e12


def _fake_module(monkeypatch: pytest.MonkeyPatch, name: str, **attributes: object) -> None:
    module = types.ModuleType(name)
    for key, value in attributes.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)


# -- 1. Hugging Face: num_input_tokens_seen is the job's count ---------------------------------------


@pytest.mark.parametrize("scope", ["rank", "global"])
def test_hf_callback_counts_the_trainers_job_wide_tokens_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scope: str
) -> None:
    """Two ranks, each running 2 steps of 128 tokens: the Trainer's gathered count grows by 256 a step
    on both ranks, so the job trained 2 x 256 = 512 tokens (the old callback logged 1024)."""
    _fake_module(monkeypatch, "transformers", TrainerCallback=object)
    args = SimpleNamespace(world_size=2)
    for rank in (0, 1):
        with Tracker(tmp_path, rank=rank, world_size=2, tokens_scope=scope, run_id="hf") as tracker:
            callback = hf_trainer_callback(tracker)
            state = SimpleNamespace(global_step=0, num_input_tokens_seen=0)
            callback.on_train_begin(args, state, None)
            for _ in range(2):
                callback.on_step_begin(args, state, None)
                state.global_step += 1
                state.num_input_tokens_seen += 2 * 128  # accelerator.gather(input_tokens).sum()
                callback.on_step_end(args, state, None)
    assert build_ledger(run=read_run(tmp_path)).tokens == pytest.approx(2 * 256)


def test_hf_callback_without_args_divides_by_the_trackers_world_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_module(monkeypatch, "transformers", TrainerCallback=object)
    with Tracker(tmp_path, rank=0, world_size=4) as tracker:
        callback = hf_trainer_callback(tracker)
        state = SimpleNamespace(global_step=0, num_input_tokens_seen=0)
        callback.on_train_begin(None, state, None)
        callback.on_step_begin(None, state, None)
        state.global_step, state.num_input_tokens_seen = 1, 1000
        callback.on_step_end(None, state, None)
    assert read_run(tmp_path).ranks[0].segments[0].steps[0].tokens == pytest.approx(1000 / 4)


# -- 6. Lightning: the sanity check is init, not eval ------------------------------------------------


def test_lightning_sanity_check_is_init_not_eval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_module(monkeypatch, "lightning", pytorch=None)
    _fake_module(monkeypatch, "lightning.pytorch")
    _fake_module(monkeypatch, "lightning.pytorch.callbacks", Callback=object)
    with Tracker(tmp_path) as tracker:
        callback = lightning_callback(tracker, tokens_per_step=10)
        trainer = SimpleNamespace(global_step=0, accumulate_grad_batches=1, sanity_checking=True)
        callback.on_fit_start(trainer, None)
        callback.on_validation_start(trainer, None)  # Lightning's sanity check, before training
        callback.on_validation_end(trainer, None)
        trainer.sanity_checking = False
        callback.on_train_start(trainer, None)
        callback.on_train_batch_start(trainer, None, [1], 0)
        callback.on_train_batch_end(trainer, None, None, [1], 0)
        callback.on_validation_start(trainer, None)  # a real validation
        callback.on_validation_end(trainer, None)
    segment = read_run(tmp_path).ranks[0].segments[0]
    assert [phase.phase for phase in segment.phases] == ["init", "eval"]


# -- 3. record_step/record_phase stamps inside the segment -------------------------------------------


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (lambda t: t.record_step(start_ns=1, end_ns=2, step=5), "before this tracker's job start"),
        (lambda t: t.record_step(start_ns=time.time_ns(), end_ns=time.time_ns()), "ahead of Tracker.now_ns"),
        (lambda t: t.record_phase("eval", start_ns=1, end_ns=t.now_ns()), "before this tracker's job start"),
        (
            lambda t: t.record_phase("eval", start_ns=t.now_ns(), end_ns=t.now_ns() + 3600 * 10**9),
            "ahead of Tracker.now_ns",
        ),
    ],
)
def test_stamps_outside_the_segment_are_refused_at_the_call(tmp_path: Path, record, message: str) -> None:  # type: ignore[no-untyped-def]
    with Tracker(tmp_path) as tracker:
        with pytest.raises(UserInputError, match=re.escape(message)):
            record(tracker)
        start = tracker.now_ns()
        tracker.record_step(start_ns=start, end_ns=tracker.now_ns(), tokens=8)
    ledger = build_ledger(run=read_run(tmp_path))  # the log stays readable
    assert ledger.steps.count == 1
    assert ledger.total_s < 3600  # no stamp from another clock stretched the wall time


def test_a_step_end_built_from_a_measured_duration_is_still_accepted(tmp_path: Path) -> None:
    """An end stamped as start + a measured 2 s (ahead of the clock when recorded) stays allowed."""
    with Tracker(tmp_path) as tracker:
        start = tracker.now_ns()
        tracker.record_step(start_ns=start, end_ns=start + 2 * 10**9, tokens=8)
    assert build_ledger(run=read_run(tmp_path)).steps.count == 1


# -- 2. MLPerf logs: --flop-per-token, --seq-len, --sol-tokens-per-s-per-gpu ------------------------


def test_mlperf_flop_per_token_override_gives_mfu_by_hand(shared: Path) -> None:
    ledger = mllog_ledger(log=read_mllog(shared / EOS_N8_LORA), model_flop_per_token=1e11)
    assert ledger.tokens == pytest.approx(TOKENS)
    assert ledger.mfu == pytest.approx(TOKENS * 1e11 / (WALL_S * GPUS * H100_BF16_PEAK), rel=1e-6)


def test_mlperf_seq_len_override_counts_tokens_at_that_length(shared: Path) -> None:
    ledger = mllog_ledger(log=read_mllog(shared / EOS_N8_LORA), seq_len=4096)
    assert ledger.tokens == pytest.approx(SEQUENCES * 4096)
    assert ledger.utilization.seq_len == 4096


def test_mlperf_sol_override_gives_the_efficiency(shared: Path) -> None:
    ledger = mllog_ledger(log=read_mllog(shared / EOS_N8_LORA), sol_tokens_per_s_per_accelerator=5000.0)
    assert ledger.sol_tokens_per_s == pytest.approx(5000.0 * GPUS)
    assert ledger.efficiency == pytest.approx(TOKENS / WALL_S / (5000.0 * GPUS), rel=1e-6)


def test_cli_flop_per_token_above_the_peak_is_refused_for_mlperf_logs(run_cli, shared: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("goodput", "report", str(shared / EOS_N8_LORA), "--flop-per-token", "1e14", "--json")
    assert result.code == 2
    assert "above the peak" in result.err
    assert "--flop-per-token" in result.err
    assert "Traceback" not in result.err


def test_cli_passes_the_overrides_for_mlperf_logs(run_cli, shared: Path) -> None:  # type: ignore[no-untyped-def]
    import json

    result = run_cli(
        "goodput", "report", str(shared / EOS_N8_LORA), "--flop-per-token", "1e11", "--seq-len", "4096",
        "--sol-tokens-per-s-per-gpu", "5000", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    tokens = SEQUENCES * 4096
    assert payload["tokens"] == pytest.approx(tokens)
    assert payload["mfu"] == pytest.approx(tokens * 1e11 / (WALL_S * GPUS * H100_BF16_PEAK), rel=1e-6)
    assert payload["sol_tokens_per_s"] == pytest.approx(5000.0 * GPUS)


# -- 5. a system description that contradicts the log's :::SYSJSON ----------------------------------


def test_a_system_json_of_another_run_is_refused(shared: Path) -> None:
    log = read_mllog(shared / EOS_N8_LORA)
    with pytest.raises(
        UserInputError, match=r"system_name 'Eos_n64', the log's 'Eos_n8'.*number_of_nodes 64"
    ):
        mllog_ledger(log=log, system=read_system_json(shared / EOS_N64_SYSTEM))
    same = mllog_ledger(log=log, system=read_system_json(shared / EOS_N8_SYSTEM))
    assert same.num_accelerators == GPUS


def test_cli_system_json_of_another_run_exits_2_in_one_line(run_cli, shared: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("goodput", "report", str(shared / EOS_N8_LORA), "--system", str(shared / EOS_N64_SYSTEM))
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert ":::SYSJSON" in result.err


# -- 7. run_stop samples_count of 0 or below ---------------------------------------------------------


def _with_run_stop_count(shared: Path, tmp_path: Path, count: str) -> Path:
    text = (shared / EOS_N8_LORA).read_text(encoding="utf-8")
    old = '"samples_count": 3456, "status": "success"'
    assert text.count(old) == 1
    path = tmp_path / "result_0.txt"
    path.write_text(text.replace(old, f'"samples_count": {count}, "status": "success"'), encoding="utf-8")
    return path


def test_a_negative_run_stop_count_is_refused_with_its_line(shared: Path, tmp_path: Path) -> None:
    path = _with_run_stop_count(shared, tmp_path, "-5")
    with pytest.raises(DataFileError, match=r"result_0\.txt:60: run_stop's samples_count"):
        read_mllog(path)


def test_cli_negative_run_stop_count_exits_2(run_cli, shared: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("goodput", "report", str(_with_run_stop_count(shared, tmp_path, "-5")))
    assert result.code == 2
    assert ":60:" in result.err
    assert "tracker" not in result.err


def test_a_zero_run_stop_count_gives_way_to_the_block_counters(shared: Path, tmp_path: Path) -> None:
    """The last block_stop counts 3456 sequences (line 56), as run_stop does in the original."""
    ledger = mllog_ledger(log=read_mllog(_with_run_stop_count(shared, tmp_path, "0")))
    assert ledger.tokens == pytest.approx(TOKENS)
    assert any("samples_count (line 60) is 0" in note for note in ledger.notes)
    assert "tracker" not in ledger.utilization.reason

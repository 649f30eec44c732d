"""MLPerf Training v4.0 result logs: golden values computed by hand from the log lines."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from lightspeed.errors import DataFileError
from lightspeed.goodput import (
    TruncatedLogWarning,
    load_benchmarks,
    mllog_ledger,
    read_mllog,
    read_system_json,
)

V4 = Path("data/mlperf/training_v4.0")
H200_LORA = V4 / "NVIDIA/results/h200_ngc24.04_nemo/llama2_70b_lora/result_0.txt"
EOS_GPT3 = V4 / "NVIDIA/results/eos_n64_ngc24.04_nemo/gpt3/result_0.txt"
GOOGLE_GPT3 = V4 / "Google/results/cloud-tpu-v5p-1024-maxtext/gpt3/result_0.txt"
INTEL_GPT3 = V4 / "Intel-HabanaLabs/results/HLS-Gaudi2-N128-PT/gpt3/result_0.txt"
JUNIPER_LORA = V4 / "JuniperNetworks/results/h100_n4_ngc24.1_pytorch_deepspeed/llama2_70b_lora/result_0.txt"


def test_h200_llama2_lora_times_by_hand(shared: Path) -> None:
    log = read_mllog(shared / H200_LORA)
    # init_start 1714993490208, init_stop 1714993577686 (ms)
    assert log.init_s == pytest.approx((1714993577686 - 1714993490208) / 1000)
    # run_start 1714993577687, run_stop 1714994988899: MLPerf's time to train
    assert log.time_to_train_s == pytest.approx((1714994988899 - 1714993577687) / 1000)
    assert log.time_to_train_s == pytest.approx(1411.212)
    assert log.benchmark == "llama2_70b_lora"
    assert log.status == "success"
    assert log.trained_count == 3072  # run_stop's samples_count
    assert len(log.blocks) == 5
    assert log.blocks[0].end_s - log.blocks[0].start_s == pytest.approx(
        (1714994217162 - 1714993577687) / 1000
    )
    assert [round(item.accuracy, 4) for item in log.evals if item.accuracy] == [
        0.9379,
        0.9331,
        0.9301,
        0.928,
        0.9249,
    ]


def test_h200_llama2_lora_ledger_by_hand(shared: Path) -> None:
    ledger = mllog_ledger(log=read_mllog(shared / H200_LORA))
    blocks_ms = [
        1714994217162 - 1714993577687,
        1714994402405 - 1714994247281,
        1714994587741 - 1714994432714,
        1714994773197 - 1714994617988,
        1714994958594 - 1714994803516,
    ]
    evals_ms = [
        1714994247281 - 1714994217162,
        1714994432714 - 1714994402405,
        1714994617987 - 1714994587741,
        1714994803516 - 1714994773197,
        1714994988899 - 1714994958594,
    ]
    assert ledger.total_s == pytest.approx((1714994988899 - 1714993490208) / 1000)
    assert ledger.productive_s == pytest.approx(sum(blocks_ms) / 1000)
    assert ledger.badput_s["eval"] == pytest.approx(sum(evals_ms) / 1000)
    assert ledger.badput_s["init"] == pytest.approx((1714993577686 - 1714993490208) / 1000)
    # 3072 sequences of 8192 tokens (MLCommons reference: --max_seq_len 8192)
    assert ledger.samples == 3072
    assert ledger.tokens == 3072 * 8192
    assert ledger.details["run_samples_per_s"] == pytest.approx(3072 / 1411.212)
    # Blocks train 1536, then 4 x 384 samples: times are scaled to the median block (384 samples).
    assert ledger.steps.unit == "block (scaled)"
    assert ledger.steps.count == 5
    assert ledger.steps.max_s == pytest.approx(blocks_ms[0] / 1000 * 384 / 1536)
    # Embedded :::SYSJSON: 1 node x 8 H200; MFU is computed and below 1 against the bf16 peak.
    assert ledger.num_accelerators == 8
    assert ledger.utilization.device == "h200-sxm"
    assert ledger.mfu is not None
    assert 0.1 < ledger.mfu < 1.0
    assert ledger.mfu == pytest.approx(ledger.step_mfu * ledger.goodput_fraction)
    # HFU (with the recomputed forward) comes out above 100% of the bf16 peak: the run computed in
    # FP8, so that figure is left out, saying why, rather than shown as an impossible number
    assert ledger.hfu is None
    assert ledger.utilization.above_peak_ratio is not None
    assert ledger.utilization.above_peak_ratio > 1.0
    assert "HFU n/a" in ledger.utilization.reason
    assert "--precision fp8" in ledger.utilization.reason
    fp8 = mllog_ledger(log=read_mllog(shared / H200_LORA), precision="fp8")
    assert fp8.hfu is not None
    assert fp8.mfu is not None
    assert fp8.hfu > fp8.mfu  # the reference recomputes activations


def test_lora_flops_are_two_forwards_plus_attention(shared: Path) -> None:
    from lightspeed.workload import flops_per_token, load_models

    ledger = mllog_ledger(log=read_mllog(shared / H200_LORA))
    full = flops_per_token(load_models().get("llama-2-70b"), seq_len=8192, convention="6N+causal-attention")
    attention_forward = full.attention_training_flop / 3
    assert ledger.utilization.model_flop_per_token == pytest.approx(2 * full.forward_flop + attention_forward)
    # the formula shown names the forward pass as a third of the training count, with both terms
    assert f"2 x {full.forward_flop:.4g} + {attention_forward:.4g} FLOP" in ledger.utilization.formula
    assert ledger.utilization.formula.endswith(f"forward = ({full.formula}) / 3")
    # Without weight gradients LoRA costs about 2/3 of full training.
    assert 0.6 < ledger.utilization.model_flop_per_token / full.training_flop < 0.75


def test_the_log_system_note_names_only_what_was_taken_from_it(shared: Path) -> None:
    log = read_mllog(shared / H200_LORA)
    assert "device and accelerator count taken from the log's :::SYSJSON line" in mllog_ledger(log=log).notes
    given = mllog_ledger(log=log, device="mi300x", num_accelerators=8)
    assert not any("SYSJSON" in note for note in given.notes)
    device_only = mllog_ledger(log=log, device="mi300x")
    assert "accelerator count taken from the log's :::SYSJSON line" in device_only.notes


def test_eos_gpt3_counts_tokens_and_uses_the_system_json(shared: Path) -> None:
    log = read_mllog(shared / EOS_GPT3)
    # 512 ranks log init_start; the earliest is 1715043538598 ms, init_stop 1715043829219.
    assert log.init_s == pytest.approx((1715043829219 - 1715043538598) / 1000)
    assert log.time_to_train_s == pytest.approx((1715046977115 - 1715043829220) / 1000)
    assert log.trained_count == 1245708288  # trained_samples after run_stop: tokens
    system = read_system_json(shared / V4 / "NVIDIA/eos_n64_ngc24.04_nemo.system.json")
    assert (system.num_nodes, system.accelerators_per_node, system.num_accelerators) == (64, 8, 512)
    ledger = mllog_ledger(log=log, system=system, precision="fp8")
    assert ledger.tokens == 1245708288
    assert ledger.samples == 1245708288 / 2048
    assert ledger.num_accelerators == 512
    assert ledger.utilization.device == "h100-sxm"
    assert ledger.utilization.peak_flop_per_s == pytest.approx(1979e12)  # dense FP8, H100 SXM
    assert ledger.mfu is not None
    assert ledger.mfu < 1.0
    assert ledger.steps.count == 24


def test_an_mfu_above_the_gemm_ceiling_points_at_the_precision(shared: Path) -> None:
    """NVIDIA's 512-H100 GPT-3 run trained in FP8: counted against the BF16 peak its step MFU comes
    to about 92%, above the 80.3% of the BF16 peak Hopper's best GEMMs reach (its family's measured
    ceiling): kept, but flagged with the precision to check. Against the FP8 peak (46%) no flag."""
    log = read_mllog(shared / EOS_GPT3)
    system = read_system_json(shared / V4 / "NVIDIA/eos_n64_ngc24.04_nemo.system.json")
    bf16 = mllog_ledger(log=log, system=system, precision="bf16")
    assert bf16.utilization.step_mfu is not None
    assert bf16.utilization.step_mfu > 0.803
    assert "above the 80% of the bf16 peak that h100-sxm's best GEMMs reach" in bf16.utilization.reason
    assert "--precision fp8" in bf16.utilization.reason
    fp8 = mllog_ledger(log=log, system=system, precision="fp8")
    assert fp8.utilization.step_mfu is not None
    assert fp8.utilization.step_mfu < 0.6
    assert fp8.utilization.reason == ""


def test_google_first_block_starts_at_run_start(shared: Path) -> None:
    log = read_mllog(shared / GOOGLE_GPT3)
    # No block_start before the first block_stop (1709184112964): it starts at run_start 1709183798092.
    assert log.blocks[0].end_s - log.blocks[0].start_s == pytest.approx(
        (1709184112964 - 1709183798092) / 1000
    )
    assert len(log.blocks) == 24
    ledger = mllog_ledger(log=log)
    assert any("points only" in note for note in ledger.notes)
    assert ledger.mfu is None
    assert "no system description" in ledger.utilization.reason


def test_intel_eval_inside_the_block_is_taken_out(shared: Path) -> None:
    log = read_mllog(shared / INTEL_GPT3)
    assert len(log.blocks) == 1
    ledger = mllog_ledger(log=log)
    first_eval = (1715299537054 - 1715299518451) / 1000  # eval_start .. eval_stop
    assert first_eval == pytest.approx(log.evals[0].end_s - log.evals[0].start_s)
    assert ledger.badput_s["eval"] == pytest.approx(sum(item.end_s - item.start_s for item in log.evals))
    block = log.blocks[0]
    assert ledger.productive_s == pytest.approx(block.end_s - block.start_s - ledger.badput_s["eval"])


def test_juniper_init_start_logged_as_interval_end(shared: Path) -> None:
    log = read_mllog(shared / JUNIPER_LORA)
    assert log.init_s == pytest.approx((1715111519054 - 1715111519052) / 1000)
    assert log.trained_count == 8064
    assert log.time_to_train_s == pytest.approx((1715114333488 - 1715111520968) / 1000)


def test_benchmark_table_has_sources() -> None:
    benchmarks = load_benchmarks()
    assert benchmarks["gpt3"].count_unit == "tokens"
    assert benchmarks["llama2_70b_lora"].seq_len == 8192
    assert all(item.source for item in benchmarks.values())


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "result_0.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _line(key: str, time_ms: int, event_type: str = "POINT_IN_TIME", **metadata: object) -> str:
    import json

    body = {
        "namespace": "",
        "time_ms": time_ms,
        "event_type": event_type,
        "key": key,
        "value": None,
        "metadata": metadata,
    }
    return ":::MLLOG " + json.dumps(body)


def test_bad_json_line_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, [_line("init_start", 0), ":::MLLOG {broken", _line("run_start", 5)])
    with pytest.raises(DataFileError, match=r"result_0.txt:2: an :::MLLOG line is not a JSON object"):
        read_mllog(path)


def test_clock_backwards_is_an_error(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [
            _line("init_start", 1000),
            _line("init_stop", 2000),
            _line("run_start", 3000),
            _line("run_stop", 2500),
        ],
    )
    with pytest.raises(DataFileError, match=r":4: run_stop at 2500 ms is before run_start at 3000 ms"):
        read_mllog(path)


def test_cut_log_is_partial(tmp_path: Path) -> None:
    lines = [_line("init_start", 0), _line("init_stop", 10), _line("run_start", 10), _line("block_start", 10)]
    path = _write(tmp_path, [*lines, _line("block_stop", 110, samples_count=64), ':::MLLOG {"time_ms": 1'])
    with warnings.catch_warnings():
        warnings.simplefilter("error", TruncatedLogWarning)
        with pytest.raises(TruncatedLogWarning):
            read_mllog(path)
    with pytest.warns(TruncatedLogWarning):
        log = read_mllog(path)
    assert log.partial
    ledger = mllog_ledger(log=log)
    assert ledger.partial
    assert ledger.total_s == pytest.approx(0.110)


def test_a_log_cut_after_an_evaluation_keeps_it(tmp_path: Path) -> None:
    """Cut after a finished evaluation, the run ends at its last event, not at the last block."""
    lines = [_line("init_start", 0), _line("init_stop", 10), _line("run_start", 10), _line("block_start", 10)]
    lines += [_line("block_stop", 110, samples_count=64), _line("eval_start", 110), _line("eval_stop", 140)]
    ledger = mllog_ledger(log=read_mllog(_write(tmp_path, [*lines, _line("block_start", 140)])))
    assert ledger.partial
    assert ledger.total_s == pytest.approx(0.140)  # 0 -> 140 ms
    assert ledger.badput_s["eval"] == pytest.approx(0.030)  # 110 -> 140 ms
    assert ledger.productive_s == pytest.approx(0.100)


def test_not_an_mllog(tmp_path: Path) -> None:
    path = _write(tmp_path, ["hello"])
    with pytest.raises(DataFileError, match="no :::MLLOG lines"):
        read_mllog(path)
    (tmp_path / "system.json").write_text(
        '{"number_of_nodes": "x", "accelerators_per_node": "8", "accelerator_model_name": "H100"}'
    )
    with pytest.raises(DataFileError, match="number_of_nodes"):
        read_system_json(tmp_path / "system.json")

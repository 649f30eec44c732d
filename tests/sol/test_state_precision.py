"""The format a hybrid's recurrent state is served in: vLLM's ``--mamba-ssm-cache-dtype``, SGLang's
``--mamba-ssm-dtype``, lightspeed's ``--state-precision``. Qwen3.5 asks for an FP32 state in its
config.json; held in BF16 it takes half the bytes, and the KV-cache budget holds more requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.sol.validation.infer_rows import read_inference_row
from lightspeed.sol.validation.published import read_table
from lightspeed.workload import ModelRegistry, load_model_file
from lightspeed.workload.recurrent import STATE_DTYPES, STATE_PRECISIONS

# Qwen3.5-35B-A3B (its config.json): 30 Gated DeltaNet blocks of 32 value heads, each a 128 x 128
# state; the causal convolution's window is 3 taps of q, k and v (16 x 128 + 16 x 128 + 32 x 128
# channels) in 16 bits.
QWEN_GDN_BLOCKS = 30
QWEN_STATE_VALUES = 32 * 128 * 128
QWEN_CONV_VALUES = 3 * (16 * 128 + 16 * 128 + 32 * 128)


def test_a_gated_deltanet_state_in_bf16_by_hand(models: ModelRegistry) -> None:
    qwen = models.get("qwen3.5-35b-a3b")
    bf16 = qwen.with_state_dtype("bfloat16").recurrent
    assert bf16 is not None
    assert bf16.sequence_state_bytes == QWEN_STATE_VALUES * 2 + QWEN_CONV_VALUES * 2
    fp32 = qwen.recurrent
    assert fp32 is not None
    assert fp32.state_dtype == "float32"
    assert fp32.sequence_state_bytes == QWEN_STATE_VALUES * 4 + QWEN_CONV_VALUES * 2


def test_a_mamba_state_in_bf16_by_hand(models: ModelRegistry) -> None:
    # Nemotron 3 Nano's Mamba-2 blocks: 64 heads of 64 channels, a state of 128; the convolution
    # runs over x (64 x 64), B and C (8 groups x 128 each), 3 taps kept
    nano = models.get("nemotron-3-nano-30b-a3b")
    state_values = 64 * 64 * 128
    conv_values = 3 * (64 * 64 + 2 * 8 * 128)
    default = nano.recurrent
    assert default is not None
    assert default.state_dtype == "float32"
    assert default.sequence_state_bytes == state_values * 4 + conv_values * 2
    bf16 = nano.with_state_dtype("bfloat16").recurrent
    assert bf16 is not None
    assert bf16.sequence_state_bytes == state_values * 2 + conv_values * 2


def test_a_model_without_recurrent_blocks_has_no_state_to_store(models: ModelRegistry) -> None:
    with pytest.raises(UserInputError, match=r"no recurrent .* blocks"):
        models.get("llama-3-8b").with_state_dtype("bfloat16")


def test_a_model_file_names_its_mamba_state_format(tmp_path: Path, models: ModelRegistry) -> None:
    source = Path(__file__).parents[2] / "src/lightspeed/workload/data/models/nemotron-3-nano-30b-a3b.toml"
    text = source.read_text(encoding="utf-8").replace(
        "chunk_size = 128\n", 'chunk_size = 128\nstate_dtype = "bfloat16"\n', 1
    )
    path = tmp_path / "nano.toml"
    path.write_text(text, encoding="utf-8")
    mixer = load_model_file(path).spec.recurrent
    assert mixer is not None
    assert mixer.state_dtype == "bfloat16"
    path.write_text(text.replace('state_dtype = "bfloat16"', 'state_dtype = "fp8"'), encoding="utf-8")
    with pytest.raises(DataFileError, match="state_dtype 'fp8' is not one of bfloat16, float16, float32"):
        load_model_file(path)


def _plan(run_cli: Any, *extra: str) -> dict[str, Any]:
    result = run_cli(
        "plan",
        "infer",
        "--model",
        "qwen3.5-35b-a3b",
        "--system",
        "dgx-h100",
        "--gpus",
        "1",
        "--isl",
        "1000",
        "--osl",
        "1000",
        "--json",
        *extra,
    )
    assert result.code == 0, result.err
    return dict(json.loads(result.out))


def test_plan_infer_holds_the_state_in_the_format_asked(run_cli: Any) -> None:
    model_default, bf16 = _plan(run_cli), _plan(run_cli, "--state-precision", "bf16")
    per_request = "kv_cache_per_request"
    saved = model_default["memory_bytes"][per_request] - bf16["memory_bytes"][per_request]
    assert saved == QWEN_GDN_BLOCKS * QWEN_STATE_VALUES * 2  # 2 of the FP32 state's 4 bytes
    assert bf16["batch_per_replica"] > model_default["batch_per_replica"]
    assert any("bfloat16 state" in line for line in bf16["assumptions"])
    assert any("float32 state" in line for line in model_default["assumptions"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--model", "llama-3-8b", "--state-precision", "bf16"), "llama-3-8b has no recurrent"),
        (("--model", "qwen3.5-35b-a3b", "--state-precision", "fp8"), "'fp8' is not one of"),
    ],
)
def test_a_state_precision_that_cannot_apply_is_one_line(
    run_cli: Any, args: tuple[str, ...], message: str
) -> None:
    result = run_cli("plan", "infer", "--system", "dgx-h100", "--gpus", "1", *args)
    assert result.code == 2
    assert message in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert not result.out


def _row_spec(tmp_path: Path, catalog: Catalog, models: ModelRegistry, model: str, precision: str) -> Any:
    header = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tTP\tGPUs\thardware\tprecision\tmetric\tmeasured"
    cells = f"ISL/OSL 1000/1000\tconcurrency 8\t1\t1\tH100 SXM\t{precision}\toutput tokens/s\t900"
    path = tmp_path / "rows.tsv"
    path.write_text(f"{header}\nR1\tinfer\tvLLM 2026\t{model}\t{cells}\n", encoding="utf-8")
    return read_inference_row(read_table(path)[0], catalog, models)


def test_a_row_that_names_the_servers_state_flag_is_read_so(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    spec = _row_spec(tmp_path, catalog, models, "Qwen3.5-35B-A3B", "bf16; --mamba-ssm-cache-dtype bfloat16")
    assert spec.model.recurrent.state_dtype == "bfloat16"
    assert spec.model_name == "qwen3.5-35b-a3b"  # the catalog's model, served with another state
    assert any("recurrent state bfloat16" in line for line in spec.assumptions)
    auto = _row_spec(tmp_path, catalog, models, "Qwen3.5-35B-A3B", "bf16; --mamba-ssm-cache-dtype auto")
    assert auto.model.recurrent.state_dtype == "float32"  # auto: the config.json's own


def test_a_state_flag_on_a_model_without_state_is_said_and_left_aside(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    spec = _row_spec(tmp_path, catalog, models, "Llama 3.1 8B", "bf16; --mamba-ssm-cache-dtype bfloat16")
    assert spec.model.recurrent is None
    assert any("left aside" in line for line in spec.assumptions)


def test_every_option_name_is_a_state_format() -> None:
    # --state-precision's fp32/bf16/fp16 are the mixers' float32/bfloat16/float16
    assert STATE_PRECISIONS == {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
    assert set(STATE_PRECISIONS.values()) == set(STATE_DTYPES)


def test_the_simulator_holds_the_state_in_the_format_asked(run_cli: Any) -> None:
    def simulated(*extra: str) -> dict[str, Any]:
        result = run_cli(
            "simulate", "--model", "qwen3.5-35b-a3b", "--system", "dgx-h100", "--gpus", "1",
            "--concurrency", "16", "--requests", "64", "--isl", "1000", "--osl", "200", "--json", *extra,
        )  # fmt: skip
        assert result.code == 0, result.err
        return dict(json.loads(result.out))

    model_default, bf16 = simulated(), simulated("--state-precision", "bf16")
    # the same 16 sequences hold half the state bytes: the cache's fullest point is lower
    assert bf16["max_kv_use"] < model_default["max_kv_use"]
    assert any("bfloat16 state" in line for line in bf16["assumptions"])
    assert any("float32 state" in line for line in model_default["assumptions"])

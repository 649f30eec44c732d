"""``--model PATH`` works wherever ``--model`` is taken (expert check M2, defect 2): a Hugging Face
config.json (or its folder) is the model it describes, as in ``model show``, ``memory`` and
``flops`` (docs/workload.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# meta-llama/Meta-Llama-3-8B config.json as published (the fields lightspeed reads)
LLAMA_3_8B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "hidden_act": "silu",
    "torch_dtype": "bfloat16",
    "attention_bias": False,
}


@pytest.fixture
def config_json(tmp_path: Path) -> Path:
    folder = tmp_path / "llama3"
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(json.dumps(LLAMA_3_8B), encoding="utf-8")
    return path


def test_bench_gemm_takes_a_config_path(run_cli, config_json: Path) -> None:  # type: ignore[no-untyped-def]
    # the shapes are made before anything runs: a TP that does not split them is refused, which
    # shows the path was read as the model (before: "unknown model '<path>'")
    refused = run_cli("bench", "gemm", "--model", str(config_json), "--tp", "3", "--no-save")
    assert refused.code == 2
    assert "tp=3 does not divide" in refused.err
    assert "unknown model" not in refused.err
    # its folder too, and a quick run of its shapes: 1 row, 8 ranks (4096 x 32 heads / 8 ...)
    made = run_cli("bench", "gemm", "--model", str(config_json.parent), "--tp", "8", "--tokens", "1",
                   "--quick", "--no-save", "--json", "--threads", "1")  # fmt: skip
    assert made.code == 0, made.err
    dims = [(r["details"]["m"], r["details"]["n"], r["details"]["k"]) for r in json.loads(made.out)]
    assert dims == [
        (1, (32 + 2 * 8) * 128 // 8, 4096),  # qkv
        (1, 4096, 32 * 128 // 8),  # attention out
        (1, 2 * 14336 // 8, 4096),  # mlp up
        (1, 4096, 14336 // 8),  # mlp down
        (1, 128256 // 8, 4096),  # lm head
    ]


def test_a_missing_config_path_is_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    refused = run_cli("bench", "gemm", "--model", str(tmp_path / "nope" / "config.json"), "--no-save")
    assert refused.code == 2
    assert "no such file" in refused.err
    assert "Traceback" not in refused.err


def test_cost_infer_takes_a_config_path_as_model(run_cli, config_json: Path) -> None:  # type: ignore[no-untyped-def]
    by_path = run_cli("cost", "infer", "--model", str(config_json), "--system", "dgx-h100", "--json")
    assert by_path.code == 0, by_path.err
    by_name = run_cli("cost", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--json")
    assert by_name.code == 0, by_name.err
    # the same architecture: the same prediction, whatever the model is called
    path_payload, name_payload = json.loads(by_path.out), json.loads(by_name.out)
    assert path_payload["model"] == "llama3"
    assert path_payload["output_tokens_per_s"] == pytest.approx(name_payload["output_tokens_per_s"], rel=1e-9)
    assert path_payload["energy_per_token_j"] == pytest.approx(name_payload["energy_per_token_j"], rel=1e-9)


def test_plan_infer_takes_a_config_path_as_model(run_cli, config_json: Path) -> None:  # type: ignore[no-untyped-def]
    by_path = run_cli("plan", "infer", "--gpu", "h100-sxm", "--model", str(config_json), "--json")
    assert by_path.code == 0, by_path.err
    by_name = run_cli("plan", "infer", "--gpu", "h100-sxm", "--model", "llama-3-8b", "--json")
    assert json.loads(by_path.out)["output_tokens_per_s"] == pytest.approx(
        json.loads(by_name.out)["output_tokens_per_s"], rel=1e-9
    )


def test_plan_train_takes_a_config_path_as_model(run_cli, config_json: Path) -> None:  # type: ignore[no-untyped-def]
    job = ("--system", "dgx-h100", "--tp", "2", "--global-batch", "8", "--json")
    by_path = run_cli("plan", "train", "--model", str(config_json), *job)
    assert by_path.code == 0, by_path.err
    by_name = run_cli("plan", "train", "--model", "llama-3-8b", *job)
    step_s = json.loads(by_name.out)["step_time_s"]
    assert json.loads(by_path.out)["step_time_s"] == pytest.approx(step_s, rel=1e-9)

"""Selective recomputation costs time for what the stack reruns, the modules memory stops keeping.

Megatron-Core's ``selective`` reruns core attention (its ``recompute_modules`` default,
``["core_attn"]``; the ``megatron-core-2024`` profile): with a fused kernel that frees no memory
and costs the attention forward again. The default profile reruns norms, activations and MLA's
up-projections instead: cheap elementwise work that frees their outputs."""

from __future__ import annotations

import json
from typing import Any

import pytest

SEQ, HIDDEN, LAYERS = 8192, 4096, 32  # Llama 3 8B


def _plan(run_cli: Any, stack: str, recompute: str) -> dict[str, Any]:
    result = run_cli(
        "plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "8", "--seq", str(SEQ),
        "--global-batch", "64", "--tp", "2", "--micro-batch", "1", "--recompute", recompute,
        "--stack", stack, "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    return dict(json.loads(result.out))


def test_megatron_selective_reruns_the_attention_forward_and_keeps_its_memory(run_cli: Any) -> None:
    none, selective = (_plan(run_cli, "megatron-core-2024", recompute) for recompute in ("none", "selective"))
    assert selective["memory_per_gpu_bytes"] == none["memory_per_gpu_bytes"]
    assert selective["breakdown_s"]["recompute"] > 0.0
    assert selective["step_time_s"] > none["step_time_s"]
    # the hardware FLOP it adds per token is causal attention's forward: QK^T and AV over half
    # the sequence on average, 2 x 2 x (s/2) x h per layer = 2 s h, on every layer
    attention_forward = 2 * SEQ * HIDDEN * LAYERS
    added = selective["hfu"] / selective["mfu"] - none["hfu"] / none["mfu"]
    assert added == pytest.approx(attention_forward / none["model_flop_per_token"], rel=1e-6)


def test_the_default_profiles_selective_reruns_elementwise_work_only(run_cli: Any) -> None:
    none, selective = (_plan(run_cli, "published-median", recompute) for recompute in ("none", "selective"))
    assert selective["memory_per_gpu_bytes"] < none["memory_per_gpu_bytes"]
    # norms and activations rerun: no matmul or attention FLOP is added
    assert selective["hfu"] / selective["mfu"] == pytest.approx(none["hfu"] / none["mfu"], rel=1e-9)
    assert 0.0 < selective["breakdown_s"]["recompute"] < 0.05 * selective["step_time_s"]

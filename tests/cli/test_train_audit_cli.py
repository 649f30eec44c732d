"""The training audit's command-line defects: refusals that are one line, a token budget that the
search shows, plan files read as the docs say, and memory counted in the format trained in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error

LLAMA_8B_PARAMS = 8_030_261_248  # its checkpoint's parameters (embeddings and LM head untied)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--tp", "8", "--pp", "8", "--schedule", "interleaved"], ("interleaved schedule needs vpp=2",)),
        (["--tp", "8", "--schedule", "interleaved"], ("schedule interleaved", "pp=1 has one")),
        (["--tp", "8", "--pp", "8", "--schedule", "zb1p", "--vpp", "2"], ("vpp=2", "zb1p would ignore")),
    ],
)
def test_a_schedule_without_what_it_needs_is_one_line(
    run_cli: Any, args: list[str], words: tuple[str, ...]
) -> None:
    base = ["plan", "train", "--model", "llama-3-70b", "--system", "8xdgx-h100", "--global-batch", "64"]
    one_line_error(run_cli(*base, *args), *words)


def test_search_shows_the_time_to_train_of_each_plan(run_cli: Any) -> None:
    args = ["search", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--global-batch", "64",
            "--tokens", "1T", "--top", "2"]  # fmt: skip
    payload = json.loads(run_cli(*args, "--json").out)
    for plan in payload["plans"]:
        # 1e12 tokens in steps of 64 x 4096 tokens on 8 GPUs
        seconds = 1e12 / (64 * 4096) * plan["step_time_s"]
        assert plan["time_to_train_s"] == pytest.approx(seconds)
        assert plan["gpu_hours"] == pytest.approx(seconds * 8 / 3600)
    table = run_cli(*args)
    assert table.code == 0
    assert "to train" in table.out
    assert "GPU-h" in table.out


def _plan_file(tmp_path: Path, kind: str, line: str = "") -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(
        f'schema_version = 1\nkind = "{kind}"\nmodel = "llama-3-8b"\nsystem = "dgx-h100"\n'
        f"global_batch_size = 64\n{line}\n",
        encoding="utf-8",
    )
    return path


def test_a_string_where_a_number_goes_is_refused(run_cli: Any, tmp_path: Path) -> None:
    # docs/plan-files.md: 'a wrong type names the key (Expected int | null, got str - at $.pp)'
    path = _plan_file(tmp_path, "training-plan", 'pp = "2"')
    one_line_error(
        run_cli("plan", "train", "--config", str(path)), "Expected `int | null`, got `str`", "$.pp"
    )


def test_a_file_of_another_kind_names_the_command_that_runs_it(run_cli: Any, tmp_path: Path) -> None:
    path = _plan_file(tmp_path, "training-search")
    one_line_error(
        run_cli("plan", "train", "--config", str(path)),
        "is a 'training-search' file, not a 'training-plan'",
        "run it with 'lightspeed search train --config",
    )


def test_memory_refuses_gradients_no_recipe_stores(run_cli: Any) -> None:
    result = run_cli("memory", "--model", "llama-3-8b", "--training", "--grad-precision", "int4")
    one_line_error(result, "no training recipe stores gradients in int4", "fp32")


def test_memory_counts_the_nvfp4_copy_at_its_size(run_cli: Any) -> None:
    # bf16 weights 2 B + NVFP4 copy 0.5 + 1/16 B (an 8-bit scale a 16-element block) + fp32 gradients
    # 4 B + Adam moments 8 B + fp32 master weights 4 B
    payload = json.loads(
        run_cli("memory", "--model", "llama-3-8b", "--training", "--precision", "nvfp4", "--json").out
    )
    assert payload["bytes_per_param"] == pytest.approx(2 + 0.5625 + 4 + 8 + 4)
    assert payload["components"]["weights"] == pytest.approx(2.5625 * LLAMA_8B_PARAMS)


def test_flops_refuses_causal_where_the_convention_halves_already(run_cli: Any) -> None:
    result = run_cli(
        "flops", "--model", "llama-3-8b", "--tokens", "1T", "--convention", "6N+causal-attention", "--causal"
    )
    one_line_error(result, "--causal", "6N+causal-attention", "change nothing")

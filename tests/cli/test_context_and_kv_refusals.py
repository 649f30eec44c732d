"""From the command line: a sequence past the model's context (noted, or refused for a learned
position table), a 4-bit KV cache on a GPU without FP4, the plans a training search leaves out
because the stack refuses them, and an empty model name.

Golden figures: Llama 3 8B's context is 8,192 positions (meta-llama/Meta-Llama-3-8B
config.json, RoPE); GPT-3's and OPT-66B's positions are a learned table of 2,048 (Brown et al.
2020; facebook/opt-66b config.json). H100 computes in FP8 but not FP4 (Blackwell's).
"""

from __future__ import annotations

import json

from expect import one_line_error

LLAMA_NOTE = "is above llama-3-8b's context of 8,192 tokens (max_seq_len)"
H100 = ("--gpu", "h100-sxm", "--gpus", "1")


def test_plan_infer_notes_isl_osl_past_the_context(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = ("plan", "infer", "--model", "llama-3-8b", *H100, "--isl", "8192", "--osl", "1")
    result = run_cli(*args, "--json")
    assert result.code == 0, result.err
    assert f"isl+osl 8,193 {LLAMA_NOTE}" in json.loads(result.out)["assumptions"]
    table = run_cli(*args)
    assert table.code == 0, table.err
    assert "isl+osl 8,193 is above llama-3-8b's context" in table.out


def test_plan_train_notes_and_refuses(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--tp", "8",
        "--global-batch", "8", "--seq", "16384", "--no-fit-check", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert f"seq_len 16,384 {LLAMA_NOTE}" in json.loads(result.out)["assumptions"]
    refused = run_cli(
        "plan", "train", "--model", "gpt-3-175b", "--system", "8xdgx-h100", "--gpus", "64", "--tp", "8",
        "--pp", "8", "--global-batch", "64", "--seq", "16384", "--no-fit-check",
    )  # fmt: skip
    one_line_error(refused, "seq_len 16,384", "learned position table of 2,048 entries", "--model-config")


def test_search_train_notes_context_and_stack_refusals(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "search", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--global-batch", "64",
        "--seq", "16384", "--stack", "megatron-deepspeed-2022", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    notes = json.loads(result.out)["notes"]
    assert f"seq_len 16,384 {LLAMA_NOTE}" in notes
    left_out = [note for note in notes if " left out: " in note]
    assert len(left_out) == 2, notes  # ZeRO-2/3 under a pipeline, and interleaved schedules
    count, rest = left_out[0].split(" ", 1)
    assert int(count.replace(",", "")) > 0
    assert rest.startswith("plans with ZeRO-2/3 and pp>1 left out: DeepSpeed's pipeline engine refuses")
    assert "plans with the interleaved schedule left out: " in left_out[1]


def test_search_infer_refuses_past_a_learned_table(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "search", "infer", "--model", "opt-66b", "--system", "dgx-h100", "--isl", "2000", "--osl", "49"
    )
    one_line_error(result, "isl+osl 2,049 is above opt-66b's learned position table of 2,048 entries")


def test_simulate_notes_and_refuses(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "simulate", "--model", "llama-3-8b", *H100, "--isl", "8190", "--osl", "4",
        "--requests", "8", "--concurrency", "2", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert f"isl+osl 8,194 {LLAMA_NOTE}" in json.loads(result.out)["assumptions"]
    refused = run_cli(
        "simulate",
        "--model",
        "opt-66b",
        "--system",
        "dgx-h100",
        "--isl",
        "2000",
        "--osl",
        "49",
        "--requests",
        "8",
    )
    one_line_error(refused, "isl+osl 2,049 is above opt-66b's learned position table of 2,048 entries")


def test_a_4_bit_kv_cache_on_hopper_is_refused(run_cli) -> None:  # type: ignore[no-untyped-def]
    for command in (("plan", "infer"), ("simulate", "--requests", "8")):
        result = run_cli(
            *command,
            "--model",
            "llama-3-8b",
            *H100,
            "--isl",
            "4096",
            "--osl",
            "1024",
            "--kv-precision",
            "nvfp4",
        )
        one_line_error(result, "KV cache nvfp4", "h100-sxm", "use --kv-precision fp8")


def test_an_empty_model_name_says_so(run_cli) -> None:  # type: ignore[no-untyped-def]
    for args in (("model", "show", ""), ("model", "show", "  "), ("flops", "--model", "", "--tokens", "1e9")):
        one_line_error(run_cli(*args), "the model name is empty", "lightspeed model list")
    one_line_error(
        run_cli("model", "show", "--config", ""), "--config: the path is empty", "lightspeed model list"
    )
    # plan, search and simulate read --model-config through the job config: an empty path says so
    for command in (("plan", "infer"), ("simulate",), ("search", "train", "--global-batch", "64")):
        refused = run_cli(*command, "--model-config", " ", "--system", "dgx-h100", "--gpus", "8")
        one_line_error(refused, "the model config path is empty", "--model-config PATH")

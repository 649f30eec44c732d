"""``lightspeed plan infer``, ``search infer`` and the inference rows of ``validate``, from the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error

PLAN = ["plan", "infer", "--model", "llama-3-70b", "--system", "dgx-h100", "--gpus", "2", "--tp", "2"]
SEARCH = ["search", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--precision", "fp8"]


def test_plan_infer_json_contract(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        *PLAN, "--precision", "fp8", "--isl", "1000", "--osl", "1000", "--concurrency", "64", "--json"
    )
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    for key in (
        "ttft_s",
        "tpot_s",
        "output_tokens_per_s",
        "output_tokens_per_s_per_gpu",
        "max_batch",
        "bound",
    ):
        assert key in payload
    assert payload["output_tokens_per_s_per_gpu"] == pytest.approx(payload["output_tokens_per_s"] / 2)
    assert payload["batch_per_replica"] == 64 <= payload["max_batch"]
    assert payload["plan"]["tp"] == 2
    assert payload["precisions"]["kv_cache"] == "fp8"
    assert sum(payload["iteration_breakdown_s"].values()) == pytest.approx(payload["iteration_s"])


def test_plan_infer_table_and_options(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        *PLAN,
        "--precision",
        "fp8",
        "--draft-tokens",
        "3",
        "--acceptance",
        "0.8",
        "--arrival-rate",
        "2",
    )
    assert result.code == 0, result.err
    assert "TTFT" in result.out
    assert "bound:" in result.out
    assert "speculative decoding" in result.out
    pooled = run_cli(
        "plan", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--disaggregated", "2:6", "--json"
    )
    assert pooled.code == 0, pooled.err
    payload = json.loads(pooled.out)
    assert payload["batching"] == "disaggregated"
    assert payload["kv_transfer_s"] > 0


BASE = ["plan", "infer", "--model", "llama-3-70b"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ["--system", "dgx-h100", "--gpus", "1", "--precision", "bf16"],
            ("does not fit", "a plan that fits: --tp 2 --pp 1"),
        ),
        (["--system", "2xdgx-h100", "--tp", "16", "--precision", "fp8"], ("KV heads", "--kv-replication")),
        (["--system", "dgx-h100", "--tp", "8", "--precision", "fp8", "--arrival-rate", "1e4"], ("exceed",)),
        (["--system", "dgx-h100", "--tp", "8", "--disaggregated", "one:two"], ("P:D",)),
        (
            ["--system", "dgx-a100", "--tp", "8", "--precision", "fp8", "--activation-precision", "fp8"],
            ("a100-sxm", "fp8"),
        ),
        (["--system", "dgx-h100", "--tp", "3"], ("do not split",)),
    ],
)
def test_plan_infer_bad_input_is_one_line(run_cli, args: list[str], words: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli(*BASE, *args), *words)


def test_search_infer_json_and_plot(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plot = tmp_path / "pareto.png"
    result = run_cli(
        *SEARCH,
        "--isl",
        "2048",
        "--osl",
        "256",
        "--max-ttft",
        "1s",
        "--max-tpot",
        "30ms",
        "--plot",
        str(plot),
        "--json",
    )
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    best = payload["best"]
    assert best["ttft_s"] <= 1.0
    assert best["tpot_s"] <= 0.030
    assert payload["frontier"]
    assert payload["num_points_feasible"] >= 1
    assert plot.is_file()
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert payload["plots"] == [str(plot)]


def test_search_infer_table(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*SEARCH, "--max-tpot", "40ms")
    assert result.code == 0, result.err
    assert "Pareto frontier" in result.out
    assert "constraint:" in result.out


def test_search_infer_unreachable_bound(run_cli) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli(*SEARCH, "--max-tpot", "0.1ms"), "no deployment", "lowest TPOT")
    one_line_error(run_cli(*SEARCH, "--max-ttft", "-1s"), "--max-ttft")


def test_validate_predicts_the_inference_rows(run_cli, shared: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("validate", str(shared / "validation" / "published-dev.tsv"), "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    infer = [row for row in payload["rows"] if row["kind"] == "infer"]
    assert infer
    assert all(row["status"] == "ok" for row in infer)
    assert payload["summary"]["infer"]["median_abs_error"] <= 0.15


def test_search_infer_on_part_of_a_node(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*SEARCH, "--gpus", "2", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["estimate"]["num_gpus"] == 2
    one_line_error(run_cli(*SEARCH[:4], "--system", "2xdgx-h100", "--gpus", "9"), "part of one node")


def test_serving_stack_is_chosen_by_name(run_cli) -> None:  # type: ignore[no-untyped-def]
    # TensorRT-LLM 0.5-0.7 ran without CUDA graphs: its profile pays host time every iteration
    # (iteration_overhead_s in stacks.toml), the 2025 default none; an SGLang dense deployment
    # runs on the same fitted kernels as TensorRT-LLM 2025 (the KV cache's format named: SGLang's
    # default is the model's 16-bit dtype, TensorRT-LLM's FP8).
    from lightspeed.sol import load_serving_stack

    args = (*PLAN, "--precision", "fp8", "--kv-precision", "fp8", "--isl", "1000", "--osl", "1000")
    args = (*args, "--concurrency", "64", "--json")
    runs = {
        name: json.loads(run_cli(*args, "--serving", name).out) for name in ("trtllm-2023", "sglang-2025")
    }
    default = json.loads(run_cli(*args).out)
    assert default["iteration_breakdown_s"]["host"] == 0.0
    overhead = load_serving_stack("trtllm-2023").iteration_overhead_s
    assert overhead > 0
    assert runs["trtllm-2023"]["iteration_breakdown_s"]["host"] == pytest.approx(overhead)
    assert runs["trtllm-2023"]["output_tokens_per_s"] < default["output_tokens_per_s"]
    assert runs["sglang-2025"]["output_tokens_per_s"] == pytest.approx(default["output_tokens_per_s"])
    search = [
        run_cli(*SEARCH, "--max-tpot", "40ms", "--json", *extra)
        for extra in ((), ("--serving", "trtllm-2023"))
    ]
    assert all(result.code == 0 for result in search), [result.err for result in search]
    rates = [json.loads(result.out)["best"]["output_tokens_per_s"] for result in search]
    assert rates[1] < rates[0]
    one_line_error(
        run_cli(*PLAN, "--serving", "sglang-2099"), "unknown serving stack 'sglang-2099'", "sglang-2025"
    )
    # an empty name is a wrong name, not the default
    one_line_error(run_cli(*PLAN, "--serving", ""), "the serving stack name is empty")


def test_a_model_is_served_in_the_format_it_is_released_in(run_cli) -> None:  # type: ignore[no-untyped-def]
    # DeepSeek-V3 ships FP8 weights (README_WEIGHTS.md): on 8 H200 at TP 8 it fits without
    # --precision, where BF16 (1.34 TB of weights against 8 x 141 GB) does not.
    deepseek = ["plan", "infer", "--model", "deepseek-v3", "--system", "dgx-h200", "--gpus", "8", "--tp", "8"]
    result = run_cli(*deepseek, "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["plan"]["precision"] == "fp8"
    assert "fp8 is the format DeepSeek-V3 is released in" in " ".join(payload["assumptions"])
    # By hand: 671.03e9 parameters at 1 B, the embedding table and LM head (129,280 x 7,168 each) at
    # 2 B, split 8 ways, except MLA's down projections (7,168 x (1,536 + 576) on 61 layers) and the
    # routers (58 x 256 x 7,168), which every TP rank holds whole.
    table = 129_280 * 7_168
    replicated = 61 * 7_168 * (1_536 + 576) + 58 * 256 * 7_168
    by_hand = (671.03e9 + 2 * table) / 8 + replicated * 7 / 8
    assert payload["memory_bytes"]["weights"] == pytest.approx(by_hand, rel=0.005)
    assert payload["memory_bytes"]["kv_cache"] > 0
    refused = run_cli(*deepseek, "--precision", "bf16")
    assert refused.code == 2
    assert "does not fit" in one_line_error(refused)


def test_gpt_oss_is_served_in_mxfp4_with_bf16_attention(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "plan", "infer", "--model", "gpt-oss-120b", "--system", "dgx-h100", "--gpus", "1", "--json"
    )
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    precisions = payload["precisions"]
    assert (precisions["weights"], precisions["attention_weights"], precisions["compute"]) == (
        "mxfp4",
        "bf16",
        "bf16",
    )
    # OpenAI's model card: the checkpoint is 60.8 GiB
    assert payload["memory_bytes"]["weights"] / 2**30 == pytest.approx(60.8, rel=0.01)


def test_a_config_json_gives_its_release_format(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
    # DeepSeek-V3's config.json says quant_method 'fp8': served in FP8 without --precision
    result = run_cli(
        "plan", "infer", "--config", str(fixtures / "deepseek-v3" / "config.json"), "--system", "dgx-h200",
        "--gpus", "8", "--tp", "8", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert json.loads(result.out)["plan"]["precision"] == "fp8"
    # a quantization block the importer cannot read is said in the assumptions, not guessed silently
    config = json.loads((fixtures / "llama-3-8b" / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "bitsandbytes", "load_in_4bit": True}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = run_cli("plan", "infer", "--config", str(path), "--system", "dgx-h100", "--gpus", "1", "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["plan"]["precision"] == "bf16"
    assert any("'bitsandbytes' is not a format lightspeed reads" in line for line in payload["assumptions"])


def test_search_infer_searches_the_release_format(run_cli) -> None:  # type: ignore[no-untyped-def]
    # one node of H200 holds DeepSeek-V3 only in its released FP8 (BF16 needs 1.34 TB): the search
    # finds deployments without --precision, all in FP8
    result = run_cli(
        "search", "infer", "--model", "deepseek-v3", "--system", "dgx-h200", "--isl", "1000", "--osl", "1000",
        "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["best"]["plan"]["precision"] == "fp8"
    assert payload["frontier"]
    assert all(point["plan"].split()[-1] == "fp8" for point in payload["frontier"])


def test_a_server_whose_host_time_is_unpublished_says_so(run_cli) -> None:  # type: ignore[no-untyped-def]
    # vLLM schedules between GPU steps (async scheduling is opt-in) but no source gives that time:
    # the assumptions say it is not costed, where TensorRT-LLM's profiles cost theirs
    args = (*PLAN, "--precision", "fp8", "--concurrency", "8", "--json")
    said = {
        name: " ".join(json.loads(run_cli(*args, "--serving", name).out)["assumptions"])
        for name in ("vllm-2025", "trtllm-2025", "trtllm-2023")
    }
    assert "scheduling between steps not costed" in said["vllm-2025"]
    assert "not costed" not in said["trtllm-2025"] + said["trtllm-2023"]


def test_a_mixed_checkpoint_is_priced_from_its_effective_bits(run_cli) -> None:  # type: ignore[no-untyped-def]
    # NVIDIA's MLPerf Mixtral checkpoint on B200: 7.25 effective bits over NVFP4 and FP8 layers,
    # 81.25% of the linear weights in FP8. Mixtral's 46.44e9 linear weights (tests/sol/
    # test_mixed_checkpoints.py) at 0.1875 x 0.5625 + 0.8125 x 1 B instead of 0.5625 B: 16.5e9
    # bytes more than all-NVFP4.
    mixtral = ["plan", "infer", "--model", "mixtral-8x7b", "--system", "dgx-b200", "--gpus", "1"]
    mixtral += ["--isl", "427", "--osl", "145", "--json"]
    nvfp4 = json.loads(run_cli(*mixtral, "--precision", "nvfp4").out)
    result = run_cli(*mixtral, "--precision", "nvfp4", "--effective-bits", "7.25")
    assert result.code == 0, result.err
    mixed = json.loads(result.out)
    assert mixed["plan"]["effective_bits"] == 7.25
    extra = mixed["memory_bytes"]["weights"] - nvfp4["memory_bytes"]["weights"]
    assert extra == pytest.approx(46.44e9 * (0.1875 * 0.5625 + 0.8125 - 0.5625), rel=0.005)
    assert mixed["output_tokens_per_s"] < nvfp4["output_tokens_per_s"]
    assert "81% of those layers (by parameters) kept in fp8" in " ".join(mixed["assumptions"])


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--precision", "nvfp4", "--effective-bits", "9"], ("between 4 and 8", "--precision fp8")),
        (["--precision", "bf16", "--effective-bits", "6"], ("neither", "--precision nvfp4")),
        (["--precision", "nvfp4", "--effective-bits", "nan"], ("--effective-bits",)),
        (["--precision", "nvfp4", "--effective-bits", "20"], ("--effective-bits", "16")),
    ],
)
def test_impossible_effective_bits_are_one_line(run_cli, args: list[str], words: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    base = ["plan", "infer", "--model", "mixtral-8x7b", "--system", "dgx-b200", "--gpus", "1"]
    one_line_error(run_cli(*base, *args), *words)


def test_search_infer_keeps_the_mixed_checkpoint(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "search", "infer", "--model", "mixtral-8x7b", "--system", "dgx-b200", "--gpus", "8", "--isl", "427",
        "--osl", "145", "--precision", "nvfp4", "--effective-bits", "7.25", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["best"]["plan"]["effective_bits"] == 7.25
    assert all("(7.25 effective bits)" in point["plan"] for point in payload["frontier"])

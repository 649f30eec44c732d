"""Bad input to ``lightspeed validate`` (round 12): a row naming a list of runs, a latency or a rate
no run reaches from above, a server with no profile, and a structured row's fix said in its fields.

Hand figures used below (public sources):

* Llama 3.1 8B: 8.03e9 parameters (Meta's model card); Llama 3.3 70B: 70.6e9.
* H100 SXM: fastest dense peak FP8 1,979 TFLOP/s (NVIDIA H100 datasheet).
* A day is 86,400 s.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad
from lightspeed.sol.validation.plausibility import check_serving_figure
from lightspeed.sol.validation.readings import Reading, RowError
from lightspeed.sol.validation.structured import load_published_runs
from lightspeed.workload import ModelRegistry
from user_rows import serving_row, validated_rows

LLAMA_8B_PARAMS = 8.03e9
LLAMA_70B_PARAMS = 70.6e9
H100_FASTEST_PEAK = 1979e12  # FLOP/s, dense FP8
DAY_S = 86_400.0


def _ratio(message: str) -> float:
    found = re.search(r"is ([\d.,e+]+)x", message)
    assert found is not None, message
    return float(found.group(1).replace(",", ""))


# --- defect 1: a list of runs in the load cell ---------------------------------------------------


@pytest.mark.parametrize(
    ("load", "per"),
    [
        ("batch sizes 1, 8 and 64", "batch size"),
        ("BS 1/8/64", "batch size"),
        ("concurrency 1, 4, 16, 64", "concurrency"),
        ("1, 8 or 64 concurrent users", "concurrency"),
    ],
)
def test_a_load_naming_several_runs_is_refused(run_cli: Any, tmp_path: Path, load: str, per: str) -> None:
    # before: 'batch sizes ...' was no load (the throughput predicted at the most load) and
    # 'BS 1/8/64' or 'concurrency 1, 4, ...' its first number
    rows = validated_rows(
        run_cli, tmp_path, serving_row("R", load, "Output token throughput (tok/s)", "2000")
    )
    assert rows["R"]["predicted"] is None
    assert "names several runs" in rows["R"]["reason"]
    assert f"write one row per {per}" in rows["R"]["reason"]


def test_one_load_beside_other_numbers_is_still_read(run_cli: Any, tmp_path: Path) -> None:
    rows = validated_rows(
        run_cli,
        tmp_path,
        serving_row("A", "batch 1,024", "Output token throughput (tok/s)", "20000"),  # a thousands comma
        serving_row("B", "concurrency 16, 500 requests", "Output token throughput (tok/s)", "2000"),
        serving_row("C", "batch 64", "Output token throughput (tok/s)", "5000"),
    )
    for row_id in ("A", "B", "C"):
        assert rows[row_id]["predicted"] is not None, rows[row_id]["reason"]
    assert any("16 in flight" in note for note in rows["B"]["assumptions"])
    assert any("static batch of 1024" in note for note in rows["A"]["assumptions"])


# --- defect 2: a latency or a rate too large for any run -----------------------------------------


def test_a_latency_over_a_day_is_refused_naming_the_day(run_cli: Any, tmp_path: Path) -> None:
    rows = validated_rows(
        run_cli,
        tmp_path,
        serving_row("T", "concurrency 1", "TTFT (ms)", "1e30"),
        serving_row("E", "concurrency 1", "request latency (s)", "1e9"),
    )
    # 1e30 ms = 1e27 s = 1.157e22 days; 1e9 s = 11,574 days
    assert rows["T"]["predicted"] is None
    assert "1.16e+22x a day" in rows["T"]["reason"]
    assert "a latency with none is read in ms" in rows["T"]["reason"]
    assert rows["E"]["predicted"] is None
    assert "1.16e+04x a day" in rows["E"]["reason"]


def test_a_prompt_token_rate_above_the_peak_is_refused(run_cli: Any, tmp_path: Path) -> None:
    rows = validated_rows(
        run_cli,
        tmp_path,
        serving_row("I", "concurrency 64", "input tokens/s", "1e30"),
        serving_row("Q", "concurrency 64", "requests/s", "1e6"),
    )
    # every request computes its 128 output tokens at 2 x 8.03e9 FLOPs each: 1e30 prompt tokens/s
    # of 1,024-token prompts are 1e30 x 128 / 1024 output tokens/s on one H100
    expected_input = 1e30 * 128 / 1024 * 2 * LLAMA_8B_PARAMS / H100_FASTEST_PEAK
    assert rows["I"]["predicted"] is None
    assert _ratio(rows["I"]["reason"]) == pytest.approx(expected_input, rel=0.05)
    expected_requests = 1e6 * 128 * 2 * LLAMA_8B_PARAMS / H100_FASTEST_PEAK  # about 1,040x
    assert rows["Q"]["predicted"] is None
    assert _ratio(rows["Q"]["reason"]) == pytest.approx(expected_requests, rel=0.05)


def _reading(key: str, value: float) -> Reading:
    return Reading(key, value, key, f"{value:g}", "s", "job", 1, 1)


def test_the_day_bounds_latencies_and_leaves_a_long_queue_alone(
    models: ModelRegistry, catalog: Catalog
) -> None:
    model, h100 = models.get("llama-3.1-8b"), catalog.accelerator("h100-sxm")
    plan, load = InferencePlan(precision="bf16"), ServingLoad(1024, 128)
    for key, seconds in (("ttft_s", 3600.0), ("request_latency_s", DAY_S), ("tpot_s", 3.0)):
        check_serving_figure(_reading(key, seconds), model, h100, plan, load)  # a slow run, not a misread
    for key in ("ttft_s", "tpot_s", "itl_s", "request_latency_s"):
        with pytest.raises(RowError, match=r"2x a day"):
            check_serving_figure(_reading(key, 2 * DAY_S), model, h100, plan, load)
    # a one-user speed of one token in two days
    with pytest.raises(RowError, match="one token every"):
        check_serving_figure(
            _reading("output_tokens_per_s_per_user", 1 / (2 * DAY_S)), model, h100, plan, load
        )
    # a realistic prompt-token rate (20,000 tokens/s of 1,024-token prompts) passes
    check_serving_figure(_reading("input_tokens_per_s", 20_000.0), model, h100, plan, load, num_gpus=1)


STRUCTURED_TRAIN = """
[[row]]
id = "{row_id}"
kind = "train"
publisher = "Me"
source = "my run"
stack = "published-median"
metric = "{metric}"
unit = "{unit}"
value = {value}
[row.model]
name = "llama-3-405b"
[row.hardware]
system = "dgx-h100"
num_gpus = 8192
[row.plan]
tp = 8
pp = 16
global_batch_size = 2048
seq_len = 8192
micro_batch_size = 1
recompute = "selective"
[row.flops]
convention = "6N+attention"
"""

STRUCTURED_INFER = """
[[row]]
id = "{row_id}"
kind = "infer"
publisher = "Me"
source = "my bench"
stack = "trtllm-2025"
metric = "{metric}"
unit = "{unit}"
value = {value}
[row.model]
name = "llama-3.3-70b"
[row.hardware]
system = "dgx-h100"
num_gpus = 1
[row.deployment]
tp = 1
precision = "fp8"
[row.workload]
input_tokens = 1000
output_tokens = 1000
batching = "continuous"
"""


def _structured(tmp_path: Path, catalog: Catalog, models: ModelRegistry, *rows: str) -> dict[str, str]:
    path = tmp_path / "runs.toml"
    path.write_text("schema_version = 1\n" + "".join(rows), encoding="utf-8")
    runs = load_published_runs(catalog=catalog, models=models, path=path)
    return {run.id: (run.spec.reading.problem if run.spec.reading else "") for run in runs}


def test_a_structured_rows_latency_over_a_day_and_rate_over_the_peak_are_refused(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    problems = _structured(
        tmp_path,
        catalog,
        models,
        STRUCTURED_INFER.format(row_id="L", metric="ttft_s", unit="s", value="1e27"),
        STRUCTURED_INFER.format(row_id="R", metric="output_tokens_per_s", unit="tokens/s", value="1e9"),
        STRUCTURED_INFER.format(row_id="OK", metric="output_tokens_per_s", unit="tokens/s", value="2000.0"),
    )
    assert "x a day" in problems["L"]
    assert "field 'value'" in problems["L"]
    assert "read in ms" not in problems["L"]  # a structured row's latency is in s, never unitless
    # 1e9 output tokens/s at 2 x 70.6e9 FLOPs each on one H100: about 71,000x its peak
    assert _ratio(problems["R"]) == pytest.approx(1e9 * 2 * LLAMA_70B_PARAMS / H100_FASTEST_PEAK, rel=0.05)
    assert "_per_gpu" in problems["R"]  # the structured fix: the metric's name sets the scope
    assert problems["OK"] == ""


# --- defect 3: a server with no profile is named in the note -------------------------------------


def _stack_note(rows: dict[str, Any], row_id: str) -> str:
    notes = [
        note for note in rows[row_id]["assumptions"] if note.startswith("serving stack ") and ":" in note
    ]
    assert notes, rows[row_id]
    return str(notes[0])


def test_a_server_with_no_profile_is_named_with_the_profile_used(run_cli: Any, tmp_path: Path) -> None:
    throughput = "Output token throughput (tok/s)"
    rows = validated_rows(
        run_cli,
        tmp_path,
        serving_row("U", "batch 8", throughput, "5000", source="my bench (framework: SuperServe 3.1), 2025"),
        serving_row("K", "batch 8", throughput, "5000", source="LMDeploy v0.6 TurboMind blog, 2024"),
        serving_row("T", "batch 8", throughput, "5000", source="my bench (server: LMDepoy 0.5), 2025"),
        serving_row("N", "batch 8", throughput, "5000", source="a vendor blog, 2025"),
    )
    unknown = _stack_note(rows, "U")
    assert "no server named" not in unknown
    assert "names the server 'SuperServe 3.1', which lightspeed does not know" in unknown
    assert "tensorrt-llm" in unknown  # the names that do pick a profile
    assert "vllm" in unknown
    assert unknown.startswith("serving stack trtllm-2025:")  # the profile used instead
    known = _stack_note(rows, "K")
    assert "the row names LMDeploy, which has no serving profile" in known
    # LMDeploy's v0.6 is LMDeploy's release, not TensorRT-LLM 0.6's (2023): the source's 2024 dates it
    assert known.startswith("serving stack trtllm-2025:")
    assert "closest: LMDeploy" in _stack_note(rows, "T")
    assert "no server named" in _stack_note(rows, "N")


# --- defect 4: a structured row's fix in its own fields ------------------------------------------


def test_a_structured_utilization_over_peak_is_fixed_in_its_fields(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    also = '[[row.also]]\nmetric = "mfu"\nunit = "fraction"\nvalue = 1.5\n'
    problems = _structured(
        tmp_path,
        catalog,
        models,
        STRUCTURED_TRAIN.format(row_id="M", metric="mfu", unit="fraction", value="1.2"),
        STRUCTURED_TRAIN.format(row_id="A", metric="tflop_per_s_per_gpu", unit="TFLOP/s", value="400.0")
        + also,
    )
    assert "n/r" not in problems["M"], problems["M"]
    assert "field 'value'" in problems["M"]
    assert "remove the row" in problems["M"]
    assert "0.43 for 43%" in problems["M"]  # a structured utilization is a fraction
    # an other figure over the peak is left out with its fix in its entry's fields; the row's own
    # figure is still predicted
    assert problems["A"] == ""
    path = tmp_path / "runs.toml"
    (run,) = [run for run in load_published_runs(catalog=catalog, models=models, path=path) if run.id == "A"]
    (note,) = [line for line in run.spec.assumptions if "[[row.also]] entry" in line]
    assert "field 'value'" in note
    assert "n/r" not in note


def test_a_tables_utilization_over_peak_keeps_the_tables_fix(run_cli: Any, tmp_path: Path) -> None:
    row = (
        "T\ttrain\tNVIDIA dgxc-benchmarking v25.05 NeMo\tNemotron4 15b\t15\t32\t6144\t48 (8 query groups)\t"
        "24576\t256000\t4096\t64\t2\t2\t1\tNA\t1\t8\tNA\tn/r\t16\tH100\tBF16\tn/r\tMFU\t120%\t\tread"
    )
    reason = validated_rows(run_cli, tmp_path, row)["T"]["reason"]
    assert "or write n/r" in reason
    assert "field 'value'" not in reason

"""Free-text rows for ``lightspeed validate`` (round 14, group V1): a network's speed is no memory
size and picks the link it names, a figure's scope stated twice and differently, lengths written
output first, an unknown inference model's closest names, times too long for any run, GPU counts
that disagree, a batch of sequences with its tokens, words for a latency, a static batch's
percentile.

Hand figures used below (public sources):

* 96 GiB is 96 x 2^30 = 103.08e9 B: '100G' is within 3% of it (the old misreading), 4.2% from the
  96 the vendor prints for Meta's H100 96GB HBM2e.
* An Ethernet port of 100 Gb/s carries 100e9 / 8 = 12.5e9 B/s each way; InfiniBand HDR is 200
  Gb/s (IBTA roadmap).
* Llama 3 70B and Llama 3.1 70B: 70.6e9 parameters (Meta's model cards).
* H100 SXM: fastest dense peak FP8 1,979 TFLOP/s; 80 GiB (85.9e9 B) of HBM3 at 3.35 TB/s (NVIDIA
  H100 datasheet).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad
from lightspeed.sol.validation.hardware_text import read_hardware, resolve_row_cluster, row_gpus
from lightspeed.sol.validation.infer_lengths import input_output
from lightspeed.sol.validation.plausibility import check_serving_figure, check_training_figure
from lightspeed.sol.validation.published import PublishedRow
from lightspeed.sol.validation.readings import Reading, RowError, read_cell
from lightspeed.sol.validation.train_degrees import global_batch_of
from lightspeed.workload import ModelRegistry
from user_rows import HEADER

LLAMA_70B_PARAMS = 70.6e9
H100_FASTEST_PEAK = 1979e12  # FLOP/s, dense FP8
H100_MEMORY_BYTES = 80 * 2**30
H100_BANDWIDTH = 3.35e12  # B/s
GBIT = 1e9 / 8  # bytes per second in one Gb/s


def _row(hardware: str, gpus: str = "") -> PublishedRow:
    return PublishedRow(row_id="H", kind="train", line=2, cells={"hardware": hardware, "GPUs": gpus})


# --- defect 1: '100G' next to Ethernet is no 100 GB part -----------------------------------------


def test_a_size_written_with_g_alone_must_be_one_the_vendor_prints(catalog: Catalog) -> None:
    # before: '100G' was 3% from 96 GiB = 103.08 GB, so Meta's 96 GB H100 (a 500 W part)
    assert abs(100 - 96 * 2**30 / 1e9) <= 0.03 * 96 * 2**30 / 1e9  # why the old reading matched
    assert catalog.find_device("H100 SXM 100G") is None
    # sizes the vendor prints still name their part
    found = {text: catalog.find_device(text) for text in ("A100-SXM4-40G", "H20-96G", "H100 80G SXM")}
    assert {text: part.name if part else None for text, part in found.items()} == {
        "A100-SXM4-40G": "a100-sxm-40gb",
        "H20-96G": "h20",
        "H100 80G SXM": "h100-sxm",
    }


def test_a_network_speed_leaves_the_part_alone(catalog: Catalog) -> None:
    hardware, span = read_hardware(catalog, "H100 SXM, 100G Ethernet")
    assert (hardware.system, hardware.memory_gib, hardware.accelerator, span) == (
        "dgx-h100",
        None,
        None,
        "H100 SXM",
    )


# --- defect 2: the stated speed picks the link -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "link", "nics", "gbit_per_s"),
    [
        ("H100 SXM, Ethernet 100G", "ethernet-100g", 8, 100),
        ("H100 SXM, 100G Ethernet", "ethernet-100g", 8, 100),
        ("H100 SXM, RoCE 100G", "ethernet-100g", 8, 100),  # before: ethernet-400g
        ("H100 SXM, 100 Gbps RoCE", "ethernet-100g", 8, 100),  # before: ethernet-400g
        ("H100 SXM, 1x 100GbE per node", "ethernet-100g", 1, 100),  # before: the DGX's NDR
        ("nvidia_a100-sxm4-80gb (4*100Gb RoCE)", "ethernet-100g", 4, 100),
        ("NVIDIA H800-80GB, InfiniBand 200Gb/s", "ib-hdr", 8, 200),
        ("H100 SXM, InfiniBand 8x25 GB/s", "ib-hdr", 8, 200),  # 25 GB/s x 8 bits = 200 Gb/s
        ("H100 80G, RoCE 200G", "ethernet-200g", 8, 200),  # the 80G beside the part is its memory
    ],
)
def test_a_stated_speed_is_the_link_of_that_speed(
    catalog: Catalog, text: str, link: str, nics: int, gbit_per_s: int
) -> None:
    cluster, notes = resolve_row_cluster(catalog, _row(text), 64)
    assert cluster.fabric is not None
    assert (cluster.fabric.link.name, cluster.fabric.num_links) == (link, nics)
    assert cluster.fabric.link.per_direction_bytes_per_s == pytest.approx(gbit_per_s * GBIT)
    assert any(note.startswith("network '") and link in note for note in notes), notes


def test_a_speed_no_link_has_is_refused_naming_those_that_exist(catalog: Catalog) -> None:
    with pytest.raises(Exception, match=r"25 Gb/s ethernet network.*ethernet-100g \(100 Gb/s\)") as raised:
        read_hardware(catalog, "H100 SXM, 25G Ethernet")
    assert "\n" not in str(raised.value)


def test_a_network_named_without_a_speed_is_said(catalog: Catalog) -> None:
    _, notes = resolve_row_cluster(catalog, _row("H100 SXM (Ethernet)"), 64)
    assert any("network 'Ethernet' names no speed" in note and "ib-ndr" in note for note in notes), notes


# --- defect 3: a value's scope against its metric's ---------------------------------------------


@pytest.mark.parametrize(
    ("metric", "value"),
    [("tokens/s per node", "1000 per GPU"), ("tokens/s per GPU", "8000 per node")],
)
def test_conflicting_scopes_refuse_the_piece(metric: str, value: str) -> None:
    # before: '1000 per GPU' under 'per node' was divided by the node's 8 GPUs (125 per GPU)
    (reading,) = read_cell(metric, value)
    assert f"metric '{metric}'" in reading.problem
    assert f"'{value}'" in reading.problem
    with pytest.raises(RowError, match="scope"):
        reading.per_gpu(8)


def test_one_scope_stated_twice_alike_or_once_is_read() -> None:
    (same,) = read_cell("tokens/s per node", "8,000 / node")
    (beside,) = read_cell("tokens/s", "1000 per GPU")
    assert (same.problem, same.per_gpu(8).value) == ("", 1000.0)
    assert (beside.problem, beside.key, beside.value) == ("", "tokens_per_s_per_gpu", 1000.0)


# --- defect 4: lengths written output first --------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "osl 256, isl 1024",
        "output length 256, input length 1024",
        "output 256, input 1024",
        "osl/isl 256/1024",
        "256 output tokens, 1024 input tokens",
        "osl 256 isl 1024",
        "isl 1024, osl 256",  # the input first, as before
    ],
)
def test_lengths_are_read_by_their_labels(text: str) -> None:
    assert input_output(text) == (1024, 256)


# --- defect 6: times too long for any run ----------------------------------------------------------


def _reading(key: str, value: float, metric: str, written: str) -> Reading:
    return Reading(key, value, metric, written, "s", "job", 1, 1)


def test_a_step_time_a_thousand_times_too_long_is_refused(models: ModelRegistry, catalog: Catalog) -> None:
    model, h100 = models.get("llama-3-70b"), catalog.accelerator("h100-sxm")
    tokens = 128 * 8192  # a step of 128 sequences of 8,192 tokens on 64 GPUs
    # 16 s: 1,048,576 / 16 / 64 tokens/s per GPU x 6 x 70.6e9 = 434 TFLOP/s, 22% of 1,979
    assert tokens / 16 / 64 * 6 * LLAMA_70B_PARAMS / H100_FASTEST_PEAK == pytest.approx(0.219, rel=0.01)
    sixteen = _reading("step_time_s", 16.0, "step time (s)", "16")
    check_training_figure(sixteen, model, h100, 64, seq_len=8192, tokens_per_step=tokens)
    # 16,000 s: 0.022%, under the 0.5% no run is below
    with pytest.raises(RowError, match=r"implies 0\.02% of one h100-sxm's fastest dense peak"):
        check_training_figure(
            _reading("step_time_s", 16_000.0, "step time (s)", "16,000"),
            model,
            h100,
            64,
            seq_len=8192,
            tokens_per_step=tokens,
        )


def test_a_time_per_token_a_thousand_times_too_long_is_refused(
    models: ModelRegistry, catalog: Catalog
) -> None:
    model, h100 = models.get("llama-3.1-70b"), catalog.accelerator("h100-sxm")
    plan, load = InferencePlan(tp=8, precision="fp8"), ServingLoad(1024, 256, concurrency=32)
    # the slowest decode step: all 80 GiB read at 3.35 TB/s (25.6 ms) plus the 1,024-token prompt at
    # the FP8 peak over 8 GPUs (2 x 70.6e9 x 1024 / (8 x 1979e12) = 9.1 ms): 34.8 ms
    slowest = H100_MEMORY_BYTES / H100_BANDWIDTH + 2 * LLAMA_70B_PARAMS * 1024 / (8 * H100_FASTEST_PEAK)
    assert slowest == pytest.approx(0.0348, rel=0.01)
    check_serving_figure(_reading("tpot_s", 0.150, "TPOT (ms)", "150"), model, h100, plan, load)
    with pytest.raises(RowError) as raised:
        check_serving_figure(_reading("tpot_s", 12.0, "TPOT (s)", "12"), model, h100, plan, load)
    ratio = float(str(raised.value).split("s, ", 1)[1].split("x", 1)[0])
    assert ratio == pytest.approx(12.0 / slowest, rel=0.02)
    assert "ms written as s" in str(raised.value)


# --- defect 7: GPUs counted twice, differently ---------------------------------------------------


def test_counts_that_disagree_are_refused(catalog: Catalog) -> None:
    with pytest.raises(RowError, match=r"GPUs '64' is 64 GPUs but hardware '32x H100 SXM' counts 32"):
        row_gpus(catalog, _row("32x H100 SXM", "64"))
    # the same count, or one node's, is no conflict
    assert row_gpus(catalog, _row("64x H100 SXM", "64"))[0] == 64
    assert row_gpus(catalog, _row("8x H100 80GB HBM3", "64"))[0] == 64


# --- defect 8: a batch counted in sequences with its tokens beside ---------------------------------


def test_sequences_counted_with_their_tokens() -> None:
    # before: the first number, 128, read as 128 tokens: 'less than one sequence'
    assert global_batch_of("128 sequences of 8192 = 1M tokens", 8, 8192) == 128
    assert global_batch_of("1M tokens", 8, 8192) == 2**20 // 8192


# --- defect 9: a refusal names the latency in words -------------------------------------------------


def test_a_request_latency_is_named_in_words(models: ModelRegistry, catalog: Catalog) -> None:
    model, h100 = models.get("llama-3.1-70b"), catalog.accelerator("h100-sxm")
    plan, load = InferencePlan(tp=8, precision="fp8"), ServingLoad(1024, 256, concurrency=32)
    with pytest.raises(RowError) as raised:
        check_serving_figure(_reading("request_latency_s", 0.003, "latency", "3"), model, h100, plan, load)
    assert "end-to-end request latency" in str(raised.value)
    assert "REQUEST_LATENCY" not in str(raised.value)


# --- the CLI: rows as a user writes them (defects 1, 2, 4, 5, 8, 10) --------------------------------


def _validated(run_cli: Any, tmp_path: Path, *rows: str) -> dict[str, Any]:
    path = tmp_path / "rows.tsv"
    path.write_text("\n".join((HEADER, *rows)) + "\n", encoding="utf-8")
    result = run_cli("validate", str(path), "--json")
    assert result.code == 0, result.err
    return {row["id"]: row for row in json.loads(result.out)["rows"]}


def _train(row_id: str, hardware: str, batch: str = "64") -> str:
    return (
        f"{row_id}\ttrain\tmy blog\tLlama 3 70B\t\t\t\t\t\t\t8192\t{batch}\t\t8\t1\t\t\t\t\tFSDP\t64\t"
        f"{hardware}\tBF16\t\tTFLOP/s per GPU\t430\t\tread"
    )


def _infer(row_id: str, model: str, seq: str, load: str, metric: str) -> str:
    """Llama-family row on 8 H100 at TP 8 in FP8, its figure 350 (ms: a TTFT, or a TPOT misread)."""
    return (
        f"{row_id}\tinfer\tmy vendor blog\t{model}\t\t\t\t\t\t\t{seq}\t{load}\t\t8\t\t\t\t\t\t\t8\t"
        f"H100 SXM\tFP8\t\t{metric}\t350\t\tread"
    )


def test_training_rows_name_their_network_and_batch(run_cli: Any, tmp_path: Path) -> None:
    rows = _validated(
        run_cli,
        tmp_path,
        _train("E", "H100 SXM, Ethernet 100G"),
        _train("S", "H100 SXM, 100G Ethernet"),
        _train("T", "H100 SXM", "1M tokens"),
        _train("Q", "H100 SXM", "128 sequences of 8192 = 1M tokens"),
    )
    # before: 'H100 SXM 100G' was Meta's 96 GB H100 on Grand Teton, 'Ethernet 100G' the DGX's NDR
    assert rows["S"]["predicted"] == pytest.approx(rows["E"]["predicted"])
    for row_id in ("E", "S"):
        assumptions = rows[row_id]["assumptions"]
        assert not any("grand-teton" in line for line in assumptions)
        assert any(line.startswith("network '") and "8 x ethernet-100g" in line for line in assumptions)
    said = "global_batch '1M tokens' read as 128 sequences of 8,192 tokens (1,048,576 tokens)"
    assert said in rows["T"]["assumptions"]
    assert rows["Q"]["predicted"] == pytest.approx(rows["T"]["predicted"])


def test_inference_rows_lengths_models_and_percentiles(run_cli: Any, tmp_path: Path) -> None:
    rows = _validated(
        run_cli,
        tmp_path,
        _infer("A", "Llama 3.1 70B", "ISL 1024, OSL 256", "Concurrency 32", "TTFT (ms)"),
        _infer("B", "Llama 3.1 70B", "OSL 256, ISL 1024", "Concurrency 32", "TTFT (ms)"),
        _infer("M", "Lama 3 70B", "ISL 1024, OSL 256", "Concurrency 32", "TTFT (ms)"),
        _infer("P", "Llama 3.1 70B", "ISL 1024, OSL 256", "Batch size 32", "TTFT p99 (ms)"),
    )
    assert rows["B"]["predicted"] == pytest.approx(rows["A"]["predicted"])  # before: refused
    assert "closest: llama-3-70b" in rows["M"]["reason"]  # before: no names
    assert any("percentile 99 of a static batch" in line for line in rows["P"]["assumptions"])

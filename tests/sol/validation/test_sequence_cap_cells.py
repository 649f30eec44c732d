"""A cap on sequences a row states (TensorRT-LLM's ``max_batch``, vLLM's ``Max Num Seqs``, SGLang's
``max_running_requests``) is read into the plan's ``max_batch``, and a cap is not a static batch
(the probe of issue 27/28 found them ignored: tests/data/validation/probe-serving.tsv, row P05)."""

from __future__ import annotations

from pathlib import Path

from lightspeed.catalog import Catalog
from lightspeed.sol.validation.infer_rows import InferenceRowSpec, read_inference_row
from lightspeed.sol.validation.published import read_table
from lightspeed.workload import ModelRegistry

HEADER = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tTP\tEP\tDP\tGPUs\thardware\tprecision\tmetric\tmeasured"
PROBE = Path(__file__).resolve().parents[2] / "data" / "validation" / "probe-serving.tsv"


def _read(tmp_path: Path, catalog: Catalog, models: ModelRegistry, cells: str) -> InferenceRowSpec:
    path = tmp_path / "rows.tsv"
    path.write_text(f"{HEADER}\nR1\tinfer\tx\t{cells}\toutput tokens/s\t20,000\n", encoding="utf-8")
    return read_inference_row(read_table(path)[0], catalog, models)


def test_a_cap_per_rank_counts_once_per_attention_rank(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # TensorRT-LLM's DeepSeek-R1 blog: --max_batch_size 384 on each of 8 attention-DP ranks
    cells = (
        "DeepSeek-R1\tISL/OSL 1024/2048\tconcurrency 3072; max_batch 384 per rank\t"
        "1 for attention (enable_attention_dp)\t8\t\t8\tB200 (DGX B200)\tFP8"
    )
    spec = _read(tmp_path, catalog, models, cells)
    assert spec.plan.dp_attention == 8
    assert spec.plan.max_batch == 384 * 8
    assert (spec.load.concurrency, spec.batching) == (3072, "continuous")
    assert any("server cap of 384 sequences per rank x 8 attention ranks" in n for n in spec.assumptions)


def test_a_cap_is_not_a_static_batch(tmp_path: Path, catalog: Catalog, models: ModelRegistry) -> None:
    # "max batch 64" caps a server under 256 concurrent requests; it is not a static batch of 64
    cells = "Llama 3.1 8B\tISL/OSL 1000/1000\tconcurrency 256, max batch 64\t1\t\t\t1\tH100 SXM\tFP8"
    spec = _read(tmp_path, catalog, models, cells)
    assert (spec.load.concurrency, spec.batching) == (256, "continuous")
    assert spec.plan.max_batch == 64


def test_vllm_and_sglang_spellings(tmp_path: Path, catalog: Catalog, models: ModelRegistry) -> None:
    base = "Llama 3.1 8B\tISL/OSL 1000/1000\tconcurrency 512; {}\t1\t\t\t1\tH100 SXM\tFP8"
    for cap, expected in (("--max-num-seqs 256", 256), ("max_running_requests=1,024", 1024)):
        assert _read(tmp_path, catalog, models, base.format(cap)).plan.max_batch == expected, cap
    # no cap stated: the server's own default applies (max_batch unset)
    assert _read(tmp_path, catalog, models, base.format("ShareGPT")).plan.max_batch is None


def test_the_probe_row_that_states_a_cap(catalog: Catalog, models: ModelRegistry) -> None:
    # AMD's ROCm page, vLLM on 8 MI300X: "Max Num Seqs 3200"
    (row,) = [row for row in read_table(PROBE) if row.row_id == "P05"]
    assert read_inference_row(row, catalog, models).plan.max_batch == 3200

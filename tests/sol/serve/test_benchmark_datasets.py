"""Rows that name a serving-benchmark dataset instead of their lengths (issue 27, workloads):
read at the dataset's sourced mean request, said in the row's assumptions; stated lengths win."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import DataFileError
from lightspeed.sol.serve.benchmark_datasets import find_benchmark_dataset, load_benchmark_datasets
from lightspeed.sol.validation.infer_predict import InferenceRowSetup, inference_row_setup
from lightspeed.sol.validation.published import read_table
from lightspeed.workload import ModelRegistry

HEADER = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tTP\tGPUs\thardware\tprecision\tmetric\tmeasured"


def test_the_shipped_means_are_the_sources_figures() -> None:
    datasets = load_benchmark_datasets()
    # vLLM's v0.6.0 blog: "Average input tokens: 202, average output tokens: 179"
    assert (datasets["sharegpt"].mean_input_tokens, datasets["sharegpt"].mean_output_tokens) == (202, 179)
    # vLLM benchmark_serving.py: --sonnet-input-len default 550, --sonnet-output-len default 150
    assert (datasets["sonnet"].mean_input_tokens, datasets["sonnet"].mean_output_tokens) == (550, 150)
    assert all(dataset.source.startswith(("vLLM blog", "vllm-project")) for dataset in datasets.values())


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("ShareGPT", "sharegpt"),
        ("ShareGPT V3, 500 prompts", "sharegpt"),
        ("sharegpt_v3", "sharegpt"),
        # the file vLLM's and SGLang's benchmark docs download (it was read as no dataset)
        ("--dataset-path ShareGPT_V3_unfiltered_cleaned_split.json", "sharegpt"),
        ("sonnet, QPS 4", "sonnet"),
        ("sonnets", None),  # a word that only contains a name is not the dataset
        ("ISL/OSL 1024/128", None),
    ],
)
def test_a_dataset_is_found_by_its_name_as_a_word(text: str, name: str | None) -> None:
    found = find_benchmark_dataset(text)
    assert (found.name if found else None) == name


def _setup(tmp_path: Path, catalog: Catalog, models: ModelRegistry, seq: str, load: str) -> InferenceRowSetup:
    path = tmp_path / "rows.tsv"
    cells = f"{seq}\t{load}\t1\t1\tH100 SXM\tbf16\tmean TTFT (ms)\t30"
    path.write_text(f"{HEADER}\nR1\tinfer\tvLLM 2024\tLlama 3.1 8B\t{cells}\n", encoding="utf-8")
    return inference_row_setup(read_table(path)[0], catalog, models)[0]


def test_a_row_naming_sharegpt_runs_its_mean_request(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    setup = _setup(tmp_path, catalog, models, "ShareGPT", "request rate 4")
    assert (setup.load.input_tokens, setup.load.output_tokens) == (202, 179)
    assert setup.load.arrival_rate_per_s == 4.0
    assert any("ShareGPT (vLLM's benchmark sample) without lengths" in line for line in setup.assumptions)


def test_stated_lengths_win_over_the_datasets(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    setup = _setup(tmp_path, catalog, models, "ShareGPT, ISL/OSL 1024/128", "concurrency 8")
    assert (setup.load.input_tokens, setup.load.output_tokens) == (1024, 128)
    assert not any("without lengths" in line for line in setup.assumptions)


def _data_file(tmp_path: Path, *, mean_input_tokens: int = 10, source: str = "a") -> Path:
    """A datasets file of one source ``a`` and one dataset citing ``source``."""
    path = tmp_path / "datasets.toml"
    path.write_text(
        'schema_version = 1\n[sources.a]\ntitle = "t"\n'
        '[datasets.x]\ndisplay_name = "x"\naliases = ["x"]\n'
        f"mean_input_tokens = {mean_input_tokens}\nmean_output_tokens = 10\n"
        f'source = "{source}"\ncited_as = "{source}"\n',
        encoding="utf-8",
    )
    return path


def test_a_dataset_entry_must_cite_a_declared_source(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="source not declared"):
        load_benchmark_datasets(_data_file(tmp_path, source="b"))


def test_a_dataset_needs_a_positive_mean(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="mean_input_tokens"):
        load_benchmark_datasets(_data_file(tmp_path, mean_input_tokens=0))


def test_a_well_formed_file_loads(tmp_path: Path) -> None:
    assert load_benchmark_datasets(_data_file(tmp_path))["x"].mean_input_tokens == 10

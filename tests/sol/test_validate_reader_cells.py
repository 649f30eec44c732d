"""What ``lightspeed validate FILE.tsv`` makes of a user's header and cells: a header spelled
another way (``Seq``, ``tp``, ``global batch``) still names its column, an unknown one is
refused naming the nearest; a cell written but unreadable (``eight``, ``banana``, ``0``,
``int3``, ``ISL/OSL 1000/1000/1000``) refuses its row naming the column, never read as not
reported; a reading's scope agrees with its key; the structured-row example of docs/sol.md
loads as written and a missing required key says so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.expect import one_line_error

from lightspeed.catalog import Catalog
from lightspeed.errors import DataFileError
from lightspeed.sol.validation.published import PublishedRow, RowError, check_measured, read_table
from lightspeed.sol.validation.readings import read_cell
from lightspeed.sol.validation.rows import read_training_row
from lightspeed.sol.validation.structured import load_published_runs
from lightspeed.workload import ModelRegistry

DOCS = Path(__file__).resolve().parents[2] / "docs" / "sol.md"

# the expert's lean4.tsv: the settings under headers spelled as people type them
LEAN = (
    "id\tkind\tmodel\tGPUs\thardware\tmetric\tmeasured\tSeq\ttp\tpp\tglobal batch\tPrecision\n"
    "L1\ttrain\tLlama 3.1 70B\t64\tH100 SXM\tMFU\t41%\t32K\t8\t2\t512\tFP8\n"
)


def _table(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rows.tsv"
    path.write_text(text, encoding="utf-8")
    return path


# ---- 1. header names


def test_headers_spelled_another_way_name_their_columns(tmp_path: Path) -> None:
    (row,) = read_table(_table(tmp_path, LEAN))
    assert row.text("seq") == "32K"
    assert row.text("TP") == "8"
    assert row.text("PP") == "2"
    assert row.text("global_batch") == "512"
    assert row.text("precision") == "FP8"


def test_a_row_under_spelled_headers_is_predicted_at_its_own_settings(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    (row,) = read_table(_table(tmp_path, LEAN))
    plan = read_training_row(row, catalog, models).plan
    # 32K of context is 32 x 1024 tokens; TP and PP as written, not searched
    assert (plan.seq_len, plan.tp, plan.pp, plan.global_batch_size) == (32 * 1024, 8, 2, 512)
    assert plan.precision == "fp8"


def test_capitalized_required_headers_are_the_required_columns(tmp_path: Path) -> None:
    header = "ID\tKind\tModel\tgpus\tHardware\tMetric\tMeasured\tSeq_Len\tGlobal-Batch"
    (row,) = read_table(
        _table(tmp_path, f"{header}\nA1\ttrain\tLlama 3.1 70B\t8\tH100\tMFU\t40%\t4096\t64\n")
    )
    assert (row.row_id, row.kind, row.text("GPUs"), row.text("seq"), row.text("global_batch")) == (
        "A1",
        "train",
        "8",
        "4096",
        "64",
    )


def test_an_unknown_column_is_refused_naming_the_nearest(tmp_path: Path) -> None:
    text = LEAN.replace("Seq", "Sequence Lenght", 1)
    with pytest.raises(
        DataFileError, match=r"unknown column 'Sequence Lenght' \(column 8\).*did you mean 'seq'"
    ):
        read_table(_table(tmp_path, text))


def test_an_unknown_column_is_one_line_exit_2(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    text = LEAN.replace("\tPrecision\n", "\tfoo\n", 1)
    one_line_error(
        run_cli("validate", str(_table(tmp_path, text))),
        "unknown column 'foo' (column 12)",
        "GPUs",
        "precision",
    )


def test_a_column_named_twice_is_refused(tmp_path: Path) -> None:
    text = LEAN.replace("\tPrecision\n", "\tseq\n", 1)
    with pytest.raises(DataFileError, match="'seq' \\(column 12\\) is seq, as 'Seq' \\(column 8\\) is"):
        read_table(_table(tmp_path, text))


# ---- 2 and 3. cells written but unreadable refuse the row, naming the column


def _row(kind: str = "train", **cells: str) -> PublishedRow:
    base = {"id": "X", "kind": kind, "model": "Llama 3.1 70B", "GPUs": "64", "hardware": "H100 SXM"}
    base |= {"metric": "MFU", "measured": "41%", "seq": "8K", "global_batch": "512", "TP": "8", "PP": "2"}
    if kind == "infer":
        base |= {"seq": "ISL/OSL 1000/1000", "global_batch": "concurrency 64", "GPUs": "8", "PP": ""}
        base |= {"metric": "output tokens/s", "measured": "2000"}
    return PublishedRow(row_id="X", kind=kind, line=2, cells=base | cells)


@pytest.mark.parametrize(
    ("kind", "column", "text", "expected"),
    [
        ("train", "seq", "banana", "seq 'banana' is not a number"),
        (
            "train",
            "seq",
            "0",
            "seq '0' is 0, and a run has at least 1; write the sequence length in tokens as a whole "
            "number >= 1",
        ),
        ("train", "seq", "-8K", "seq '-8K' is not a whole number >= 0 (negative)"),
        (
            "train",
            "TP",
            "eight",
            "TP 'eight' is not a number; write the tensor-parallel degree in digits (8)",
        ),
        (
            "train",
            "TP",
            "8.5",
            "TP '8.5' is not a whole number >= 0 (a fraction); write the tensor-parallel degree",
        ),
        (
            "train",
            "PP",
            "-2",
            "PP '-2' is not a whole number >= 0 (negative); write the pipeline-parallel degree",
        ),
        ("train", "layers", "80.5", "layers '80.5' is not a whole number"),
        (
            "train",
            "GPUs",
            "64.5",
            "GPUs '64.5' is not a whole number >= 0 (a fraction); write how many GPUs ran",
        ),
        (
            "train",
            "GPUs",
            "0",
            "GPUs '0' is 0, and a run has at least 1; write how many GPUs ran as a whole number >= 1",
        ),
        ("train", "global_batch", "-512", "global_batch '-512' is not a whole number >= 0 (negative)"),
        ("train", "global_batch", "abc", "global_batch 'abc' is not a number"),
        ("infer", "precision", "int3", "precision 'int3' names 'int3', no number format lightspeed knows"),
        ("infer", "seq", "ISL/OSL 1000/1000/1000", "gives 3 numbers for 2 labels (ISL/OSL)"),
        ("infer", "seq", "ISL/OSL 1000.5/1000", "'1000.5' is not a whole number of tokens"),
        ("infer", "TP", "eight", "TP 'eight' is not a number"),
        ("train", "seq", "1e400", "seq '1e400' is too large to be a number; write the sequence length"),
    ],
)
def test_an_unreadable_cell_refuses_its_row_naming_the_column(
    kind: str, column: str, text: str, expected: str
) -> None:
    with pytest.raises(RowError, match=re.escape(expected)):
        check_measured(_row(kind, **{column: text}))


@pytest.mark.parametrize(
    ("column", "text"),
    [
        ("TP", ""),
        ("TP", "n/r"),
        ("TP", "-"),
        ("TP", "none"),
        ("TP", "multi-NUMA TP (size not stated)"),
        ("VPP", "DualPipe"),
        ("VPP", "NA"),
        ("CP", "off"),
        ("DP", "DP attention"),
        ("GPUs", "one"),
        ("seq", "4096 (packed)"),
        ("seq", "not stated"),
        ("global_batch", "gbs 512"),
        ("global_batch", "2M tokens"),
        ("precision", "float8_e4m3fn"),
        ("precision", "BF16 mixed, FP8 (E4M3)"),
        ("precision", "w4a16 int4 AWQ"),
    ],
)
def test_a_cell_not_reported_or_read_by_the_readers_is_no_error(column: str, text: str) -> None:
    check_measured(_row("train", **{column: text}))


def test_the_loads_of_an_inference_row_are_left_to_its_readers() -> None:
    # an inference row writes its load in words: the batch cell holds no count
    check_measured(_row("infer", global_batch="sustained", seq="ShareGPT dataset"))


# ---- 5. a reading's scope agrees with its key


@pytest.mark.parametrize(
    ("metric", "key", "scope"),
    [
        ("TGS", "tokens_per_s_per_gpu", "gpu"),
        ("tflops", "tflop_per_s_per_gpu", "gpu"),
        ("TFLOP/s", "tflop_per_s_per_gpu", "gpu"),
        ("tokens/s", "tokens_per_s", "job"),
        ("TFLOP/s (aggregate)", "pflop_per_s", "job"),
        ("tokens/s per node", "tokens_per_s", "node"),
    ],
)
def test_the_scope_of_a_reading_is_its_keys(metric: str, key: str, scope: str) -> None:
    (reading,) = read_cell(metric, "800")
    assert (reading.key, reading.scope) == (key, scope)
    assert reading.value == 800.0  # a per-GPU figure is taken as written, never divided


# ---- 4. the structured-row example of docs/sol.md


def _doc_example() -> str:
    blocks = re.findall(r"```toml\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.DOTALL)
    (example,) = [block for block in blocks if 'id = "T45"' in block]
    return example


def test_the_documented_structured_row_loads_as_written(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    path = tmp_path / "runs.toml"
    path.write_text(_doc_example(), encoding="utf-8")
    (run,) = load_published_runs(catalog=catalog, models=models, path=path)
    assert run.id == "T45"
    assert run.training is not None
    # TP 8 x PP 16 x DP 64 = 8,192 GPUs, as the example's hardware says
    assert (run.training.plan.tp, run.training.plan.pp, run.training.plan.dp) == (8, 16, 64)
    assert run.training.num_gpus == 8 * 16 * 64


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("schema_version = 1", "schema_version"),
        ("micro_batch_size = [1, 2, 4, 8, 16]", "row[0].plan.micro_batch_size"),
        ('recompute = ["none", "selective", "full"]', "row[0].plan.recompute"),
        ("seq_len = 8192", "row[0].plan.seq_len"),
    ],
)
def test_a_missing_required_key_says_missing(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, line: str, field: str
) -> None:
    example = _doc_example()
    assert line in example
    path = tmp_path / "runs.toml"
    path.write_text(example.replace(line, "", 1), encoding="utf-8")
    with pytest.raises(DataFileError, match=rf"missing field; field '{re.escape(field)}'; fix: add "):
        load_published_runs(catalog=catalog, models=models, path=path)


# ---- 6. the documented default scope


def test_the_docs_say_a_bare_flop_rate_is_one_gpus() -> None:
    text = " ".join(DOCS.read_text(encoding="utf-8").split())
    assert "`TFLOP/s` 400 is 400 per GPU" in text
    assert "`system`, nothing said)" not in text


def test_a_notes_column_is_the_writers_and_not_a_setting(tmp_path: Path) -> None:
    """A user's `Notes` or `URL` column is the table writer's, as derived_or_check is: the file
    loads, and what the note says (TP 4 here) is no setting of the run's (TP 8 is)."""
    text = LEAN.replace("\tPrecision\n", "\tPrecision\tNotes\tURL\n", 1).replace(
        "\tFP8\n", "\tFP8\tan earlier run used TP 4\thttps://example.org/run\n", 1
    )
    (row,) = read_table(_table(tmp_path, text))
    assert row.text("notes") == "an earlier run used TP 4"
    assert "tp 4" not in row.described()
    assert row.text("TP") == "8"

"""Round 14, group V2: structured rows' load errors name the file, row and field; a file with no
row is refused; a [[row.also]] entry that is no measurement is left out with a note, the row's own
figure kept; a metric_text that names another quantity is refused; every row of a table is counted
in the summary; a measured 0 has a fix; the summary by metric says how many of its figures are
other figures; TSV lines end only at line ends, quoted cells are unquoted, a trailing header tab
is read as no column."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import DataFileError
from lightspeed.sol import validate_published
from lightspeed.sol.validation.published import read_table
from lightspeed.sol.validation.structured import METRIC_UNITS, PublishedRun, load_published_runs
from lightspeed.sol.validation.validate import OtherFigure, ValidationRow, report_of
from lightspeed.workload import ModelRegistry

TRAIN_ROW = """
[[row]]
id = "{row_id}"
kind = "train"
publisher = "Me"
source = "my run"
stack = "published-median"
metric = "tflop_per_s_per_gpu"
unit = "TFLOP/s"
value = 400.0
metric_text = "TFLOP/s per GPU"
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

ALSO = """[[row.also]]
metric = "{metric}"
unit = "{unit}"
value = {value}
metric_text = "{text}"
value_text = "{value_text}"
"""

INFER_ROW = """
[[row]]
id = "{row_id}"
kind = "infer"
publisher = "Me"
source = "my bench"
stack = "trtllm-2025"
metric = "{metric}"
unit = "{unit}"
value = {value}
metric_text = "{text}"
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
{load}"""


def _infer(
    row_id: str = "I1",
    *,
    metric: str = "ttft_s",
    unit: str = "s",
    value: str = "0.35",
    text: str = "TTFT p99 (ms)",
    load: str = "concurrency = 16\n",
) -> str:
    return INFER_ROW.format(row_id=row_id, metric=metric, unit=unit, value=value, text=text, load=load)


def _file(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "runs.toml"
    path.write_text("schema_version = 1\n" + "".join(rows), encoding="utf-8")
    return path


def _load(tmp_path: Path, catalog: Catalog, models: ModelRegistry, *rows: str) -> tuple[PublishedRun, ...]:
    return load_published_runs(catalog=catalog, models=models, path=_file(tmp_path, *rows))


def _refusal(tmp_path: Path, catalog: Catalog, models: ModelRegistry, *rows: str) -> str:
    with pytest.raises(DataFileError) as refused:
        _load(tmp_path, catalog, models, *rows)
    return str(refused.value)


# --- defect 1: a load the engines refuse names the file, the row and the field ------------------


@pytest.mark.parametrize(
    ("load", "field"),
    [
        ("concurrency = 16\narrival_rate_per_s = 3.0\n", "row[1].workload.arrival_rate_per_s"),
        ("concurrency = 0\n", "row[1].workload.concurrency"),
        # above the most requests in flight the engines take (2**30, docs/limits.md)
        (f"concurrency = {2**31}\n", "row[1].workload.concurrency"),
    ],
)
def test_a_load_the_engines_refuse_names_the_file_row_and_field(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, load: str, field: str
) -> None:
    message = _refusal(tmp_path, catalog, models, _infer("I0"), _infer("I1", load=load))
    assert message.startswith(f"{tmp_path / 'runs.toml'}: row 'I1': ")
    assert f"field '{field}'" in message


def test_both_a_concurrency_and_a_rate_say_which_to_keep(run_cli: Any, tmp_path: Path) -> None:
    path = _file(tmp_path, _infer(load="concurrency = 16\narrival_rate_per_s = 3.0\n"))
    result = run_cli("validate", str(path))
    assert result.code == 2
    assert len(result.err.strip().splitlines()) == 1
    assert "row 'I1': give concurrency or arrival_rate_per_s, not both" in result.err
    assert "fix: keep the one the source reports" in result.err


# --- defect 2: a file with no row ----------------------------------------------------------------


def test_a_file_with_no_row_is_refused(run_cli: Any, tmp_path: Path) -> None:
    path = _file(tmp_path)
    result = run_cli("validate", str(path))
    assert result.code == 2
    assert len(result.err.strip().splitlines()) == 1
    assert f"{path}: no rows" in result.err
    assert "fix: add one [[row]] table per published run" in result.err


# --- defect 3: an also entry that is no measurement is left out, the row's figure kept ----------


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("nan", "value nan is not a number above 0"),
        # 41 as a fraction of peak is 4,100%: quoted as 'value' holds it, not as value_text '41%'
        ("41", "MFU '41' is 4100% of peak"),
    ],
)
def test_an_also_entry_that_is_no_measurement_is_left_out_with_a_note(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, value: str, problem: str
) -> None:
    also = ALSO.format(metric="mfu", unit="fraction", value=value, text="MFU", value_text="41%")
    memory = ALSO.format(
        metric="memory_per_gpu_bytes", unit="bytes", value="60e9", text="peak memory (GB)", value_text="60"
    )
    (run,) = _load(tmp_path, catalog, models, TRAIN_ROW.format(row_id="T1") + also + memory)
    assert run.training is not None
    assert run.training.reading is not None
    assert run.training.reading.problem == ""  # the row's own figure is predicted
    assert [figure.key for figure in run.training.also] == ["memory_per_gpu_bytes"]
    (note,) = [text for text in run.training.assumptions if "left out" in text]
    assert "other figure 2 of 3 (mfu, row[0].also[0].value) left out, the row's own figure kept" in note
    assert problem in note
    assert "'41%'" not in note
    assert "[[row.also]] entry" in note


def test_a_row_whose_also_entry_is_left_out_is_predicted(run_cli: Any, tmp_path: Path) -> None:
    also = ALSO.format(metric="mfu", unit="fraction", value="nan", text="MFU", value_text="41%")
    result = run_cli("validate", str(_file(tmp_path, TRAIN_ROW.format(row_id="T1") + also)), "--json")
    assert result.code == 0, result.err
    assert '"status": "ok"' in result.out
    assert "left out" in result.out


# --- defect 4: a metric_text that names another quantity or scope -------------------------------


@pytest.mark.parametrize(
    "case",
    [
        ("ttft_s", "TPOT p99 (ms)", "tpot_s"),
        ("output_tokens_per_s_per_user", "tokens/s/GPU", "output_tokens_per_s_per_gpu"),
        ("output_tokens_per_s_per_gpu", "tokens/s/user", "output_tokens_per_s_per_user"),
        ("output_tokens_per_s", "output tokens/s per GPU", "output_tokens_per_s_per_gpu"),
        ("requests_per_s", "TTFT (ms)", "ttft_s"),
    ],
)
def test_a_metric_text_naming_another_quantity_is_refused(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, case: tuple[str, str, str]
) -> None:
    metric, text, named = case
    row = _infer(metric=metric, unit=METRIC_UNITS[metric], value="40", text=text)
    message = _refusal(tmp_path, catalog, models, row)
    assert f"row 'I1': metric_text names {named}, not the row's metric {metric}" in message
    assert "field 'row[0].metric_text'" in message


@pytest.mark.parametrize(
    ("metric", "text"),
    [
        ("ttft_s", "TTFT p99 (ms)"),
        ("output_tokens_per_s_per_user", "tokens/s/user"),
        # a node's figure divided over its GPUs, as the shipped rows write it (I104)
        ("output_tokens_per_s_per_gpu", "output tokens/s per node (8 GPUs), decode"),
        # an unsided token rate reads as the output side: the metric says which side it counts
        ("total_tokens_per_s", "Throughput (tokens/s)"),
        ("output_tokens_per_s", "decode, batch 8"),  # names no quantity
    ],
)
def test_a_metric_text_that_agrees_is_accepted(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, metric: str, text: str
) -> None:
    row = _infer(metric=metric, unit=METRIC_UNITS[metric], value="40", text=text)
    (run,) = _load(tmp_path, catalog, models, row)
    assert run.metric == metric


def test_an_also_entrys_metric_text_is_checked_too(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    also = ALSO.format(metric="mfu", unit="fraction", value="0.4", text="HFU", value_text="40%")
    message = _refusal(tmp_path, catalog, models, TRAIN_ROW.format(row_id="T1") + also)
    assert "metric_text names hfu, not the row's metric mfu" in message
    assert "field 'row[0].also[0].metric_text'" in message


# --- defects 5 and 6: every row in the summary; a measured 0 has a fix ----------------------------

TABLE_HEADER = "id\tkind\tsource\tmodel\tGPUs\thardware\tmetric\tmeasured\tseq\tglobal_batch\tTP\tDP"
TABLE_ROW = "{row_id}\t{kind}\tnone\tllama-3-8b\t8\tH100\titeration time (s)\t{measured}\t4096\t64\t1\t8"


def _table(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "rows.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_every_row_is_counted_in_the_summary(tmp_path: Path, catalog: Catalog, models: ModelRegistry) -> None:
    path = _table(
        tmp_path,
        TABLE_HEADER,
        TABLE_ROW.format(row_id="A", kind="train", measured="2.5"),
        TABLE_ROW.format(row_id="B", kind="inference", measured="2.5"),
        TABLE_ROW.format(row_id="C", kind="", measured="2.5"),
    )
    report = validate_published(path=path, catalog=catalog, models=models)
    assert report.summary["train"].n == 1
    assert report.summary["unread"].num_not_predicted == 2  # B's and C's kinds are neither
    counted = sum(summary.n + summary.num_not_predicted for summary in report.summary.values())
    assert counted == len(report.rows) == 3


def test_no_unread_summary_where_every_kind_is_read(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    path = _table(tmp_path, TABLE_HEADER, TABLE_ROW.format(row_id="A", kind="train", measured="2.5"))
    assert set(validate_published(path=path, catalog=catalog, models=models).summary) == {"train", "infer"}


def test_a_measured_zero_has_a_fix(tmp_path: Path, catalog: Catalog, models: ModelRegistry) -> None:
    path = _table(tmp_path, TABLE_HEADER, TABLE_ROW.format(row_id="Z", kind="train", measured="0"))
    (row,) = validate_published(path=path, catalog=catalog, models=models).rows
    assert row.reason.startswith("measured value 0 is not a number above 0; fix: ")
    assert "n/r" in row.reason


# --- defect 8: the summary by metric counts the figures beside the rows' own ---------------------


def _row(row_id: str, metric: str, rel_error: float, also: tuple[OtherFigure, ...] = ()) -> ValidationRow:
    return ValidationRow(
        id=row_id,
        kind="train",
        metric=metric,
        measured=1.0,
        predicted=1.0 + rel_error,
        rel_error=rel_error,
        status="ok",
        reason="",
        plan=None,
        assumptions=(),
        source="",
        also=also,
    )


def test_the_summary_by_metric_says_how_many_figures_are_beside_a_rows_own() -> None:
    beside = OtherFigure("mfu", 0.40, 0.44, 0.10, "'MFU' <- '40%'")
    report = report_of("x", (_row("A", "tflop_per_s_per_gpu", 0.05, (beside,)), _row("B", "mfu", -0.30)))
    mfu = report.by_metric["train/mfu"]
    assert (mfu.n, mfu.num_other_figures) == (2, 1)  # B's own MFU and A's beside its TFLOP/s
    assert mfu.max_abs_error == pytest.approx(0.30)
    assert report.by_metric["train/tflop_per_s_per_gpu"].num_other_figures == 0
    assert report.summary["train"].n == 2  # each row once, for its own metric
    assert report.summary["train"].num_other_figures == 0


# --- defect 9: TSV lines, quoted cells, a trailing header tab ------------------------------------


def _source_of(tmp_path: Path, *lines: str) -> str:
    (row,) = read_table(_table(tmp_path, *lines))
    return row.cells["source"]


@pytest.mark.parametrize("brk", ["\f", "\v", "\u2028", "\u2029", "\x85", "\x1e"])
def test_a_line_break_inside_a_cell_is_a_space(tmp_path: Path, brk: str) -> None:
    row = TABLE_ROW.format(row_id="A", kind="train", measured="2.5").replace("\tnone\t", f"\tmy{brk}blog\t")
    assert _source_of(tmp_path, TABLE_HEADER, row) == "my blog"


def test_lines_end_at_cr_lf_and_crlf(tmp_path: Path) -> None:
    rows = [TABLE_ROW.format(row_id=name, kind="train", measured="2.5") for name in ("A", "B", "C")]
    path = tmp_path / "rows.tsv"
    path.write_text(f"{TABLE_HEADER}\r\n{rows[0]}\r{rows[1]}\n{rows[2]}\n", encoding="utf-8", newline="")
    assert [row.row_id for row in read_table(path)] == ["A", "B", "C"]


@pytest.mark.parametrize(
    ("cell", "text"),
    [('"Llama 3 8B"', "Llama 3 8B"), ('"say ""hi"" now"', 'say "hi" now'), ('"a" and "b"', '"a" and "b"')],
)
def test_a_cell_wholly_in_double_quotes_is_unquoted(tmp_path: Path, cell: str, text: str) -> None:
    row = TABLE_ROW.format(row_id="A", kind="train", measured="2.5").replace("\tnone\t", f"\t{cell}\t")
    assert _source_of(tmp_path, TABLE_HEADER, row) == text


def test_a_quoted_model_and_value_are_read(tmp_path: Path, catalog: Catalog, models: ModelRegistry) -> None:
    row = TABLE_ROW.format(row_id="A", kind="train", measured='"2.5"').replace("llama-3-8b", '"Llama 3 8B"')
    (predicted,) = validate_published(
        path=_table(tmp_path, TABLE_HEADER, row), catalog=catalog, models=models
    ).rows
    assert predicted.status == "ok", predicted.reason
    assert predicted.measured == pytest.approx(2.5)


def test_a_trailing_header_tab_is_no_column(tmp_path: Path) -> None:
    row = TABLE_ROW.format(row_id="A", kind="train", measured="2.5")
    trimmed = TABLE_ROW.format(row_id="B", kind="train", measured="2.5")
    (first, second) = read_table(_table(tmp_path, TABLE_HEADER + "\t", row + "\t", trimmed))
    assert len(first.cells) == len(second.cells) == len(TABLE_HEADER.split("\t"))


def test_text_under_a_column_with_no_name_is_refused(tmp_path: Path) -> None:
    row = TABLE_ROW.format(row_id="A", kind="train", measured="2.5")
    with pytest.raises(DataFileError, match=r"rows.tsv:2: a column with no name \(column 13\) holds 'x'"):
        read_table(_table(tmp_path, TABLE_HEADER + "\t", row + "\tx"))


# --- a table row's NIC count survives conversion to a structured row ------------------------------


def test_a_structured_row_reads_the_nics_a_converted_table_row_states(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # what convert_validation_rows writes for "4*100Gb RoCE": the link and the NICs per node
    nics = 'fabric = "ethernet-100g"\nnics_per_node = 4\nnum_gpus = 8192'
    (run,) = _load(tmp_path, catalog, models, TRAIN_ROW.format(row_id="N").replace("num_gpus = 8192", nics))
    assert (run.spec.hardware.fabric, run.spec.hardware.nics_per_node) == ("ethernet-100g", 4)
    both = nics + "\nnics_per_gpu = 1"
    assert "not both" in _refusal(
        tmp_path, catalog, models, TRAIN_ROW.format(row_id="B").replace("num_gpus = 8192", both)
    )

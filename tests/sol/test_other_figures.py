"""Figures a published row gives beside its own metric (torchtitan's "tokens/s per GPU; peak memory
GiB"): read from the free text and the structured rows, predicted from the plan the row's own metric
was predicted on, summarized under their metric and never in their kind's summary (issue 28: the
memory rules per stack are now compared with the peak memory the runs published)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import DataFileError
from lightspeed.sol import validate_published
from lightspeed.sol.validation.predict_runs import validate_builtin
from lightspeed.sol.validation.structured import PublishedRun, load_published_runs
from lightspeed.sol.validation.structured_writer import dump_runs
from lightspeed.sol.validation.validate import ValidationReport
from lightspeed.workload import ModelRegistry

# torchtitan benchmarks/llama3_h100_202412_torchtitan.md and Trainy's H200 file (cited in the rows):
# the peak memory per GPU each run printed, in GiB
PUBLISHED_PEAK_GIB = {"T101": 82.4, "T102": 67.0, "T103": 71.9, "T104": 75.3, "T105": 47.96}

HEADER = "id\tkind\tsource\tmodel\tGPUs\thardware\tmetric\tmeasured\tseq\tglobal_batch\tTP\tDP"


@pytest.fixture(scope="module")
def builtin(catalog: Catalog, models: ModelRegistry) -> ValidationReport:
    return validate_builtin(catalog=catalog, models=models)


def test_the_shipped_peak_memories_are_predicted_from_the_rows_own_plan(builtin: ValidationReport) -> None:
    by_id = {row.id: row for row in builtin.rows}
    errors = []
    for row_id, gib in PUBLISHED_PEAK_GIB.items():
        row = by_id[row_id]
        assert row.metric == "tokens_per_s_per_gpu"  # the row's own figure is the throughput
        (memory,) = [figure for figure in row.also if figure.metric == "memory_per_gpu_bytes"]
        assert memory.measured == pytest.approx(gib * 2**30)
        assert row.plan is not None
        # the plan the throughput was predicted on, not another one
        assert memory.predicted == pytest.approx(row.plan["memory_per_gpu_bytes"], abs=1)
        assert memory.rel_error == pytest.approx(memory.predicted / memory.measured - 1)
        errors.append(abs(memory.rel_error))
    summary = builtin.by_metric["train/memory_per_gpu_bytes"]
    assert summary.n == len(PUBLISHED_PEAK_GIB)
    assert summary.median_abs_error == pytest.approx(statistics.median(errors))
    assert summary.coverage is None  # a memory prediction has no error bars


def test_other_figures_are_summarized_under_their_metric_not_their_kind(builtin: ValidationReport) -> None:
    train_rows = [row for row in builtin.rows if row.kind == "train" and row.rel_error is not None]
    assert builtin.summary["train"].n == len(train_rows)  # each row once, for its own metric
    own_mfu = [abs(row.rel_error) for row in train_rows if row.metric == "mfu" and row.rel_error is not None]
    beside = [abs(f.rel_error) for row in train_rows for f in row.also if f.metric == "mfu"]
    assert own_mfu
    assert beside
    assert builtin.by_metric["train/mfu"].n == len(own_mfu) + len(beside)
    median = statistics.median(own_mfu + beside)
    assert builtin.by_metric["train/mfu"].median_abs_error == pytest.approx(median)


def test_the_json_summary_of_a_bytes_metric_keeps_its_fractions(run_cli) -> None:  # type: ignore[no-untyped-def]
    # the key 'train/memory_per_gpu_bytes' once made the JSON writer round the summary's errors to 0
    result = run_cli("validate", "--json")
    assert result.code == 0, result.err
    summary = json.loads(result.out)["summary_by_metric"]["train/memory_per_gpu_bytes"]
    assert 0.0 < summary["median_abs_error"] < 1.0
    assert summary["within_error"] == pytest.approx(0.20)
    row = next(row for row in json.loads(result.out)["rows"] if row["id"] == "T101")
    assert row["also"][0] == {
        "metric": "memory_per_gpu_bytes",
        "measured": pytest.approx(82.4 * 2**30),
        "predicted": pytest.approx(row["plan"]["memory_per_gpu_bytes"], abs=1),
        "rel_error": pytest.approx(row["also"][0]["predicted"] / (82.4 * 2**30) - 1),
        "read_as": "'peak memory GiB' <- '82.4' (2 of 2)",
    }


def test_the_table_shows_memory_in_gib(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("validate")
    assert result.code == 0, result.err
    assert "other figures the rows publish" in result.out
    line = next(line for line in result.out.splitlines() if "'peak memory GiB' <- '82.4'" in line)
    assert "82.4 GiB" in line


def test_a_users_row_with_a_memory_beside_its_step_time(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    table = tmp_path / "rows.tsv"
    row = "A\ttrain\tmy run\tllama-3-8b\t8\tH100\titeration time (s); peak memory GB\t1.0; 60\t4096\t64\t1\t8"
    table.write_text(f"{HEADER}\n{row}\n")
    (result,) = validate_published(path=table, catalog=catalog, models=models).rows
    assert result.metric == "step_time_s"
    (memory,) = result.also
    assert memory.measured == pytest.approx(60e9)  # GB: decimal, as the text writes it
    assert memory.predicted == pytest.approx(result.plan["memory_per_gpu_bytes"], abs=1)  # type: ignore[index]
    assert memory.read_as == "'peak memory GB' <- '60' (2 of 2)"


def _t101(tmp_path: Path, runs: tuple[PublishedRun, ...], old: str, new: str) -> Path:
    text = dump_runs([run for run in runs if run.id == "T101"])
    assert old in text
    path = tmp_path / "t101.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


MEMORY = 'metric = "memory_per_gpu_bytes"\nunit = "bytes"'


@pytest.mark.parametrize(
    "case",
    [
        (MEMORY, 'metric = "tokens_per_s_per_gpu"\nunit = "tokens/s"', r"own metric again"),
        ('unit = "bytes"', 'unit = "GiB"', r"memory_per_gpu_bytes is written in bytes"),
        (MEMORY, 'metric = "gpu_hours"\nunit = "GPU-hours"', r"needs its token budget"),
        ('metric = "memory_per_gpu_bytes"', 'metric = "ttft_s"', r"row\[0\]\.also\[0\]\.metric"),
    ],
)
def test_a_bad_other_figure_names_its_field(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, case: tuple[str, str, str]
) -> None:
    old, new, message = case
    runs = load_published_runs(catalog=catalog, models=models)
    with pytest.raises(DataFileError, match=message):
        load_published_runs(catalog=catalog, models=models, path=_t101(tmp_path, runs, old, new))


def test_an_other_figure_that_is_no_measurement_is_left_out_with_a_note(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # a negative memory figure beside T101's own: the entry is left out, its note names its field,
    # and T101 keeps its own figure
    runs = load_published_runs(catalog=catalog, models=models)
    path = _t101(tmp_path, runs, "value = 88476326297.6", "value = -1.0")
    (run,) = load_published_runs(catalog=catalog, models=models, path=path)
    (note,) = [line for line in run.spec.assumptions if "row[0].also[0].value" in line]
    assert "above 0" in note
    assert run.spec.reading is None or not run.spec.reading.problem


def test_an_inference_row_refuses_other_figures(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    runs = load_published_runs(catalog=catalog, models=models)
    text = dump_runs([run for run in runs if run.id == "I101"])
    extra = '\n[[row.also]]\nmetric = "mfu"\nunit = "fraction"\nvalue = 0.4\n'
    path = tmp_path / "i101.toml"
    path.write_text(text + extra, encoding="utf-8")
    with pytest.raises(DataFileError, match=r"training rows only"):
        load_published_runs(catalog=catalog, models=models, path=path)


def test_explain_names_each_other_figure(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("validate", "--explain", "T101")
    assert result.code == 0, result.err
    explained = result.out.split("\nT101 (train, ", 1)[1]
    line = next(line for line in explained.splitlines() if line.strip().startswith("also:"))
    assert "memory_per_gpu_bytes 82.4 GiB, predicted " in line
    assert line.rstrip().endswith("from 'peak memory GiB' <- '82.4' (2 of 2)")

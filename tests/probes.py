"""The probe tables of published serving rows (``tests/data/validation/probe-serving*.tsv``),
shared by their test modules: the rows by id, and one row read as ``validate`` reads it."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.sol.validation.infer_rows import InferenceRowSpec, read_inference_row
from lightspeed.sol.validation.published import PublishedRow, read_table
from lightspeed.sol.validation.validate import ValidationRow
from lightspeed.workload import ModelRegistry

DATA = Path(__file__).resolve().parent / "data" / "validation"


def probe_rows(path: Path) -> dict[str, PublishedRow]:
    """The table's rows by id."""
    return {row.row_id: row for row in read_table(path)}


def read_probe(path: Path, row_id: str, catalog: Catalog, models: ModelRegistry) -> InferenceRowSpec:
    """Row ``row_id`` of the table, read by the free-text reader."""
    return read_inference_row(probe_rows(path)[row_id], catalog, models)


def probe(name: str) -> tuple[Callable[[], dict[str, PublishedRow]], Callable[..., InferenceRowSpec]]:
    """``(rows, read)`` for the probe table ``name``: its rows by id, and ``read(row_id, catalog,
    models)``."""
    path = DATA / name
    return partial(probe_rows, path), partial(read_probe, path)


def assert_serving_read(
    spec: InferenceRowSpec, model: str, gpus: int, lengths: tuple[int, int], concurrency: int | None
) -> None:
    """A serving row read as ``model`` on ``gpus`` GPUs, at ``lengths`` (input, output tokens) and
    ``concurrency`` in flight (``None``: arrivals at a rate)."""
    assert spec.model.name == model
    assert spec.num_gpus == gpus
    assert (spec.load.input_tokens, spec.load.output_tokens) == lengths
    assert spec.load.concurrency == concurrency


def assert_mlperf_read(spec: InferenceRowSpec, system: str, gpus: int, metric: str, value: float) -> None:
    """An MLPerf summary row read on ``gpus`` of ``system`` (every GPU in a TP group or a
    replica), its metric and value as written, and simulated as its MLPerf scenario."""
    assert (spec.hardware.system, spec.num_gpus) == (system, gpus)
    assert spec.plan.tp * spec.plan.replicas == gpus
    assert (spec.metric, spec.measured) == (metric, pytest.approx(value))
    assert spec.simulation is not None
    assert spec.simulation.mlperf


def validated_row(
    tmp_path: Path, header: str, line: str, catalog: Catalog, models: ModelRegistry
) -> ValidationRow:
    """One free-text inference row (a TSV ``header`` and one tab-separated ``line``) as
    ``validate`` predicts it."""
    path = tmp_path / "rows.tsv"
    path.write_text(f"{header}\n{line}\n")
    (row,) = validate_published(path=path, catalog=catalog, models=models, infer=inference_predictor()).rows
    return row


# the columns a row of a hand-written inference probe fills, in order
INFER_HEADER = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tTP\tGPUs\thardware\tprecision\tmetric\tmeasured"


def cli_rows(run_cli: Any, tmp_path: Path, header: str, *lines: str) -> list[dict[str, Any]]:
    """Rows (a TSV ``header`` and tab-separated ``lines``) as ``lightspeed validate --json`` gives them."""
    path = tmp_path / "rows.tsv"
    path.write_text("\n".join((header, *lines)) + "\n", encoding="utf-8")
    result = run_cli("validate", str(path), "--json")
    assert result.code == 0, result.err
    rows: list[dict[str, Any]] = json.loads(result.out)["rows"]
    return rows


def infer_cli_rows(run_cli: Any, tmp_path: Path, source: str, *cells: str) -> list[dict[str, Any]]:
    """Inference rows of ``source``, each the cells after the source in :data:`INFER_HEADER`'s order."""
    lines = [f"R{i}\tinfer\t{source}\t{row}" for i, row in enumerate(cells, 1)]
    return cli_rows(run_cli, tmp_path, INFER_HEADER, *lines)


def validated_rows(
    path: Path, catalog: Catalog, models: ModelRegistry, *, without: frozenset[str] = frozenset()
) -> dict[str, ValidationRow]:
    """Every row of the table at ``path`` as ``validate`` predicts it, by id (without the two runs
    that draw a latency under load its band: these tests read the predictions and refusals);
    rows ``without`` names are left out (rows a test of their own predicts, at a cost: an MLPerf
    DeepSeek-R1 row simulates tens of thousands of requests per layout)."""
    table = path
    with tempfile.TemporaryDirectory() as folder:
        if without:
            table = Path(folder) / path.name
            lines = path.read_text(encoding="utf-8").splitlines()
            kept = [line for line in lines if line.split("\t", 1)[0] not in without]
            assert len(lines) - len(kept) == len(without), "every row left out is in the table"
            table.write_text("\n".join(kept) + "\n", encoding="utf-8")
        report = validate_published(
            path=table, catalog=catalog, models=models, infer=inference_predictor(load_bands=False)
        )
    return {row.id: row for row in report.rows}


def assert_refused_exactly(rows: dict[str, ValidationRow], expected: dict[str, str]) -> None:
    """The rows refused are exactly ``expected``'s, each reason holding its words."""
    refused = {row_id: row.reason for row_id, row in rows.items() if row.status != "ok"}
    assert set(refused) == set(expected)
    for row_id, words in expected.items():
        assert words in refused[row_id], (row_id, refused[row_id])

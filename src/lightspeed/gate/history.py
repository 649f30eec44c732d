"""Turn other layers' results into store records (one place that knows both shapes)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from lightspeed.bench import BenchResult
from lightspeed.datafile import load_json
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.files import check_input, looks_like_path
from lightspeed.records import JsonObject
from lightspeed.sol import CalibrationInputs, CollectivePoint, GemmPoint
from lightspeed.store.database import ResultsStore
from lightspeed.store.records import NewRecord

MAX_RESULTS_FILE_BYTES: Final = 64 * 2**20


def benchmark_records(results: Sequence[BenchResult]) -> list[NewRecord]:
    """One record per benchmark result, named by :attr:`BenchResult.key`, with the result as payload.

    The payload keeps every field of the result (stats, samples, details), so the
    regression gate can compare samples (``lower_is_better`` for latencies) and
    calibration can refit from it.
    """
    return [
        NewRecord(
            name=result.key,
            metric=result.metric,
            value=result.value,
            unit=result.unit,
            sol=result.sol,
            payload={**result.to_dict(), "lower_is_better": result.unit == "s"},
        )
        for result in results
    ]


def _is_correct_with_sol(payload: JsonObject) -> bool:
    return bool(payload.get("correct")) and isinstance(payload.get("sol"), int | float) and payload["sol"] > 0


def calibration_inputs(
    payloads: Sequence[JsonObject], *, dtype: str, sources: Sequence[str] = ()
) -> CalibrationInputs:
    """What :func:`lightspeed.sol.calibrate` fits from benchmark result dicts (``bench --json`` items).

    GEMM points of ``dtype`` with a known peak; the STREAM triad (else any
    kernel) as a fraction of the memory SOL; collective bus time per size where
    the link SOL is known; the dispatch latency. Wrong results are ignored.
    A result missing a field it needs is a :class:`UserInputError`.
    """
    try:
        return _calibration_inputs(payloads, dtype=dtype, sources=sources)
    except (KeyError, TypeError, ValueError) as error:
        raise UserInputError(
            f"a benchmark result lacks a field calibration needs ({type(error).__name__}: {error}); "
            "pass results written by 'lightspeed bench'"
        ) from None


def _calibration_inputs(
    payloads: Sequence[JsonObject], *, dtype: str, sources: Sequence[str]
) -> CalibrationInputs:
    gemm = tuple(
        GemmPoint(
            m=int(p["details"]["m"]),
            n=int(p["details"]["n"]),
            k=int(p["details"]["k"]),
            achieved_flop_per_s=float(p["value"]),
            peak_flop_per_s=float(p["sol"]),
        )
        for p in payloads
        if p.get("suite") == "gemm" and p.get("dtype") == dtype and _is_correct_with_sol(p)
    )
    stream = [p for p in payloads if p.get("suite") == "membw" and _is_correct_with_sol(p)]
    triad = [p for p in stream if p.get("name") == "stream triad"] or stream
    collectives = tuple(
        CollectivePoint(
            bus_bytes=float(p.get("size_bytes") or p["size"]) * float(p["details"]["busbw_factor"]),
            time_s=float(p["details"]["time_s"]),
            link_bytes_per_s=float(p["sol"]),
        )
        for p in payloads
        if p.get("suite") == "collectives" and _is_correct_with_sol(p)
    )
    launch = tuple(
        float(p["value"]) for p in payloads if p.get("suite") == "launch" and p.get("name") == "dispatch"
    )
    return CalibrationInputs(
        gemm=gemm,
        memory_fractions=tuple(float(p["value"]) / float(p["sol"]) for p in triad),
        collectives=collectives,
        launch_s=launch,
        sources=tuple(sources),
        gemm_dtype=dtype,  # the points fit this format's ceiling (FP8 GEMMs: the FP8 one)
        gemm_dtypes_measured=tuple(
            sorted({str(p["dtype"]) for p in payloads if p.get("suite") == "gemm" and p.get("dtype")})
        ),
    )


def _read_json_results(path: Path) -> list[JsonObject]:
    data = load_json(
        path,
        max_bytes=MAX_RESULTS_FILE_BYTES,
        what="results file",
        fix="pass the output of 'lightspeed bench --json'",
    )
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise DataFileError(path, "expected a JSON list of result objects", fix="use 'bench --json' output")
    # 'results export --json' wraps each result in a stored record: unwrap its payload
    return [item["payload"] if isinstance(item.get("payload"), dict) else item for item in data]


def check_result_files(sources: Sequence[str]) -> None:
    """Refuse a source meant as a results file (a path) that is missing or not a regular file,
    before any store is opened for the run ids among them."""
    for source in sources:
        if looks_like_path(source):
            check_input(
                Path(source),
                what="results file ('lightspeed bench --json' output)",
                fix="pass the output of 'lightspeed bench --json', a run id or 'latest'",
            )


def benchmark_payloads(
    store: ResultsStore, sources: Sequence[str] = ()
) -> tuple[list[JsonObject], list[str]]:
    """Benchmark result dicts from JSON files or run ids; default: the newest run of each label.

    Returns the dicts and the names of where they came from.
    """
    payloads: list[JsonObject] = []
    used: list[str] = []
    for source in sources:
        path = Path(source)
        if looks_like_path(source):
            check_result_files([source])
            payloads += _read_json_results(path)
            used.append(str(path))
            continue
        run = store.run(source)
        payloads += [record.payload for record in store.records(run_id=run.run_id)]
        used.append(run.run_id)
    if not sources:
        newest: dict[str, str] = {}
        for run in store.runs(kind="benchmark"):  # newest first
            newest.setdefault(run.label, run.run_id)
        for run_id in newest.values():
            payloads += [record.payload for record in store.records(run_id=run_id)]
            used.append(run_id)
    if not payloads:
        raise UserInputError("no benchmark results to calibrate from; run 'lightspeed bench gemm' etc. first")
    return payloads, used

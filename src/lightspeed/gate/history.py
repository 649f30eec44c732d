"""Turn other layers' results into store records (one place that knows both shapes)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from lightspeed.bench import SUITES, BenchResult
from lightspeed.datafile import load_json
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.files import check_input, looks_like_path
from lightspeed.records import JsonObject
from lightspeed.sol import CalibrationInputs, CollectivePoint, GemmPoint
from lightspeed.store.database import ResultsStore
from lightspeed.store.records import NewRecord, RunSummary

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


def _has_sol(payload: JsonObject) -> bool:
    """Whether a benchmark result dict was measured against a SOL (a positive number)."""
    sol = payload.get("sol")
    return isinstance(sol, int | float) and not isinstance(sol, bool) and sol > 0


def _is_correct_with_sol(payload: JsonObject) -> bool:
    return bool(payload.get("correct")) and _has_sol(payload)


def _without_sol(payloads: Sequence[JsonObject], *, dtype: str) -> tuple[dict[str, int], str]:
    """How many correct results would fit each group (``gemm`` of ``dtype``, ``membw``,
    ``collectives``) but have no SOL, and the reason one of them gives (its ``sol_note``)."""
    counts: dict[str, int] = {}
    note = ""
    for p in payloads:
        group = str(p.get("suite"))
        if not p.get("correct") or _has_sol(p) or group not in ("gemm", "membw", "collectives"):
            continue
        if group == "gemm" and p.get("dtype") != dtype:
            continue
        counts[group] = counts.get(group, 0) + 1
        note = note or str(p.get("sol_note") or "")
    return counts, note


def calibration_inputs(
    payloads: Sequence[JsonObject], *, dtype: str, sources: Sequence[str] = ()
) -> CalibrationInputs:
    """What :func:`lightspeed.sol.calibrate` fits from benchmark result dicts (``bench --json`` items).

    GEMM points of ``dtype`` with a known peak; the STREAM triad (else any
    kernel) as a fraction of the memory SOL; collective bus time per size where
    the link SOL is known; the dispatch latency. Wrong results are ignored; correct
    ones without a SOL are counted (``num_without_sol``) so that what is kept can say why.
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
    without_sol, no_sol_note = _without_sol(payloads, dtype=dtype)
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
        num_without_sol=without_sol,
        no_sol_note=no_sol_note,
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
    """Benchmark result dicts from JSON files or run ids; default: the newest run of each suite
    (whatever its label).

    Returns the dicts and the names of where they came from. Stored runs measured on different
    hardware (the CPU model, its physical cores and the GPUs of their stored environment) are
    refused: one profile describes one machine's kernels.
    """
    payloads: list[JsonObject] = []
    used: list[str] = []
    runs: list[RunSummary] = []
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
        runs.append(run)
    if not sources:
        for run, suite_payloads in _newest_per_suite(store):
            payloads += suite_payloads
            if run.run_id not in used:
                used.append(run.run_id)
                runs.append(run)
    if not payloads:
        raise UserInputError("no benchmark results to calibrate from; run 'lightspeed bench gemm' etc. first")
    _refuse_mixed_hardware(store, runs)
    return payloads, used


def _newest_per_suite(store: ResultsStore) -> list[tuple[RunSummary, list[JsonObject]]]:
    """The results of each suite from the newest complete benchmark run that holds that suite
    (a run's label is the user's, so it does not say which suite it ran)."""
    found: list[tuple[RunSummary, list[JsonObject]]] = []
    for suite in SUITES:
        newest = store.runs(kind="benchmark", limit=1, where=[f"suite={suite}"])
        if newest:
            records = store.records(run_id=newest[0].run_id, where=[f"suite={suite}"])
            found.append((newest[0], [record.payload for record in records]))
    return found


def _hardware(store: ResultsStore, run: RunSummary) -> str | None:
    """The hardware a run was measured on, from its stored environment (``None``: not recorded)."""
    environment = store.fingerprint(run.fingerprint_id)
    if not isinstance(environment, dict) or not environment.get("cpu_model"):
        return None
    text = f"{environment['cpu_model']} ({environment.get('num_physical_cores') or '?'} cores)"
    gpus = sorted(str(gpu) for gpu in environment.get("gpus") or ())
    return f"{text} with {', '.join(gpus)}" if gpus else text


def _refuse_mixed_hardware(store: ResultsStore, runs: Sequence[RunSummary]) -> None:
    by_hardware: dict[str, list[str]] = {}
    for run in runs:
        hardware = _hardware(store, run)
        if hardware is not None:
            by_hardware.setdefault(hardware, []).append(f"{run.run_id} on {run.host_name or '?'}")
    if len(by_hardware) > 1:
        listing = "; ".join(f"{hardware}: {', '.join(ids)}" for hardware, ids in by_hardware.items())
        raise UserInputError(
            f"the benchmark runs were measured on different hardware ({listing}); calibrate one "
            "machine's runs at a time: name them with --from RUN_ID"
        )

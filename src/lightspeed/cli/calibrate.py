"""``lightspeed calibrate``: fit the engine's efficiencies from stored measurements."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from lightspeed.bench import GEMM_DTYPES
from lightspeed.cli._common import get_context, given_flags, json_option, print_json, refuse_together
from lightspeed.cli.options import NAME
from lightspeed.errors import UserInputError
from lightspeed.files import looks_like_path
from lightspeed.gate import benchmark_payloads, calibration_inputs, check_result_files
from lightspeed.report import render_calibration
from lightspeed.sol import (
    CalibrationInputs,
    CalibrationResult,
    EfficiencyModel,
    calibrate,
    default_efficiency,
    list_calibrations,
    save_calibration,
)
from lightspeed.store import MEMORY_STORE, ResultsStore, StoreMissingError, open_store


def _base_family(payloads: Sequence[Mapping[str, Any]], base: str | None) -> str:
    """The family whose defaults the unfitted parameters keep: named, or from the results' device."""
    if base is not None:
        return base
    devices = {str(p.get("device", "")) for p in payloads}
    if devices and all(device == "cpu" for device in devices):
        return "cpu"
    catalog = get_context().catalog()
    for payload in payloads:
        name = payload.get("sol_device")
        if isinstance(name, str) and name in catalog.accelerators:
            return str(catalog.accelerators[name].family)
    raise UserInputError("cannot tell which device family these results come from; name one with --base")


def _measured_device(payloads: Sequence[Mapping[str, Any]]) -> str:
    """What the results were measured on: ``cpu``, or the catalog record of the GPU ("" if unknown).
    Results from several devices cannot make one profile; nor can CPU results measured against
    a GPU's record (named with --sol-device): their fractions of SOL describe no kernel."""
    devices = {
        "cpu" if str(p.get("device", "")) == "cpu" else str(p.get("sol_device") or "") for p in payloads
    }
    if len(devices) > 1:
        named = ", ".join(sorted(device or "an unnamed GPU" for device in devices))
        raise UserInputError(
            f"the results come from several devices ({named}); calibrate one device at a time "
            "(pick its runs with --from)"
        )
    _refuse_several_sols(payloads)
    accelerators = get_context().catalog().accelerators
    for payload in payloads:
        record = accelerators.get(str(payload.get("sol_device") or ""))
        if str(payload.get("device", "")) == "cpu" and record is not None and record.family != "cpu":
            raise UserInputError(
                f"the {payload.get('suite')} results were measured on the CPU against the SOL of "
                f"{record.name} ({record.family} family, named with --sol-device): calibrate from "
                "CPU results against the CPU's own SOL (detected, or a CPU record of 'lightspeed hw list')"
            )
    return devices.pop() if devices else ""


def _refuse_several_sols(payloads: Sequence[Mapping[str, Any]]) -> None:
    """Results measured against different SOL records (``sol_device``) fit nothing together: their
    fractions are of different peaks (a CPU run against a record named with --sol-device beside
    one against the CPU's own peak). Results without a SOL (launch latency) do not count."""
    suites: dict[str, set[str]] = {}
    for payload in payloads:
        if payload.get("sol") is not None:
            name = str(payload.get("sol_device") or "an unnamed SOL")
            suites.setdefault(name, set()).add(str(payload.get("suite")))
    if len(suites) > 1:
        listing = "; ".join(f"{name}: {', '.join(sorted(names))}" for name, names in sorted(suites.items()))
        raise UserInputError(
            f"the results were measured against several SOL records ({listing}); calibrate the results "
            "of one SOL at a time (pick their runs with --from, or re-run the others with the same "
            "--sol-device)"
        )


def _default_dtype(payloads: Sequence[Mapping[str, Any]]) -> str:
    dtypes = [str(p["dtype"]) for p in payloads if p.get("suite") == "gemm" and p.get("dtype")]
    if not dtypes:
        return "fp32"
    return max(sorted(set(dtypes)), key=dtypes.count)


def _check_benchmark_runs(store: ResultsStore, sources: Sequence[str]) -> None:
    """A run id (or ``latest``) among ``sources`` must name a benchmark run: another kind's
    records (predictions, goodput, traces) hold nothing to calibrate from."""
    for source in sources:
        if looks_like_path(source):
            continue
        run = store.run(source)
        if run.kind == "benchmark":
            continue
        what = "the newest stored run" if source == "latest" else f"run {source!r}"
        newest = store.runs(kind="benchmark", limit=1)
        fix = (
            f"--from {newest[0].run_id} (the newest benchmark run)" if newest else "'lightspeed bench' first"
        )
        raise UserInputError(
            f"{what} ({run.run_id}, {run.label!r}) is a {run.kind} run, not a benchmark run; "
            f"calibrate from a benchmark run: {fix}"
        )


_CEILING_ROWS = {"gemm_max_efficiency_fp8": "fp8", "gemm_max_efficiency_fp4": "fp4"}


def _shown_base(base: EfficiencyModel, result: CalibrationResult) -> EfficiencyModel:
    """``base`` with the ceilings the table shows set to what they are (an FP8 or FP4 ceiling the
    family derives from BF16 is ``None`` in the model)."""
    derived = {key: base.gemm_ceiling(row) for key, row in _CEILING_ROWS.items() if key in result.num_points}
    return base.with_overrides(**derived)


@click.command("calibrate")
@click.option(
    "--from",
    "sources",
    multiple=True,
    type=NAME,
    help="Run id, 'latest', or a JSON file from 'bench --json' (repeatable; default: newest run per suite).",
)
@click.option(
    "--name",
    type=NAME,
    default="local",
    show_default=True,
    help="Profile name (saved under $LIGHTSPEED_HOME).",
)
@click.option(
    "--base",
    type=NAME,
    default=None,
    help="Device family for unfitted parameters (default: from the results).",
)
@click.option(
    "--dtype",
    type=click.Choice(GEMM_DTYPES),
    default=None,
    help="GEMM dtype to fit (default: the one measured most).",
)
@click.option("--list", "list_only", is_flag=True, help="List saved profiles and exit.")
@click.option("--no-save", is_flag=True, help="Show the fit without saving a profile.")
@click.option(
    "--force",
    is_flag=True,
    help=(
        "Keep efficiencies above 105% of their SOL (a low SOL, a timer off) and STREAM results under "
        "STREAM's array rule (the caches held them) instead of refusing them."
    ),
)
@json_option
def command(
    sources: tuple[str, ...],
    *,
    name: str,
    base: str | None,
    dtype: str | None,
    list_only: bool,
    no_save: bool,
    force: bool,
    as_json: bool,
) -> None:
    """Fit GEMM, memory, collective and launch efficiencies from benchmark results.

    The profile is saved as $LIGHTSPEED_HOME/calibrations/NAME.toml and used by
    'lightspeed plan train ... --calibration NAME'.
    """
    if list_only:
        ignored = given_flags("sources", "name", "base", "dtype", "no_save", "force")
        refuse_together(ignored, "--list only lists the saved profiles; drop them, or drop --list")
        names = list_calibrations()
        if as_json:
            print_json(names)
        else:
            click.echo("\n".join(names) or "no calibration profiles yet")
        return
    check_result_files(sources)  # a mistyped file name is not looked up as a run id
    with _store(sources) as store:
        _check_benchmark_runs(store, sources)
        payloads, used = benchmark_payloads(store, sources)
        suite_sources = _suite_sources(store, payloads, used)
    if not force:
        _refuse_cached_stream(payloads, suite_sources.get("membw") or used)
    chosen_dtype = dtype or _default_dtype(payloads)
    inputs = replace(
        calibration_inputs(payloads, dtype=chosen_dtype, sources=used),
        suite_sources=suite_sources,
        caveats=_caveats(payloads, dtype=chosen_dtype),
    )
    base_model: EfficiencyModel = default_efficiency(_base_family(payloads, base))
    result = calibrate(
        inputs=inputs, base=base_model, name=name, device=_measured_device(payloads), force=force
    )
    if not result.fitted:
        raise UserInputError(_nothing_to_fit(inputs))
    path = None if no_save else save_calibration(result)
    if as_json:
        print_json(
            {"calibration": result, "path": None if path is None else str(path), "dtype": chosen_dtype}
        )
    else:
        render_calibration(result, base=_shown_base(base_model, result), path=path)


# the notes a benchmark result keeps in its details about its own figures: the machine was busy
# (bench's runtime.with_load_note), a STREAM run's arrays the caches may hold (membw; kept by --force)
_CAVEAT_KEYS = ("load_note", "cache_note")
# results stored before membw kept its cache note in details: the note within sol_note
_OLD_CACHE_NOTE = "--quick: arrays of"


def _caveats(payloads: Sequence[Mapping[str, Any]], *, dtype: str) -> dict[str, tuple[str, ...]]:
    """Each suite -> the distinct caveats its results (GEMMs: of ``dtype``) state about themselves."""
    found: dict[str, dict[str, None]] = {}
    for payload in payloads:
        suite = str(payload.get("suite"))
        if suite == "gemm" and payload.get("dtype") != dtype:
            continue
        details = payload.get("details")
        notes = [
            str(details.get(key)) for key in _CAVEAT_KEYS if isinstance(details, Mapping) and details.get(key)
        ]
        sol_note = str(payload.get("sol_note") or "")
        if suite == "membw" and not any(note.startswith(_OLD_CACHE_NOTE) for note in notes):
            start = sol_note.find(_OLD_CACHE_NOTE)
            notes += [sol_note[start:]] if start >= 0 else []
        found.setdefault(suite, {}).update(dict.fromkeys(notes))
    return {suite: tuple(notes) for suite, notes in found.items() if notes}


def _refuse_cached_stream(payloads: Sequence[Mapping[str, Any]], sources: Sequence[str]) -> None:
    """A STREAM result whose arrays were under STREAM's rule (4 x the last-level caches; bench says
    so in ``details.meets_stream_rule``) measured the caches, at least in part: a memory efficiency
    fitted from it would be the caches' (55% "of DRAM" from 1 MiB arrays). Refused; ``--force``
    keeps it, with its note carried as a warning."""
    for payload in payloads:
        details = payload.get("details")
        if payload.get("suite") != "membw" or not isinstance(details, Mapping):
            continue
        if details.get("meets_stream_rule") is False and payload.get("correct") and payload.get("sol"):
            where = ", ".join(sources) or "the results"
            raise UserInputError(
                f"the STREAM results of {where} break STREAM's array rule ({details.get('cache_note')}); "
                "a memory efficiency fitted from them would be the caches': re-run 'lightspeed bench "
                "membw' as the note says, or pass --force to fit them anyway"
            )


def _suite_sources(
    store: ResultsStore, payloads: Sequence[Mapping[str, Any]], used: Sequence[str]
) -> dict[str, tuple[str, ...]]:
    """Which of the sources ``used`` (run ids, files) hold the results of each suite among
    ``payloads``, so that a refused point names its own runs, not every run read. Each source's
    results are read again and matched to ``payloads`` by content."""
    if len(used) < 2:  # one source holds everything
        return {}
    held: dict[str, list[str]] = {}
    chosen = {_payload_key(payload): str(payload.get("suite")) for payload in payloads}
    for source in used:
        theirs, _ = benchmark_payloads(store, [source])
        for suite in dict.fromkeys(chosen[key] for key in map(_payload_key, theirs) if key in chosen):
            held.setdefault(suite, []).append(source)
    return {suite: tuple(names) for suite, names in held.items()}


def _payload_key(payload: Mapping[str, Any]) -> str:
    """A result's content as one comparable string (NaN included, unlike ``==`` on dicts)."""
    return json.dumps(payload, sort_keys=True, default=str)


def _nothing_to_fit(inputs: CalibrationInputs) -> str:
    dtype = inputs.gemm_dtype
    without_sol = {
        f"{dtype} GEMM" if suite == "gemm" else {"membw": "STREAM"}.get(suite, "collective"): count
        for suite, count in inputs.num_without_sol.items()
        if count
    }
    if without_sol:
        held = " and ".join(f"{count} {what}" for what, count in without_sol.items())
        why = f" ({inputs.no_sol_note})" if inputs.no_sol_note else ""
        return (
            f"nothing to fit: the results hold {held} results but none has a SOL{why}; give one with "
            f"'lightspeed bench {'/'.join(inputs.num_without_sol)} --sol-device RECORD' (a device or CPU "
            "of 'lightspeed hw list')"
        )
    others = [other for other in inputs.gemm_dtypes_measured if other != dtype]
    if others:
        return (
            f"nothing to fit: no {dtype} GEMM results (measured: {', '.join(others)}) and no STREAM, "
            f"collective or launch result with a known SOL; pick --dtype {others[0]} or run "
            f"'lightspeed bench gemm --dtype {dtype}'"
        )
    return (
        "nothing to fit: the results hold no GEMM, STREAM, collective or launch result with a known SOL; "
        "run 'lightspeed bench gemm' and 'lightspeed bench membw' first"
    )


def _store(sources: tuple[str, ...]) -> ResultsStore:
    """The results store, read only (nothing is created); result files alone need none (an empty
    store in memory stands in for it)."""
    try:
        return open_store(create=False)
    except StoreMissingError:
        if not sources or any(not Path(source).exists() for source in sources):
            raise  # the store's runs were asked for
        return open_store(MEMORY_STORE, create=False)

"""Calibration: fit the engine's efficiency parameters from measurements, save and load profiles.

``lightspeed calibrate`` turns microbenchmark results into a named
:class:`~lightspeed.sol.core.efficiency.EfficiencyModel`:

* GEMM: the ceiling ``max`` and ``gemm_half_saturation_flop`` of
  ``eff = max x flop / (flop + half) x tile quantization``, fitted to the
  measured fraction of peak of every shape by least squares on relative error
  (a grid over ``half``, the best ``max`` in closed form for each). ``max`` is
  the ceiling of the format measured (``gemm_max_efficiency`` for 16- and
  32-bit GEMMs, ``gemm_max_efficiency_fp8`` for FP8 and INT8,
  ``gemm_max_efficiency_fp4`` for FP4: what
  :meth:`~lightspeed.sol.core.efficiency.EfficiencyModel.gemm_ceiling` reads).
  The other formats' ceilings are not measured: one the family states is kept;
  one the family derives (FP8 from BF16, FP4 from FP8, by Hopper's measured
  ratio, where it has no figure of its own) goes on following the one it is
  derived from, as the efficiency model defines it. ``half`` is one figure for
  every format, set on BF16: only 16- and 32-bit GEMMs replace it; FP8 or FP4
  shapes fit their ceiling with a ``half`` of their own that the profile does
  not keep (it would move BF16 plans).
* Memory: ``memory_efficiency`` = the best STREAM triad / the memory SOL. The
  inference engine's weight/KV streaming efficiency scales with it (measured
  over the family's; :meth:`~lightspeed.sol.core.efficiency.EfficiencyModel.streaming_efficiency`).
* Collectives: ``collective_bandwidth_efficiency`` = 1 / (slope x link
  bandwidth) of the alpha-beta line ``time = alpha + bytes x slope`` fitted to
  the bus time of every size (only where the link SOL is known).
* ``kernel_launch_s`` = the measured per-op dispatch time.

A fitted parameter whose results warn about themselves (a busy machine: the figures may be low;
a ``--quick`` STREAM run whose arrays the caches may hold: too high) carries those warnings
(:attr:`CalibrationResult.warnings`, and one note line each).

A parameter without measurements keeps the base family's value and the result
says so. A measurement that is not a finite number is refused; so is an
efficiency (measured or fitted) above :data:`MAX_EFFICIENCY` of its SOL, unless
forced (no kernel outruns the speed of light: the SOL or the timer is wrong).

Profiles are TOML files in ``$LIGHTSPEED_HOME/calibrations/NAME.toml``
(this module also decides where ``$LIGHTSPEED_HOME`` is, since profiles are
the lowest layer that stores anything).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import numpy as np

from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import StoreError, UnknownNameError, UserInputError
from lightspeed.paths import lightspeed_home
from lightspeed.records import Record
from lightspeed.sol.core.efficiency import (
    FP8_TO_BF16_CEILING,
    EfficiencyModel,
    default_efficiency,
    gemm_ceiling_parameter,
    gemm_shape_factor,
)

LOG = logging.getLogger(__name__)

CALIBRATION_FOLDER: Final = "calibrations"
PROFILE_SCHEMA_VERSION: Final = 1
FITTED_PARAMETERS: Final = (
    "gemm_max_efficiency",
    "gemm_half_saturation_flop",
    "memory_efficiency",
    "collective_bandwidth_efficiency",
    "kernel_launch_s",
)
# The ceilings of the FP8/INT8 and FP4 GEMMs: in a profile when fitted or when the base family
# states them (absent: derived from the ceiling below them, as the family defaults do).
OPTIONAL_CEILINGS: Final = ("gemm_max_efficiency_fp8", "gemm_max_efficiency_fp4")
GEMM_CEILINGS: Final = ("gemm_max_efficiency", *OPTIONAL_CEILINGS)
# A measured or fitted efficiency above this share of its SOL is refused unless forced, the
# tolerance 'lightspeed kernels report' allows a kernel above its SOL (105%): clocks above the
# nominal one and timer noise, no more.
MAX_EFFICIENCY: Final = 1.05
# A fitted GEMM ceiling below this share of its SOL is refused unless forced: every BLAS reaches
# more on its best shapes, so the SOL is not this device's (a GPU record named for a CPU run).
MIN_GEMM_CEILING: Final = 0.01
_CEILING_FORMATS: Final = {
    "gemm_max_efficiency": "16- and 32-bit",
    "gemm_max_efficiency_fp8": "fp8/int8",
    "gemm_max_efficiency_fp4": "fp4",
}
_NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_HALF_SATURATION_GRID: Final = np.logspace(3.0, 16.0, 261)  # 1e3 .. 1e16 FLOP, 20 points a decade


@dataclass(frozen=True)
class GemmPoint(Record):
    """One measured GEMM: its shape, the FLOP/s reached and the dense peak."""

    m: int
    n: int
    k: int
    achieved_flop_per_s: float
    peak_flop_per_s: float


@dataclass(frozen=True)
class CollectivePoint(Record):
    """One collective size: bytes on the bus per op (size x busbw factor), seconds per op, link SOL."""

    bus_bytes: float
    time_s: float
    link_bytes_per_s: float


@dataclass(frozen=True)
class CalibrationInputs(Record):
    """Measurements to fit from (any may be empty: that parameter keeps its base value)."""

    gemm: tuple[GemmPoint, ...] = ()
    memory_fractions: tuple[float, ...] = ()
    collectives: tuple[CollectivePoint, ...] = ()
    launch_s: tuple[float, ...] = ()
    sources: tuple[str, ...] = ()
    # the sources (run ids, files) that hold each suite's results (``gemm``, ``membw``,
    # ``collectives``, ``launch``), so that a refusal names the runs of the point it refuses; a suite
    # missing here is blamed on every source
    suite_sources: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    gemm_dtype: str = "bf16"  # the format of the ``gemm`` points: decides the ceiling they fit
    gemm_dtypes_measured: tuple[str, ...] = ()  # every GEMM format the results held (for messages)
    # correct results that would fit a parameter but were measured without a SOL, by suite
    # (``gemm`` of ``gemm_dtype``, ``membw``, ``collectives``), and why one of them has none
    num_without_sol: Mapping[str, int] = field(default_factory=dict)
    no_sol_note: str = ""
    # what each suite's results say about themselves (``gemm``, ``membw``, ``collectives``,
    # ``launch``): the machine was busy, the caches may hold a --quick run's arrays; each fitted
    # parameter carries the caveats of the suite it comes from
    caveats: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class CalibrationResult(Record):
    """A fitted efficiency model, what was fitted from how many points, and what was kept."""

    name: str
    base: str
    model: EfficiencyModel
    fitted: Mapping[str, float]
    num_points: Mapping[str, int]
    kept: Mapping[str, str]
    gemm_rms_relative_error: float | None
    notes: tuple[str, ...] = field(default_factory=tuple)
    device: str = ""
    gemm_dtype: str = ""
    gemm_ceilings: Mapping[str, str] = field(default_factory=dict)  # each ceiling: fitted, kept or derived
    # each fitted parameter whose results warned about themselves -> those warnings
    warnings: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _check_name(name: str) -> str:
    if not _NAME_PATTERN.fullmatch(name):
        raise UserInputError(
            f"calibration name {name!r} is not allowed; use letters, digits, '.', '_' or '-' (at most 64)"
        )
    return name


def fit_gemm(points: Sequence[GemmPoint], *, tile: int) -> tuple[float, float, float]:
    """``(max efficiency, half-saturation FLOP, RMS relative error)`` of the GEMM curve.

    >>> curve = lambda s: 0.9 * float(gemm_shape_factor(s, s, s, half_saturation_flop=1e8, tile=128))
    >>> shapes = [GemmPoint(m=s, n=s, k=s, achieved_flop_per_s=curve(s) * 1e12, peak_flop_per_s=1e12)
    ...           for s in (128, 256, 512, 1024, 2048)]
    >>> [round(value, 3) for value in fit_gemm(shapes, tile=128)[:2]]
    [0.9, 100000000.0]
    """
    m, n, k = (np.array([getattr(point, axis) for point in points], dtype=np.float64) for axis in "mnk")
    measured = np.array([p.achieved_flop_per_s / p.peak_flop_per_s for p in points], dtype=np.float64)
    best: tuple[float, float, float] | None = None
    with np.errstate(all="ignore"):  # absurd fractions give a non-finite fit, refused by the caller
        for half in _HALF_SATURATION_GRID:
            factor = gemm_shape_factor(m, n, k, half_saturation_flop=half, tile=tile)  # the engine's own
            shape = factor / measured  # model / measured per unit max efficiency
            maximum = float(np.sum(shape) / np.sum(shape * shape))  # least squares of (max x shape - 1)
            error = float(np.sqrt(np.mean((maximum * shape - 1.0) ** 2)))
            if best is None or error < best[2] or not math.isfinite(best[2]):
                best = (maximum, float(half), error)
    assert best is not None
    return best


def fit_collectives(points: Sequence[CollectivePoint]) -> tuple[float, float]:
    """``(bandwidth efficiency, alpha seconds)`` of ``time = alpha + bus_bytes / (link x eff)``."""
    sizes = np.array([point.bus_bytes for point in points], dtype=np.float64)
    times = np.array([point.time_s for point in points], dtype=np.float64)
    link = float(np.median([point.link_bytes_per_s for point in points]))
    with np.errstate(all="ignore"):  # absurd values give a non-finite fit, refused by the caller
        weights = 1.0 / times  # relative error: small messages count as much as large ones
        design = np.stack([np.ones_like(sizes), sizes], axis=1) * weights[:, None]
        (alpha, slope), *_ = np.linalg.lstsq(design, times * weights, rcond=None)
        if slope <= 0:
            raise UserInputError("collective times do not grow with size; measure larger messages")
        return 1.0 / (float(slope) * link), max(0.0, float(alpha))


def _ceiling_for(dtype: str) -> str:
    key = gemm_ceiling_parameter(dtype)
    if key is None:
        raise UserInputError(
            f"{dtype} GEMMs have no ceiling of their own to calibrate (the engine derives it); "
            "calibrate from bf16, fp8 or fp4 GEMMs"
        )
    return key


def _fit_gemm_into(
    inputs: CalibrationInputs, base: EfficiencyModel, result: dict[str, float]
) -> tuple[float, float] | None:
    """Fit the measured format's ceiling into ``result``, and ``half`` where it is the format the
    family's ``half`` describes (16- and 32-bit); ``(RMS relative error, fitted half)``."""
    usable = [p for p in inputs.gemm if p.peak_flop_per_s > 0 and p.achieved_flop_per_s > 0]
    if len(usable) < 2:
        return None
    ceiling = _ceiling_for(inputs.gemm_dtype)
    maximum, half, error = fit_gemm(usable, tile=base.gemm_tile)
    result[ceiling] = maximum
    if ceiling == "gemm_max_efficiency":
        result["gemm_half_saturation_flop"] = half
    return error, half


def _check_finite(inputs: CalibrationInputs) -> None:
    """Every measurement is a finite number (a profile cannot hold anything else)."""
    values = [
        *(
            ("gemm", f"GEMM {p.m}x{p.n}x{p.k} ({inputs.gemm_dtype})", field_name, getattr(p, field_name))
            for p in inputs.gemm
            for field_name in ("achieved_flop_per_s", "peak_flop_per_s")
        ),
        *(("membw", "STREAM", "fraction of SOL", value) for value in inputs.memory_fractions),
        *(
            ("collectives", f"collective of {p.bus_bytes:.3g} bus bytes", field_name, getattr(p, field_name))
            for p in inputs.collectives
            for field_name in ("bus_bytes", "time_s", "link_bytes_per_s")
        ),
        *(("launch", "launch", "dispatch seconds", value) for value in inputs.launch_s),
    ]
    for suite, where, what, value in values:
        if not math.isfinite(value):
            raise UserInputError(
                f"{where} in {_sources(inputs, suite)}: {what} is {value}, not a finite number; "
                "re-run that benchmark or leave its result out of --from"
            )


def _check_measured(inputs: CalibrationInputs, *, force: bool) -> None:
    """No measured fraction of a SOL above :data:`MAX_EFFICIENCY` (unless forced)."""
    measured = [
        ("gemm", f"GEMM {p.m}x{p.n}x{p.k} ({inputs.gemm_dtype})", p.achieved_flop_per_s / p.peak_flop_per_s)
        for p in inputs.gemm
        if p.peak_flop_per_s > 0
    ]
    measured += [("membw", "STREAM", fraction) for fraction in inputs.memory_fractions]
    _refuse_above_sol(inputs, measured, force=force)


def _check_fitted(inputs: CalibrationInputs, fitted: Mapping[str, float], *, force: bool) -> None:
    """Every fitted value positive and finite (always), no efficiency above :data:`MAX_EFFICIENCY`
    (unless forced: a GEMM curve's ceiling extrapolates beyond the shapes measured)."""
    for key, value in fitted.items():
        if not (math.isfinite(value) and value > 0):
            raise UserInputError(
                f"the fit of {key} from {_sources(inputs, _FITTED_FROM[key])} gives {value:.3g}, not a "
                "positive finite number; check those results (a SOL or timer far off) and measure again"
            )
    efficiencies = [
        (_FITTED_FROM[key], f"the fitted {key}", value)
        for key, value in fitted.items()
        if _is_efficiency(key)
    ]
    _refuse_above_sol(inputs, efficiencies, force=force)
    for key in GEMM_CEILINGS:
        ceiling = fitted.get(key)
        if ceiling is not None and ceiling < MIN_GEMM_CEILING and not force:
            raise UserInputError(
                f"the fitted {key} from {_sources(inputs, 'gemm')} is {ceiling * 100:.2g}% of its SOL, "
                f"below the {MIN_GEMM_CEILING * 100:g}% any GEMM library reaches: the SOL is not this "
                "device's (check the results' sol_device: a record named with --sol-device for another "
                "device?) or the timing is wrong; re-run with the device's own SOL, or pass --force to "
                "keep it"
            )


def _refuse_above_sol(
    inputs: CalibrationInputs, fractions: Sequence[tuple[str, str, float]], *, force: bool
) -> None:
    """Refuse the first ``(suite, what, fraction of SOL)`` above :data:`MAX_EFFICIENCY` (unless
    forced), naming the runs of its suite."""
    for suite, where, fraction in fractions:
        if fraction > MAX_EFFICIENCY and not force:
            raise UserInputError(
                f"{where} from {_sources(inputs, suite)} is {fraction * 100:.3g}% of its SOL, above the "
                f"{MAX_EFFICIENCY * 100:g}% no kernel reaches: check the SOL it was measured against "
                "and its timing, or pass --force to keep it anyway"
            )


def _is_efficiency(key: str) -> bool:
    return key in GEMM_CEILINGS or key.endswith("efficiency")


# the suite whose results each fitted parameter comes from
_FITTED_FROM: Final = {
    **dict.fromkeys(GEMM_CEILINGS, "gemm"),
    "gemm_half_saturation_flop": "gemm",
    "memory_efficiency": "membw",
    "collective_bandwidth_efficiency": "collectives",
    "kernel_launch_s": "launch",
}


def _sources(inputs: CalibrationInputs, suite: str | None = None) -> str:
    """Where the results of ``suite`` came from (every source when ``suite`` is ``None`` or the
    inputs do not say which sources hold it).

    >>> inputs = CalibrationInputs(sources=("run-a", "run-b"), suite_sources={"gemm": ("run-a",)})
    >>> _sources(inputs, "gemm"), _sources(inputs, "membw"), _sources(inputs)
    ('run-a', 'run-a, run-b', 'run-a, run-b')
    """
    held = inputs.suite_sources.get(suite, ()) if suite is not None else ()
    return ", ".join(held or inputs.sources) or "the measurements"


def _gemm_reasons(inputs: CalibrationInputs, ceiling: str, half: float | None) -> dict[str, str]:
    """Why the GEMM parameters were not fitted, in the measured format's terms (``half``: what the
    shapes of another format than 16- or 32-bit fit, not saved)."""
    dtype = inputs.gemm_dtype
    others = sorted(set(inputs.gemm_dtypes_measured) - {dtype})
    without_sol = inputs.num_without_sol.get("gemm", 0)
    if not inputs.gemm and without_sol:
        why = _no_sol_reason(f"{dtype} GEMM", without_sol, "gemm")
    elif not inputs.gemm and others:
        why = f"no {dtype} GEMM results; measured: {', '.join(others)} (pick one with --dtype)"
    elif not inputs.gemm:
        why = f"no {dtype} GEMM results"
    else:
        why = f"needs 2+ {dtype} GEMM shapes with a SOL"
    shared = "shared by every format's GEMMs: fitted from 16- and 32-bit GEMMs only"
    if half is not None:
        shared += f" (the {dtype} shapes alone fit {half:.3g})"
    return {ceiling: why, "gemm_half_saturation_flop": why if ceiling == "gemm_max_efficiency" else shared}


_NO_SOL_MARK: Final = "no SOL for them"


def _no_sol_reason(what: str, count: int, suite: str, *, sol: str = "SOL") -> str:
    """Why results that exist fit nothing: they were measured without a SOL.

    >>> _no_sol_reason("fp32 GEMM", 4, "gemm")
    "4 fp32 GEMM results, no SOL for them: 'bench gemm --sol-device RECORD'"
    """
    results = "result" if count == 1 else "results"
    mark = _NO_SOL_MARK.replace("SOL", sol)
    return f"{count} {what} {results}, {mark}: 'bench {suite} --sol-device RECORD'"


def _parameter_warnings(inputs: CalibrationInputs, fitted: Mapping[str, float]) -> dict[str, tuple[str, ...]]:
    """Each fitted parameter -> the caveats its suite's results carry (``inputs.caveats``).

    >>> inputs = CalibrationInputs(caveats={"launch": ("the machine was busy",)})
    >>> _parameter_warnings(inputs, {"kernel_launch_s": 2e-6, "memory_efficiency": 0.8})
    {'kernel_launch_s': ('the machine was busy',)}
    """
    return {key: inputs.caveats[_FITTED_FROM[key]] for key in fitted if inputs.caveats.get(_FITTED_FROM[key])}


def _warning_line(key: str, caveats: Sequence[str]) -> str:
    """One line per fitted parameter whose results warned about themselves.

    >>> _warning_line("kernel_launch_s", ["the machine was busy"])
    'kernel_launch_s is fitted from launch results that warn: the machine was busy'
    """
    return f"{key} is fitted from {_FITTED_FROM[key]} results that warn: {' | '.join(caveats)}"


def _half_at_grid_edge(half: float) -> str:
    """A note when the fitted half-saturation sits at an end of the grid: the shapes do not bound it."""
    low, high = float(_HALF_SATURATION_GRID[0]), float(_HALF_SATURATION_GRID[-1])
    if not (math.isclose(half, low) or math.isclose(half, high)):
        return ""
    return (
        f"gemm_half_saturation_flop = {half:.3g} FLOP is at the edge of the fit grid ({low:.0e} .. "
        f"{high:.0e} FLOP): the shapes measured do not bound it (too few sizes, or a SOL far off); "
        "measure a wider sweep before trusting it"
    )


def _ceiling_statuses(base: EfficiencyModel, fitted: Mapping[str, float]) -> dict[str, str]:
    """Each GEMM ceiling: fitted, kept (the family's figure) or derived from the one below it."""
    statuses = {}
    below = {
        "gemm_max_efficiency_fp8": "gemm_max_efficiency",
        "gemm_max_efficiency_fp4": "gemm_max_efficiency_fp8",
    }
    for key in GEMM_CEILINGS:
        value = getattr(base, key)
        if key in fitted:
            statuses[key] = f"fitted from {_CEILING_FORMATS[key]} GEMMs"
        elif value is None:
            statuses[key] = (
                f"derived: {below[key]} x {FP8_TO_BF16_CEILING:.3f} ({base.name} has no "
                f"{_CEILING_FORMATS[key]} figure of its own)"
            )
        else:
            statuses[key] = f"kept: {base.name}'s {value:.3g} (no {_CEILING_FORMATS[key]} GEMMs measured)"
    return statuses


def calibrate(
    *, inputs: CalibrationInputs, base: EfficiencyModel, name: str, device: str = "", force: bool = False
) -> CalibrationResult:
    """Fit every parameter the inputs allow; keep ``base`` values for the rest (with the reason).

    ``device`` names what was measured (``cpu`` or the catalog record of the GPU): a plan on
    another accelerator refuses the profile unless forced (:func:`check_calibration_device`).
    A non-finite measurement is refused; an efficiency above :data:`MAX_EFFICIENCY` of its SOL
    too unless ``force``.
    """
    _check_name(name)
    _check_finite(inputs)
    _check_measured(inputs, force=force)
    ceiling = _ceiling_for(inputs.gemm_dtype)
    fitted: dict[str, float] = {}
    gemm_fit = _fit_gemm_into(inputs, base, fitted)
    memory = [fraction for fraction in inputs.memory_fractions if fraction > 0]
    if memory:
        fitted["memory_efficiency"] = max(memory)
    if len(inputs.collectives) >= 2:
        fitted["collective_bandwidth_efficiency"], _ = fit_collectives(inputs.collectives)
    if inputs.launch_s:
        fitted["kernel_launch_s"] = float(np.median(inputs.launch_s))
    _check_fitted(inputs, fitted, force=force)
    num_gemm = sum(p.peak_flop_per_s > 0 and p.achieved_flop_per_s > 0 for p in inputs.gemm)
    counts = {
        ceiling: num_gemm,
        "gemm_half_saturation_flop": num_gemm if ceiling == "gemm_max_efficiency" else 0,
        "memory_efficiency": len(memory),
        "collective_bandwidth_efficiency": len(inputs.collectives),
        "kernel_launch_s": len(inputs.launch_s),
    }
    missing = inputs.num_without_sol
    reasons = {
        **_gemm_reasons(inputs, ceiling, None if gemm_fit is None else gemm_fit[1]),
        "memory_efficiency": "needs STREAM with a SOL",
        "collective_bandwidth_efficiency": "needs 2+ sizes with a link SOL",
        "kernel_launch_s": "needs a launch result",
    }
    if missing.get("membw") and not memory:
        reasons["memory_efficiency"] = _no_sol_reason("STREAM", missing["membw"], "membw")
    if missing.get("collectives") and not inputs.collectives:
        reasons["collective_bandwidth_efficiency"] = _no_sol_reason(
            "collective", missing["collectives"], "collectives", sol="link SOL"
        )
    kept = {key: reason for key, reason in reasons.items() if key not in fitted}
    statuses = _ceiling_statuses(base, fitted)
    notes = [f"{key} = {value:.3g} is above 1: the SOL used is below what was measured" for key, value
             in fitted.items() if _is_efficiency(key) and value > 1.0]  # fmt: skip
    if gemm_fit is not None and ceiling == "gemm_max_efficiency" and _half_at_grid_edge(gemm_fit[1]):
        notes.append(_half_at_grid_edge(gemm_fit[1]))
    if inputs.no_sol_note and any(_NO_SOL_MARK.removeprefix("no") in reason for reason in kept.values()):
        notes.append(f"results without a SOL: {inputs.no_sol_note}")
    if ceiling in fitted:
        others = "; ".join(f"{key} {status}" for key, status in statuses.items() if key != ceiling)
        notes.append(f"GEMM ceilings: {ceiling} fitted from {inputs.gemm_dtype} GEMMs; {others}")
    warnings = _parameter_warnings(inputs, fitted)
    notes += [_warning_line(key, caveats) for key, caveats in warnings.items()]
    source = f"lightspeed calibrate '{name}' from {_sources(inputs)}"
    model = base.with_overrides(
        name=name,
        source=source,
        measured_on=device,
        base_memory_efficiency=base.memory_efficiency,
        **fitted,
    )
    return CalibrationResult(
        name=name,
        base=base.name,
        model=model,
        fitted=fitted,
        num_points=counts,
        kept=kept,
        gemm_rms_relative_error=None if gemm_fit is None else gemm_fit[0],
        notes=tuple(notes),
        device=device,
        gemm_dtype=inputs.gemm_dtype,
        gemm_ceilings=statuses,
        warnings=warnings,
    )


def calibration_path(name: str) -> Path:
    """Where profile ``name`` lives: ``$LIGHTSPEED_HOME/calibrations/NAME.toml``."""
    return lightspeed_home() / CALIBRATION_FOLDER / f"{_check_name(name)}.toml"


def _toml_value(value: float | int | str) -> str:
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, float) and not math.isfinite(value):
        raise UserInputError(f"cannot save the non-finite value {value} in a calibration profile")
    return repr(value)


def profile_text(result: CalibrationResult) -> str:
    """The TOML text of a profile (parameters under ``[efficiency]``, the fit under ``[fit]``)."""
    model = result.model
    lines = [
        f"# lightspeed calibration profile, written {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
        f"schema_version = {PROFILE_SCHEMA_VERSION}",
        f"name = {_toml_value(result.name)}",
        f"base = {_toml_value(result.base)}",
        f"device = {_toml_value(result.device)}",
        f"source = {_toml_value(model.source)}",
        "",
        "[efficiency]",
    ]
    for key in (*FITTED_PARAMETERS, *OPTIONAL_CEILINGS, "gemm_tile"):
        if getattr(model, key, None) is not None:  # an FP8/FP4 ceiling the family derives stays derived
            lines.append(f"{key} = {_toml_value(getattr(model, key))}")
    lines += ["", "[fit]"]
    if result.gemm_dtype:
        lines.append(f"gemm_dtype = {_toml_value(result.gemm_dtype)}")
    lines += [f"{key}_points = {count}" for key, count in result.num_points.items()]
    if result.gemm_rms_relative_error is not None:
        lines.append(f"gemm_rms_relative_error = {_toml_value(result.gemm_rms_relative_error)}")
    ceilings = [key for key, status in result.gemm_ceilings.items() if status.startswith("kept")]
    lines.append(f"kept = {json.dumps(sorted({*result.kept, *ceilings}))}")
    return "\n".join(lines) + "\n"


def save_calibration(result: CalibrationResult) -> Path:
    """Write ``result`` as profile ``result.name`` (replacing it atomically); return the path."""
    path = calibration_path(result.name)
    text = profile_text(result)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".toml.partial")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)  # a reader never sees half a profile
    except OSError as error:
        raise StoreError(
            f"cannot write calibration profile {path} ({error.strerror}); "
            "fix: free space or set LIGHTSPEED_HOME to a writable folder"
        ) from None
    return path


def list_calibrations() -> list[str]:
    """Names of the saved profiles."""
    folder = lightspeed_home() / CALIBRATION_FOLDER
    return sorted(path.stem for path in folder.glob("*.toml")) if folder.is_dir() else []


def load_calibration(name: str, *, force: bool = False) -> EfficiencyModel:
    """The efficiency model of profile ``name`` (or of a profile TOML file path).

    Parameters the file lacks come from its base family's defaults (an FP8 or FP4 ceiling it
    lacks: the family's, or derived as the family derives it). The model remembers the
    device it was measured on (profiles older than that field: ``cpu`` for a CPU base, else
    unknown); ``force`` lets it apply to another accelerator (:func:`check_calibration_device`).
    """
    candidate = Path(name)
    if candidate.suffix == ".toml" or "/" in name or os.sep in name:
        path = candidate  # a profile file: a missing or special one is refused by load_toml
    else:
        path = calibration_path(name)
        if not path.is_file():
            raise UnknownNameError(
                "calibration", name, list_calibrations(), hint="run 'lightspeed calibrate'"
            )
    LOG.info("calibration %r from %s", name, path)
    fields = Fields(str(path), load_toml(path, what="calibration profile (TOML)"))
    fields.schema_version({PROFILE_SCHEMA_VERSION})
    table = fields.table("efficiency")
    assert table is not None
    base_name = fields.string("base")
    base = default_efficiency(base_name)
    overrides: dict[str, float | str] = {key: table.number(key) for key in FITTED_PARAMETERS}
    overrides.update({key: table.number(key) for key in OPTIONAL_CEILINGS if table.has(key)})
    device = fields.string("device", "cpu" if base_name == "cpu" else "")
    return base.with_overrides(
        name=fields.string("name"),
        source=fields.string("source", ""),
        measured_on=device,
        other_devices_allowed=force,
        base_memory_efficiency=base.memory_efficiency,
        **overrides,
    )


def calibration_device_note(efficiency: EfficiencyModel, *, device: str, family: str) -> str:
    """Why ``efficiency`` does not describe ``device`` (of catalog ``family``): ``""`` when it does,
    or when it is not a calibration (family defaults) or does not say where it was measured.

    >>> model = default_efficiency("cpu").with_overrides(name="box", measured_on="cpu")
    >>> calibration_device_note(model, device="h100-sxm", family="nvidia-hopper")
    "calibration 'box' was measured on cpu, not on h100-sxm"
    """
    measured = efficiency.measured_on
    if not measured or measured == device or (measured == "cpu" and family == "cpu"):
        return ""
    return f"calibration '{efficiency.name}' was measured on {measured}, not on {device}"


def check_calibration_device(efficiency: EfficiencyModel, *, device: str, family: str) -> str:
    """Refuse a calibration measured on another device than ``device`` unless it was loaded with
    ``force`` (then return the note to show with the result; ``""`` when nothing is amiss)."""
    note = calibration_device_note(efficiency, device=device, family=family)
    if note and not efficiency.other_devices_allowed:
        raise UserInputError(
            f"{note}: its efficiencies describe that device's kernels and links; "
            f"calibrate on {device} ('lightspeed bench' there, then 'lightspeed calibrate'), "
            "or pass --force to apply it anyway"
        )
    return f"{note} (applied anyway: --force)" if note else ""

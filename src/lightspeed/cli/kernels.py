"""``lightspeed kernels``: Nsight Compute kernels against their speed of light.

``kernels report NCU.csv`` reads ``ncu --csv`` output (details or raw page)
and prints each kernel's SOL percentages, what bounds it, ncu's findings
ranked, and FLOP/s beside the catalog's peak; ``--trace`` joins it with a
Kineto or Nsight Systems trace and ranks kernels by GPU time x headroom.

A kernel above its SOL is no measurement: above 100 % of the peak it is
flagged (``above_sol`` and a note); above :data:`REFUSE_ABOVE_SOL_PCT` with
a FLOP count, precision or device the user gave, the command refuses, naming
those options (as ``goodput report`` refuses an MFU above the peak).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Final

import click

from lightspeed.cli._common import emit, get_context, json_option
from lightspeed.cli.options import TRACE_MAX_BYTES
from lightspeed.errors import UserInputError
from lightspeed.report import render_kernel_report
from lightspeed.trace import (
    DEFAULT_MAX_BYTES,
    KernelSol,
    KernelSolReport,
    kernel_report,
    load_trace,
    parse_gemm_shape,
    read_ncu,
)
from lightspeed.units import PRECISIONS

# Above this % of the peak (at either clock) from options the user gave, refuse: ncu's clocks and a
# catalog of another SKU (ncu's SM count) move a real figure a few % at most; 5 % more is an input.
REFUSE_ABOVE_SOL_PCT: Final = 105.0


@click.group("kernels")
def command() -> None:
    """Nsight Compute kernels against their SOL (ncu --csv output), joined with a trace."""


@command.command("report")
@click.argument("ncu_csv", type=click.Path(path_type=Path))
@click.option(
    "--trace",
    "traces",
    multiple=True,
    type=click.Path(path_type=Path),
    help="A Kineto or Nsight Systems trace (file or folder of ranks) to rank kernels by real GPU time "
    "x headroom (repeatable).",
)
@click.option(
    "--gemm",
    "gemms",
    multiple=True,
    metavar="[NAME=]MxNxK[xBATCH]",
    help="GEMM shape of a kernel, for its FLOP count (2 M N K); NAME= picks kernels whose name holds "
    "NAME (repeatable).",
)
@click.option("--device", help="Catalog device to compare with, e.g. b200 (ncu's details page names none).")
@click.option(
    "--precision",
    type=click.Choice(PRECISIONS, case_sensitive=False),
    help="Precision of the peak (default: from ncu's instruction counts or the kernel name).",
)
@click.option("--include-last-step", is_flag=True, help="Count the trace's last step (HTA leaves it out).")
@click.option(
    "--max-bytes",
    type=TRACE_MAX_BYTES,
    default=None,
    help=f"Largest size of one input file (default {DEFAULT_MAX_BYTES / 2**30:g}GiB).",
)
@json_option
def report_command(
    *,
    ncu_csv: Path,
    traces: tuple[Path, ...],
    gemms: tuple[str, ...],
    device: str | None,
    precision: str | None,
    include_last_step: bool,
    max_bytes: float | None,
    as_json: bool,
) -> None:
    """Each kernel's SOL %, bound, ranked findings and FLOP/s; with --trace, biggest lever first.

    Example: lightspeed kernels report gemm.csv --device b200 --gemm 2208x2048x5608
    """
    limit = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    ncu = read_ncu(ncu_csv, max_bytes=limit)
    trace = load_trace(traces, max_bytes=limit) if traces else None
    result = kernel_report(
        ncu,
        trace=trace,
        gemm_shapes=[parse_gemm_shape(text) for text in gemms],
        device=device,
        precision=precision,
        include_last_step=include_last_step,
        catalog=get_context().catalog(),
    )
    _refuse_above_sol(result, gemms=gemms, precision=precision, device=device)
    emit(result, as_json, render_kernel_report)


def _refuse_above_sol(
    report: KernelSolReport, *, gemms: tuple[str, ...], precision: str | None, device: str | None
) -> None:
    """FLOP/s well above the peak from options the user gave is their mistake to fix: refuse, naming them."""
    for kernel in report.kernels:
        pcts = (kernel.sol_flop_pct, kernel.sol_at_profiled_clock_pct)
        pct = max((value for value in pcts if math.isfinite(value)), default=0.0)
        given = _given_options(kernel, gemms=gemms, precision=precision, device=device)
        if pct > REFUSE_ABOVE_SOL_PCT and given:
            raise UserInputError(
                f"{report.source}: kernel {kernel.short_name} would run at {pct:.0f}% of the "
                f"{kernel.precision} peak of {report.accelerator}, above the SOL no kernel exceeds; "
                f"{_fix(kernel)}check {', '.join(given)}"
            )


def _given_options(
    kernel: KernelSol, *, gemms: tuple[str, ...], precision: str | None, device: str | None
) -> list[str]:
    """The options behind this kernel's FLOP/s that the user gave (as they wrote them)."""
    given = []
    for text in gemms if kernel.flop_source.startswith("GEMM") else ():
        pattern = parse_gemm_shape(text).pattern
        if pattern is None or pattern in kernel.kernel:
            given.append(f"--gemm {text}")
    if kernel.precision_source == "given":
        given.append(f"--precision {precision}")
    if device is not None:
        given.append(f"--device {device}")
    return given


def _fix(kernel: KernelSol) -> str:
    """The precision the kernel's name states, when it differs from the one the peak is of."""
    named = kernel.name_precision
    if named is None or named == kernel.precision:
        return ""
    return f"its name says {named}: pass --precision {named}; "

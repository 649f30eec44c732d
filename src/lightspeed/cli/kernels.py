"""``lightspeed kernels``: Nsight Compute kernels against their speed of light.

``kernels report NCU.csv`` reads ``ncu --csv`` output (details or raw page)
and prints each kernel's SOL percentages, what bounds it, ncu's findings
ranked, and FLOP/s beside the catalog's peak; ``--trace`` joins it with a
Kineto or Nsight Systems trace and ranks kernels by GPU time x headroom.
"""

from __future__ import annotations

from pathlib import Path

import click

from lightspeed.cli._common import emit, get_context, json_option
from lightspeed.cli.options import TRACE_MAX_BYTES
from lightspeed.report import render_kernel_report
from lightspeed.trace import DEFAULT_MAX_BYTES, kernel_report, load_trace, parse_gemm_shape, read_ncu
from lightspeed.units import PRECISIONS


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
    type=click.Choice(PRECISIONS),
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
    emit(result, as_json, render_kernel_report)

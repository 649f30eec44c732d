"""The tour's records and terminal rendering (``lightspeed tour``).

Each step of the tour returns a :class:`TourStep`: what it found (a few
lines), how long it took, and, when it could not run (a missing extra such
as PyTorch), why. Nothing is faked: a skipped step says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rich.console import Console
from rich.markup import escape

from lightspeed.records import Record
from lightspeed.report.console import make_console

StepStatus = Literal["ok", "skipped", "failed"]

# A real 2-rank PyTorch profiler trace with NCCL collectives from the test data of
# Holistic Trace Analysis (facebookresearch/HolisticTraceAnalysis, MIT license in
# the folder), shipped so that the tour analyses a GPU trace on any machine.
SAMPLE_TRACE_DIR = Path(__file__).with_name("data") / "traces" / "hta-trace-filter"
# Real Nsight Compute output (ncu --csv, details page) of one cuBLASLt FP8 GEMM on a B200, from the
# tests of Microsoft superbenchmark (MIT license in the folder), for the tour's kernel section.
SAMPLE_NCU_CSV = Path(__file__).with_name("data") / "ncu" / "b200_cublaslt_fp8_gemm.csv"

_MARKS: dict[str, str] = {"ok": "[green]✓[/]", "skipped": "[yellow]-[/]", "failed": "[bold red]✗[/]"}


@dataclass(frozen=True)
class TourStep(Record):
    """One step of the tour: ``summary`` lines when it ran, ``reason`` when it did not."""

    key: str
    title: str
    status: StepStatus
    duration_s: float
    summary: tuple[str, ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class NextCommand(Record):
    """A command to try next on the user's own ``subject`` (model, cluster or trace), and why."""

    subject: str
    command: str
    why: str


# What the tour ends with: the same loop on the user's own job (placeholders are paths to replace).
NEXT_COMMANDS: tuple[NextCommand, ...] = (
    NextCommand(
        subject="model",
        command="lightspeed search train --model-config path/to/config.json --system dgx-h100 --gpus 64 "
        "--global-batch 512",
        why="the best parallel plan for your model (its Hugging Face config.json) on 64 H100s, and what "
        "bounds it",
    ),
    NextCommand(
        subject="cluster",
        command="lightspeed plan train --model llama-3-70b --system 16xdgx-h100@ib-ndr --tp 8 --pp 2 "
        "--global-batch 512",
        why="your cluster as N systems over a network (or a cluster TOML: docs/catalog.md): step time, "
        "MFU, memory",
    ),
    NextCommand(
        subject="trace",
        command="lightspeed trace summary path/to/traces/",
        why="your profiler traces (a Kineto .json.gz per rank, or an Nsight Systems .sqlite): where the GPU "
        "time went",
    ),
)


@dataclass(frozen=True)
class TourResult(Record):
    """Every step, where the outputs went, and the whole tour's wall time."""

    out_dir: Path
    report_path: Path | None
    store_path: Path | str  # the SQLite file, or the $LIGHTSPEED_STORE URL (password masked)
    steps: tuple[TourStep, ...]
    duration_s: float
    next_commands: tuple[NextCommand, ...] = NEXT_COMMANDS

    @property
    def num_failed(self) -> int:
        """Steps that raised an error (a bug or a broken machine, not a missing extra)."""
        return sum(step.status == "failed" for step in self.steps)


def render_tour_step(step: TourStep, console: Console | None = None) -> None:
    """One finished step: mark, title, time, then its summary or reason."""
    out = console or make_console()
    out.print(f"{_MARKS[step.status]} [bold]{escape(step.title)}[/] [dim]({step.duration_s:.1f} s)[/]")
    for line in step.summary:
        out.print(f"    {escape(line)}")
    if step.reason:
        out.print(f"    [dim]{escape(step.status)}: {escape(step.reason)}[/]")


def render_tour_summary(result: TourResult, console: Console | None = None) -> None:
    """The closing lines: counts, total time, where the report and the store are."""
    out = console or make_console()
    counts = {status: sum(step.status == status for step in result.steps) for status in _MARKS}
    out.print()
    out.print(
        f"[bold]Tour finished in {result.duration_s:.0f} s[/]: {counts['ok']} step(s) ran, "
        f"{counts['skipped']} skipped, {counts['failed']} failed"
    )
    out.print(f"results store: {escape(str(result.store_path))}")
    if result.report_path is not None:
        out.print(f"[bold]report: {escape(str(result.report_path))}[/]")
    out.print()
    out.print("[bold]Next, on your own model, cluster and trace:[/]")
    for next_command in result.next_commands:
        out.print(f"  {escape(next_command.command)}", soft_wrap=True)
        out.print(f"      [dim]{escape(next_command.why)}[/]")


def render_tour(result: TourResult) -> None:
    """Every step then the summary (used when the steps were not streamed)."""
    console = make_console()
    render_steps(result.steps, console)
    render_tour_summary(result, console)


def render_steps(steps: Sequence[TourStep], console: Console | None = None) -> None:
    """Several steps, in order."""
    for step in steps:
        render_tour_step(step, console)

"""``lightspeed doctor``'s lines: one per extra and per backend, with a mark for its status."""

from __future__ import annotations

from typing import Final

from rich.console import Console

from lightspeed.doctor import Check, DoctorReport
from lightspeed.report.console import make_console, plain

MARKS: Final = {
    "ok": "[green]✓[/]",
    "missing": "[red]✗[/]",
    "unreachable": "[yellow]✗[/]",
    "not configured": "[dim]-[/]",
}


def render_doctor(report: DoctorReport, console: Console | None = None) -> None:
    """Print the versions, then one line per extra and per backend (never wrapped)."""
    out = console or make_console()
    out.print(f"lightspeed {report.lightspeed_version} on Python {report.python_version}, {report.platform}")
    hint = plain("(pip install 'lightspeed[NAME]'; 'lightspeed[all]' installs every one):")
    out.print(f"[bold]extras[/] {hint}")
    for check in report.extras:
        out.print(_line(check), soft_wrap=True)
    out.print("[bold]backends:[/]")
    for check in report.backends:
        out.print(_line(check), soft_wrap=True)
    counts = {status: sum(check.status == status for check in report.checks) for status in MARKS}
    out.print(", ".join(f"{count} {status}" for status, count in counts.items()))


def _line(check: Check) -> str:
    detail = plain(" ".join(check.detail.split()))
    status = "" if check.status == "ok" else f"{check.status}: "
    return f"  {MARKS[check.status]} {plain(check.name):<20} {status}{detail}"

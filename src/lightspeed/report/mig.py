"""Rendering of MIG plans: the slot diagram per GPU, the strategies side by side, the layout check."""

from __future__ import annotations

import string
from pathlib import Path
from typing import TYPE_CHECKING, Final

from lightspeed.catalog import MigGeometry
from lightspeed.mig import MigPlan
from lightspeed.mig.layout import LayoutCheck
from lightspeed.report.console import make_console, plain, render_table
from lightspeed.report.palette import series_color
from lightspeed.report.plots import check_plot_targets, new_figure, plain_text, plot_paths, save_figure
from lightspeed.units import format_duration

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NUM_SLOTS: Final = 8
SLOT_WIDTH: Final = 9


def layout_lines(plan: MigPlan, sizes: dict[str, int]) -> list[str]:
    """One text row per GPU: its 8 memory slots, each instance drawn over the slots it holds.

    ``sizes`` maps a profile name to the memory slots it occupies. An instance shows its profile
    and service; when some service name does not fit its instance (a 1-slot instance holds 9
    characters), every instance shows its profile and a one-letter key instead, and a legend of
    the keys follows the drawing, so every instance's service stays readable.

    >>> from types import SimpleNamespace as NS
    >>> gpu = NS(index=0, mig=True, placements=(NS(start=0, profile="4g.40gb"),
    ...     NS(start=4, profile="3g.40gb")), services=("big", "small"))
    >>> print(layout_lines(NS(layout=(gpu,)), {"4g.40gb": 4, "3g.40gb": 4})[1])
    GPU 0 |4g.40gb: big                           |3g.40gb: small                         |
    >>> gpu = NS(index=0, mig=True, placements=(NS(start=0, profile="1g.23gb"),
    ...     NS(start=1, profile="1g.23gb")), services=("chat", "summarize"))
    >>> for line in layout_lines(NS(layout=(gpu,)), {"1g.23gb": 1})[1:]:
    ...     print(line)
    GPU 0 |1g.23gb A|1g.23gb B|free                                                       |
    keys: A chat, B summarize
    """
    ruler = "      " + "".join(f"{slot:<{SLOT_WIDTH}}" for slot in range(NUM_SLOTS))
    lines = [ruler.rstrip()]
    keys = _service_keys(plan, sizes)
    for gpu in plan.layout:
        if not gpu.mig:
            label = f"whole GPU, MIG off: {', '.join(gpu.services)}"
            lines.append(f"GPU {gpu.index} |{label:<{NUM_SLOTS * SLOT_WIDTH + NUM_SLOTS - 1}}|")
            continue
        cells: list[str] = []
        slot = 0
        for placement, service in zip(gpu.placements, gpu.services, strict=True):
            if placement.start > slot:
                cells.append(_cell("free", placement.start - slot))
            size = sizes[placement.profile]
            label = f"{placement.profile} {keys[service]}" if keys else f"{placement.profile}: {service}"
            cells.append(_cell(label, size))
            slot = placement.start + size
        if slot < NUM_SLOTS:
            cells.append(_cell("free", NUM_SLOTS - slot))
        lines.append(f"GPU {gpu.index} |" + "|".join(cells) + "|")
    if keys:
        lines.append("keys: " + ", ".join(f"{key} {service}" for service, key in keys.items()))
    return lines


def _service_keys(plan: MigPlan, sizes: dict[str, int]) -> dict[str, str]:
    """A letter per sliced service (in order of appearance) when some instance's label would be cut,
    else nothing (the labels name the services in full)."""
    sliced = [
        (placement, service)
        for gpu in plan.layout
        if gpu.mig
        for placement, service in zip(gpu.placements, gpu.services, strict=True)
    ]
    if all(len(f"{p.profile}: {s}") <= _width(sizes[p.profile]) for p, s in sliced):
        return {}
    names = list(dict.fromkeys(service for _, service in sliced))
    return {name: _key(index) for index, name in enumerate(names)}


def _key(index: int) -> str:
    """``A`` ... ``Z``, then ``AA`` ...: a workloads file holds at most 16 services."""
    letters = string.ascii_uppercase
    return (
        letters[index]
        if index < len(letters)
        else _key(index // len(letters) - 1) + _key(index % len(letters))
    )


def _width(slots: int) -> int:
    return slots * SLOT_WIDTH + slots - 1


def _cell(text: str, slots: int) -> str:
    width = _width(slots)
    return f"{text[:width]:<{width}}"


CAPACITY_MARK: Final = "<="
CAPACITY_NOTE: Final = (
    f"{CAPACITY_MARK}: TTFT/TPOT at the capacity point (an upper bound), not at the requested rate; on a "
    "shared GPU they are the time share's, stretched by 1 / share, and req/s max is what that share serves"
)


def _latency(value: float | None, at_capacity: bool = False) -> str:
    if value is None:
        return "-"
    return f"{CAPACITY_MARK} {format_duration(value)}" if at_capacity else format_duration(value)


def render_mig_plan(plan: MigPlan, sizes: dict[str, int]) -> None:
    """Print the chosen layout, each strategy's assignments side by side, and why the choice won."""
    console = make_console()
    mig = plan.strategy("mig")
    console.print(
        f"[bold]MIG plan on {plain(plan.accelerator)}[/bold]: {mig.num_gpus} GPU(s), memory slots 0-7"
    )
    for line in layout_lines(plan, sizes):
        console.print(line)
    for strategy in plan.strategies:
        title = f"{strategy.name}: " + (
            f"{strategy.num_gpus} GPU(s)"
            if strategy.num_gpus is not None
            else f"not possible ({strategy.reason})"
        )
        rows = [
            [
                a.service,
                a.target,
                str(a.num_copies),
                f"{a.requests_per_s:,.3g}",
                f"{a.capacity_per_copy_requests_per_s * a.num_copies:,.3g}",
                _latency(a.ttft_s, a.latency_at == "capacity"),
                _latency(a.tpot_s, a.latency_at == "capacity"),
                f"{a.share:.0%}",
            ]
            for a in strategy.assignments
        ]
        at_capacity = any(a.latency_at == "capacity" for a in strategy.assignments)
        if rows:
            render_table(
                title,
                ["service", "on", "copies", "req/s asked", "req/s max", "TTFT", "TPOT", "time share"],
                rows,
                console=console,
                right_align_from=2,
                caption=CAPACITY_NOTE if at_capacity else None,
            )
        else:
            console.print(f"[bold]{title}[/bold]")
    console.print(f"[bold]choice: {plan.choice}[/bold]")
    for line in plan.explanation:
        console.print(f"  {line}")
    for line in plan.assumptions:
        console.print(f"  assumed: {line}", style="dim")


def render_layout_check(check: LayoutCheck) -> None:
    """Print what a plan keeps, destroys and creates, and the commands (never run)."""
    console = make_console()
    console.print(
        "[bold]the machine already has this layout[/bold]" if check.matches else "[bold]changes[/bold]"
    )
    if list(check.gpus) != list(range(len(check.gpus))):
        moved = ", ".join(f"plan GPU {index} on GPU {gpu}" for index, gpu in enumerate(check.gpus))
        console.print(f"  {moved} (the fewest changes)")
    for label, rows in (("keep", check.keep), ("destroy", check.destroy), ("create", check.create)):
        for row in rows:
            console.print(f"  {label:<8} {row}")
    if check.commands:
        console.print("commands to run (printed, not run; stop the processes on those instances first):")
        for command in check.commands:
            console.print(f"  {command}")


def mig_figure(plan: MigPlan, sizes: dict[str, int]) -> Figure:
    """Each GPU as a row of 8 memory slots, each instance a bar labelled with its profile and service."""
    figure, axes = new_figure(9.0, 0.6 + 0.6 * max(len(plan.layout), 1))
    names = sorted({service for gpu in plan.layout for service in gpu.services})
    colors = {name: series_color(index) for index, name in enumerate(names)}
    for row, gpu in enumerate(plan.layout):
        spans = (
            [
                (p.start, sizes[p.profile], f"{p.profile}\n{s}", s)
                for p, s in zip(gpu.placements, gpu.services, strict=True)
            ]
            if gpu.mig
            else [(0, NUM_SLOTS, "MIG off\n" + ", ".join(gpu.services), gpu.services[0])]
        )
        for start, size, label, service in spans:
            axes.barh(row, size, left=start, height=0.8, color=colors[service], edgecolor="white")
            text = plain_text(label)  # service names come from the user's workloads file
            axes.text(start + size / 2, row, text, ha="center", va="center", fontsize=7, color="white")
    axes.set_yticks(range(len(plan.layout)), [f"GPU {gpu.index}" for gpu in plan.layout])
    axes.set_xlim(0, NUM_SLOTS)
    axes.set_xticks(range(NUM_SLOTS + 1))
    axes.set_xlabel("memory slot")
    axes.invert_yaxis()
    axes.set_title(plain_text(f"MIG plan on {plan.accelerator}"))
    return figure


def save_mig_plot(plan: MigPlan | None, sizes: dict[str, int], path: Path) -> list[Path]:
    """Write the layout figure as ``path`` (its suffix picks the format; PNG and SVG without one; an
    existing folder gets ``mig-layout.png`` and ``mig-layout.svg`` inside it, as every ``--plot``).
    ``plan=None`` draws nothing: it checks, as every ``--plot`` does
    (:func:`~lightspeed.report.plots.check_plot_targets`), that the plot can be written there and
    returns the files it would be, so a bad path is refused before planning."""
    stem, formats = plot_paths(path, name="mig-layout")
    if plan is None:
        return check_plot_targets(stem, formats)
    return save_figure(mig_figure(plan, sizes), stem, formats)


def render_mig_profiles(geometry: MigGeometry) -> None:
    """Print a GPU's MIG profiles as the guide's table plus start slots."""
    rows = [
        [
            profile.name,
            str(profile.profile_id),
            f"{profile.num_compute_slices}/7",
            f"{profile.num_memory_slices}/8",
            _optional(profile.num_sms),
            _optional(profile.num_copy_engines),
            "/".join(
                _optional(value)
                for value in (
                    profile.num_decoders,
                    profile.num_jpeg_decoders,
                    profile.num_optical_flow_accelerators,
                )
            ),
            str(profile.max_instances),
            ",".join(map(str, profile.placements)),
        ]
        for profile in geometry.profiles
    ]
    console = make_console()
    render_table(
        f"{geometry.display_name} ({', '.join(geometry.accelerators)})",
        ["profile", "id", "compute", "memory", "SMs", "copy engines", "NVDEC/JPEG/OFA", "max", "start slots"],
        rows,
        console=console,
    )
    for key, source in geometry.sources.items():
        console.print(f"  source {key}: {source.citation}", style="dim")


def _optional(value: int | None) -> str:
    return "-" if value is None else str(value)

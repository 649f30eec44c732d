"""``lightspeed hw``: the hardware catalog (list, show, compare) and this machine (detect)."""

from __future__ import annotations

import click

from lightspeed.catalog import (
    compare_hardware,
    describe,
    detect_local,
    list_entries,
    local_cpu_accelerator,
)
from lightspeed.cli._common import emit, get_context, json_option, print_json
from lightspeed.cli._completion import any_hardware_names
from lightspeed.cli.options import BANDWIDTH, CPU_GHZ
from lightspeed.errors import UnsupportedError
from lightspeed.report import (
    render_detected_machine,
    render_hardware_comparison,
    render_hardware_description,
    render_hardware_list,
)

KIND_CHOICES = ("accelerator", "link", "cpu", "system")


@click.group("hw")
def command() -> None:
    """Hardware catalog: accelerators, links, CPUs and systems with sourced figures."""


@command.command("list")
@click.option("--kind", type=click.Choice(KIND_CHOICES), default=None, help="Only records of this kind.")
@json_option
def list_command(kind: str | None, as_json: bool) -> None:
    """Every record with headline figures (``--json``: {"records": [...]})."""
    entries = list_entries(catalog=get_context().catalog(), kind=kind)
    if as_json:
        print_json({"records": entries})
    else:
        render_hardware_list(entries)


@command.command("show")
@click.argument("name", shell_complete=any_hardware_names)
@json_option
def show_command(name: str, as_json: bool) -> None:
    """Every figure of NAME (a record, alias, or cluster spec such as 9xdgx-h100@ib-ndr) with sources.

    Systems add their totals derived from components beside the vendor's printed totals.
    """
    emit(describe(catalog=get_context().catalog(), name=name), as_json, render_hardware_description)


@command.command("compare")
@click.argument("names", nargs=-1, required=True, shell_complete=any_hardware_names)
@json_option
def compare_command(names: tuple[str, ...], as_json: bool) -> None:
    """NAMES side by side (same kind as the first) with ratios and deltas vs the first.

    JSON: {"devices": [...], "rows": [{"field", "unit", "values", "ratios", "sparse", ...}]}.
    """
    emit(
        compare_hardware(catalog=get_context().catalog(), names=list(names)),
        as_json,
        render_hardware_comparison,
    )


@command.command("detect")
@click.option("--cpu-ghz", type=CPU_GHZ, default=None, help="CPU frequency to assume (when /sys hides it).")
@click.option(
    "--memory-bandwidth",
    "memory_bandwidth_bytes_per_s",
    type=BANDWIDTH,
    default=None,
    help="Memory bandwidth to assume, with its unit: 200GB/s (a measured figure, or one the table lacks).",
)
@click.option("--no-gpu", is_flag=True, help="Do not probe GPUs (skips importing NVML and torch).")
@json_option
def detect_command(
    cpu_ghz: float | None, memory_bandwidth_bytes_per_s: float | None, no_gpu: bool, as_json: bool
) -> None:
    """This machine: CPU peak FLOP/s (formula and assumptions), memory bandwidth, GPUs."""
    clock_hz = cpu_ghz * 1e9 if cpu_ghz is not None else None
    catalog = get_context().catalog()
    machine = detect_local(
        catalog=catalog,
        clock_hz=clock_hz,
        memory_bandwidth_bytes_per_s=memory_bandwidth_bytes_per_s,
        probe_gpus=not no_gpu,
    )
    if not as_json:
        render_detected_machine(machine)
        return
    try:
        sol = local_cpu_accelerator(catalog=catalog, cpu=machine.cpu)
    except UnsupportedError as error:
        print_json({"machine": machine, "cpu_accelerator": None, "cpu_accelerator_error": str(error)})
        return
    print_json({"machine": machine, "cpu_accelerator": sol, "cpu_accelerator_error": None})

"""``lightspeed mig profiles|plan``: MIG profiles of a GPU, and partition plans for several services."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from lightspeed.cli._common import emit, get_context, json_option, print_json
from lightspeed.cli._sol_options import calibration_option, resolve_efficiency
from lightspeed.cli.options import Integer
from lightspeed.cli.text_options import OutputPath

MAX_LGI_BYTES = 1 << 20  # the -lgi table of a 8-GPU node is a few KiB


@click.group("mig")
def command() -> None:
    """MIG: a GPU's profiles and placements; plans that serve several models on shared GPUs."""


def _geometry(gpu: str) -> tuple[Any, Any]:
    from lightspeed.catalog import load_mig_geometries, mig_geometry

    context = get_context()
    accelerator = context.catalog().accelerator(gpu)
    return accelerator, mig_geometry(accelerator, load_mig_geometries(context.catalog_paths))


@command.command("profiles")
@click.option("--gpu", required=True, help="MIG-capable GPU (e.g. h100-sxm, a100-sxm, h200-sxm, b200).")
@json_option
def profiles(*, gpu: str, as_json: bool) -> None:
    """Each MIG profile: slices, SMs, memory, media units, instance limit, start slots.

    JSON: the catalog's MIG record {"name", "accelerators", "profiles": [...], "sources"}.
    """
    from lightspeed.report import render_mig_profiles

    _, geometry = _geometry(gpu)
    emit(geometry, as_json, render_mig_profiles)


@command.command("plan")
@click.option(
    "--workloads",
    "workloads_path",
    required=True,
    type=click.Path(path_type=Path),
    help="TOML file of services (see examples/mig-workloads.toml).",
)
@click.option("--gpu", required=True, help="MIG-capable GPU (e.g. h100-sxm).")
@click.option(
    "--gpus",
    "max_gpus",
    type=Integer(minimum=1, maximum=64, unit="GPUs"),
    help="Most GPUs any plan may use [default: 64].",
)
@click.option(
    "--plot", "plot_path", type=OutputPath(example="layout.png"), help="Write the layout figure (PNG/SVG)."
)
@click.option(
    "--current",
    "current_path",
    type=click.Path(path_type=Path),
    help="Saved 'nvidia-smi mig -lgi' output: check the plan against it.",
)
@click.option(
    "--nvml", "use_nvml", is_flag=True, help="Read this machine's MIG layout through NVML and check."
)
@calibration_option
@json_option
def plan(
    *,
    workloads_path: Path,
    gpu: str,
    max_gpus: int | None,
    plot_path: Path | None,
    current_path: Path | None,
    use_nvml: bool,
    calibration: str | None,
    as_json: bool,
) -> None:
    """Partition GPUs for several services, beside whole-GPU serving and time-sharing.

    JSON: {"plan": {"layout", "strategies", "choice", "explanation", "capacities", ...},
    "check": {"matches", "keep", "destroy", "create", "commands", "gpus"} | null, "plots": [...]}.
    """
    from lightspeed.mig import mig_commands, plan_mig, read_workloads
    from lightspeed.report import render_layout_check, render_mig_plan, save_mig_plot

    if current_path is not None and use_nvml:
        raise click.UsageError("give --current FILE or --nvml, not both")
    accelerator, geometry = _geometry(gpu)
    if plot_path is not None:
        save_mig_plot(None, {}, plot_path)  # a path that cannot take the plot fails before planning
    current = _current(geometry, current_path, use_nvml)  # read first: a bad file fails before planning
    result = plan_mig(
        services=read_workloads(workloads_path, get_context().models()),
        accelerator=accelerator,
        catalog=get_context().catalog(),
        models=get_context().models(),
        max_gpus=max_gpus,
        efficiency=resolve_efficiency(calibration),
        geometry=geometry,
        source=str(workloads_path),
    )
    sizes = {profile.name: profile.num_memory_slices for profile in geometry.profiles}
    planned = [gpu.placements if gpu.mig else None for gpu in result.layout]
    check = None if current is None else mig_commands(geometry, current, planned)
    written = save_mig_plot(result, sizes, plot_path) if plot_path is not None else []
    if as_json:
        print_json({"plan": result, "check": check, "plots": [str(path) for path in written]})
        return
    render_mig_plan(result, sizes)
    if check is not None:
        render_layout_check(check)


def _current(geometry: Any, current_path: Path | None, use_nvml: bool) -> Any:
    """The machine's MIG instances: from saved -lgi text, from NVML, or ``None`` when not asked."""
    from lightspeed.errors import DataFileError, UserInputError
    from lightspeed.files import read_text
    from lightspeed.mig import check_current_layout, parse_lgi, read_mig_layout

    if current_path is not None:
        text = read_text(
            current_path,
            max_bytes=MAX_LGI_BYTES,
            what="saved 'nvidia-smi mig -lgi' output",
            fix="save it with: nvidia-smi mig -lgi > current.txt",
        )
        instances = parse_lgi(text, path=str(current_path))
        try:
            check_current_layout(geometry, instances)
        except UserInputError as error:
            raise DataFileError(
                current_path,
                str(error),
                fix="save the output of 'nvidia-smi mig -lgi' on the GPUs themselves",
            ) from None
        return instances
    if use_nvml:
        return read_mig_layout({profile.profile_id: profile.name for profile in geometry.profiles})
    return None

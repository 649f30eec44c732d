"""Options shared by ``plan`` and ``search``: model, system, calibration."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from lightspeed.cli._common import get_context
from lightspeed.cli.options import GPUS, PHYSICAL_EXPERTS
from lightspeed.errors import UserInputError

F = TypeVar("F", bound=Callable[..., Any])


def model_options(function: F) -> F:
    """``--model NAME`` or ``--config PATH`` (a Hugging Face config.json or model TOML)."""
    function = click.option(
        "--config",
        "config_path",
        type=click.Path(path_type=Path),
        help="Hugging Face config.json or model TOML file.",
    )(function)
    return click.option("--model", "model_name", help="Model name (see 'lightspeed model list').")(function)


def system_options(function: F) -> F:
    """``--system`` (name, cluster spec such as 9xdgx-h100@ib-ndr, or cluster file) and ``--gpus``."""
    function = click.option("--gpus", "num_gpus", type=GPUS, help="GPUs to use (default: one node or rack).")(
        function
    )
    return click.option(
        "--system",
        "--gpu",
        "system_text",
        required=True,
        help="System name, cluster spec (e.g. 9xdgx-h100@ib-ndr), cluster TOML file, "
        "or one GPU or MIG slice (--gpu h100-sxm/3g.40gb).",
    )(function)


def _remember_force(ctx: click.Context, _: click.Parameter, value: bool) -> bool:
    ctx.meta["calibration_force"] = value
    return value


def calibration_option(function: F) -> F:
    """``--calibration NAME``: efficiencies fitted by 'lightspeed calibrate'; ``--force`` applies a
    profile measured on another device (refused otherwise)."""
    function = click.option(
        "--force",
        is_flag=True,
        expose_value=False,
        callback=_remember_force,
        help="Apply a --calibration measured on another device anyway (the output says so).",
    )(function)
    return click.option(
        "--calibration", help="Calibration profile from 'lightspeed calibrate' (default: family defaults)."
    )(function)


def _profile_option(flag: str, profiles: str) -> Callable[[F], F]:
    """``--FLAG NAME`` picking one profile of ``sol/data/stacks.toml`` (stored as ``FLAG_name``)."""

    def decorate(function: F) -> F:
        return click.option(f"--{flag}", f"{flag}_name", help=f"{profiles} (sol/data/stacks.toml).")(function)

    return decorate


stack_option = _profile_option(
    "stack",
    "Software-stack profile (kernels, overlaps, recompute policy): megatron-2021, "
    "megatron-core-2024, megatron-core-2025 (default), torchtitan-2024, deepseek-2024, ...",
)
serving_option = _profile_option(
    "serving",
    "Serving-stack profile (kernel efficiency, host time, attention-DP pace): trtllm-2025 "
    "(default), vllm-2025, sglang-2025, deepseek-2025, trtllm-2023",
)


def overlap_options(function: F) -> F:
    """``--tp-overlap/--no-tp-overlap`` and ``--dp-overlap/--no-dp-overlap`` (default: the stack's)."""
    function = click.option(
        "--dp-overlap/--no-dp-overlap",
        default=None,
        help="Hide DP traffic behind compute (default: the stack's).",
    )(function)
    return click.option(
        "--tp-overlap/--no-tp-overlap",
        default=None,
        help="Hide TP communication behind GEMMs (default: the stack's).",
    )(function)


PLAN_KEYS = {
    "tp": "tp",
    "pp": "pp",
    "dp": "dp",
    "cp": "cp",
    "ep": "ep",
    "vpp": "vpp",
    "zero": "zero_stage",
    "mb": "micro_batch_size",
    "micro-batch": "micro_batch_size",
    "recompute": "recompute",
    "schedule": "schedule",
}


def parse_plan_text(text: str, num_gpus: int) -> dict[str, Any]:
    """Plan fields from ``tp=8,pp=16,cp=1,vpp=6,mb=1,recompute=partial`` (``dp`` defaults to the
    GPUs left over); one clear error naming the bad part otherwise."""
    fields: dict[str, Any] = {}
    for part in (piece.strip() for piece in text.split(",") if piece.strip()):
        key, sep, value = part.partition("=")
        name = PLAN_KEYS.get(key.strip().lower())
        if not sep or name is None:
            raise UserInputError(
                f"--compare-plan: cannot read {part!r}; "
                f"write key=value pairs with keys {', '.join(PLAN_KEYS)}"
            )
        value = value.strip()
        if name in ("recompute", "schedule"):
            fields[name] = value
            continue
        if not value.isdigit() or int(value) < (0 if name == "zero_stage" else 1):
            raise UserInputError(f"--compare-plan: {key.strip()} must be a whole number >= 1, not {value!r}")
        fields[name] = int(value)
    other = fields.get("tp", 1) * fields.get("pp", 1) * fields.get("cp", 1)
    if "dp" not in fields:
        if num_gpus % other:
            raise UserInputError(
                f"--compare-plan: tp x pp x cp = {other} does not divide the {num_gpus} GPUs"
            )
        fields["dp"] = num_gpus // other
    return fields


def resolve_model(model_name: str | None, config_path: Path | None) -> Any:
    """The model named, or read from a config file."""
    from lightspeed.workload import spec_from_hf_config

    if (model_name is None) == (config_path is None):
        raise UserInputError("give exactly one of --model NAME or --config PATH")
    if config_path is not None:
        return spec_from_hf_config(config_path)
    return get_context().models().get(model_name)


def resolve_cluster(system_text: str, num_gpus: int | None) -> Any:
    """The cluster a ``--system`` value and ``--gpus`` describe."""
    return get_context().catalog().resolve_cluster(system_text, num_accelerators=num_gpus)


def resolve_efficiency(calibration: str | None) -> Any:
    """The efficiency model of a calibration profile, or ``None`` for family defaults (with
    ``--force``, one that may apply to another device than it was measured on)."""
    if calibration is None:
        return None
    from lightspeed.sol import load_calibration

    force = bool(click.get_current_context().meta.get("calibration_force", False))
    model = load_calibration(calibration, force=force)
    if force and model.measured_on:
        click.echo(
            f"lightspeed: note: calibration '{model.name}' was measured on {model.measured_on}; "
            "--force applies it to other devices too",
            err=True,
        )
    return model


def expert_load_options(function: F) -> F:
    """``--expert-load FILE`` (repeatable: ranks' files add up) and ``--expert-replicas R``."""
    function = click.option(
        "--expert-replicas",
        type=PHYSICAL_EXPERTS,
        help="Physical experts with redundant replicas over the EP group (default: no replicas).",
    )(function)
    return click.option(
        "--expert-load",
        "expert_load_paths",
        multiple=True,
        type=click.Path(path_type=Path),
        help="Recorded expert load (lightspeed JSON, SGLang CSV, ...; see docs/moe.md): the per-layer "
        "imbalance after balancing replaces --expert-imbalance.",
    )(function)


def resolve_expert_balance(paths: tuple[Path, ...], replicas: int | None, model: Any) -> Any:
    """The :class:`~lightspeed.sol.ExpertLoadBalance` of ``--expert-load`` files, or ``None``."""
    if not paths:
        if replicas is not None:
            raise UserInputError("--expert-replicas needs --expert-load FILE (the load to balance)")
        return None
    from lightspeed.moe import combine_loads, read_expert_load
    from lightspeed.sol import expert_load_balance

    experts = model.moe.num_routed_experts if model.moe is not None else None
    load = combine_loads([read_expert_load(path, num_experts=experts) for path in paths])
    return expert_load_balance(
        load=load.array(),
        model=model,
        num_physical_experts=replicas,
        source=", ".join(str(path) for path in paths),
    )


def with_expert_load(payload: dict[str, Any], effect: Any) -> dict[str, Any]:
    """A command's JSON with ``"expert_load"`` added when ``--expert-load`` was given."""
    return payload if effect is None else {**payload, "expert_load": effect}

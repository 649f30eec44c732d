"""Options shared by the commands that predict: model, system, calibration, stacks, expert load."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from lightspeed.cli._common import get_context, given_flags, refuse_together
from lightspeed.cli._completion import model_names
from lightspeed.cli._config import field_options
from lightspeed.errors import UserInputError
from lightspeed.sol import JobConfig, ServingJob, TrainingJob, plan_file_kind
from lightspeed.workload import load_model_file, spec_from_hf_config
from lightspeed.workload import resolve_model as resolve_workload_model

F = TypeVar("F", bound=Callable[..., Any])


_MODEL_CONFIG_KEY = "model_config_path"


def _remember_model_config(ctx: click.Context, _: click.Parameter, value: Path | None) -> Path | None:
    ctx.meta[_MODEL_CONFIG_KEY] = value
    return value


def model_options(function: F) -> F:
    """``--model NAME`` or ``--model-config FILE`` (a Hugging Face config.json or model TOML), as
    ``plan train`` takes them; ``--config`` (a plan file elsewhere) still takes a model file here,
    with a note."""
    function = click.option(
        "--config",
        "config_path",
        type=click.Path(path_type=Path),
        help="Deprecated here: use --model-config (elsewhere --config is a plan file).",
    )(function)
    function = click.option(
        "--model-config",
        _MODEL_CONFIG_KEY,
        type=click.Path(path_type=Path),
        expose_value=False,
        callback=_remember_model_config,
        help=JobConfig.settings_by_name()["model_config"].metadata["help"],
    )(function)
    return click.option(
        "--model",
        "model_name",
        help="Model name (see 'lightspeed model list'), or a path to a config.json, its folder or a "
        "model TOML.",
        shell_complete=model_names,
    )(function)


# options declared once, by the job configurations (lightspeed.sol.config), shared by other commands
system_options = field_options(JobConfig, "system", "num_gpus", rename={"system": "system_text"})
_calibration = field_options(JobConfig, "calibration")


def _remember_force(ctx: click.Context, _: click.Parameter, value: bool) -> bool:
    ctx.meta["calibration_force"] = value
    return value


def calibration_option(function: F) -> F:
    """``--calibration NAME`` and ``--force`` (apply a profile measured on another device) for the
    commands that pass an efficiency model themselves (plan and search read them from the config)."""
    function = click.option(
        "--force",
        is_flag=True,
        expose_value=False,
        callback=_remember_force,
        help=JobConfig.settings_by_name()["force_calibration"].metadata["help"],
    )(function)
    return _calibration(function)


stack_option = field_options(TrainingJob, "stack", rename={"stack": "stack_name"})
serving_option = field_options(ServingJob, "serving", rename={"serving": "serving_name"})
overlap_options = field_options(TrainingJob, "tp_overlap", "dp_overlap")
expert_load_options = field_options(
    JobConfig, "expert_load", "expert_replicas", rename={"expert_load": "expert_load_paths"}
)


def resolve_model(model_name: str | None, config_path: Path | None) -> Any:
    """The model ``--model`` names (a known name or alias, or a path to a Hugging Face config.json,
    its folder or a model TOML, as ``model show`` and ``memory`` take it), or read from
    ``--model-config`` (or the deprecated ``--config``) FILE, a config.json or a model TOML."""
    model_config = click.get_current_context().meta.get(_MODEL_CONFIG_KEY)
    given = [value for value in (model_name, model_config, config_path) if value is not None]
    if len(given) != 1:
        raise UserInputError("give exactly one of --model NAME or --model-config FILE")
    if config_path is not None:
        return _model_from_config_option(config_path)
    if model_config is not None:
        return model_from_file(model_config)
    return model_by_name_or_path(str(model_name))


def _model_from_config_option(path: Path) -> Any:
    """The model file ``--config`` names, read with a deprecation note; a plan file is refused."""
    kind = plan_file_kind(path)
    if kind is not None:
        command = JobConfig.command_for(kind)
        raise UserInputError(
            f"--config {path}: is a {kind} file; run it with 'lightspeed {command} --config {path}', "
            "or give this command the model with --model NAME or --model-config FILE"
        )
    click.echo(
        "lightspeed: note: --config here takes a model file and is deprecated: use --model-config "
        "FILE (--config is a plan file in plan and search)",
        err=True,
    )
    return model_from_file(path)


def model_from_file(path: Path) -> Any:
    """The model of a model TOML (``kind = "model"``, a variant laid over a known model) or a
    Hugging Face config.json."""
    if path.suffix == ".toml":  # as a --model path and a plan file's model_config are read
        return load_model_file(path, get_context().models()).spec
    return spec_from_hf_config(path)


def model_by_name_or_path(text: str) -> Any:
    """The model a ``--model`` value names: a registry name or alias, or a path to a Hugging Face
    config.json (or its folder) or a model TOML (:func:`lightspeed.workload.resolve_model`)."""
    return resolve_workload_model(text, get_context().models())


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


def resolve_expert_balance(paths: tuple[Path, ...], replicas: int | None, model: Any) -> Any:
    """The :class:`~lightspeed.sol.ExpertLoadBalance` of ``--expert-load`` files, or ``None``."""
    if not paths:
        if replicas is not None:
            raise UserInputError("--expert-replicas needs --expert-load FILE (the load to balance)")
        return None
    from lightspeed.moe import expert_load_balance, read_expert_loads

    experts = model.moe.num_routed_experts if model.moe is not None else None
    load = read_expert_loads(paths, num_experts=experts)
    return expert_load_balance(
        load=load.array(),
        model=model,
        num_physical_experts=replicas,
        source=", ".join(str(path) for path in paths),
    )


def refuse_given(names: tuple[str, ...], reason: str) -> None:
    """A usage error naming the options among the parameters ``names`` that the user gave on the
    command line (not a plan file's values, nor defaults); ``{it}`` in ``reason`` becomes it or them."""
    flags = given_flags(*names)
    refuse_together(flags, reason.format(it="it" if len(flags) == 1 else "them"))


def job_model(config: JobConfig) -> Any:
    """The model a job configuration names, from the registry or a model file, as :func:`lightspeed.jobs.run`
    resolves it (an incomplete configuration is the same one-line error run gives)."""
    config.check_complete()
    if config.model_config is not None:
        return model_from_file(Path(config.model_config))
    return model_by_name_or_path(str(config.model))


def refuse_on_dense(config: JobConfig, settings: dict[str, bool]) -> None:
    """Refuse mixture-of-experts settings (``{flag: whether it is set}``) on a dense model, as ``--ep``
    is refused: they would be ignored. The model is resolved only when one of them is set."""
    given = [flag for flag, is_set in settings.items() if is_set]
    if not given:
        return
    model = job_model(config)
    if model.moe is None:
        raise UserInputError(
            f"{', '.join(given)}: {'it shapes' if len(given) == 1 else 'they shape'} mixture-of-experts "
            f"layers and {model.name} is dense: leave {'it' if len(given) == 1 else 'them'} out"
        )


def with_expert_load(payload: dict[str, Any], effect: Any) -> dict[str, Any]:
    """A command's JSON with ``"expert_load"`` added when ``--expert-load`` was given."""
    return payload if effect is None else {**payload, "expert_load": effect}

"""Command-line options generated from a job configuration (:mod:`lightspeed.sol.config`).

``@config_options(TrainingConfig)`` adds one option per configuration field, with
the flags, help text, choices and option type (:mod:`lightspeed.cli.options`)
the field's metadata names, plus:

* ``--config FILE``: a plan file (TOML, or a command's ``--json`` output) whose keys
  become the options' defaults (what is given on the command line wins), or a model
  config (Hugging Face ``config.json``, model TOML), as before plan files existed;
* ``--save-config FILE``: write the configuration as a TOML plan file.

A command with options of its own beside the configuration's (``simulate``: the workload's
spread, the SLO, the scheduler) keeps them in a table of the plan file (:class:`OptionTable`,
``[simulate]``), which ``--config`` reads back into those options' defaults, so that a saved
run re-runs as the same run.

File values go through the same option types as typed values, so a plan file is
bounded and checked exactly like the command line. The command receives the
configuration as one object: :func:`configuration`.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, TypeVar

import click

from lightspeed.cli import options as option_types
from lightspeed.cli._completion import hardware_names, model_names
from lightspeed.cli.text_options import InputFile, OutputPath
from lightspeed.datafile import toml_value
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.files import check_input, write_output_text
from lightspeed.sol import JobConfig, check_plan_kind, plan_file_kind, read_plan_file

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=JobConfig)
_FILE_KEY = "_config_file"
_KEYS_KEY = "_config_keys"
PLAN_FILE_WHAT: Final = "plan file or model config (TOML or config.json)"  # what --config reads


@dataclasses.dataclass(frozen=True)
class OptionTable:
    """A command's own options kept in a table of its plan file (see the module docstring).

    ``keys``: each file key's option (its click parameter name) and the Python types its value
    may have in the file (``bool`` for a flag); ``written``: how an option's value is written when
    it is not already a file value (the parts of ``--isl-dist`` back to its text)."""

    name: str
    keys: Mapping[str, tuple[str, tuple[type, ...]]]
    written: Mapping[str, Callable[[Any], Any]] = dataclasses.field(default_factory=dict)
    comment: str = ""

    def file_values(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The table of the options' ``values`` (as click passes them; ``None`` left out)."""
        table: dict[str, Any] = {}
        for key, (parameter, _) in self.keys.items():
            value = values.get(parameter)
            if value is None:
                continue
            write = self.written.get(parameter)
            table[key] = write(value) if write is not None else _plain(value)
        return table

    def toml(self, values: Mapping[str, Any]) -> str:
        """The ``[name]`` table of :meth:`file_values` as TOML lines."""
        lines = [f"# {self.comment}"] if self.comment else []
        lines.append(f"[{self.name}]")
        lines.extend(f"{key} = {toml_value(value)}" for key, value in self.file_values(values).items())
        return "\n".join(lines) + "\n"


def config_options(config_type: type[JobConfig], *, table: OptionTable | None = None) -> Callable[[F], F]:
    """Decorate a click command with the options of ``config_type`` (see the module docstring);
    ``table``: the command's own options that its plan files keep (:class:`OptionTable`)."""
    hints = typing.get_type_hints(config_type)

    def decorate(function: F) -> F:
        function = click.option(
            "--save-config",
            "save_config",
            type=OutputPath(dir_okay=False, example="plan.toml", what="plan file", new_folder_ok=False),
            help="Write this configuration as a TOML plan file (run it again with --config).",
        )(function)
        for item in reversed(config_type.settings()):
            function = _option(item, hints[item.name])(function)
        return click.option(
            "--config",
            "config_file",
            type=InputFile(what=PLAN_FILE_WHAT, example="plan.toml"),
            is_eager=True,
            callback=_reader(config_type, table),
            help=f'Plan file (TOML with kind = "{config_type.KIND}", or this command\'s --json output) '
            "whose values the other options override; or a Hugging Face config.json / model TOML.",
        )(function)

    return decorate


def _flags(item: dataclasses.Field[Any]) -> list[str]:
    flags = list(item.metadata.get("flags") or ())
    return flags or [f"--{item.name.replace('_', '-')}"]


def field_options(
    config_type: type[JobConfig], *names: str, rename: Mapping[str, str] | None = None
) -> Callable[[F], F]:
    """The options of some fields of ``config_type``, for commands that share them without running
    the configuration (``rename`` gives a field's option another parameter name)."""
    hints = typing.get_type_hints(config_type)
    chosen = {item.name: item for item in config_type.settings()}
    unknown = [name for name in names if name not in chosen]
    assert not unknown, f"{config_type.__name__} has no field {unknown}"

    def decorate(function: F) -> F:
        for name in reversed(names):
            parameter = (rename or {}).get(name, name)
            function = _option(chosen[name], hints[name], parameter)(function)
        return function

    return decorate


def _option(item: dataclasses.Field[Any], hint: Any, parameter: str = "") -> Callable[[F], F]:
    meta = item.metadata
    flags = _flags(item)
    name = parameter or item.name
    common: dict[str, Any] = {"help": meta["help"]}
    if meta.get("negative_flag"):
        return click.option(meta["negative_flag"], name, flag_value=False, default=True, **common)
    if hint is bool:
        return click.option(*flags, name, is_flag=True, default=item.default, **common)
    if hint == (bool | None):
        word = flags[0].removeprefix("--")
        return click.option(f"--{word}/--no-{word}", name, default=None, **common)
    if _is_tuple_of(hint, str):
        return click.option(*flags, name, multiple=True, type=click.Path(path_type=Path), **common)
    complete = _COMPLETIONS.get(item.name)
    if complete is not None:
        common["shell_complete"] = complete
    kind = meta.get("option_type")
    click_type: Any = click.Choice(meta["choices"], case_sensitive=False) if meta.get("choices") else None
    if kind:
        click_type = getattr(option_types, kind)
    if item.default is not None:  # no default at all, not None: click checks required options then
        common.update(default=item.default, show_default=meta.get("show_default", True))
    return click.option(*flags, name, type=click_type, required=bool(meta.get("required")), **common)


# configuration fields whose values the shell completes from the catalog and the model registry
_COMPLETIONS: Final = {"model": model_names, "system": hardware_names}


def _is_tuple_of(hint: Any, element: type) -> bool:
    return typing.get_origin(hint) is tuple and typing.get_args(hint) == (element, Ellipsis)


def _reader(
    config_type: type[JobConfig], table: OptionTable | None = None
) -> Callable[[click.Context, click.Parameter, Path | None], Path | None]:
    """The ``--config`` callback: a plan file fills the defaults (its ``table`` those of the
    command's own options), anything else is a model config."""

    def read(ctx: click.Context, param: click.Parameter, path: Path | None) -> Path | None:
        if path is None:
            return None
        check_input(path, what=PLAN_FILE_WHAT)  # missing, a FIFO, a device
        kind = plan_file_kind(path)
        if kind is None:
            check_plan_kind(path, config_type.KIND)  # a plan file with a bad kind says so here
        if kind is None:  # a model config, as --config always took
            ctx.default_map = {**(ctx.default_map or {}), "model_config": str(path)}
            return path
        data = read_plan_file(path)  # a file of another kind is refused there, naming its command
        try:
            config = config_type.from_mapping(data, where=str(path))
        except UserInputError:  # the types are right and a value is not: say it as its option would
            names = {item.name for item in config_type.settings()}
            _check_values(ctx, path, {k: _plain(v) for k, v in data.items() if k in names and v is not None})
            raise
        # the values as read (not to_dict(), which turns a NaN into None): the options' types check them
        given = {item.name: getattr(config, item.name) for item in config_type.settings()}
        _check_values(ctx, path, {k: v for k, v in given.items() if v is not None and k in data})
        ctx.default_map = {**(ctx.default_map or {}), **{k: v for k, v in given.items() if v is not None}}
        ctx.default_map.update(_table_defaults(ctx, path, data, config_type, table))
        ctx.meta[_FILE_KEY] = path
        ctx.meta[_KEYS_KEY] = frozenset(data)
        return path

    return read


def _table_defaults(
    ctx: click.Context,
    path: Path,
    data: Mapping[str, Any],
    config_type: type[JobConfig],
    table: OptionTable | None,
) -> dict[str, Any]:
    """The option defaults a plan file's table gives (each value checked by its option's type, one
    error naming the file and the key); a table of another command's options is left out, saying so."""
    for name in config_type.TABLES:
        if name in data and (table is None or table.name != name):
            click.echo(
                f"lightspeed: note: {path}: the [{name}] table holds 'lightspeed {name}' options "
                f"(its workload and scheduler); {ctx.command_path.partition(' ')[2] or ctx.info_name} "
                "leaves them out",
                err=True,
            )
    found = data.get(table.name) if table is not None else None
    if table is None or not isinstance(found, Mapping):
        return {}
    defaults: dict[str, Any] = {}
    for key, value in found.items():
        if key not in table.keys:
            close = difflib.get_close_matches(str(key), list(table.keys), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f"; keys: {', '.join(table.keys)}"
            raise DataFileError(path, f"unknown key {key!r} in [{table.name}]{hint}")
        parameter, types = table.keys[key]
        if value is None:  # JSON null: the option's default
            continue
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            wanted = " or ".join(_TYPE_WORDS.get(kind, kind.__name__) for kind in types)
            raise DataFileError(
                path, f"{table.name}.{key} = {_toml_value(value)} must be {wanted}", fix=_FILE_FIX
            )
        defaults[parameter] = value
    shown = {parameter: f"{table.name}.{key}" for key, (parameter, _) in table.keys.items()}
    _check_values(ctx, path, defaults, shown)
    return defaults


_TYPE_WORDS: Final = {bool: "true or false", str: "a string", int: "a whole number", float: "a number"}
_FILE_FIX: Final = "see 'docs/plan-files.md' for each key"


def _check_values(
    ctx: click.Context, path: Path, given: Mapping[str, Any], keys: Mapping[str, str] | None = None
) -> None:
    """Check each value the file gives with its option's type, so that a bad value names the file
    and its key (not the command-line option the value stands in for; ``keys``: the file key of
    each option, where it is not the option's name)."""
    keys = keys or {}
    for param in ctx.command.params:
        if param.name not in given or not isinstance(param, click.Option):
            continue
        value = given[param.name]
        try:
            param.type_cast_value(ctx, value)
        except click.BadParameter as error:
            shown = _toml_value(value)
            flag = param.opts[0] if param.opts else param.name
            key = keys.get(param.name, param.name)
            raise UserInputError(f"{path}: {key} = {shown} (option {flag}): {error.message}") from None


def _toml_value(value: Any) -> str:
    """``value`` as the plan file writes it (``[0.8, 0.6]``, not a Python tuple); a value TOML
    cannot hold (NaN) as Python writes it, since the message is about it."""
    try:
        return toml_value(value)
    except (UserInputError, TypeError):
        return repr(value)


def configuration(
    config_type: type[C],
    values: dict[str, Any],
    *,
    table: OptionTable | None = None,
    changes: Mapping[str, Any] | None = None,
) -> C:
    """The configuration a command's option values describe (``values`` as click passes them; the
    ``--config``, ``--save-config`` and any other options of the command are left out), with
    ``changes`` to its fields. Writes the plan file when ``--save-config`` was given, with the
    ``table`` of the command's own options."""
    names = {item.name for item in config_type.settings()}
    fields = {name: _plain(value) for name, value in values.items() if name in names}
    config = config_type(**{**fields, **(changes or {})})
    target = values.get("save_config")
    if isinstance(target, Path):
        ctx = click.get_current_context(silent=True)
        command = ctx.command_path.partition(" ")[2] if ctx is not None else ""
        text = config.to_toml(command=command or None) + ("" if table is None else table.toml(values))
        write_output_text(target, text, what="plan file", example="plan.toml")
        click.echo(f"wrote {target}", err=True)
    return config


def _plain(value: Any) -> Any:
    """Option values as configuration values: paths as text, tuples as tuples."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple | list):
        return tuple(_plain(item) for item in value)
    return value


def used_config_file() -> Path | None:
    """The plan file of the running command, if ``--config`` named one."""
    ctx = click.get_current_context(silent=True)
    found = ctx.meta.get(_FILE_KEY) if ctx is not None else None
    return found if isinstance(found, Path) else None


def config_file_keys() -> frozenset[str]:
    """The top-level keys the running command's plan file holds (none without one)."""
    ctx = click.get_current_context(silent=True)
    found = ctx.meta.get(_KEYS_KEY) if ctx is not None else None
    return found if isinstance(found, frozenset) else frozenset()


__all__ = [
    "OptionTable",
    "config_file_keys",
    "config_options",
    "configuration",
    "field_options",
    "used_config_file",
]

"""Shared CLI plumbing: the context object, ``--json``, and output.

The CLI stays thin: parse arguments, call the library with keywords, render
through :mod:`lightspeed.report`. Nothing here computes.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click
import msgspec
from click.core import ParameterSource

from lightspeed.records import to_jsonable

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


@dataclass
class CliContext:
    """Per-invocation state shared by subcommands (``ctx.obj``)."""

    catalog_paths: tuple[Path, ...] = ()
    _cache: dict[str, Any] = field(default_factory=dict)

    def catalog(self) -> Any:
        """The hardware catalog with the user's extra files applied (loaded once)."""
        if "catalog" not in self._cache:
            from lightspeed.catalog import load_catalog

            self._cache["catalog"] = load_catalog(extra_paths=self.catalog_paths)
        return self._cache["catalog"]

    def power(self) -> Any:
        """System power records with the user's ``system-power`` files applied (loaded once)."""
        if "power" not in self._cache:
            from lightspeed.catalog import load_power

            self._cache["power"] = load_power(extra_paths=self.catalog_paths)
        return self._cache["power"]

    def models(self) -> Any:
        """The model registry with the user's extra files applied (loaded once)."""
        if "models" not in self._cache:
            from lightspeed import workload

            self._cache["models"] = workload.load_models(extra_paths=self.catalog_paths)
        return self._cache["models"]


def get_context() -> CliContext:
    """The :class:`CliContext` of the running command (a fresh one outside ``main``)."""
    ctx = click.get_current_context(silent=True)
    while ctx is not None:
        if isinstance(ctx.obj, CliContext):
            return ctx.obj
        ctx = ctx.parent
    return CliContext()


def json_option(function: F) -> F:
    """Add ``--json`` (machine-readable output on stdout) to a command."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of tables."
    )(function)


def print_json(payload: Any) -> None:
    """Write ``payload`` as indented JSON on stdout (records converted with ``to_dict``).

    msgspec encodes and indents in C: ten times the standard library's indenting encoder,
    which is pure Python (``validate --json`` of 20,000 rows writes 60 MB). Non-finite
    floats became ``null`` in ``to_jsonable``; text is UTF-8, not ``\\u`` escapes.
    """
    encoded = msgspec.json.format(msgspec.json.encode(to_jsonable(payload)), indent=2)
    click.echo(encoded.decode("utf-8"))


def given_flags(*names: str) -> list[str]:
    """The flags, among the parameters ``names`` of the running command, that the user set (on the
    command line or through the environment), as opposed to left at their defaults."""
    ctx = click.get_current_context()
    given = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
    return [
        param.opts[0] if param.opts else str(param.name)
        for param in ctx.command.params
        if param.name in names and ctx.get_parameter_source(param.name) in given
    ]


def refuse_together(flags: list[str], reason: str) -> None:
    """A usage error when any of ``flags`` were given: ``reason`` says what they conflict with."""
    if flags:
        raise click.UsageError(f"{', '.join(flags)}: {reason}")


def emit(result: Any, as_json: bool, render: Callable[[Any], None]) -> None:
    """Print ``result`` as JSON or through ``render`` (a :mod:`lightspeed.report` function)."""
    if as_json:
        print_json(result)
    else:
        render(result)


class DefaultGroup(click.Group):
    """A group that runs ``default_command`` when the first argument names no subcommand,
    so ``lightspeed compare A B`` is ``lightspeed compare runs A B``."""

    def __init__(self, *args: Any, default_command: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.default_command = default_command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        first = args[0] if args else None
        if first is not None and first not in {"--help", "-h"} and first not in self.list_commands(ctx):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


def with_warnings(action: Callable[[], T]) -> T:
    """Run ``action``; show the warnings it raised (lines skipped in logs) as one line each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = action()
    for warning in caught:
        click.echo(f"lightspeed: warning: {warning.message}", err=True)
    return result

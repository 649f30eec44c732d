"""Shared CLI plumbing: the context object, ``--json``, and output.

The CLI stays thin: parse arguments, call the library with keywords, render
through :mod:`lightspeed.report`. Nothing here computes.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click
import msgspec
from click.core import ParameterSource

from lightspeed.cli.options import first_repeated
from lightspeed.cli.text_options import flag_of
from lightspeed.files import excerpt
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


def refuse_repeated_options(command: click.Command, ctx: click.Context, args: Sequence[str]) -> None:
    """A usage error when an option that takes one value is given different values anywhere along
    ``args`` (the words after ``command``, through every subcommand they name): ``--tp 2 --tp 4``
    would otherwise run with the last. The same text twice (``--tp 2 --tp 2``) leaves no doubt and
    passes; options that are repeatable (``multiple``), counts (``-vv``) and flags (``--json
    --json``) are left alone; words click cannot parse are left to the real parse, which says what
    is wrong with them."""
    level: click.Command | None = command
    parent, name, words = ctx.parent, ctx.info_name, list(args)
    while level is not None and words:
        probe = click.Context(level, info_name=name, parent=parent, resilient_parsing=True)
        parser = level.make_parser(probe)
        checked = [param for param in level.get_params(probe) if _single_valued(param)]
        for param in checked:
            every = copy.copy(param)
            every.multiple = True  # the parser keeps every value, not the last
            every.add_to_parser(parser, probe)
        try:
            given, rest, _ = parser.parse_args(args=list(words))
        except click.UsageError:
            return
        if given.get("help"):
            return
        for param in checked:
            values = given.get(param.name) or []
            if len(set(map(str, values))) > 1:  # the same text twice leaves no doubt which was meant
                raise click.UsageError(_repeated(param, values), ctx=probe)
        level, parent, name, words = _subcommand(level, probe, rest)


def refuse_repeated_values(flag: str, values: Sequence[Any], show: Callable[[Any], str] = str) -> None:
    """A usage error when a repeatable option (``--interval``) is given the same value twice
    (``1h`` and ``3600`` are one value once read): each value would be answered twice."""
    repeated = first_repeated(values)
    if repeated is not None:
        raise click.UsageError(f"{flag} {show(values[repeated])} given twice: give each value once")


def _single_valued(param: click.Parameter) -> bool:
    """Whether ``param`` is an option that takes one value (neither repeatable, a count nor a flag)."""
    return isinstance(param, click.Option) and not (param.multiple or param.count or param.is_flag)


def _repeated(param: click.Parameter, values: list[Any]) -> str:
    """``--tp given twice (2, then 4): give it once``."""
    texts = [" ".join(map(str, value)) if isinstance(value, tuple) else str(value) for value in values]
    shown = [excerpt(text) if text.strip() else repr(text) for text in texts]
    times = "twice" if len(values) == 2 else f"{len(values)} times"
    flag = flag_of(param)
    return f"{flag} given {times} ({', then '.join(shown)}): give it once"


def _subcommand(
    group: click.Command, ctx: click.Context, words: list[str]
) -> tuple[click.Command | None, click.Context, str | None, list[str]]:
    """The subcommand ``words`` name under ``group`` (its default one when the first word names
    none, as :class:`DefaultGroup` reads it), with the words after its name."""
    if not isinstance(group, click.Group) or not words:
        return None, ctx, None, []
    sub = group.get_command(ctx, words[0])
    if sub is not None:
        return sub, ctx, words[0], words[1:]
    default = getattr(group, "default_command", None)
    if isinstance(default, str):
        return group.get_command(ctx, default), ctx, default, words
    return None, ctx, None, []

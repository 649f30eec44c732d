"""Every numeric option of every command uses a type of ``lightspeed.cli.options``.

The test walks the whole click tree from ``lightspeed.cli.main.cli`` (command
groups added later are walked too) and fails on an option that is numeric by
its type, its default or its name but parses with a plain click type, which
lets ``nan``, ``inf``, ``1e400`` or a rounded ``99999999999999999999`` through.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest

from lightspeed.cli.main import cli
from lightspeed.cli.options import Duration, NumericType

_CLICK_NUMBERS = (click.types.IntParamType, click.types.FloatParamType)
# Words in an option's name that say it holds a number (a count, a size, a time, a rate...).
_NUMERIC_NAME = re.compile(
    r"(^num_|_s$|_w$|_kw$|bytes|size|tokens|rate|threshold|cutoff|interval|timeout|bandwidth|ttft|tpot"
    r"|usd|gpus|nodes|racks|seq|batch|replicas|concurrency|threads|processes|limit|^top$|alpha|ghz"
    r"|imbalance|warmup|acceptance|cost|per_day|per_s|^tp$|^pp$|^dp$|^ep$|^cp$|^vpp$|^zero|accelerators"
    r"|isl|osl|failures|flop|claim)"
)
_NUMBER_TEXT = re.compile(r"\s*[-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?\s*[a-zA-Zµ%/]*\s*$")
# Options whose names look numeric but hold words (names, files, choices).
_NOT_NUMERIC = {
    "schedules",  # comma-separated schedule names
    "system_names",  # --systems a,b,c
    "system_values",
    "more_systems",
    "collectives",
    "plan_family",
    "precision_values",
    "prices_path",
    "tokens_scope",
}


def _walk(command: click.Command, path: str, ctx: click.Context) -> Iterator[tuple[str, click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, f"{path} {name} is listed but cannot be loaded"
            yield from _walk(sub, f"{path} {name}", click.Context(sub, parent=ctx, info_name=name))


def _commands() -> list[tuple[str, click.Command]]:
    root = click.Context(cli, info_name="lightspeed")
    return list(_walk(cli, "lightspeed", root))


def _is_numeric(param: click.Parameter) -> bool:
    if isinstance(param, click.Option) and (param.is_flag or param.count):  # -v, -vv: a counter, not a value
        return False
    if isinstance(param.type, click.Choice | click.Path | click.File):
        return False
    if isinstance(param.type, _CLICK_NUMBERS):
        return True
    default = param.default
    if isinstance(default, int | float) and not isinstance(default, bool):
        return True
    if isinstance(default, str) and _NUMBER_TEXT.match(default):
        return True
    name = param.name or ""
    return name not in _NOT_NUMERIC and bool(_NUMERIC_NAME.search(name))


def test_the_tree_holds_every_command_group() -> None:
    paths = {path for path, _ in _commands()}
    for expected in ("lightspeed plan train", "lightspeed compare systems", "lightspeed trace diff"):
        assert expected in paths
    assert len(paths) > 40


@pytest.mark.parametrize(("path", "command"), _commands(), ids=lambda value: str(value).replace(" ", "/"))
def test_numeric_options_use_the_shared_types(path: str, command: click.Command) -> None:
    untyped = [
        f"{'/'.join(getattr(param, 'opts', [param.name or '?']))} ({param.type.name})"
        for param in command.params
        if _is_numeric(param) and not isinstance(param.type, NumericType)
    ]
    assert not untyped, (
        f"'{path}' has numeric options without a lightspeed.cli.options type: {', '.join(untyped)}; "
        "use GPUS, SEQ_LEN, TOKENS, Integer(...), Number(...), Size(...), Duration(...) ... (docs/limits.md)"
    )


def test_the_classifier_catches_plain_click_numbers() -> None:
    @click.command()
    @click.option("--gpus", type=int)
    @click.option("--rate", type=float)
    @click.option("--cutoff", default="30us")
    @click.option("--label")
    def sample(gpus: int, rate: float, cutoff: str, label: str) -> None: ...

    flagged = [param.name for param in sample.params if _is_numeric(param)]
    assert flagged == ["gpus", "rate", "cutoff"]


@pytest.mark.parametrize("text", ["-5", "-5s", "- 2min"])
def test_a_negative_quantity_is_below_the_minimum_not_unreadable(text: str) -> None:
    """``--checkpoint-write-s -5`` said "cannot read '-5' as a duration": the unit parsers read
    magnitudes, so a minus sign made a plain number unreadable."""
    with pytest.raises(click.BadParameter, match="is not above the minimum"):
        Duration(minimum=0.0, min_open=True).convert(text, None, None)


@pytest.mark.parametrize("text", ["-", "-abc", "--5"])
def test_a_minus_before_no_quantity_is_still_unreadable(text: str) -> None:
    with pytest.raises(click.BadParameter, match=f"cannot read '{text}' as a duration"):
        Duration(minimum=0.0, min_open=True).convert(text, None, None)

"""What the documentation says about the command line and the source tree still holds: every
option a command's --help lists is documented, every `lightspeed validate` command a reader can
copy passes the one table the command takes, and docs/architecture.md's sizes and homes of
modules match the source."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import click

import lightspeed as ls
from lightspeed.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "lightspeed"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# a "~N lines" figure may drift this far from `wc -l` before the document must say so
LINE_COUNT_TOLERANCE = 0.10


def _documents(*, with_log: bool) -> list[Path]:
    """README.md and docs/*.md; docs/benchmarks.md (a log of past sessions) only when asked."""
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [path for path in documents if with_log or path.name != "benchmarks.md"]


def _commands(group: click.Group, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command under ``group`` (groups included) with its path of names."""
    yield path, group
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if command is None or command.hidden:
            continue
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def _long_flags(command: click.Command) -> Iterator[tuple[str, ...]]:
    """The long flags of each visible option of ``command`` (``--help`` left out)."""
    for parameter in command.params:
        if not isinstance(parameter, click.Option) or parameter.hidden:
            continue
        flags = tuple(flag for flag in (*parameter.opts, *parameter.secondary_opts) if flag.startswith("--"))
        if flags and flags != ("--help",):
            yield flags


def test_every_option_the_help_lists_is_documented() -> None:
    text = "\n".join(path.read_text(encoding="utf-8") for path in _documents(with_log=False))
    undocumented = [
        f"{' '.join(('lightspeed', *path))} {'/'.join(flags)}"
        for path, command in _commands(cli, ())
        for flags in _long_flags(command)
        if not any(re.search(re.escape(flag) + r"(?![\w-])", text) for flag in flags)
    ]
    assert not undocumented, "options in --help that README.md and docs/*.md never name: " + "; ".join(
        undocumented
    )


def _brace_expanded(word: str) -> list[str]:
    """``word`` with its innermost ``{a,b}`` expanded as a shell expands it (left to right)."""
    match = re.search(r"\{([^{}]*,[^{}]*)\}", word)
    if match is None:
        return [word]
    head, tail = word[: match.start()], word[match.end() :]
    return [
        expanded for part in match.group(1).split(",") for expanded in _brace_expanded(head + part + tail)
    ]


def _shell_words(word: str) -> list[str]:
    """What a shell passes for ``word`` run from the repository root: braces, then globs that match."""
    words = []
    for expanded in _brace_expanded(word):
        matches = sorted(ROOT.glob(expanded)) if re.search(r"[*?\[]", expanded) else []
        words += [str(match) for match in matches] or [expanded]
    return words


def _validate_commands() -> Iterator[tuple[str, int, str]]:
    """(document, line, arguments) of each `lightspeed validate` command in the documents: up to
    the end of its code span or line, a shell separator or a comment."""
    for document in _documents(with_log=True):
        for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
            for match in re.finditer(r"lightspeed validate((?: [^`;|#&>)\s]+)*)", line):
                yield document.name, number, match.group(1)


def _positional_count(arguments: str, command: click.Command) -> int:
    """How many positional arguments ``arguments`` hands ``command`` once the shell expands them."""
    takes_value = {
        flag
        for parameter in command.params
        if isinstance(parameter, click.Option) and not parameter.is_flag and not parameter.count
        for flag in parameter.opts
    }
    words = [word for raw in shlex.split(arguments) for word in _shell_words(raw)]
    count, index = 0, 0
    while index < len(words):
        word = words[index]
        if word in takes_value:
            index += 2
            continue
        count += not word.startswith("-")
        index += 1
    return count


def test_each_validate_command_in_the_docs_names_one_table_at_most() -> None:
    validate = cli.get_command(click.Context(cli), "validate")
    assert validate is not None
    found = list(_validate_commands())
    assert len(found) >= 10  # the pattern still finds the commands
    wrong = [
        f"{document}:{line}: lightspeed validate{arguments}"
        for document, line, arguments in found
        if _positional_count(arguments, validate) > 1
    ]
    assert not wrong, "validate takes one TABLE (loop over the files instead): " + "; ".join(wrong)


def test_the_shell_expansion_the_check_relies_on() -> None:
    assert _brace_expanded("dev{,-2025}.tsv") == ["dev.tsv", "dev-2025.tsv"]
    assert _brace_expanded("probe{,-2,-3}.tsv") == ["probe.tsv", "probe-2.tsv", "probe-3.tsv"]
    assert len(_shell_words("tests/data/validation/probe-serving*.tsv")) > 1
    validate = cli.get_command(click.Context(cli), "validate")
    assert validate is not None
    # --explain takes a value, --json does not: one table, then two
    assert _positional_count(" my-runs.tsv --explain T2 --json", validate) == 1
    assert _positional_count(' a.tsv "b.tsv"', validate) == 2


def _line_counts() -> list[tuple[str, int]]:
    """(module path under src/lightspeed, figure) of each "`path`, ~N lines" in architecture.md."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    return [(path, int(lines)) for path, lines in re.findall(r"`([\w/]+\.py)`, ~(\d+) lines", text)]


def test_architecture_line_counts_match_the_source() -> None:
    counts = _line_counts()
    assert counts, "the pattern still finds a '~N lines' figure"
    wrong = []
    for path, stated in counts:
        actual = len((SOURCE / path).read_text(encoding="utf-8").splitlines())
        if abs(actual - stated) > LINE_COUNT_TOLERANCE * actual:
            wrong.append(f"{path}: ~{stated} lines stated, {actual} in the source")
    assert not wrong, "docs/architecture.md: " + "; ".join(wrong)


def test_architecture_places_the_bootstrap_where_it_is_defined() -> None:
    homes = sorted(
        path.relative_to(SOURCE).as_posix()
        for path in SOURCE.rglob("*.py")
        if re.search(r"^def bootstrap", path.read_text(encoding="utf-8"), re.MULTILINE)
    )
    assert homes, "no module defines a bootstrap any more: update this test and the document"
    lines = ARCHITECTURE.read_text(encoding="utf-8").splitlines()
    wrong = [
        line.strip() for line in lines if "bootstrap" in line and not any(home in line for home in homes)
    ]
    assert not wrong, f"docs/architecture.md names the bootstrap away from {', '.join(homes)}: {wrong}"


def _readme_commands() -> Iterator[tuple[int, str]]:
    """(line, command) of each `lightspeed ...` command of README.md: a code span, or a line of a
    code block."""
    for number, line in enumerate((ROOT / "README.md").read_text(encoding="utf-8").splitlines(), 1):
        spans = re.findall(r"`(lightspeed [^`]*)`", line)
        yield from ((number, span) for span in spans)
        if not spans and line.startswith("lightspeed "):
            yield number, line.split("#", 1)[0]


def _option(command: str, flag: str) -> str | None:
    match = re.search(rf"{flag} (\S+)", command)
    return match.group(1) if match else None


def test_readme_requests_fit_their_models_context() -> None:
    """A README example whose prompt and output run past the model's context prints an
    'above ... context' note instead of what the row shows: each fits (or names a model that
    holds it)."""
    checked, wrong = 0, []
    for line, command in _readme_commands():
        name, isl, osl = (_option(command, flag) for flag in ("--model", "--isl", "--osl"))
        if name is None or isl is None or osl is None or not (isl.isdigit() and osl.isdigit()):
            continue
        context = ls.model(name).max_seq_len
        checked += 1
        if int(isl) + int(osl) > context:
            wrong.append(f"README.md:{line}: {name} isl+osl {int(isl) + int(osl):,} > context {context:,}")
    assert checked >= 10  # the pattern still finds the commands
    assert not wrong, "; ".join(wrong)

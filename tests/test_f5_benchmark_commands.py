"""Every option a documented ``python benchmarks/SCRIPT.py`` command passes is one the script
takes: docs/benchmarks.md showed ``fit_efficiency.py --out /tmp/fit.json`` long after the option
became ``--report``, and the reader who copies it gets argparse's refusal."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# a script run with its arguments: in inline code up to the closing backtick (a line break
# included), on a command line up to its end (a trailing backslash continues it), before a comment
_COMMAND = re.compile(r"python3? (?P<script>benchmarks/[\w./-]+\.py)")
_INLINE_END = re.compile(r"[`#;|&]")
_LINE_END = re.compile(r"[`#;|&]|(?<!\\)\n")
_OPTION = re.compile(r"(?<![\w-])(--[a-z][\w-]*)")


def _options(script: Path) -> set[str]:
    """The options ``script`` declares: every ``--name`` given to an ``add_argument`` call."""
    options = set()
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            options |= {
                argument.value
                for argument in node.args
                if isinstance(argument, ast.Constant)
                and isinstance(argument.value, str)
                and argument.value.startswith("--")
            }
    return options


def _arguments(text: str, match: re.Match[str]) -> str:
    """What follows a script's name on its command, in inline code or on a command line."""
    line_start = text.rfind("\n", 0, match.start()) + 1
    inline = text.count("`", line_start, match.start()) % 2 == 1
    rest = text[match.end() :]
    end = (_INLINE_END if inline else _LINE_END).search(rest)
    return rest[: end.start() if end else len(rest)]


def _commands() -> list[tuple[str, int, str, str]]:
    """(document, line, script, option) for each option of each documented script command."""
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in _COMMAND.finditer(text):
            number = text.count("\n", 0, match.start()) + 1
            options = _OPTION.findall(_arguments(text, match))
            found += [(document.name, number, match["script"], option) for option in options]
    return found


def test_the_pattern_finds_the_documented_commands() -> None:
    assert len(_commands()) >= 40
    assert ("benchmarks/calibrate_bands.py", "--markers-only") in {
        (script, option) for _, _, script, option in _commands()
    }


@pytest.mark.parametrize(("document", "line", "script", "option"), _commands(), ids=str)
def test_each_documented_option_is_the_scripts(document: str, line: int, script: str, option: str) -> None:
    path = ROOT / script
    assert path.is_file(), f"{document}:{line} runs {script}, which the repository lacks"
    options = _options(path)
    # argparse also takes an unambiguous prefix of an option
    matching = {name for name in options if name.startswith(option)}
    assert option in options or len(matching) == 1, (
        f"{document}:{line}: {script} takes no {option} (it takes {', '.join(sorted(options)) or 'none'})"
    )


def test_a_command_runs_to_its_backtick_or_its_line_end() -> None:
    text = (
        "Run (`python benchmarks/a.py --report\nx.json --write`) and --not\n"
        "    python benchmarks/b.py \\\n  --jobs 2  # --comment\n--next"
    )
    found = [(match["script"], _OPTION.findall(_arguments(text, match))) for match in _COMMAND.finditer(text)]
    assert found == [("benchmarks/a.py", ["--report", "--write"]), ("benchmarks/b.py", ["--jobs"])]


def test_the_options_are_read_from_add_argument(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(
        'parser.add_argument("--report", type=Path)\nparser.add_argument("-j", "--jobs")\nprint("--out")\n',
        encoding="utf-8",
    )
    assert _options(script) == {"--report", "--jobs"}

"""Running the CLI under hostile input, shared by the fuzz suite (importable as ``fuzzing``: pytest's
pythonpath has tests/).

:func:`check` runs one command in process, in a fresh current folder and ``LIGHTSPEED_HOME``, and
asserts the property every bad input is held to: exit 0 with finite numbers in the JSON on
stdout (or another exit the caller names as an answer), or exit 2 with exactly one line on
stderr (``lightspeed: error: ...``); never a traceback, and no file left in the current folder.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import signal
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from lightspeed.cli.main import main


class Outcome:
    """What one in-process run of ``lightspeed`` did."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code = code
        self.out = out
        self.err = err
        self.home_files: list[str] = []  # what the command left in LIGHTSPEED_HOME


def _run(args: Sequence[str]) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return Outcome(code, out.getvalue(), err.getvalue())


def _reject_constant(name: str) -> float:
    raise AssertionError(f"JSON holds {name}")


def _finite(value: Any, where: str = "$") -> None:
    if isinstance(value, float):
        assert math.isfinite(value), f"{where} = {value}"
    elif isinstance(value, dict):
        for key, item in value.items():
            _finite(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _finite(item, f"{where}[{index}]")


@contextlib.contextmanager
def _sandbox() -> Iterator[Path]:
    """A fresh current folder and LIGHTSPEED_HOME; fails if anything else appears in the folder."""
    previous = Path.cwd()
    home_before = os.environ.get("LIGHTSPEED_HOME")
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder) / "work"
        work.mkdir()
        os.environ["LIGHTSPEED_HOME"] = str(Path(folder) / "home")
        os.chdir(work)
        try:
            yield work
            left = sorted(path.name for path in work.iterdir())
            assert not left, f"files written into the current folder: {left}"
        finally:
            os.chdir(previous)
            if home_before is None:
                os.environ.pop("LIGHTSPEED_HOME", None)
            else:
                os.environ["LIGHTSPEED_HOME"] = home_before


def check(args: Sequence[str], *, other_codes: tuple[int, ...] = ()) -> Outcome:
    """Run ``args`` (with --json) in a sandbox and assert the property (``other_codes``: exits that
    are answers, such as the gate's 1 for a regression)."""
    at = args.index("--") if "--" in args else len(args)  # before a command that monitor run launches
    with _sandbox() as work:
        outcome = _run([*args[:at], "--json", *args[at:]])
        home = work.parent / "home"
        outcome.home_files = (
            sorted(str(path.relative_to(home)) for path in home.rglob("*")) if home.exists() else []
        )
    assert "Traceback" not in outcome.err, outcome.err
    if outcome.code == 0 or outcome.code in other_codes:
        _finite(json.loads(outcome.out, parse_constant=_reject_constant))
    else:
        assert outcome.code == 2, f"exit {outcome.code}: {outcome.err}"
        lines = outcome.err.strip().splitlines()
        assert len(lines) == 1, outcome.err
        assert lines[0].startswith("lightspeed: error: "), lines[0]
    return outcome


class Blocked(BaseException):
    """Raised by :func:`fails_if_blocked`: not an ``OSError`` (as ``TimeoutError`` is), which a
    reader's or writer's own ``except OSError`` would turn into a one-line refusal naming the
    alarm, passing the test while the command blocked."""


@contextlib.contextmanager
def fails_if_blocked(seconds: int, blocked_on: str) -> Iterator[None]:
    """Run the body under ``SIGALRM``: past ``seconds`` it raises :class:`Blocked`, naming what the
    command likely blocked on (``open()`` of a FIFO, a special file read without end)."""

    def _fail(number: int, frame: FrameType | None) -> None:
        raise Blocked(f"the command ran for more than {seconds} s (blocked {blocked_on}?)")

    previous = signal.signal(signal.SIGALRM, _fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)

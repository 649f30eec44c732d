"""Progress for commands that outlast a couple of seconds: a rich bar on stderr, never in the way.

The bar appears only once the work has run for ``DELAY_S`` (a fast run prints
nothing), only when stderr is a terminal, and never under ``--json`` (stdout
stays the JSON alone, stderr stays empty for scripts). It is transient: it
disappears when the work ends, leaving the command's own output.

>>> with delayed_progress("rows", total=3, as_json=True) as advance:
...     for done in range(1, 4):
...         advance(done)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

DELAY_S: Final = 2.0


class _LazyBar:
    """A rich progress bar created on the first update after ``delay_s``."""

    def __init__(self, description: str, total: int | None, delay_s: float) -> None:
        self.description = description
        self.total = total
        self.started_s = time.monotonic()
        self.delay_s = delay_s
        self._progress: Any = None
        self._task: Any = None

    def update(self, done: int, total: int | None = None, note: str = "") -> None:
        if total is not None:
            self.total = total
        if self._progress is None:
            if time.monotonic() - self.started_s < self.delay_s:
                return
            self._start()
        text = f"{self.description} {note}".strip()
        self._progress.update(self._task, completed=done, total=self.total, description=text)

    def _start(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        from lightspeed.report.console import make_console

        columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()]
        self._progress = Progress(*columns, console=make_console(stderr=True), transient=True)
        self._progress.start()
        self._task = self._progress.add_task(self.description, total=self.total)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()


@contextmanager
def delayed_progress(
    description: str, *, total: int | None, as_json: bool, delay_s: float = DELAY_S
) -> Iterator[Callable[..., None]]:
    """A function ``advance(done, total=None, note="")`` that moves the bar (see the module docs)."""
    if as_json or not _stderr_is_terminal():
        yield _ignore
        return
    bar = _LazyBar(description, total, delay_s)
    try:
        yield bar.update
    finally:
        bar.stop()


def _ignore(*args: Any, **kwargs: Any) -> None:
    return None


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False

"""Terminal output through rich: one console factory and a plain table helper."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence

from rich.console import Console
from rich.errors import MarkupError
from rich.markup import escape
from rich.table import Table
from rich.text import Text

MIN_WIDTH = 120


def make_console(stderr: bool = False) -> Console:
    """A console that keeps tables readable when stdout is not a terminal (pipes, CI).

    Colors follow rich's detection and respect ``NO_COLOR``; the width is the
    terminal's, or at least 120 columns when output is redirected so that wide
    comparison tables do not wrap in logs.
    """
    columns = os.environ.get("COLUMNS")
    width = int(columns) if columns and columns.isdigit() else None
    if width is None:
        terminal = shutil.get_terminal_size(fallback=(MIN_WIDTH, 40)).columns
        width = max(terminal, MIN_WIDTH)
    return Console(stderr=stderr, width=width, highlight=False, soft_wrap=False)


def render_table(
    title: str | None,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    right_align_from: int = 1,
    caption: str | None = None,
    console: Console | None = None,
) -> None:
    """Print a table; columns from ``right_align_from`` on are right-aligned (numbers).

    Cells are rich markup written by lightspeed's renderers, which :func:`plain` every
    user-written string first; a cell that still does not parse as markup is shown as it is,
    so no label can break a table.
    """
    table = Table(
        title=_text(title) if title is not None else None,
        caption=_text(caption) if caption is not None else None,
        title_justify="left",
        caption_justify="left",
    )
    for index, header in enumerate(headers):
        table.add_column(_text(header), justify="right" if index >= right_align_from else "left")
    for row in rows:
        table.add_row(*(_text(cell) for cell in row))
    (console or make_console()).print(table)


def plain(value: object) -> str:
    r"""``value`` as text that rich shows literally: names, labels, paths, notes from users.

    >>> plain("[/bold] x")
    '\\[/bold] x'
    """
    return escape(str(value))


def _text(markup: str) -> Text:
    try:
        return Text.from_markup(markup)
    except MarkupError:
        return Text(markup)

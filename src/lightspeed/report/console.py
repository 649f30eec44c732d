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
# A name column kept whole (render_table's ``whole``) grows up to this; a longer name wraps.
MAX_WHOLE_WIDTH = 72
MIN_WHOLE_WIDTH = 24  # what a whole column keeps on a terminal too narrow for the rest


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
    whole: Sequence[int] = (),
) -> None:
    """Print a table; columns from ``right_align_from`` on are right-aligned (numbers).

    No cell is ever cut: one too long for its column wraps onto the next line. Columns in
    ``whole`` (kernel and op names: what people search for) are as wide as their longest cell,
    up to :data:`MAX_WHOLE_WIDTH`, and the other columns give way first.

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
    out = console or make_console()
    cells = [[_text(cell) for cell in row] for row in rows]
    widths = column_widths([str(header) for header in headers], cells, whole=whole, width=out.width)
    for index, header in enumerate(headers):
        table.add_column(
            _text(header),
            justify="right" if index >= right_align_from else "left",
            overflow="fold",
            width=None if widths is None else widths[index],
        )
    for row in cells:
        table.add_row(*row)
    out.print(table)


def column_widths(
    headers: Sequence[str], cells: Sequence[Sequence[Text]], *, whole: Sequence[int] = (), width: int
) -> list[int] | None:
    """Column widths that fit ``width`` without cutting a cell, or ``None`` when the table fits as is.

    Too wide a table gives way from its widest columns down to their longest word or, for
    short cells (a number and its unit), the whole cell (they then wrap at spaces); ``whole``
    columns last (down to :data:`MIN_WHOLE_WIDTH`); only then are words folded. Rich alone
    shrinks the widest column first, which is the kernel name.

    >>> from rich.text import Text
    >>> cells = [[Text("a" * 30), Text("1 2 3 4 5 6")]]
    >>> column_widths(["name", "n"], cells, whole=[0], width=50) is None  # fits: rich lays it out
    True
    >>> column_widths(["name", "n"], cells, whole=[0], width=44)  # the name gives way last
    [26, 11]
    """
    count = len(headers)
    budget = width - 3 * count - 1  # rich: a space each side of a cell, a border between and around

    def lengths(index: int, words: bool) -> list[int]:
        texts = [headers[index], *(row[index].plain for row in cells if index < len(row))]
        return [len(piece) for text in texts for line in text.splitlines() or [""]
                for piece in (line.split() or [""] if words else [line])]  # fmt: skip

    natural = [max(lengths(index, words=False)) for index in range(count)]
    if sum(natural) <= budget:
        return None
    widths = [min(size, MAX_WHOLE_WIDTH) if index in whole else size for index, size in enumerate(natural)]
    floors = [  # a short cell (a number and its unit) stays on one line; headers and prose wrap
        min(natural[index], MIN_WHOLE_WIDTH)
        if index in whole
        else max(*lengths(index, words=True), min(max(lengths(index, words=False)[1:] or [0]), 16))
        for index in range(count)
    ]
    order = [index for index in range(count) if index not in whole] + list(whole)
    for stage in (order[: count - len(whole)], list(whole), order):
        _shrink(widths, floors if stage is not order else [1] * count, stage, sum(widths) - budget)
    return widths


def _shrink(widths: list[int], floors: Sequence[int], columns: Sequence[int], excess: int) -> None:
    """Take ``excess`` characters from ``columns``, always from the widest one above its floor."""
    while excess > 0:
        room = [index for index in columns if widths[index] > floors[index]]
        if not room:
            return
        widest = max(room, key=lambda index: widths[index])
        widths[widest] -= 1
        excess -= 1


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

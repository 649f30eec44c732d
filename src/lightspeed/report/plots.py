"""Shared plotting primitives: one style, SVG/PNG output (colours: :mod:`lightspeed.report.palette`).

Every chart in lightspeed is drawn with matplotlib's non-interactive Agg
backend (no display needed) through these helpers, so that terminal commands,
``--plots DIR`` and the HTML report look alike. Area modules
(``report/bench.py``, ``report/goodput.py`` ...) build figures with
:func:`new_figure` and hand them to :func:`figure_svg` or :func:`save_figure`.
matplotlib is imported on first use only: table-only commands never pay for it.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lightspeed.errors import UserInputError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def new_figure(width_in: float = 8.0, height_in: float = 4.5) -> tuple[Figure, Axes]:
    """A ``(figure, axes)`` pair in the house style (white background, light grid)."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(width_in, height_in), dpi=100)
    _house_style(axes)
    return figure, axes


def _house_style(axes: Axes) -> None:
    axes.grid(True, color="#e2e8f0", linewidth=0.8)
    axes.set_axisbelow(True)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def plain_text(text: str, max_chars: int = 60) -> str:
    """A label safe for matplotlib, for every chart text built from a user's or a file's string
    (model, system, device, kernel and run names): ``$`` would start mathtext (and can raise on
    untrusted names), and very long names would squeeze the plot.

    >>> print(plain_text("m$x^2$"))
    m\\$x^2\\$
    """
    shortened = text if len(text) <= max_chars else text[: max_chars - 1] + "…"
    return shortened.replace("$", r"\$")


def add_legend(axes: Axes, **options: Any) -> None:
    """A legend when something on ``axes`` has a label (matplotlib warns on an empty one)."""
    handles, _ = axes.get_legend_handles_labels()
    if handles:
        axes.legend(**options)


def figure_svg(figure: Figure) -> str:
    """The figure as an inline SVG document (text), then closes it."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    close_figure(figure)
    text = buffer.getvalue()
    start = text.find("<svg")
    return text[start:] if start >= 0 else text


PLOT_FORMATS: tuple[str, ...] = ("png", "svg", "pdf")
# what a ``--plot PATH`` without a suffix (or naming a folder) writes; a suffix writes that format only
DEFAULT_PLOT_FORMATS: tuple[str, ...] = ("png", "svg")


def plot_paths(
    path: Path, *, name: str, default_formats: tuple[str, ...] = DEFAULT_PLOT_FORMATS
) -> tuple[Path, tuple[str, ...]]:
    """Where ``--plot PATH`` writes: ``(stem, formats)``.

    A suffix (``.png``, ``.svg``, ``.pdf``) picks that format only (a sibling of another format,
    ``PATH.svg`` beside ``PATH.png``, is never written); no suffix writes
    ``default_formats`` (PNG and SVG); an existing folder gets ``NAME.<format>`` inside it
    (never ``PATH.png`` beside it); a special file (``/dev/full``) and a path
    whose folder does not exist are refused (no folder is ever created).

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> plot_paths(folder, name="pareto", default_formats=("png",)) == (folder / "pareto", ("png",))
    True
    >>> plot_paths(folder / "k.png", name="roofline") == (folder / "k", ("png",))
    True
    """
    if path.is_dir():
        return path / name, default_formats
    if path.exists() and not path.is_file():  # /dev/full, a FIFO: never rewritten as PATH.png
        raise UserInputError(
            f"cannot draw {path}: it is not a regular file or a folder; name a .png, .svg or .pdf file"
        )
    if not path.parent.is_dir():
        raise UserInputError(
            f"cannot write the plot {path}: no folder {path.parent}; create it first or name another path"
        )
    suffix = path.suffix.lower().lstrip(".")
    if suffix in PLOT_FORMATS:
        return path.with_suffix(""), (suffix,)
    if suffix:
        raise UserInputError(
            f"cannot draw {path}: {path.suffix!r} is not a plot format; end the name in .png, .svg or .pdf"
        )
    return path, default_formats


def save_figure(figure: Figure, path_stem: Path, formats: Iterable[str] = DEFAULT_PLOT_FORMATS) -> list[Path]:
    """Write ``path_stem.<format>`` for each format (into an existing folder: none is created),
    close the figure, return the paths."""
    chosen = tuple(formats)
    written: list[Path] = []
    target = _targets(path_stem, chosen[:1])[0] if chosen else path_stem  # named if nothing was tried
    try:
        for extension, target in zip(chosen, _targets(path_stem, chosen), strict=True):
            figure.savefig(target, format=extension, bbox_inches="tight", dpi=120)
            written.append(target)
    except OSError as error:
        raise UserInputError(
            f"cannot write the plot {target} ({error.strerror or error}); choose a writable path"
        ) from None
    finally:
        close_figure(figure)
    return written


def check_plot_targets(path_stem: Path, formats: Iterable[str] = DEFAULT_PLOT_FORMATS) -> list[Path]:
    """The files :func:`save_figure` would write, checked before a long job makes the figure: the
    nearest folder that exists must take a new file (a probe is created and removed), and no
    target may be a folder or a file that cannot be overwritten. Nothing is left behind.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> check_plot_targets(folder / "sub" / "counters", ("png",)) == [folder / "sub" / "counters.png"]
    True
    """
    targets = _targets(path_stem, formats)
    for target in targets:
        if target.is_dir() or (target.exists() and not os.access(target, os.W_OK)):
            raise UserInputError(
                f"cannot write the plot {target} (it is a folder or read-only); choose a writable path"
            )
    folder = path_stem.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    first = targets[0] if targets else path_stem
    if not folder.is_dir():
        raise UserInputError(
            f"cannot write the plot {first} ({folder} is not a folder); choose a writable path"
        )
    try:
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".lightspeed-probe-")
    except OSError as error:
        raise UserInputError(
            f"cannot write the plot {first} ({error.strerror or error}); choose a writable path"
        ) from None
    os.close(handle)
    os.unlink(probe)
    return targets


def _targets(path_stem: Path, formats: Iterable[str]) -> list[Path]:
    return [path_stem.parent / f"{path_stem.name}.{extension}" for extension in formats]


def close_figure(figure: Figure) -> None:
    """Release a figure's memory (pyplot keeps references otherwise)."""
    _pyplot().close(figure)


def new_figure_grid(
    num_rows: int, *, width_in: float = 8.0, height_per_row_in: float = 2.0
) -> tuple[Figure, Any]:
    """A figure of ``num_rows`` stacked axes sharing the x axis, in the house style."""
    plt = _pyplot()
    figure, axes = plt.subplots(
        max(1, num_rows),
        1,
        figsize=(width_in, height_per_row_in * max(1, num_rows) + 0.6),
        dpi=100,
        sharex=True,
        squeeze=False,
    )
    column = [row[0] for row in axes]
    for axis in column:
        _house_style(axis)
    return figure, column

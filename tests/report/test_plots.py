"""Shared plotting helpers: where --plot writes, and no matplotlib warning on an empty legend."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.errors import UserInputError
from lightspeed.report.plots import add_legend, close_figure, new_figure, plot_paths


def test_an_empty_legend_is_not_drawn() -> None:
    # matplotlib warns "No artists with labels found to put in legend" (an error under pytest)
    figure, axes = new_figure()
    add_legend(axes)
    assert axes.get_legend() is None
    axes.plot([1, 2], [3, 4], label="line")
    add_legend(axes)
    assert axes.get_legend() is not None
    close_figure(figure)


def test_plot_paths(tmp_path: Path) -> None:
    assert plot_paths(tmp_path, name="chart", default_formats=("png", "svg")) == (
        tmp_path / "chart",
        ("png", "svg"),
    )
    assert plot_paths(tmp_path / "a.svg", name="chart", default_formats=("png",)) == (
        tmp_path / "a",
        ("svg",),
    )
    assert plot_paths(tmp_path / "a", name="chart", default_formats=("png",)) == (tmp_path / "a", ("png",))
    with pytest.raises(UserInputError, match="not a plot format"):
        plot_paths(tmp_path / "a.jpg", name="chart", default_formats=("png",))


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_special_file_is_refused_not_rewritten_as_path_png() -> None:
    # every --plot: /dev/full (a character device) was drawn as /dev/full.png and /dev/full.svg
    with pytest.raises(UserInputError, match="not a regular file or a folder"):
        plot_paths(Path("/dev/full"), name="x", default_formats=("png", "svg"))

"""One palette: every chart's categories stay apart for common colour-vision deficiencies,
and the charts really draw each category in its own colour."""

from __future__ import annotations

import itertools

import matplotlib.colors
import numpy as np
import pytest

from lightspeed.report.palette import CATEGORY_COLORS, FIGURE_CATEGORIES, SERIES_COLORS, category_color

# Machado, Oliveira & Fernandes (2009), "A Physiologically-based Model for Simulation
# of Color Vision Deficiency", Table 1, severity 1.0 (applied to linear RGB).
MACHADO_2009 = {
    "deuteranopia": [
        [0.367322, 0.860646, -0.227968],
        [0.280085, 0.672501, 0.047413],
        [-0.011820, 0.042940, 0.968881],
    ],
    "protanopia": [
        [0.152286, 1.052583, -0.204868],
        [0.114503, 0.786281, 0.099216],
        [-0.003882, -0.048116, 1.051998],
    ],
    "tritanopia": [
        [1.255528, -0.076749, -0.178779],
        [-0.078411, 0.930809, 0.147602],
        [0.004733, 0.691367, 0.303900],
    ],
}
# CIE76 distance below which two flat colours in a chart are hard to tell apart; ~2.3 is
# "just noticeable", 10 keeps small legend patches apart at a glance.
MIN_DELTA_E = 9.0


def _linear_rgb(hex_color: str) -> np.ndarray:
    srgb = np.array(matplotlib.colors.to_rgb(hex_color))
    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def _lab(linear: np.ndarray) -> np.ndarray:
    """CIELAB (D65) of linear sRGB, from the sRGB->XYZ matrix of IEC 61966-2-1."""
    to_xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = to_xyz @ linear / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _seen(hex_color: str, vision: str | None) -> np.ndarray:
    linear = _linear_rgb(hex_color)
    if vision is not None:
        linear = np.clip(np.array(MACHADO_2009[vision]) @ linear, 0.0, 1.0)
    return _lab(linear)


def _closest_pair(colors: dict[str, str]) -> tuple[float, str]:
    worst = (float("inf"), "")
    for vision in (None, *MACHADO_2009):
        for (a, color_a), (b, color_b) in itertools.combinations(colors.items(), 2):
            distance = float(np.linalg.norm(_seen(color_a, vision) - _seen(color_b, vision)))
            if distance < worst[0]:
                worst = (distance, f"{a} vs {b} ({vision or 'normal vision'})")
    return worst


@pytest.mark.parametrize("figure", sorted(FIGURE_CATEGORIES))
def test_each_chart_keeps_its_categories_apart_for_colour_blind_readers(figure: str) -> None:
    colors = {name: category_color(name) for name in FIGURE_CATEGORIES[figure]}
    distance, pair = _closest_pair(colors)
    assert distance >= MIN_DELTA_E, f"{figure}: {pair} only {distance:.1f} apart"


def test_series_colours_stay_apart_too() -> None:
    distance, pair = _closest_pair({str(index): color for index, color in enumerate(SERIES_COLORS)})
    assert distance >= MIN_DELTA_E, pair


def test_unknown_category_is_a_loud_bug_not_a_borrowed_colour() -> None:
    with pytest.raises(KeyError, match="no palette colour for 'warp_stall'"):
        category_color("warp_stall")


def test_step_breakdown_draws_every_part_in_its_own_palette_colour() -> None:
    """Before the palette, TP, EP, PP and DP comm were all one orange."""
    from lightspeed.report.sol import step_breakdown_figure

    parts = FIGURE_CATEGORIES["step breakdown"]

    class Estimate:
        model = "m"
        system = "s"
        step_time_s = float(len(parts))
        breakdown_s = dict.fromkeys(parts, 1.0)

    figure = step_breakdown_figure(Estimate())
    drawn = [matplotlib.colors.to_hex(patch.get_facecolor()).upper() for patch in figure.axes[0].patches]
    assert drawn == [CATEGORY_COLORS[part].upper() for part in parts]
    assert len(set(drawn)) == len(parts)


def test_chart_category_sets_follow_the_engine_and_the_ledger() -> None:
    """The palette stays light (no engine import); this keeps its lists equal to the sources."""
    from lightspeed.goodput.events import BUCKETS
    from lightspeed.sol.train.step import BREAKDOWN_PARTS

    assert FIGURE_CATEGORIES["step breakdown"] == BREAKDOWN_PARTS
    assert FIGURE_CATEGORIES["goodput waterfall"] == ("total", *BUCKETS, "productive")

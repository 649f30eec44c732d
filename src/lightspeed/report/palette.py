"""One palette for every plot: a fixed colour per category, the same in every chart.

A category is a kind of time or a kind of thing a chart shows: a part of the
predicted step (``tp_comm``, ``bubble``), a goodput bucket (``data_stall``), a
benchmark suite (``membw``), a trace share (``idle``), a reference (``sol``).
Each has one colour, wherever it is drawn, and the categories that share a
chart are told apart by people with the common colour-vision deficiencies too:
the colours come from Okabe & Ito's and Paul Tol's colour-blind-safe sets, and
``tests/report/test_palette.py`` checks every chart's set under simulated
deuteranopia, protanopia and tritanopia (Machado et al. 2009).

Series that are not categories (services of a MIG plan, inputs of a tornado
plot, the lines of one quantity over time) take :func:`series_color` in order.

>>> category_color("tp_comm") != category_color("dp_comm")
True
>>> category_color("compute")
'#0072B2'
>>> series_color(0) == series_color(len(SERIES_COLORS))
True
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from lightspeed.goodput.events import BUCKETS, PRODUCTIVE
from lightspeed.sol.train.step import BREAKDOWN_PARTS

# Okabe & Ito (2008): #000000 #E69F00 #56B4E9 #009E73 #F0E442 #0072B2 #D55E00 #CC79A7;
# Paul Tol's muted and vibrant schemes (personal.sron.nl/~pault): the rest.
CATEGORY_COLORS: Final[Mapping[str, str]] = MappingProxyType(
    {
        # predicted training step (sol/train breakdown_s keys)
        "compute": "#0072B2",
        "recompute": "#88CCEE",
        "memory_bound": "#009E73",
        "tp_comm": "#E69F00",
        "cp_comm": "#F0E442",
        "ep_comm": "#D55E00",
        "pp_comm": "#CC79A7",
        "bubble": "#332288",
        "dp_comm": "#882255",
        "optimizer": "#999933",
        "other": "#BBBBBB",
        # trace temporal breakdown (HTA's three shares)
        "communication": "#E69F00",
        "idle": "#777777",
        # goodput ledger: wall time down to productive time
        "total": "#000000",
        "init": "#D55E00",
        "startup": "#009988",
        "data_stall": "#E69F00",
        "checkpoint_save": "#332288",
        "checkpoint_restore": "#EE3377",
        "eval": "#882255",
        "wasted_progress": "#33BBEE",
        "recovery": "#AA4499",
        "custom": "#F0E442",
        "productive": "#117733",
        # benchmark suites on the roofline
        "gemm": "#0072B2",
        "membw": "#009E73",
        "copy": "#CC79A7",
        "launch": "#D55E00",
        "collectives": "#E69F00",
        # Nsight Compute's GPU Speed Of Light units (compute and memory as on the roofline)
        "memory": "#009E73",
        "dram": "#CC79A7",
        "l1tex": "#E69F00",
        "l2": "#56B4E9",
        # references and verdicts
        "sol": "#000000",
        "measured": "#D55E00",
        "predicted": "#0072B2",
        "regression": "#882255",
        "improvement": "#009988",
    }
)

# The categories drawn together in one chart; each set must stay distinguishable.
FIGURE_CATEGORIES: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "step breakdown": BREAKDOWN_PARTS,  # the engine's list, never a copy
        "trace breakdown": ("compute", "communication", "idle"),
        "goodput waterfall": ("total", *BUCKETS, PRODUCTIVE),  # the ledger's buckets, in its order
        "roofline": ("sol", "gemm", "membw", "copy", "launch", "collectives"),
        "history": ("sol", "measured", "regression", "improvement"),
        "pareto": ("sol", "predicted", "measured"),
        "kernel sol": ("sol", "compute", "memory", "dram", "l1tex", "l2"),
    }
)

# Unnamed series, in order (Okabe & Ito without black, then Tol's muted).
SERIES_COLORS: Final[tuple[str, ...]] = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#332288",
    "#999933",
    "#882255",
)


def category_color(category: str) -> str:
    """The colour of ``category`` (a key of :data:`CATEGORY_COLORS`).

    An unknown category is a bug in the caller, not user input: it raises ``KeyError``
    naming the known ones, so a new kind of time cannot silently borrow a colour.
    """
    try:
        return CATEGORY_COLORS[category]
    except KeyError:
        raise KeyError(f"no palette colour for {category!r}; known: {', '.join(CATEGORY_COLORS)}") from None


def series_color(index: int) -> str:
    """The ``index``-th colour for unnamed series (cycles after :data:`SERIES_COLORS`)."""
    return SERIES_COLORS[index % len(SERIES_COLORS)]

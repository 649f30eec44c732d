"""lightspeed: how fast could this go, how fast does it go, and where did the rest go.

The packages, from the bottom layer up: ``units``/``errors``/``records``,
``catalog`` (hardware speed of light), ``workload`` (model costs), ``sol``
(analytical estimates), ``bench`` (microbenchmarks), ``goodput`` (tracker and
ledger), ``trace`` (profiler traces), ``monitor`` (device sampling), ``store``
(results database), ``report`` (tables, plots, HTML) and ``cli``.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]

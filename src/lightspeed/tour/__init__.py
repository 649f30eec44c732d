"""The one-command walk through the whole loop (``lightspeed tour``): its steps, the seed's
scenarios and the data it ships (a real 2-rank GPU trace)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.tour.render import (
        NEXT_COMMANDS,
        SAMPLE_TRACE_DIR,
        NextCommand,
        TourResult,
        TourStep,
        render_tour_step,
        render_tour_summary,
    )
    from lightspeed.tour.scenarios import DEEPSEEK_PRETRAIN_GPU_HOURS, DEEPSEEK_TOKENS, deepseek_v3_training
    from lightspeed.tour.steps import STEPS, TourState, run_tour


__all__ = [
    "DEEPSEEK_PRETRAIN_GPU_HOURS",
    "DEEPSEEK_TOKENS",
    "NEXT_COMMANDS",
    "SAMPLE_TRACE_DIR",
    "STEPS",
    "NextCommand",
    "TourResult",
    "TourState",
    "TourStep",
    "deepseek_v3_training",
    "render_tour_step",
    "render_tour_summary",
    "run_tour",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)

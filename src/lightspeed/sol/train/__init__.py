"""The training SOL engine: parallel plans, schedules, per-layer costs, memory, the step
estimate and the vectorized plan search."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.sol.train.estimate import estimate_training
    from lightspeed.sol.train.plan import (
        RECOMPUTE,
        SCHEDULES,
        TRAINING_PRECISIONS,
        TrainingPlan,
        data_parallel_degree,
        validate_plan,
    )
    from lightspeed.sol.train.ranking import PlanComparison
    from lightspeed.sol.train.result import TrainEstimate, TrainingEstimate
    from lightspeed.sol.train.search import SearchResult, SearchSpace, default_space, search_training


__all__ = [
    "RECOMPUTE",
    "SCHEDULES",
    "TRAINING_PRECISIONS",
    "PlanComparison",
    "SearchResult",
    "SearchSpace",
    "TrainEstimate",
    "TrainingEstimate",
    "TrainingPlan",
    "data_parallel_degree",
    "default_space",
    "estimate_training",
    "search_training",
    "validate_plan",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)

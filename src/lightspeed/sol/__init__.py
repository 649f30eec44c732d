"""Speed-of-light engine: roofline, collectives, parallel plans, estimates, search."""

from lightspeed.sol.calibration import (
    CalibrationInputs,
    CalibrationResult,
    CollectivePoint,
    GemmPoint,
    calibrate,
    calibration_path,
    lightspeed_home,
    list_calibrations,
    load_calibration,
    save_calibration,
)
from lightspeed.sol.capacity import MemoryPlan, plan_memory
from lightspeed.sol.efficiency import EfficiencyModel, default_efficiency, load_efficiency_defaults
from lightspeed.sol.estimate import TrainEstimate, estimate_training
from lightspeed.sol.plan import RECOMPUTE, SCHEDULES, TRAINING_PRECISIONS, TrainingPlan, validate_plan
from lightspeed.sol.search import SearchResult, SearchSpace, default_space, search_training
from lightspeed.sol.validate import ValidationReport, ValidationRow, validate_published

__all__ = [
    "RECOMPUTE",
    "SCHEDULES",
    "TRAINING_PRECISIONS",
    "CalibrationInputs",
    "CalibrationResult",
    "CollectivePoint",
    "EfficiencyModel",
    "GemmPoint",
    "MemoryPlan",
    "SearchResult",
    "SearchSpace",
    "TrainEstimate",
    "TrainingPlan",
    "ValidationReport",
    "ValidationRow",
    "calibrate",
    "calibration_path",
    "default_efficiency",
    "default_space",
    "estimate_training",
    "lightspeed_home",
    "list_calibrations",
    "load_calibration",
    "load_efficiency_defaults",
    "plan_memory",
    "save_calibration",
    "search_training",
    "validate_plan",
    "validate_published",
]

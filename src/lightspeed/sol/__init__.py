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

__all__ = [
    "CalibrationInputs",
    "CalibrationResult",
    "CollectivePoint",
    "EfficiencyModel",
    "GemmPoint",
    "MemoryPlan",
    "calibrate",
    "calibration_path",
    "default_efficiency",
    "lightspeed_home",
    "list_calibrations",
    "load_calibration",
    "load_efficiency_defaults",
    "plan_memory",
    "save_calibration",
]

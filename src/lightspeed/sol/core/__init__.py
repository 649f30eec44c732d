"""What both SOL engines share: the hardware view, roofline, kernel efficiency, collectives,
layer shapes and calibration profiles."""

from __future__ import annotations

from lightspeed.sol.core.calibration import (
    CalibrationInputs,
    CalibrationResult,
    CollectivePoint,
    GemmPoint,
    calibrate,
    calibration_path,
    list_calibrations,
    load_calibration,
    save_calibration,
)
from lightspeed.sol.core.efficiency import EfficiencyModel, default_efficiency, load_efficiency_defaults
from lightspeed.sol.core.hardware import Hardware, hardware_for

__all__ = [
    "CalibrationInputs",
    "CalibrationResult",
    "CollectivePoint",
    "EfficiencyModel",
    "GemmPoint",
    "Hardware",
    "calibrate",
    "calibration_path",
    "default_efficiency",
    "hardware_for",
    "list_calibrations",
    "load_calibration",
    "load_efficiency_defaults",
    "save_calibration",
]

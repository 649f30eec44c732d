"""What both SOL engines share: the hardware view, roofline, kernel efficiency, collectives,
layer shapes and calibration profiles."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
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
    from lightspeed.sol.core.serving_choice import default_serving_stack
    from lightspeed.sol.core.serving_stacks import ServingStack, load_serving_stack, load_serving_stacks
    from lightspeed.sol.core.stacks import Stack, default_stack_name, load_stack, load_stacks
    from lightspeed.sol.core.uncertainty import Band, interval_for


__all__ = [
    "Band",
    "CalibrationInputs",
    "CalibrationResult",
    "CollectivePoint",
    "EfficiencyModel",
    "GemmPoint",
    "Hardware",
    "ServingStack",
    "Stack",
    "calibrate",
    "calibration_path",
    "default_efficiency",
    "default_serving_stack",
    "default_stack_name",
    "hardware_for",
    "interval_for",
    "list_calibrations",
    "load_calibration",
    "load_efficiency_defaults",
    "load_serving_stack",
    "load_serving_stacks",
    "load_stack",
    "load_stacks",
    "save_calibration",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)

"""Published results read and predicted by both engines (``lightspeed validate``): the structured
rows shipped with lightspeed, free-text tables of a user's own, and the honest fit of the profiles."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.sol.validation.infer_predict import inference_predictor
    from lightspeed.sol.validation.predict_runs import validate_builtin
    from lightspeed.sol.validation.validate import ValidationReport, ValidationRow, validate_published


__all__ = [
    "ValidationReport",
    "ValidationRow",
    "inference_predictor",
    "validate_builtin",
    "validate_published",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)

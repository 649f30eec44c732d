"""Published results read and predicted by both engines (``lightspeed validate``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.sol.validation.infer_rows import inference_predictor
    from lightspeed.sol.validation.validate import ValidationReport, ValidationRow, validate_published


__all__ = [
    "ValidationReport",
    "ValidationRow",
    "inference_predictor",
    "validate_published",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)

"""Fixtures of the workload tests."""

from __future__ import annotations

import pytest

from lightspeed.workload import ModelRegistry, load_models


@pytest.fixture(scope="module")
def registry() -> ModelRegistry:
    """The shipped model registry."""
    return load_models()

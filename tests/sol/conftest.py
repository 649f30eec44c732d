"""Fixtures for the SOL engine tests: the shipped catalog and models, loaded once."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog, load_catalog
from lightspeed.workload import ModelRegistry, load_models


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="session")
def models() -> ModelRegistry:
    return load_models()

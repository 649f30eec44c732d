"""The examples in the catalog's docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "lightspeed.catalog",
    "lightspeed.catalog.clusters",
    "lightspeed.catalog.loader",
    "lightspeed.catalog.microarch",
    "lightspeed.catalog.records",
    "lightspeed.catalog.registry",
    "lightspeed.catalog.totals",
    "lightspeed.catalog.views",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0

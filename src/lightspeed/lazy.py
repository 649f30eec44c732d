"""Lazy package exports (PEP 562): a package's public names load on first use.

A package ``__init__`` lists where each public name lives once, as imports under
``if TYPE_CHECKING:`` (what type checkers, IDEs and readers see), and binds
:func:`attach`'s two functions as its module ``__getattr__`` and ``__dir__``. So
``import lightspeed.sol.core.roofline`` loads the roofline and what it imports,
not every engine that ``lightspeed.sol`` re-exports, and ``from lightspeed.sol
import estimate_training`` still works.

The import statements are read from the ``__init__`` file with :mod:`ast` on the
first attribute lookup (about a millisecond), then each name is cached in the
package's namespace so later lookups skip ``__getattr__``. A name that is not
exported but is a subpackage or submodule (``lightspeed.sol.train``) is
imported as such.

>>> import lightspeed.sol as sol
>>> sol.estimate_training.__module__
'lightspeed.sol.train.estimate'
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _type_checking_block(tree: ast.Module) -> list[ast.stmt]:
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return node.body
    return []


def read_exports(init_file: str | Path) -> dict[str, tuple[str, str]]:
    """Public name -> (module, name in that module), from the ``from X import a as b``
    statements under ``if TYPE_CHECKING:`` in ``init_file``."""
    tree = ast.parse(Path(init_file).read_text(encoding="utf-8"), filename=str(init_file))
    exports: dict[str, tuple[str, str]] = {}
    for node in _type_checking_block(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                exports[alias.asname or alias.name] = (node.module, alias.name)
    return exports


def attach(package: str, init_file: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the package ``package`` whose ``__init__`` is ``init_file``."""
    exports: dict[str, tuple[str, str]] = {}

    def table() -> dict[str, tuple[str, str]]:
        if not exports:
            exports.update(read_exports(init_file))
        return exports

    def module_getattr(name: str) -> Any:
        target = table().get(name)
        if target is None:
            if not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
                return importlib.import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, original = target
        value = getattr(importlib.import_module(module_name), original)
        setattr(sys.modules[package], name, value)  # later lookups skip __getattr__
        return value

    def module_dir() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table()})

    return module_getattr, module_dir


__all__ = ["attach", "read_exports"]

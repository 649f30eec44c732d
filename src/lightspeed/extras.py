"""The optional extras: what each one installs, and importing one with an error that names it.

Heavy or rarely needed libraries are extras (``pip install 'lightspeed[NAME]'``);
:data:`EXTRAS` lists each extra's distributions and the module Python imports for
each (a test keeps it equal to ``pyproject.toml``). Every place that needs an extra
imports it through :func:`import_extra`, so a missing library, and one that is
installed but cannot be imported (a protobuf or NumPy built for another version,
a missing shared library), is one :class:`~lightspeed.errors.MissingExtraError`
naming the extra to install, never the library's own exception.
:func:`installed_extras` says which extras are present without importing them
(``lightspeed doctor``).

>>> import_extra("json", extra="none", purpose="reading JSON").__name__
'json'
>>> import_extra("surely_not_a_module_xyz", extra="bench", purpose="GEMM benchmarks")
Traceback (most recent call last):
...
lightspeed.errors.MissingExtraError: GEMM benchmarks needs the 'surely_not_a_module_xyz' package; \
install it with pip install 'lightspeed[bench]'
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from dataclasses import dataclass
from types import ModuleType
from typing import Final

from lightspeed.errors import MissingExtraError, first_line
from lightspeed.records import Record

LOG = logging.getLogger(__name__)

# extra -> ((distribution as pip names it, module as Python imports it), ...), as in pyproject.toml
# (tests/test_extras.py checks that they agree). 'all' installs every one; 'dev' adds the test tools.
EXTRAS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "bench": (("torch", "torch"),),
    "monitor": (("nvidia-ml-py", "pynvml"), ("psutil", "psutil"), ("prometheus-client", "prometheus_client")),
    "postgres": (("psycopg", "psycopg"),),
    "tensorboard": (("tensorboard", "tensorboard"),),
    # SQLAlchemy and Alembic are what mlflow-skinny needs for a database (sqlite://) tracking store
    "mlflow": (("mlflow-skinny", "mlflow"), ("sqlalchemy", "sqlalchemy"), ("alembic", "alembic")),
    "wandb": (("wandb", "wandb"),),
    # the Parquet cache of parsed traces and ISA-L's gzip inflater (python-isal is 'isal' on PyPI)
    "trace": (("pyarrow", "pyarrow"), ("isal", "isal")),
    "ray": (("ray", "ray"),),
}


def extra_of(module: str) -> tuple[str, str] | None:
    """``(extra, distribution)`` that provides ``module`` (or its top-level package), else ``None``.

    >>> extra_of("pynvml")
    ('monitor', 'nvidia-ml-py')
    """
    top = module.split(".", maxsplit=1)[0]
    for extra, packages in EXTRAS.items():
        for distribution, name in packages:
            if name == top:
                return extra, distribution
    return None


def import_extra(module: str, *, extra: str, purpose: str, package: str | None = None) -> ModuleType:
    """``module`` imported, or :class:`MissingExtraError` naming ``extra`` (``purpose`` says what needs it).

    ``package`` is the name pip installs (default: the distribution :data:`EXTRAS` lists for
    the module, else the module's top-level name). An installed package that fails to import
    for any reason is reported the same way, with the library's first line, and the whole
    traceback at DEBUG (``-vv``).
    """
    known = extra_of(module)
    label = package or (known[1] if known is not None else module.split(".", maxsplit=1)[0])
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name is not None and (module == error.name or module.startswith(error.name + ".")):
            raise MissingExtraError(label, extra, purpose) from None
        LOG.debug("importing %s failed", module, exc_info=True)
        raise MissingExtraError(label, extra, purpose, problem=first_line(error)) from None
    except Exception as error:  # a broken install raises anything: TypeError, OSError, AttributeError
        LOG.debug("importing %s failed", module, exc_info=True)
        raise MissingExtraError(label, extra, purpose, problem=first_line(error)) from None


@dataclass(frozen=True)
class InstalledExtra(Record):
    """One extra: ``versions`` of its distributions (``None`` when missing); complete when none is."""

    name: str
    versions: dict[str, str | None]

    @property
    def complete(self) -> bool:
        """Every distribution of the extra is installed and its module can be found."""
        return all(version is not None for version in self.versions.values())

    @property
    def missing(self) -> tuple[str, ...]:
        """The distributions not installed."""
        return tuple(name for name, version in self.versions.items() if version is None)


def installed_extras() -> tuple[InstalledExtra, ...]:
    """Every extra with the installed version of each distribution, without importing any of them.

    >>> sorted(extra.name for extra in installed_extras())[:2]
    ['bench', 'mlflow']
    """
    return tuple(
        InstalledExtra(
            name=extra, versions={dist: installed_version(dist, module) for dist, module in packages}
        )
        for extra, packages in EXTRAS.items()
    )


def installed_version(distribution: str, module: str) -> str | None:
    """The installed version of ``distribution`` when its ``module`` can also be found (no import).

    >>> installed_version("surely-not-installed-xyz", "surely_not_installed_xyz") is None
    True
    """
    import importlib.metadata  # only `doctor` asks; ~30 ms at import (email parsing) for every command

    try:
        version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that fails, or a module without a spec
        found = False
    return version if found else None


__all__ = ["EXTRAS", "InstalledExtra", "extra_of", "import_extra", "installed_extras", "installed_version"]

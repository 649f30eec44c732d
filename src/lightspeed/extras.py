"""The optional extras: what each one installs, and importing one with an error that names it.

Heavy or rarely needed libraries are extras (``pip install 'lightspeed[NAME]'``);
:data:`EXTRAS` lists each extra's distributions and the module Python imports for
each (a test keeps it equal to ``pyproject.toml``). Every place that needs an extra
imports it through :func:`import_extra`, so a missing library, and one that is
installed but cannot be imported (a protobuf or NumPy built for another version,
a missing shared library), is one :class:`~lightspeed.errors.MissingExtraError`
naming the extra to install, never the library's own exception.
:func:`installed_extras` says which extras are present without importing them
(``lightspeed doctor``): each distribution's installed version, checked against the
version range lightspeed's own metadata (``pyproject.toml``) asks for, so a package that
is there but too old is not called installed; :func:`import_problem` says whether a
module imports (the doctor asks it for the modules in :data:`IMPORT_PROBED`).

>>> import_extra("json", extra="none", purpose="reading JSON").__name__
'json'
>>> import_extra("surely_not_a_module_xyz", extra="bench", purpose="GEMM benchmarks")
Traceback (most recent call last):
...
lightspeed.errors.MissingExtraError: GEMM benchmarks needs the 'surely_not_a_module_xyz' package; \
install it with pip install 'lightspeed[bench]'
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass, field
from importlib.util import find_spec
from types import ModuleType
from typing import Final

from lightspeed.errors import MissingExtraError, require_extra
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


# The modules `lightspeed doctor` imports to prove that they load (each in well under 0.3 s). The
# others (torch, mlflow, ray, wandb, SQLAlchemy, Alembic) take 0.5 to 4 s each: they are found and
# their versions checked, and import_extra names a broken one when a command needs it.
IMPORT_PROBED: Final = frozenset({"pynvml", "psutil", "prometheus_client", "psycopg", "pyarrow", "isal"})


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
        return require_extra(module, extra, purpose, package=label)
    except MissingExtraError as error:
        if error.problem is not None:  # installed but broken: the library's own traceback at -vv
            LOG.debug("importing %s failed", module, exc_info=error.__context__)
        raise


@dataclass(frozen=True)
class InstalledExtra(Record):
    """One extra: ``versions`` of its distributions (``None`` when missing), and ``problems``
    (distribution -> why an installed one cannot serve: too old, or not importable); complete
    when every distribution is installed without a problem."""

    name: str
    versions: dict[str, str | None]
    problems: dict[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Every distribution of the extra is installed, in the versions lightspeed needs."""
        return all(version is not None for version in self.versions.values()) and not self.problems

    @property
    def missing(self) -> tuple[str, ...]:
        """The distributions not installed."""
        return tuple(name for name, version in self.versions.items() if version is None)


def installed_extras() -> tuple[InstalledExtra, ...]:
    """Every extra with the installed version of each distribution, without importing any of them,
    and each one that is older (or newer) than lightspeed's requirement allows.

    >>> sorted(extra.name for extra in installed_extras())[:2]
    ['bench', 'mlflow']
    """
    extras = []
    for extra, packages in EXTRAS.items():
        versions = {dist: installed_version(dist, module) for dist, module in packages}
        problems = {}
        for dist, version in versions.items():
            problem = version_problem(dist, version) if version is not None else None
            if problem is not None:
                problems[dist] = problem
        extras.append(InstalledExtra(name=extra, versions=versions, problems=problems))
    return tuple(extras)


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
        found = find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that fails, or a module without a spec
        found = False
    return version if found else None


def import_problem(module: str) -> str | None:
    """Why ``module`` cannot be imported (the library's first line), or ``None`` when it imports.

    >>> import_problem("json") is None
    True
    """
    try:
        import_extra(module, extra="none", purpose="a check")
    except MissingExtraError as error:
        return error.problem or "not found"
    return None


_REQUIREMENT: Final = re.compile(
    r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*\(?([^;)]*)\)?\s*(?:;(.*))?$"
)


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.cache
def requirements() -> dict[str, str]:
    """Distribution (normalized name) -> the version range an extra of lightspeed asks for
    (``'psutil': '>=5.9'``), read from lightspeed's installed metadata (``pyproject.toml``);
    empty when lightspeed runs from a tree that was never installed."""
    import importlib.metadata

    try:
        lines = importlib.metadata.requires("lightspeed") or []
    except importlib.metadata.PackageNotFoundError:
        return {}
    found = {}
    for line in lines:
        match = _REQUIREMENT.match(line)
        if match is not None and "extra" in (match.group(3) or "") and match.group(2).strip():
            found[_normalized(match.group(1))] = match.group(2).replace(" ", "")
    return found


def version_problem(distribution: str, version: str, specifier: str | None = None) -> str | None:
    """Why ``version`` of ``distribution`` is outside ``specifier`` (default: lightspeed's
    requirement of it), or ``None`` when it is inside (or either cannot be read).

    >>> version_problem("psutil", "5.0.0", ">=5.9")
    'psutil 5.0.0 is older than 5.9, the oldest lightspeed supports'
    >>> version_problem("alembic", "1.10.0", "!=1.10.0,<2,>=1.8")
    'alembic 1.10.0 is outside the versions lightspeed supports (!=1.10.0,<2,>=1.8)'
    >>> version_problem("psutil", "7.0.0rc1", ">=5.9") is None
    True
    """
    wanted = requirements().get(_normalized(distribution)) if specifier is None else specifier
    have = _version_key(version)
    if not wanted or have is None:
        return None
    for clause in wanted.split(","):
        match = re.match(r"^\s*(~=|===|==|!=|<=|>=|<|>)\s*(.+?)\s*$", clause)
        if match is None or _satisfies(have, match.group(1), match.group(2)) is not False:
            continue
        if match.group(1) == ">=":
            return f"{distribution} {version} is older than {match.group(2)}, the oldest lightspeed supports"
        return f"{distribution} {version} is outside the versions lightspeed supports ({wanted})"
    return None


_VERSION: Final = re.compile(
    r"^\s*v?(?:\d+!)?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?\d*)?"
    r"(?:[-_.]?(post|rev|r)[-_.]?\d*)?(?:[-_.]?(dev)[-_.]?\d*)?(?:\+[a-z0-9._]+)?\s*$",
    re.IGNORECASE,
)


def _version_key(text: str) -> tuple[tuple[int, ...], int] | None:
    """A PEP 440 version as (release without trailing zeros, stage): dev 0 < pre 1 < final 2 < post 3."""
    match = _VERSION.match(text)
    if match is None:
        return None
    release = tuple(int(part) for part in match.group(1).split("."))
    while len(release) > 1 and release[-1] == 0:
        release = release[:-1]
    stage = 3 if match.group(3) else 1 if match.group(2) else 0 if match.group(4) else 2
    return release, stage


def _starts_with(have: tuple[tuple[int, ...], int], prefix: str) -> bool:
    """Whether the release of ``have`` begins with ``prefix`` (``'2.2'``)."""
    wanted = tuple(int(part) for part in prefix.split(".") if part.isdigit())
    release = have[0] + (0,) * max(0, len(wanted) - len(have[0]))
    return release[: len(wanted)] == wanted


def _satisfies(have: tuple[tuple[int, ...], int], operator: str, target: str) -> bool | None:
    """Whether ``have`` meets one clause (``None``: the clause cannot be read)."""
    if target.endswith(".*") and operator in ("==", "!="):
        return _starts_with(have, target[:-2]) == (operator == "==")
    want = _version_key(target)
    if want is None:
        return None
    if operator == "~=":  # ~=2.2.1 is >=2.2.1 and ==2.2.*
        return have >= want and _starts_with(have, target.split("+", maxsplit=1)[0].rsplit(".", 1)[0])
    return {
        "==": have == want,
        "===": have == want,
        "!=": have != want,
        "<=": have <= want,
        ">=": have >= want,
        "<": have < want,
        ">": have > want,
    }[operator]


__all__ = [
    "EXTRAS",
    "IMPORT_PROBED",
    "InstalledExtra",
    "extra_of",
    "import_extra",
    "import_problem",
    "installed_extras",
    "installed_version",
    "requirements",
    "version_problem",
]

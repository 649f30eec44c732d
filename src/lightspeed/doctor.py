"""First-run guidance (``lightspeed doctor``): which optional parts are installed, which backends answer.

One :class:`Check` per extra (its distributions and versions, read from the installed
metadata, each checked against the version range ``pyproject.toml`` asks for; the quick
modules of :data:`~lightspeed.extras.IMPORT_PROBED` are also imported, the slow ones such as
PyTorch are not) and per backend: NVML (the driver), DCGM (its host engine),
Ray (the cluster at ``RAY_ADDRESS``), PostgreSQL (the results store at ``$LIGHTSPEED_STORE``
when it is a URL) and a Prometheus exporter (``lightspeed monitor serve``) when one is named.
A backend is probed the way lightspeed uses it, with a short timeout; a missing part is
reported, never raised: the doctor itself always succeeds. Tests pass stand-in NVML and DCGM
modules (``nvml``, ``dcgm``); everything else is probed for real.

>>> report = run_checks(nvml=_NoDriver())
>>> {check.name: check.status for check in report.backends}["NVML"]
'unreachable'
"""

from __future__ import annotations

import contextlib
import http.client
import os
import platform
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Final, Literal
from urllib.parse import urlsplit, urlunsplit

from lightspeed import __version__, nvml
from lightspeed.errors import LightspeedError, MissingExtraError, UnsupportedError, UserInputError, first_line
from lightspeed.extras import (
    EXTRAS,
    IMPORT_PROBED,
    InstalledExtra,
    extra_of,
    import_extra,
    import_problem,
    installed_extras,
    installed_version,
)
from lightspeed.files import cannot_create_in
from lightspeed.records import Record
from lightspeed.store.backends import StoreMissingError
from lightspeed.store.database import open_store
from lightspeed.store.location import StoreLocation, store_location

Status = Literal["ok", "missing", "unreachable", "not configured"]
DEFAULT_TIMEOUT_S: Final = 2.0


@dataclass(frozen=True)
class Check(Record):
    """One optional part: an ``extra`` or a ``backend``, its status and one line of detail."""

    kind: Literal["extra", "backend"]
    name: str
    status: Status
    detail: str
    versions: dict[str, str | None] | None = None  # an extra's distributions (None: not installed)


@dataclass(frozen=True)
class DoctorReport(Record):
    """Every check, and the lightspeed and Python they ran under."""

    lightspeed_version: str
    python_version: str
    platform: str
    checks: tuple[Check, ...]

    @property
    def extras(self) -> tuple[Check, ...]:
        """The extras' checks, in ``pyproject.toml`` order."""
        return tuple(check for check in self.checks if check.kind == "extra")

    @property
    def backends(self) -> tuple[Check, ...]:
        """The backends' checks."""
        return tuple(check for check in self.checks if check.kind == "backend")


def run_checks(
    *,
    nvml: Any = None,
    dcgm: tuple[ModuleType, Callable[..., Any]] | None = None,
    dcgm_host: str = "localhost",
    ray_address: str | None = None,
    exporter: str | None = None,
    store: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> DoctorReport:
    """Check every extra and backend (see the module docstring); never raises for a missing part.

    ``nvml`` and ``dcgm`` are stand-in modules (tests); ``ray_address`` defaults to
    ``$RAY_ADDRESS``, ``store`` to ``$LIGHTSPEED_STORE``; ``exporter`` is ``HOST:PORT`` or a URL of a
    Prometheus exporter to scrape (none: not checked). A value given but empty (``--exporter ''``)
    is a :class:`UserInputError`, not the option left out.
    """
    _refuse_empty({"--exporter": exporter, "--ray-address": ray_address, "--dcgm-host": dcgm_host})
    backends = (
        check_nvml(nvml),
        check_dcgm(dcgm, hostname=dcgm_host),
        check_ray(ray_address if ray_address is not None else os.environ.get("RAY_ADDRESS"), timeout_s),
        check_postgres(store, timeout_s),
        check_exporter(exporter, timeout_s),
    )
    return DoctorReport(
        lightspeed_version=__version__,
        python_version=platform.python_version(),
        platform=f"{platform.system()} {platform.machine()}",
        checks=(*extra_checks(), *backends),
    )


# what each option takes, for the message that refuses an empty one
_OPTION_FORMS: Final = {
    "--exporter": "HOST:PORT or an http:// URL of a running 'lightspeed monitor serve' (e.g. 127.0.0.1:9400)",
    "--ray-address": "HOST:PORT, ray://HOST:PORT or auto",
    "--dcgm-host": "the host where DCGM's nv-hostengine runs (default localhost)",
}


def _refuse_empty(values: dict[str, str | None]) -> None:
    """Refuse an option given with an empty or blank value: it would read as one left out.

    >>> _refuse_empty({"--exporter": " "})
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: --exporter ' ' is empty: give HOST:PORT or an http:// URL of a \
running 'lightspeed monitor serve' (e.g. 127.0.0.1:9400), or leave the option out
    """
    for option, value in values.items():
        if value is not None and not value.strip():
            raise UserInputError(
                f"{option} {value!r} is empty: give {_OPTION_FORMS[option]}, or leave the option out"
            )


def extra_checks() -> tuple[Check, ...]:
    """One check per extra: ``ok`` with each distribution's version, or what is missing, too old or
    not importable, and the fix."""
    checks = []
    for extra in installed_extras():
        problems = {**extra.problems, **_import_problems(extra)}
        present = ", ".join(
            f"{name} {version}"
            for name, version in extra.versions.items()
            if version and name not in problems
        )
        if extra.complete and not problems:
            status: Status = "ok"
            detail = present
        else:
            status = "missing"
            missing = ", ".join(extra.missing)
            fix = "pip install --upgrade" if problems and not missing else "pip install"
            detail = "; ".join(
                part
                for part in (
                    present,
                    *problems.values(),
                    f"missing {missing}" if missing else "",
                    f"{fix} 'lightspeed[{extra.name}]'",
                )
                if part
            )
        detail += f"; {_scanner_line()}" if extra.name == "trace" else ""  # the C scanner is core
        checks.append(Check("extra", extra.name, status, detail, versions=dict(extra.versions)))
    return tuple(checks)


def _import_problems(extra: InstalledExtra) -> dict[str, str]:
    """distribution -> why its module does not import, for the quick ones (``IMPORT_PROBED``)
    that are installed in a version lightspeed supports."""
    problems = {}
    for distribution, module in EXTRAS[extra.name]:
        version = extra.versions.get(distribution)
        if version is None or distribution in extra.problems or module not in IMPORT_PROBED:
            continue
        problem = import_problem(module)
        if problem is not None:
            problems[distribution] = f"{distribution} {version} cannot be imported ({problem})"
    return problems


def check_nvml(module: Any = None) -> Check:
    """NVML: the NVIDIA driver's management library, through nvidia-ml-py (``monitor`` extra)."""
    try:
        with nvml.session(module, purpose="talking to NVIDIA GPUs through NVML") as library:
            count = int(library.nvmlDeviceGetCount())
            driver = nvml.text(library.nvmlSystemGetDriverVersion())
            names = [nvml.text(library.nvmlDeviceGetName(library.nvmlDeviceGetHandleByIndex(i))) for i in
                     range(count)]  # fmt: skip
    except MissingExtraError as error:
        return Check("backend", "NVML", "missing", str(error))
    except UnsupportedError as error:
        return Check("backend", "NVML", "unreachable", str(error))
    gpus = ", ".join(sorted(set(names))) or "no GPU"
    return Check("backend", "NVML", "ok", f"driver {driver}, {count} GPU(s): {gpus}")


def check_dcgm(modules: tuple[ModuleType, Callable[..., Any]] | None = None, *, hostname: str) -> Check:
    """DCGM: its Python bindings (shipped with DCGM) and the host engine (``nv-hostengine``)."""
    from lightspeed.monitor.dcgm import DcgmBackend

    backend = DcgmBackend(hostname=hostname, modules=modules)
    try:
        devices = backend.open()
    except MissingExtraError:
        return Check(
            "backend", "DCGM", "missing",
            "DCGM's Python bindings are not importable: they ship with DCGM; put "
            "/usr/local/dcgm/bindings/python3 on PYTHONPATH",
        )  # fmt: skip
    except UnsupportedError as error:
        return Check("backend", "DCGM", "unreachable", str(error))
    except Exception as error:  # the bindings raise their own DCGMError when nv-hostengine is not running
        return Check("backend", "DCGM", "unreachable", f"host engine at {hostname}: {first_line(error)}")
    finally:
        with contextlib.suppress(Exception):
            backend.close()
    return Check("backend", "DCGM", "ok", f"host engine at {hostname}, {len(devices)} GPU(s)")


def check_ray(address: str | None, timeout_s: float = DEFAULT_TIMEOUT_S) -> Check:
    """Ray: installed (read from its metadata, not imported), and the cluster at ``address``
    (``RAY_ADDRESS``) answering on its port; ``auto`` is the cluster started on this node, whose
    address ``ray start`` left in :func:`ray_address_file` (where ``ray.init("auto")`` finds it)."""
    version = installed_version("ray", "ray")
    if version is None:
        return Check(
            "backend", "Ray", "missing", f"ray is not installed; pip install '{_install_name('ray')}'"
        )
    given = (address or "").strip()
    if given.removeprefix("ray://") in ("", "local"):
        return Check(
            "backend", "Ray", "not configured",
            f"ray {version}; no cluster address (RAY_ADDRESS): a local Ray starts when a command needs one",
        )  # fmt: skip
    by_auto = given.removeprefix("ray://") == "auto"
    found = ray_current_cluster() if by_auto else given
    if found is None:
        return Check(
            "backend", "Ray", "unreachable",
            f"ray {version}; auto finds no Ray cluster on this node ({ray_address_file()} is missing or "
            "empty); start one with 'ray start --head' or give the cluster's HOST:PORT",
        )  # fmt: skip
    where = f"auto: this node's cluster at {found}" if by_auto else f"the cluster at {found}"
    from lightspeed.trace.ray_engine import check_reachable  # the address grammar of --engine ray

    try:
        check_reachable(found, timeout_s=timeout_s, option="Ray address")
    except UserInputError as error:
        detail = f"{where}: {error}" if by_auto else str(error)
        return Check("backend", "Ray", "unreachable", f"ray {version}; {detail}")
    return Check("backend", "Ray", "ok", f"ray {version}; {where} answers")


def refuse_malformed_ray_address(address: str) -> None:
    """Refuse a ``--ray-address`` that is not ``HOST:PORT``, ``ray://HOST:PORT`` or ``auto``
    (``http://``): bad input, where a well-formed address nothing answers at is a finding."""
    from lightspeed.trace.ray_engine import parse_address  # the address grammar of --engine ray

    parse_address(address, option="--ray-address")


def ray_address_file() -> Path:
    """Where ``ray start`` writes the address of the cluster it started on this node, the file
    ``ray.init(address="auto")`` reads first: ``ray/ray_current_cluster`` under ``$RAY_TMPDIR``,
    else (on Linux) ``$TMPDIR``, else ``/tmp`` (Ray's ``get_default_ray_temp_dir``)."""
    folder = os.environ.get("RAY_TMPDIR") or None
    if folder is None and sys.platform.startswith("linux"):
        folder = os.environ.get("TMPDIR") or None
    if folder is None:
        folder = "/tmp" if sys.platform.startswith(("linux", "darwin")) else tempfile.gettempdir()
    return Path(folder) / "ray" / "ray_current_cluster"


def ray_current_cluster() -> str | None:
    """The address in :func:`ray_address_file` (None: no file, an empty one, or one that cannot
    be read)."""
    try:
        with ray_address_file().open(encoding="utf-8", errors="replace") as file:
            text = file.read(1000).strip()
    except OSError:
        return None
    return text or None


def check_postgres(store: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> Check:
    """PostgreSQL: the results store at ``$LIGHTSPEED_STORE`` when it is a ``postgresql://`` URL;
    otherwise whether lightspeed reads the SQLite file the results go to (:func:`sqlite_refusal`)
    and can write it (:func:`sqlite_problem`)."""
    try:
        location = store_location(store)
    except LightspeedError as error:
        return Check("backend", "PostgreSQL", "unreachable", str(error))
    if location.url is None:
        return _check_sqlite_store(location)
    try:
        psycopg = import_extra("psycopg", extra="postgres", purpose="a postgresql:// results store")
    except MissingExtraError as error:
        return Check("backend", "PostgreSQL", "missing", str(error))
    try:
        with psycopg.connect(location.url, connect_timeout=max(1, round(timeout_s))) as connection:
            version = connection.info.server_version
    except (psycopg.Error, ValueError) as error:
        detail = f"{location.display}: {location.scrub(first_line(error))}"
        return Check("backend", "PostgreSQL", "unreachable", detail)
    major, minor = divmod(int(version), 10000)
    return Check("backend", "PostgreSQL", "ok", f"{location.display}: server {major}.{minor}")


def _check_sqlite_store(location: StoreLocation) -> Check:
    """The SQLite file the results go to: refused by lightspeed (not a store, a newer schema),
    not writable, or fine (``not configured``: no PostgreSQL)."""
    where = f"LIGHTSPEED_STORE is not a postgresql:// URL; results go to the SQLite file {location.display}"
    refusal = sqlite_refusal(location)
    if refusal is not None:
        return Check("backend", "PostgreSQL", "unreachable", f"{where}, which lightspeed refuses: {refusal}")
    problem = sqlite_problem(location.path) if location.path is not None else None
    if problem is not None:
        detail = f"{where}, which cannot be written: {problem}; {_SQLITE_FIX}"
        return Check("backend", "PostgreSQL", "unreachable", detail)
    return Check("backend", "PostgreSQL", "not configured", where)


def sqlite_refusal(location: StoreLocation) -> str | None:
    """Why lightspeed refuses the existing SQLite store at ``location`` (another kind of file, a
    damaged one, another program's database, a schema newer than this lightspeed), found by
    opening it for reading as every command does, which never creates or changes it; ``None``
    when it is readable or not there yet (the first write creates it)."""
    try:
        if location.path is None or not location.path.is_file():
            return None
        with open_store(location, create=False):
            return None
    except StoreMissingError:  # an empty database: the first write makes the tables
        return None
    except (LightspeedError, OSError) as error:  # OSError: a folder on the way this user may not search
        return first_line(error)


def sqlite_problem(path: Path) -> str | None:
    """Why results cannot be written to the SQLite file ``path`` (None: they can), found without
    creating anything. An existing file must be a file this process may write, in a folder it may
    write (write-ahead logging adds files beside it). A missing one is created with its folders
    (``lightspeed.store``), so the nearest folder that exists must take a new entry: tried with
    an unnamed temporary file (Linux's ``O_TMPFILE``; elsewhere one removed at once), since
    ``os.access`` says yes to root under ``/proc``, where nothing can be made."""
    if str(path) == ":memory:":
        return None
    try:
        if path.exists():
            if not path.is_file():
                return f"{path} is not a file"
            if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
                return f"{path} or its folder is read-only for this user"
            return None
        folder = next((parent for parent in path.parents if parent.exists()), None)
    except OSError as error:  # a folder on the way that this user may not search
        return f"{error.filename or path} cannot be read ({error.strerror or error})"
    if folder is None:
        return f"no folder above {path} exists"
    if not folder.is_dir():
        return f"{folder} is not a folder, so nothing can be created under it"
    reason = cannot_create_in(folder)
    return None if reason is None else f"nothing can be created in {folder} ({reason})"


_SQLITE_FIX: Final = (
    "fix: set LIGHTSPEED_HOME to a folder you can write (or LIGHTSPEED_STORE to a file in one)"
)


def check_exporter(address: str | None, timeout_s: float = DEFAULT_TIMEOUT_S) -> Check:
    """A Prometheus exporter (``lightspeed monitor serve --port P``) at ``HOST:PORT`` or a URL.

    A malformed address is reported (``unreachable``, with the form to give), never raised.
    """
    if not address:
        return Check(
            "backend", "Prometheus exporter", "not configured",
            "none named: --exporter HOST:PORT checks a running 'lightspeed monitor serve'",
        )  # fmt: skip
    try:
        url = exporter_url(address)
    except UserInputError as error:
        return Check("backend", "Prometheus exporter", "unreachable", str(error))
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            text = response.read(1 << 22).decode("utf-8", errors="replace")
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as error:
        return Check("backend", "Prometheus exporter", "unreachable", f"{url}: {first_line(error)}")
    families = sum(line.startswith("# TYPE ") for line in text.splitlines())
    if not families:
        detail = f"{url} answers, but not with Prometheus metrics"
        return Check("backend", "Prometheus exporter", "unreachable", detail)
    return Check("backend", "Prometheus exporter", "ok", f"{url}: {families} metric families")


def exporter_url(address: str) -> str:
    """The metrics URL of ``--exporter HOST:PORT`` (or an http(s) URL), checked before any request.

    >>> exporter_url("[::1]:9400")
    'http://[::1]:9400/metrics'
    >>> exporter_url("127.0.0.1:99999")
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: --exporter '127.0.0.1:99999': the port must be 1 to 65535; \
give HOST:PORT or an http:// URL (e.g. 127.0.0.1:9400)
    """
    text = address.strip()
    url = text if "://" in text else f"http://{text}"
    try:
        parts = urlsplit(url)
    except ValueError as error:  # "Invalid IPv6 URL"
        raise UserInputError(f"--exporter {address!r}: {first_line(error)}; {_EXPORTER_FORM}") from None
    try:
        host, port = parts.hostname, parts.port
    except ValueError:  # urllib's "Port could not be cast to integer ...", "Port out of range 0-65535"
        port_text = parts.netloc.rpartition(":")[2]
        problem = (
            "the port must be 1 to 65535"
            if port_text.lstrip("+-").isdigit()
            else f"the port {port_text!r} is not a number"
        )
        raise UserInputError(f"--exporter {address!r}: {problem}; {_EXPORTER_FORM}") from None
    if parts.scheme not in ("http", "https"):
        raise UserInputError(f"--exporter {address!r}: only http and https are scraped; {_EXPORTER_FORM}")
    if not host:
        raise UserInputError(f"--exporter {address!r} names no host; {_EXPORTER_FORM}")
    if port is None and "://" not in text:
        raise UserInputError(f"--exporter {address!r} names no port; {_EXPORTER_FORM}")
    if port == 0:
        raise UserInputError(f"--exporter {address!r}: the port must be 1 to 65535; {_EXPORTER_FORM}")
    path = parts.path if parts.path.strip("/") else "/metrics"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


_EXPORTER_FORM: Final = "give HOST:PORT or an http:// URL (e.g. 127.0.0.1:9400)"


def _scanner_line() -> str:
    from lightspeed.trace.io.kineto_columns import scanner_summary

    return scanner_summary()


def _install_name(module: str) -> str:
    """What to ``pip install`` for ``module``: its extra (``lightspeed[ray]``), else the module."""
    found = extra_of(module)
    return f"lightspeed[{found[0]}]" if found is not None else module


class _NoDriver:
    """A stand-in NVML on a machine without a driver (the docstring example)."""

    class NVMLError(Exception):
        """NVML's error class."""

    def nvmlInit(self) -> None:  # noqa: N802 - NVML's name
        raise self.NVMLError("Driver Not Loaded")

    def nvmlShutdown(self) -> None:  # noqa: N802 - NVML's name
        return


__all__ = [
    "Check",
    "DoctorReport",
    "check_dcgm",
    "check_exporter",
    "check_nvml",
    "check_postgres",
    "check_ray",
    "exporter_url",
    "extra_checks",
    "ray_address_file",
    "ray_current_cluster",
    "refuse_malformed_ray_address",
    "run_checks",
    "sqlite_problem",
]

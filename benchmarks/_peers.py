"""The peers benchmark scripts compare lightspeed against: set up and checked before anything is timed.

A Python peer lives in its own virtual environment (never a dependency of lightspeed): the
environment is created when absent, the peer installed with pip, and the install proved by
importing the peer's module in that environment. An environment that cannot import it (an
install that failed or was interrupted half-way) is made again. A system program (``mbw``) is
looked up on PATH and installed with apt-get when missing and allowed.

When a peer cannot be had, :class:`PeerUnavailableError` carries one line: which peer, why, and how
to fix it (the command to install it, or the script's option to run without it); a missing input
folder is a :class:`MissingPrerequisiteError` of the same kind. :func:`run_main` prints that line
and exits with code 2, never a traceback.

Standard library only: ``trace_hta_worker.py`` imports it inside HTA's environment, where
lightspeed is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

EXIT_MISSING_PREREQUISITE = 2  # a missing prerequisite, as for any usage error
IMPORT_CHECK_TIMEOUT_S = 120
INSTALL_TIMEOUT_S = 1800


class MissingPrerequisiteError(Exception):
    """Something a benchmark needs is missing; the message is one line saying how to fix it."""


class PeerUnavailableError(MissingPrerequisiteError):
    """A peer cannot be installed, imported or run; the message is one line saying how to fix it."""


@dataclass(frozen=True)
class PythonPeer:
    """A peer from PyPI: how messages name it, pip's pinned requirement, a module its install has."""

    name: str
    requirement: str
    module: str


# the peers several scripts run, pinned in one place
LLM_ANALYSIS = PythonPeer("llm-analysis 0.2.2", "llm-analysis==0.2.2", "llm_analysis.analysis")
HTA = PythonPeer("HTA 0.5.0", "holistictraceanalysis==0.5.0", "hta.trace_analysis")
LLM_ANALYSIS_VENV = Path(os.environ.get("PEER_VENV", "/work/venvs/llm-analysis"))


def last_line(text: str) -> str:
    """The last non-empty line of a tool's output (where pip and Python put the reason), or ''."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _or_without(without: str | None) -> str:
    return f" or {without}" if without else ""


def imports(python: Path, module: str) -> tuple[bool, str]:
    """Whether ``python`` runs and imports ``module``; with the reason when it does not."""
    if not python.exists():
        return False, f"{python} does not exist"
    try:
        done = subprocess.run(
            [str(python), "-c", f"import {module}"],
            capture_output=True,
            text=True,
            timeout=IMPORT_CHECK_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, f"{python} does not run ({error})"
    return done.returncode == 0, last_line(done.stderr)


def _run(command: list[str]) -> tuple[bool, str]:
    """Run a set-up command quietly: (whether it succeeded, its last line of output)."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, str(error)
    return done.returncode == 0, last_line(done.stderr) or last_line(done.stdout)


def _host_pip() -> bool:
    """Whether this Python has pip, which can install into another environment (``pip --python``)."""
    return importlib.util.find_spec("pip") is not None


def _create(venv: Path, *, venv_option: str) -> tuple[bool, str]:
    """Create (or make again, emptied) the virtual environment ``venv``; with pip only when this
    Python has none to lend."""
    if venv.exists() and any(venv.iterdir()) and not (venv / "pyvenv.cfg").exists():
        raise PeerUnavailableError(
            f"{venv} is not empty and not a virtual environment (no pyvenv.cfg); "
            f"give the peer another folder with {venv_option}"
        )
    without_pip = ["--without-pip"] if _host_pip() else []  # this Python's pip installs into it
    return _run([sys.executable, "-m", "venv", "--clear", *without_pip, str(venv)])


def install_command(python: Path, requirement: str) -> list[str]:
    """pip's command that installs ``requirement`` into the environment of ``python``."""
    if _host_pip():
        return [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", requirement]
    return [str(python), "-m", "pip", "install", "-q", requirement]


def python_peer(peer: PythonPeer, venv: Path, *, venv_option: str, without: str | None = None) -> Path:
    """The python of ``venv`` once it imports ``peer.module``: the environment made (again) and
    the peer installed when it does not. Raises :class:`PeerUnavailableError` (one line naming the
    peer, the reason and the fix; ``without``, e.g. "pass --no-peer to time lightspeed alone",
    is offered as the other way out) when that fails."""
    python = venv / "bin" / "python"
    ready, why = imports(python, peer.module)
    if ready:
        return python
    if venv.exists():
        print(f"{venv} cannot import {peer.module} ({why}): making it again", file=sys.stderr)
    print(f"creating {venv} with {peer.requirement}", file=sys.stderr)
    command = [part for part in install_command(python, peer.requirement) if part != "-q"]
    fix = f"install it with `{shlex.join(command)}`{_or_without(without)}"
    created, why = _create(venv, venv_option=venv_option)
    if not created:
        raise PeerUnavailableError(
            f"{peer.name} is not available: could not create the virtual environment {venv} ({why}); "
            f"create it with `{sys.executable} -m venv {venv}` and {fix}"
        )
    installed, why = _run(install_command(python, peer.requirement))
    if installed:
        installed, why = imports(python, peer.module)
    if not installed:
        raise PeerUnavailableError(
            f"{peer.name} is not available: pip could not install {peer.requirement} into {venv} "
            f"({why or 'no reason given'}); {fix}"
        )
    return python


def site_packages(python: Path) -> Path:
    """The folder a peer environment's packages are installed in (to import a peer in-process)."""
    done = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        timeout=IMPORT_CHECK_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise PeerUnavailableError(
            f"{python} does not run ({last_line(done.stderr)}); remove its environment"
        )
    return Path(done.stdout.strip())


def system_program(name: str, apt_package: str, *, without: str | None = None) -> tuple[str, bool]:
    """The path of the program ``name`` and whether it was installed now: looked up on PATH, else
    installed from ``apt_package`` with apt-get when this process runs as root. Raises
    :class:`PeerUnavailableError` when it cannot be had."""
    found = shutil.which(name)
    if found:
        return found, False
    fix = f"install it with `sudo apt-get install {apt_package}`{_or_without(without)}"
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise PeerUnavailableError(
            f"{name} is not on PATH and this process cannot run apt-get as root; {fix}"
        )
    print(f"{name} not found: installing the {apt_package} package with apt-get", file=sys.stderr)
    _run(["apt-get", "update", "-qq"])
    installed, why = _run(["apt-get", "install", "-y", "-qq", apt_package])
    found = shutil.which(name)
    if not installed or not found:
        raise PeerUnavailableError(
            f"{name} is not available: apt-get could not install {apt_package} "
            f"({why or 'the program is still not on PATH'}); {fix}"
        )
    return found, True


def input_files(folder: Path, pattern: str, what: str) -> list[Path]:
    """The files matching ``pattern`` (a glob: ``**/`` to look in subfolders) in ``folder``, sorted; raises
    :class:`MissingPrerequisiteError` when there are none."""
    found = sorted(folder.glob(pattern)) if folder.is_dir() else []
    if not found:
        raise MissingPrerequisiteError(
            f"no {what} ({pattern}) in {folder}; set LIGHTSPEED_SHARED to the shared folder whose "
            "data/ holds them (default: ../shared beside the repository)"
        )
    return found


def run_main(main: Callable[[], int | None]) -> NoReturn:
    """Run a script's ``main`` and exit with its code; a missing peer or input is one line and exit
    code 2."""
    try:
        code = main()
    except MissingPrerequisiteError as error:
        print(f"{Path(sys.argv[0]).name}: {error}", file=sys.stderr)
        sys.exit(EXIT_MISSING_PREREQUISITE)
    sys.exit(code or 0)

"""The command ``monitor run`` watches: its own process group, signals passed on, its exit as shells say it.

The command starts in a process group of its own, so that the monitor can
reach it and everything it started (``torchrun``'s workers, a shell's
children) at once. While it runs:

- SIGINT, SIGTERM and SIGHUP sent to the monitor are forwarded to the
  command's process group (a scheduler's SIGTERM reaches the job, and the
  monitor stays to reap it and write ``monitor.json``); a third such signal
  sends SIGKILL to the group, for a command that will not stop;
- on a terminal, the command's group is made the terminal's foreground group,
  so that Ctrl-C reaches it directly and it can read the keyboard (a debugger,
  a prompt); the monitor takes the terminal back when the command ends.

The exit code is the command's; a command ended by a signal reports
``128 + signal number`` (137 for SIGKILL), as shells do.

>>> import sys
>>> run_child([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"]).exit_code
143
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, Final, TextIO

from lightspeed.errors import UserInputError
from lightspeed.records import Record

FORWARDED_SIGNALS: Final = ("SIGINT", "SIGTERM", "SIGHUP")
KILL_AFTER_SIGNALS: Final = 3  # the third signal to the monitor kills the command's group
SIGNAL_EXIT_BASE: Final = 128


@dataclass(frozen=True)
class ChildExit(Record):
    """How the command ended.

    ``exit_code`` is as a shell reports it (the code, or 128 + the signal's
    number); ``signal_name`` names the signal that ended the command (``None``
    when it exited); ``forwarded_signals`` lists the signals the monitor
    received and passed on; ``reason`` says it in one sentence.
    """

    exit_code: int
    signal_name: str | None
    forwarded_signals: tuple[str, ...]
    reason: str


def run_child(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
    on_start: Callable[[int], None] | None = None,
    on_exit: Callable[[int], None] | None = None,
) -> ChildExit:
    """Run ``command`` in its own process group until it ends; ``on_start(pid)`` runs once it
    started, ``on_exit(pid)`` once it ended but before it is reaped (its CPU times can still be
    read: a last sample then covers the command's last moments).

    Raises :class:`UserInputError` when the command cannot be started.
    """
    with _Forwarder() as forwarder:
        process = _spawn(command, env, stdout)
        with _foreground(process.pid):
            forwarder.attach(process.pid)
            try:
                if on_start is not None:
                    on_start(process.pid)
                if on_exit is not None and _wait_unreaped(process.pid):
                    on_exit(process.pid)
                returncode = process.wait()
            except BaseException:
                _stop(process)
                raise
    return exit_of(returncode, forwarder.received)


def _wait_unreaped(pid: int) -> bool:
    """Block until process ``pid`` has ended, leaving it to be reaped (``os.waitid`` with
    ``WNOWAIT``); ``False`` where the platform has no such wait (the caller just reaps it)."""
    waitid = getattr(os, "waitid", None)
    if waitid is None:
        return False
    try:
        waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    except ChildProcessError:  # already reaped elsewhere
        return False
    return True


def exit_of(returncode: int, forwarded: Sequence[str] = ()) -> ChildExit:
    """The exit of a command from ``Popen.returncode`` (negative: the signal that ended it).

    >>> exit_of(-9).exit_code, exit_of(-9).reason
    (137, 'the command was ended by SIGKILL (exit code 137)')
    """
    if returncode < 0:
        name = _signal_name(-returncode)
        code = SIGNAL_EXIT_BASE - returncode
        ended = f"the command was ended by {name} (exit code {code})"
    else:
        name, code = None, returncode
        ended = f"the command exited with code {code}"
    if forwarded:
        ended = f"{', '.join(forwarded)} to the monitor, forwarded to the command's process group; {ended}"
    return ChildExit(exit_code=code, signal_name=name, forwarded_signals=tuple(forwarded), reason=ended)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _spawn(
    command: Sequence[str], env: Mapping[str, str] | None, stdout: TextIO | None
) -> subprocess.Popen[bytes]:
    group: dict[str, Any] = (
        {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
    )
    try:
        return subprocess.Popen(list(command), env=None if env is None else dict(env), stdout=stdout, **group)
    except OSError as error:
        raise UserInputError(f"cannot run {command[0]!r}: {error.strerror or error}") from None


def _stop(process: subprocess.Popen[bytes]) -> None:
    """End the command's group after an error on the monitor's side, so that it is not orphaned."""
    for number in (signal.SIGTERM, signal.SIGKILL):
        _signal_group(process.pid, number)
        try:
            process.wait(timeout=5.0)
            return
        except subprocess.TimeoutExpired:
            continue


def _signal_group(group: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, number)


class _Forwarder:
    """Handlers that pass SIGINT/SIGTERM/SIGHUP on to the command's group (main thread only)."""

    def __init__(self) -> None:
        self.received: list[str] = []
        self._group: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _Forwarder:
        if threading.current_thread() is threading.main_thread():
            for name in FORWARDED_SIGNALS:
                number = getattr(signal, name, None)
                if number is not None:
                    self._previous[number] = signal.signal(number, self._on_signal)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def attach(self, group: int) -> None:
        """Forward to process group ``group`` from now on (and the signals that came before it started)."""
        self._group = group
        for name in self.received:
            _signal_group(group, getattr(signal, name))

    def _on_signal(self, number: int, frame: FrameType | None) -> None:
        self.received.append(_signal_name(number))
        if self._group is None:
            return
        killing = len(self.received) >= KILL_AFTER_SIGNALS
        _signal_group(self._group, signal.SIGKILL if killing else number)


@contextlib.contextmanager
def _foreground(group: int) -> Iterator[None]:
    """On a terminal with the monitor in the foreground: the command's group gets it, then gives it back."""
    terminal = _foreground_terminal()
    with contextlib.suppress(OSError):
        os.setpgid(group, group)  # also done in the child; whichever runs first wins the race
    if terminal is None:
        yield
        return
    _set_foreground(terminal, group)
    _signal_group(group, signal.SIGCONT)  # a read before the hand-over stopped it (SIGTTIN): go on
    try:
        yield
    finally:
        _set_foreground(terminal, os.getpgrp())


def _foreground_terminal() -> int | None:
    if threading.current_thread() is not threading.main_thread():
        return None  # signal handlers (SIGTTOU) can only be changed on the main thread
    try:
        descriptor = sys.stdin.fileno()
        if os.isatty(descriptor) and os.tcgetpgrp(descriptor) == os.getpgrp():
            return descriptor
    except (AttributeError, OSError, ValueError):
        pass
    return None


def _set_foreground(terminal: int, group: int) -> None:
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # a background group may not change it
    try:
        with contextlib.suppress(OSError):
            os.tcsetpgrp(terminal, group)
    finally:
        signal.signal(signal.SIGTTOU, previous)

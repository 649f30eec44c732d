"""The real psutil backend on this machine, checked against /proc and the kernel's own accounting."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lightspeed.errors import MissingExtraError, UserInputError
from lightspeed.monitor import HostBackend

BURN = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end:\n    pass\n"


def _meminfo_total_bytes() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return float(line.split()[1]) * 1024  # kB
    raise AssertionError("no MemTotal")


@pytest.mark.skipif(not Path("/proc/meminfo").exists(), reason="needs Linux /proc")
def test_host_figures_agree_with_proc() -> None:
    backend = HostBackend()
    (device,) = backend.open()
    assert device.details["num_cpus"] == os.cpu_count()
    time.sleep(0.05)  # the CPU share is measured from open(): let the kernel count a few 10 ms ticks
    values = backend.read()["host"]
    assert values["host_memory_total_bytes"] == _meminfo_total_bytes()
    assert 0 < values["host_memory_used_bytes"] <= values["host_memory_total_bytes"]  # type: ignore[operator]
    assert 0.0 <= values["cpu_util_ratio"] <= 1.0  # type: ignore[operator]
    assert "process_cpu_cores" not in values  # no process watched


def test_watched_tree_cpu_matches_the_kernels_rusage() -> None:
    """CPU seconds summed from process_cpu_cores over the child's life vs its rusage from wait4."""
    child = subprocess.Popen([sys.executable, "-c", BURN])
    backend = HostBackend(pid=child.pid)
    backend.open()
    measured = 0.0
    last = time.perf_counter()
    while True:
        time.sleep(0.05)
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)  # this child's own rusage once it exits
        cores = backend.read()["host"]["process_cpu_cores"]
        now = time.perf_counter()
        measured += (cores or 0.0) * (now - last)
        last = now
        if pid:
            child.returncode = os.waitstatus_to_exitcode(status)
            break
    kernel = usage.ru_utime + usage.ru_stime
    # the last partial tick before the exit is lost (at most one tick of one core), nothing is counted twice
    assert kernel - 0.3 <= measured <= kernel + 0.05


def test_bad_pid_is_a_user_error() -> None:
    with pytest.raises(UserInputError, match="process id must be > 0"):
        HostBackend(pid=0)
    with pytest.raises(UserInputError, match="no process with id"):
        HostBackend(pid=2**22 + 12345).open()


def test_missing_psutil_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psutil", None)
    with pytest.raises(MissingExtraError, match=r"lightspeed\[monitor\]"):
        HostBackend().open()

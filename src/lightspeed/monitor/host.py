"""The host's counters through psutil: CPU, memory, network, disks, and the watched process tree.

The CPU share is computed from ``psutil.cpu_times()`` deltas: busy is user +
nice + system + irq + softirq (guest time is inside user), over busy + idle +
iowait + steal, the same split ``top`` and nvitop's host panel show. Network
rates leave out loopback and ``ifb*`` mirror devices (traffic shaping copies
every packet there). ``process_cpu_cores`` is the CPU seconds per second of the
watched process and its descendants (the command ``monitor run`` launched):
1.0 is one core kept busy, and never more than the machine's cores. The
process tree is re-listed at most once a second (listing scans all of /proc);
the CPU times of known processes are read every tick. A process found in the
tree after it started counts from the previous tick: all its CPU seconds when
it started after that tick, else the share of them that falls after it at
its average rate over its life (its earlier seconds belong to ticks already
written, not to this one). A process that ends between two ticks loses only
its last partial tick; one that has ended but is not reaped yet (a zombie)
adds its last CPU seconds but no memory, and with every watched process
ended the process counters have no value. Rates (CPU share, CPU cores,
network and disk) are measured from one reading to the next, the first from
:meth:`HostBackend.open`: the CPU share is ``None`` until the kernel has
counted a tick (10 ms) since then, never the average since boot.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Final

from lightspeed.errors import UserInputError
from lightspeed.extras import import_extra
from lightspeed.monitor.backend import Backend, DeviceInfo, Reading, Values, rate

TREE_REFRESH_S: Final = 1.0
_SKIPPED_NICS: Final = ("lo", "ifb")


def import_psutil() -> Any:
    """The psutil module, or one clear error naming the extra."""
    return import_extra("psutil", extra="monitor", purpose="sampling host counters")


class HostBackend(Backend):
    """Host CPU, memory, network and disk counters, and the CPU of process ``pid``'s tree.

    >>> backend = HostBackend()
    >>> devices = backend.open()
    >>> devices[0].device_id, devices[0].details["num_cpus"] == os.cpu_count()
    ('host', True)
    >>> time.sleep(0.05)  # the CPU share is measured from open(): let the kernel count a few ticks
    >>> 0.0 <= backend.read()["host"]["cpu_util_ratio"] <= 1.0
    True
    """

    name = "host"
    min_interval_s = 0.05

    def __init__(self, *, pid: int | None = None) -> None:
        if pid is not None and pid <= 0:
            raise UserInputError(f"process id must be > 0, got {pid}")
        self.pid = pid
        self._may_have_ended = False
        self._psutil: Any = None
        self._last_s = 0.0
        self._cpu: tuple[float, float] | None = None
        self._cpu_ratio_last: float | None = None
        self._io: dict[str, float | None] = {}
        self._tree: dict[int, Any] = {}
        self._tree_cpu: dict[int, float] = {}
        self._tree_ended: set[int] = set()  # ended, not yet reaped (zombies): not listed again
        self._tree_listed_s = -TREE_REFRESH_S
        self._num_cpus = os.cpu_count() or 1

    def watch(self, pid: int) -> None:
        """Watch the tree of process ``pid``, which this program started: it may end before the
        backend opens (a short command), and then its counters are ``None``, not an error."""
        if pid <= 0:
            raise UserInputError(f"process id must be > 0, got {pid}")
        self.pid = pid
        self._may_have_ended = True

    def open(self) -> tuple[DeviceInfo, ...]:
        psutil = self._psutil = import_psutil()
        if self.pid is not None and not self._may_have_ended and not psutil.pid_exists(self.pid):
            raise UserInputError(f"no process with id {self.pid} to watch")
        self._last_s = time.perf_counter()
        self._cpu = _cpu_split(psutil.cpu_times())  # rates start here: the first reading measures from it
        self._cpu_ratio_last = None
        self._io = self._io_totals()
        self._process_cpu_s(None)
        details = {
            "num_cpus": self._num_cpus,
            "num_physical_cpus": psutil.cpu_count(logical=False),
            "watched_pid": self.pid,
        }
        return (
            DeviceInfo(
                device_id="host", kind="host", name=socket.gethostname(), backend="psutil", details=details
            ),
        )

    def read(self) -> Reading:
        psutil = self._psutil
        now = time.perf_counter()
        elapsed = now - self._last_s
        self._last_s = now
        values: Values = {"cpu_util_ratio": self._cpu_ratio(psutil.cpu_times())}
        memory = psutil.virtual_memory()
        values["host_memory_used_bytes"] = float(memory.total - memory.available)
        values["host_memory_total_bytes"] = float(memory.total)
        totals = self._io_totals()
        for name, total in totals.items():
            values[f"{name}_bytes_per_s"] = rate(self._io.get(name), total, elapsed)
        self._io = totals
        if self.pid is not None:
            cpu_s = self._process_cpu_s(elapsed)
            alive = bool(self._tree)  # none left: the watched command ended (no figure, not zero)
            cores = min(cpu_s / elapsed, float(self._num_cpus)) if elapsed > 0 and alive else None
            values["process_cpu_cores"] = cores
            values["process_rss_bytes"] = self._process_rss_bytes()
        return {"host": values}

    def why_missing(self, device: str, metric: str) -> str | None:
        if metric.startswith("process_") and self.pid is not None and not self._tree:
            return "no value: the watched command had ended (or had not started) when sampled"
        if metric == "cpu_util_ratio":
            return "no value: the kernel had not counted a CPU tick (10 ms) since the monitor opened"
        return None

    # -- pieces ------------------------------------------------------------

    def _cpu_ratio(self, times: Any) -> float | None:
        """Busy share since the last reading; the kernel counts in ticks (10 ms), so a read
        within one tick of the last repeats the last share instead of dividing by zero (and
        has none to repeat before the first share is measured)."""
        busy, total = _cpu_split(times)
        previous = self._cpu
        if previous is None or total <= previous[1]:
            return self._cpu_ratio_last
        self._cpu = (busy, total)
        self._cpu_ratio_last = min(1.0, max(0.0, (busy - previous[0]) / (total - previous[1])))
        return self._cpu_ratio_last

    def _io_totals(self) -> dict[str, float | None]:
        psutil = self._psutil
        nics = psutil.net_io_counters(pernic=True, nowrap=False) or {}  # rate() handles wraps
        kept = [counters for name, counters in nics.items() if not name.startswith(_SKIPPED_NICS)]
        disks = psutil.disk_io_counters(nowrap=False)
        return {
            "net_tx": float(sum(c.bytes_sent for c in kept)) if kept else None,
            "net_rx": float(sum(c.bytes_recv for c in kept)) if kept else None,
            "disk_read": float(disks.read_bytes) if disks is not None else None,
            "disk_write": float(disks.write_bytes) if disks is not None else None,
        }

    def _process_cpu_s(self, elapsed_s: float | None) -> float:
        """CPU seconds the watched tree used in the last ``elapsed_s`` seconds (``None``: at open,
        where every process found counts from now)."""
        if self.pid is None:
            return 0.0
        now = time.perf_counter()
        if now - self._tree_listed_s >= TREE_REFRESH_S:
            self._tree_listed_s = now
            self._relist_tree()
        used = 0.0
        for pid, process in list(self._tree.items()):
            try:
                times = process.cpu_times()
            except self._psutil.Error:  # it ended; its last partial tick is lost
                del self._tree[pid]
                self._tree_cpu.pop(pid, None)
                continue
            total = float(times.user + times.system)
            known = self._tree_cpu.get(pid)
            if known is None:
                known = (
                    total if elapsed_s is None else total - self._since_last_tick(process, total, elapsed_s)
                )
            used += max(0.0, total - known)
            self._tree_cpu[pid] = total
        return used

    def _since_last_tick(self, process: Any, total_s: float, elapsed_s: float) -> float:
        """Of the ``total_s`` CPU seconds of a process just found, those after the previous tick:
        all when it started since, else its average rate over its life times ``elapsed_s``."""
        try:
            life_s = self._age_s(process)
        except self._psutil.Error:
            return 0.0
        if life_s <= elapsed_s:
            return total_s
        return total_s * elapsed_s / life_s

    def _age_s(self, process: Any) -> float:
        """Seconds since ``process`` started: on Linux on the clock its start time is counted in
        (since boot; the epoch time psutil adds is whole seconds and follows clock changes)."""
        started_s = float(process.create_time())
        since_boot = getattr(time, "CLOCK_BOOTTIME", None)
        if since_boot is None:
            return time.time() - started_s
        return time.clock_gettime(since_boot) - (started_s - float(self._psutil.boot_time()))

    def _relist_tree(self) -> None:
        psutil = self._psutil
        try:
            root = self._tree.get(self.pid) or psutil.Process(self.pid)  # type: ignore[arg-type]
            members = [root, *root.children(recursive=True)]
        except psutil.Error:
            members = []
        for process in members:
            if process.pid not in self._tree_ended:
                self._tree.setdefault(process.pid, process)

    def _process_rss_bytes(self) -> float | None:
        """Resident memory of the tree; a process that reads none has ended (a zombie waiting to be
        reaped): it leaves the tree, and with none left there is no value, not 0."""
        total = 0.0
        for pid, process in list(self._tree.items()):
            try:
                rss = float(process.memory_info().rss)
            except self._psutil.NoSuchProcess:
                rss = 0.0
            except self._psutil.Error:  # not ours to read (another user's): still running
                continue
            if rss > 0:
                total += rss
            else:
                del self._tree[pid]
                self._tree_cpu.pop(pid, None)
                self._tree_ended.add(pid)
        return total if self._tree else None


def _cpu_split(times: Any) -> tuple[float, float]:
    """(busy, total) CPU seconds from ``psutil.cpu_times()``."""
    busy = (
        times.user + times.nice + times.system + getattr(times, "irq", 0.0) + getattr(times, "softirq", 0.0)
    )
    waiting = times.idle + getattr(times, "iowait", 0.0) + getattr(times, "steal", 0.0)
    return float(busy), float(busy + waiting)

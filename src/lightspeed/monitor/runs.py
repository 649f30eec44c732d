"""Monitor runs: a folder of captures beside a command, and what they say about it.

A run folder holds::

    monitor.json                 what ran: command, exit code, times, interval, backends, goodput runs
    capture-<host>-<pid>.jsonl   the samples (lightspeed.monitor.capture), one file per sampler
    trackers/<segment>.json      written by each goodput Tracker the command started (its run_dir)

:func:`run_command` launches a command with ``LIGHTSPEED_MONITOR_RUN`` set,
samples while it runs (the host backend watches its process tree) and writes
the folder; :func:`analyze_run` reads a folder back, joins the captures to the
goodput runs the trackers announced and applies the rules. A folder with only
captures (a :class:`Monitor` started beside a tracker in the job itself) reads too.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import os
import shutil
import socket
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, TextIO

import numpy as np

from lightspeed.catalog import Catalog, load_catalog
from lightspeed.clock import CLOCK_ANCHOR_ENV, anchor_env_value
from lightspeed.datafile import check_version, load_json
from lightspeed.errors import DataFileError, LightspeedError, UserInputError, first_line
from lightspeed.files import check_input
from lightspeed.goodput import MONITOR_RUN_ENV, TRACKERS_FOLDER, Ledger, build_ledger, read_run
from lightspeed.monitor.backend import Backend
from lightspeed.monitor.capture import Capture, read_capture
from lightspeed.monitor.child import run_child
from lightspeed.monitor.dcgm import DcgmBackend
from lightspeed.monitor.findings import Diagnosis, Thresholds
from lightspeed.monitor.host import HostBackend
from lightspeed.monitor.join import CounterLedger, join_counters
from lightspeed.monitor.metrics import METRICS, THROTTLE_BITS, named_bits
from lightspeed.monitor.nvml import NvmlBackend
from lightspeed.monitor.rules import diagnose
from lightspeed.monitor.sampler import Monitor
from lightspeed.monitor.windows import Series
from lightspeed.records import JsonObject, Record

RUN_FILE: Final = "monitor.json"
RUN_VERSION: Final = 1
BACKEND_NAMES: Final = ("host", "nvml", "dcgm")
MAX_RUN_FILE_BYTES: Final = 1 << 20

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MonitorRun(Record):
    """What ``monitor run`` launched (read from ``monitor.json``)."""

    path: str
    run_id: str
    command: tuple[str, ...]
    exit_code: int | None
    start_epoch_s: float
    end_epoch_s: float
    interval_s: float
    backends: tuple[str, ...]
    host: str
    goodput_runs: tuple[str, ...] = ()
    signal_name: str | None = None
    forwarded_signals: tuple[str, ...] = ()
    stop_reason: str = ""
    sampling_error: str | None = None


@dataclass(frozen=True)
class MetricSummary(Record):
    """One counter of one device over the whole capture, summarised by its kind (``MetricSpec.kind``).

    A ``gauge`` has its ``mean`` (time-weighted: each sample holds over the period before it, as in
    the joins), ``minimum``, ``maximum`` and ``last``. A cumulative ``counter`` (the energy
    counter) has its ``increase`` over the capture (a drop is a reset: counting goes on from zero)
    and its ``last`` reading. A ``bitmask`` (clock event reasons) has ``bits_set`` (every bit set
    in any sample), ``set_ratio`` (the share of the time with a bit set that slows a busy GPU,
    :data:`~lightspeed.monitor.metrics.THROTTLE_BITS`: not GPU idle, application clocks, sync
    boost or display clock), ``bit_ratios`` (each bit set at some time, by its NVML name: the share
    of the time it was set) and its ``last`` mask.
    A ``last`` kind (the last XID error) has its ``last`` value only.
    """

    device: str
    metric: str
    unit: str
    num_samples: int
    mean: float | None
    minimum: float | None
    maximum: float | None
    last: float | None
    kind: str = "gauge"
    increase: float | None = None
    bits_set: int | None = None
    set_ratio: float | None = None
    bit_ratios: dict[str, float | None] | None = None


@dataclass(frozen=True)
class MonitorReport(Record):
    """A monitor run read back: the run, its captures, counter summaries, the joined ledger, findings."""

    path: str
    run: MonitorRun | None
    captures: tuple[Capture, ...]
    summaries: tuple[MetricSummary, ...]
    joined: CounterLedger | None
    diagnosis: Diagnosis
    goodput_run: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def findings(self) -> tuple[Any, ...]:
        """The findings of the rules (shortcut for ``diagnosis.findings``)."""
        return self.diagnosis.findings


def make_backends(
    names: Sequence[str] | None = None, *, interval_s: float = 1.0, pid: int | None = None
) -> tuple[list[Backend], frozenset[str]]:
    """Backends by name (``host``, ``nvml``, ``dcgm``) and which of them may fail to open.

    ``None`` (auto) is the host plus NVML and DCGM when their modules import;
    those two are then optional (left out with a note where no GPU or host
    engine answers). Named backends are required.

    >>> [backend.name for backend in make_backends(["host"])[0]]
    ['host']
    """
    if names is None:
        chosen = ["host"]
        chosen += [
            name for name, module in (("nvml", "pynvml"), ("dcgm", "dcgm_fields")) if _importable(module)
        ]
        optional = frozenset(chosen) - {"host"}
    else:
        unknown = sorted(set(names) - set(BACKEND_NAMES))
        if unknown or not names:
            raise UserInputError(f"unknown backend(s) {unknown or '(none)'}; use {', '.join(BACKEND_NAMES)}")
        chosen, optional = list(dict.fromkeys(names)), frozenset()
    factories: dict[str, Callable[[], Backend]] = {
        "host": lambda: HostBackend(pid=pid),
        "nvml": NvmlBackend,
        "dcgm": lambda: DcgmBackend(interval_s=interval_s),
    }
    return [factories[name]() for name in chosen], optional


def _importable(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def run_command(
    *,
    command: Sequence[str],
    out_dir: Path,
    interval_s: float = 1.0,
    backends: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
    on_sampling_stopped: Callable[[str], None] | None = None,
) -> MonitorRun:
    """Run ``command`` while sampling; write the run folder ``out_dir``; return what ran.

    The backends open before the command starts: one that cannot (no driver,
    no host engine) raises here, the command never runs and ``out_dir`` is
    left as it was. The command runs in its own process group
    (:mod:`lightspeed.monitor.child`): SIGINT, SIGTERM and SIGHUP sent to the
    monitor are forwarded to it, and the monitor reaps it and writes
    ``monitor.json`` with the reason it stopped. A command that ends before
    the first sample is still a run (its exit code, duration and whatever was
    sampled). ``LIGHTSPEED_MONITOR_RUN`` tells its goodput trackers where to
    announce themselves. ``stdout`` redirects the command's output (a file
    object; ``sys.stderr`` keeps a caller's own stdout clean for JSON).

    Sampling that stops while the command runs (a GPU lost, the DCGM host
    engine restarted) never stops the command nor changes its exit code:
    ``on_sampling_stopped(message)`` is called at once (from another thread),
    and the run's ``sampling_error`` says why the samples end early.
    """
    if not command:
        raise UserInputError(
            "give the command to run after --, e.g. lightspeed monitor run -- python train.py"
        )
    chosen, optional = make_backends(backends, interval_s=interval_s)
    created = _make_run_folder(out_dir)
    run_id = uuid.uuid4().hex[:12]
    capture_path = out_dir / f"capture-{_safe(socket.gethostname())}-{os.getpid()}.jsonl"
    monitor = Monitor(
        backends=chosen,
        interval_s=interval_s,
        optional=optional,
        capture_path=capture_path,
        meta={"run_id": run_id, "command": list(command)},
    )
    _open_before_the_command(monitor, out_dir, capture_path, created)
    errors: list[str] = []
    watched: list[int] = []

    def started(pid: int) -> None:
        watched.append(pid)
        for backend in chosen:
            if isinstance(backend, HostBackend):
                backend.watch(pid)  # the command's process tree, which may end before the next sample

    def ended_now(_pid: int) -> None:
        # a last sample as the command ends (before it is reaped: its CPU times still read), so that
        # its last steps are covered whatever the sampling interval; a failing backend must not
        # cost the command's exit code
        try:
            monitor.sample_now()
        except Exception as error:
            errors.append(_describe(error))

    start = time.time()
    watch = _SamplingWatch(monitor, on_sampling_stopped, start)
    try:
        try:
            ended = run_child(
                command,
                env=_child_env(out_dir, env, monitor),
                stdout=stdout,
                on_start=started,
                on_exit=ended_now,
            )
            end = time.time()  # the command's end, before the sampler is stopped
        finally:
            watch.close()
            stopped = _stop_quietly(monitor)
    except UserInputError:
        _remove_run(out_dir, capture_path, created)  # the command never ran: leave nothing behind
        raise
    run = MonitorRun(
        path=str(out_dir),
        run_id=run_id,
        command=tuple(command),
        exit_code=ended.exit_code,
        start_epoch_s=start,
        end_epoch_s=end,
        interval_s=interval_s,
        backends=_opened_backends(capture_path, tuple(backend.name for backend in chosen)),
        host=socket.gethostname(),
        goodput_runs=announced_runs(out_dir),
        signal_name=ended.signal_name,
        forwarded_signals=ended.forwarded_signals,
        stop_reason=ended.reason,
        sampling_error=stopped or (errors[0] if errors else None),
    )
    _write_run_file(out_dir, run, monitor.notes, watched_pid=watched[0] if watched else None)
    return run


def _child_env(out_dir: Path, env: Mapping[str, str] | None, monitor: Monitor) -> dict[str, str]:
    return {
        **os.environ,
        **(env or {}),
        MONITOR_RUN_ENV: str(out_dir.resolve()),
        # the command's trackers stamp with the sampler's anchor: a wall-clock step while it runs
        # (a restart after an NTP step or a paused VM) cannot move its steps off the samples
        CLOCK_ANCHOR_ENV: anchor_env_value(monitor.anchor_ns),
    }


SAMPLING_WATCH_S: Final = 0.25  # how soon a sampler that stopped during the command is reported


class _SamplingWatch:
    """Calls ``callback(message)`` as soon as the sampler's thread stops on an error while the
    command runs (the error itself is raised only by ``Monitor.stop()``, at the end)."""

    def __init__(self, monitor: Monitor, callback: Callable[[str], None] | None, start_s: float) -> None:
        self._monitor = monitor
        self._callback = callback
        self._start_s = start_s
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        if callback is not None:
            self._thread = threading.Thread(target=self._watch, name="lightspeed-monitor-watch", daemon=True)
            self._thread.start()

    def _watch(self) -> None:
        while not self._done.wait(SAMPLING_WATCH_S):
            if self._monitor.running:
                continue
            error = self._monitor.error
            if error is not None and self._callback is not None:
                elapsed_s = time.time() - self._start_s
                self._callback(
                    f"sampling stopped {elapsed_s:.0f} s into the run ({_describe(error)}); the command "
                    "goes on unmonitored and its exit code is kept"
                )
            return

    def close(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()


def _open_before_the_command(monitor: Monitor, out_dir: Path, capture_path: Path, created: bool) -> None:
    """Start the sampler and wait for its backends: one that cannot open fails before the command."""
    try:
        monitor.start()
        monitor.wait_ready()
    except BaseException:
        _stop_quietly(monitor)
        _remove_run(out_dir, capture_path, created)
        raise


def _stop_quietly(monitor: Monitor) -> str | None:
    """Stop the sampler; what stopped it early (one line), logged with its traceback at DEBUG."""
    try:
        monitor.stop()
    except Exception as error:
        _log.debug("the sampler stopped on an error", exc_info=error)
        return _describe(error)
    return None


def _describe(error: BaseException) -> str:
    """One line for an error of the sampler: our own errors say it all, others need their type."""
    if isinstance(error, LightspeedError):
        return first_line(error)
    return f"{type(error).__name__}: {first_line(error)}"


def _remove_run(out_dir: Path, capture_path: Path, created: bool) -> None:
    if created:
        shutil.rmtree(out_dir, ignore_errors=True)
    else:  # the user's empty folder: empty again
        capture_path.unlink(missing_ok=True)


def _opened_backends(capture_path: Path, requested: tuple[str, ...]) -> tuple[str, ...]:
    """The backends that opened, from the capture's header (an optional one that could not open is
    left out there, with a note); the requested ones where the header cannot be read."""
    try:
        with capture_path.open("rb") as handle:
            header = json.loads(handle.readline(MAX_RUN_FILE_BYTES))
        names = header["backends"]
    except (OSError, ValueError, KeyError, TypeError):
        return requested
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        return requested
    return tuple(names)


def _make_run_folder(out_dir: Path) -> bool:
    """Create the run folder (``True``) or check that the existing one is empty (``False``)."""
    if out_dir.is_dir():
        if any(out_dir.iterdir()):
            raise UserInputError(f"{out_dir} is not empty; choose a new folder for the monitor run (--out)")
        return False
    try:
        out_dir.mkdir(parents=True)
    except OSError as error:
        raise UserInputError(
            f"cannot create the monitor run folder {out_dir} ({error.strerror or error}); "
            "choose another --out"
        ) from None
    return True


def _safe(text: str) -> str:
    return "".join(char if char.isalnum() or char in "-_." else "_" for char in text)[:64] or "host"


def _write_run_file(
    out_dir: Path, run: MonitorRun, notes: Sequence[Any], *, watched_pid: int | None = None
) -> None:
    payload = {
        "v": RUN_VERSION,
        **run.to_dict(),
        "watched_pid": watched_pid,  # the command's pid (the capture's header is written before it)
        "notes": [note.to_dict() for note in notes],
    }
    payload.pop("path")
    (out_dir / RUN_FILE).write_text(json.dumps(payload, indent=2), encoding="utf-8")


def announced_runs(folder: Path) -> tuple[str, ...]:
    """The goodput run folders that trackers started under this monitor run announced."""
    found: list[str] = []
    for note in sorted((folder / TRACKERS_FOLDER).glob("*.json")):
        try:
            data = load_json(note, max_bytes=MAX_RUN_FILE_BYTES, what="tracker note")
        except DataFileError:  # a note a crash cut short: its run is found from the log instead
            continue
        run_dir = data.get("run_dir") if isinstance(data, dict) else None
        if isinstance(run_dir, str) and run_dir:
            found.append(run_dir)
    return tuple(dict.fromkeys(found))


def read_monitor_run(path: str | Path) -> MonitorRun | None:
    """``monitor.json`` of a run folder, or ``None`` when the folder has none (captures only)."""
    folder = Path(path)
    target = folder / RUN_FILE
    if not target.exists():
        return None
    data = _read_json(target)
    try:
        run = MonitorRun(
            path=str(folder),
            run_id=str(data["run_id"]),
            command=tuple(str(part) for part in data["command"]),
            exit_code=data["exit_code"] if isinstance(data.get("exit_code"), int) else None,
            start_epoch_s=float(data["start_epoch_s"]),
            end_epoch_s=float(data["end_epoch_s"]),
            interval_s=float(data["interval_s"]),
            backends=tuple(str(name) for name in data["backends"]),
            host=str(data.get("host", "")),
            goodput_runs=tuple(str(run) for run in data.get("goodput_runs", ())),
            signal_name=data["signal_name"] if isinstance(data.get("signal_name"), str) else None,
            forwarded_signals=tuple(str(name) for name in data.get("forwarded_signals", ())),
            stop_reason=str(data.get("stop_reason", "")),
            sampling_error=(data["sampling_error"] if isinstance(data.get("sampling_error"), str) else None),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise DataFileError(
            target, f"malformed monitor run file ({error})", fix="re-run lightspeed monitor run"
        ) from None
    check_version(data, {RUN_VERSION}, path=target, what="monitor run")
    return run


def _read_json(path: Path) -> dict[str, Any]:
    data = load_json(
        path, max_bytes=MAX_RUN_FILE_BYTES, what="monitor run file", fix="re-run lightspeed monitor run"
    )
    if not isinstance(data, dict):
        raise DataFileError(path, "not a JSON object")
    return data


def capture_files(folder: Path) -> list[Path]:
    """The capture files of a monitor folder (or the file itself)."""
    if folder.is_file():
        return [folder]
    return sorted(folder.glob("capture-*.jsonl"))


def is_monitor_folder(path: Path) -> bool:
    """Whether ``path`` holds a monitor run (``monitor.json`` or capture files)."""
    return path.is_dir() and ((path / RUN_FILE).exists() or bool(capture_files(path)))


def monitor_folders_of(run_dir: Path) -> tuple[Path, ...]:
    """Monitor folders that belong to a goodput run: named in its job starts, or its ``monitor/``."""
    folders: list[Path] = []
    try:
        named = _read_quietly(run_dir).monitor_runs
    except DataFileError:
        named = ()
    folders.extend(Path(name) for name in named)
    inside = run_dir / "monitor"
    if is_monitor_folder(inside):
        folders.append(inside)
    return tuple(dict.fromkeys(folder for folder in folders if is_monitor_folder(folder)))


def analyze_run(
    *,
    path: str | Path,
    goodput_run: str | Path | None = None,
    catalog: Catalog | None = None,
    thresholds: Thresholds | None = None,
    ledger: Ledger | None = None,
) -> MonitorReport:
    """Read a monitor folder (or one capture file), join it to its goodput run, apply the rules.

    ``catalog`` (default: the shipped one) gives the link SOLs the
    communication rule compares with. ``goodput_run`` defaults to the first
    run a tracker announced; ``ledger`` is that run's ledger when the caller
    built it already (with overrides).
    """
    folder = Path(path)
    check_input(folder, what="monitor run folder or capture file", folder_ok=True)
    run = read_monitor_run(folder) if folder.is_dir() else None
    files = capture_files(folder)
    if not files:
        raise DataFileError(
            folder, "no capture-*.jsonl in this folder", fix="point at a 'lightspeed monitor run' folder"
        )
    captures = tuple(read_capture(file) for file in files)
    catalog = catalog if catalog is not None else load_catalog()
    notes: list[str] = []
    chosen = Path(goodput_run) if goodput_run is not None else _default_goodput_run(folder, run, notes)
    joined = None
    if chosen is not None:
        log = _read_quietly(chosen)
        joined = join_counters(
            run=log, ledger=ledger or build_ledger(run=log, catalog=catalog), captures=captures
        )
    return MonitorReport(
        path=str(folder),
        run=run,
        captures=captures,
        summaries=tuple(summary for capture in captures for summary in summarize_capture(capture)),
        joined=joined,
        diagnosis=diagnose(captures=captures, joined=joined, catalog=catalog, thresholds=thresholds),
        goodput_run=str(chosen) if chosen is not None else None,
        notes=tuple(notes),
    )


def _default_goodput_run(folder: Path, run: MonitorRun | None, notes: list[str]) -> Path | None:
    candidates = list(run.goodput_runs) if run is not None and run.goodput_runs else []
    candidates = candidates or list(announced_runs(folder)) if folder.is_dir() else candidates
    existing = [Path(candidate) for candidate in candidates if Path(candidate).exists()]
    if len(existing) > 1:
        notes.append(
            f"{len(existing)} goodput runs announced; joined the first ({existing[0]}); pass --goodput to "
            "choose"
        )
    if not existing and candidates:
        notes.append(f"the goodput run {candidates[0]} is gone; counters are not joined to steps")
    return existing[0] if existing else None


def _read_quietly(path: Path) -> Any:
    """The goodput run; lines a crash cut short are skipped as the ledger does (with a note)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_run(path)


def summarize_capture(capture: Capture) -> list[MetricSummary]:
    """Every counter of every device over the whole capture, by its kind (:class:`MetricSummary`)."""
    summaries = []
    for device, metrics in capture.series.items():
        label = f"{capture.host}:{device}" if capture.host else device
        for metric, values in sorted(metrics.items()):
            spec = METRICS.get(metric)
            summaries.append(
                _summary(
                    capture,
                    values,
                    device=label,
                    metric=metric,
                    unit=spec.unit if spec is not None else "",
                    kind=spec.kind if spec is not None else "gauge",
                )
            )
    return summaries


def _summary(
    capture: Capture, values: Any, *, device: str, metric: str, unit: str, kind: str
) -> MetricSummary:
    valid = ~np.isnan(values)
    finite = values[valid]
    summary = MetricSummary(
        device=device,
        metric=metric,
        unit=unit,
        num_samples=len(finite),
        mean=None,
        minimum=None,
        maximum=None,
        last=_finite(finite[-1]) if len(finite) else None,
        kind=kind,
    )
    if not len(finite):
        return summary
    if kind == "counter":
        return replace(summary, increase=_increase(capture.times_s[valid], finite, capture.interval_s))
    if kind == "bitmask":
        bits_set = int(np.bitwise_or.reduce(finite.astype(np.int64)))
        slowing = sum(THROTTLE_BITS) if metric == "clock_event_reasons" else -1  # -1: every bit
        return replace(
            summary,
            bits_set=bits_set,
            set_ratio=_share_set(capture, values, slowing),
            bit_ratios={name: _share_set(capture, values, bit) for bit, name in named_bits(bits_set)},
        )
    if kind == "last":
        return summary
    return replace(
        summary,
        mean=_time_weighted_mean(capture, values),
        minimum=_finite(np.min(finite)),
        maximum=_finite(np.max(finite)),
    )


def _share_set(capture: Capture, values: Any, bits: int) -> float | None:
    """The share of the time a bitmask had any of ``bits`` set (time-weighted, as the means)."""
    valid = ~np.isnan(values)
    masks = np.where(valid, values, 0).astype(np.int64)
    return _time_weighted_mean(capture, np.where(valid, ((masks & bits) != 0).astype(np.float64), np.nan))


def _time_weighted_mean(capture: Capture, values: Any) -> float | None:
    """The mean over the time the samples describe (each held over the period before it)."""
    series = Series(times_s=capture.times_s, values=values, interval_s=capture.interval_s)
    span = series.covered_span()
    if span is None:
        return None
    return _finite(series.mean(np.array([span[0]]), np.array([span[1]]))[0])


def _increase(times_s: Any, readings: Any, interval_s: float) -> float | None:
    """How much a cumulative counter rose from its first to its last reading, by the windows' rule
    (:meth:`Series.increase`: after a drop it counts again from zero); 0 for one reading."""
    if len(readings) < 2:
        return 0.0
    series = Series(times_s=times_s, values=readings, interval_s=interval_s)
    return _finite(series.increase(np.array([times_s[0]]), np.array([times_s[-1]]))[0])


def _finite(value: Any) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def store_records(report: MonitorReport) -> list[JsonObject]:
    """What ``monitor run`` keeps in the results store: one record per headline figure."""
    joined = report.joined
    label = " ".join(report.run.command)[:200] if report.run is not None else report.path
    # (metric, value, unit, lower_is_better): each record says which way is better, as the unit
    # alone cannot (fewer findings and more goodput are both better); the regression gate reads it
    figures: list[tuple[str, float | None, str, bool]] = [
        ("duration_s", report.run.end_epoch_s - report.run.start_epoch_s if report.run else None, "s", True),
        ("num_findings", float(len(report.findings)), "count", True),
    ]
    if joined is not None:
        figures += [
            ("energy_j", joined.energy_j, "J", True),
            ("energy_per_step_j", joined.energy_per_step_j, "J", True),
            ("energy_per_token_j", joined.energy_per_token_j, "J", True),
            ("productive_busy_ratio", joined.productive_busy_ratio, "ratio", False),
            # host CPU the job burns while its steps are productive: less is better (a GPU job
            # that needs more host cores for the same steps has grown a CPU bottleneck)
            ("productive_process_cpu_cores", joined.productive_process_cpu_cores, "cores", True),
            ("goodput_ratio", joined.ledger.goodput_fraction, "ratio", False),
        ]
    payload = {
        "path": str(Path(report.path).resolve()),
        "goodput_run": report.goodput_run,
        "findings": [finding.to_dict() for finding in report.findings],
    }
    return [
        {
            "name": f"monitor {label}",
            "metric": metric,
            "value": value,
            "unit": unit,
            "payload": {**payload, "lower_is_better": lower_is_better},
        }
        for metric, value, unit, lower_is_better in figures
        if value is not None
    ]

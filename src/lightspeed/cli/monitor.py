"""``lightspeed monitor run|watch|report|serve``: counters beside a job, joined to its steps."""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any, Final

import click

from lightspeed.cli._common import get_context, json_option, print_json, with_warnings
from lightspeed.cli.options import PORT, REFRESHES, SAMPLE_INTERVAL, TIMEOUT
from lightspeed.cli.text_options import InputFile, OutputPath
from lightspeed.errors import DataFileError, LightspeedError, UnsupportedError, UserInputError, first_line
from lightspeed.files import check_input, looks_like_path, open_input
from lightspeed.monitor import (
    BACKEND_NAMES,
    ExporterServer,
    Monitor,
    MonitorCollector,
    MonitorReport,
    ReplayBackend,
    analyze_run,
    make_backends,
    read_capture,
    run_command,
    store_records,
)
from lightspeed.paths import lightspeed_home
from lightspeed.records import to_jsonable
from lightspeed.report import (
    make_console,
    monitor_counters_figure,
    render_monitor_report,
    save_monitor_plot,
    watch_table,
)
from lightspeed.store import NewRecord, open_store
from lightspeed.trace import detect_format, wrong_format

_log = logging.getLogger(__name__)
_PEEK_BYTES: Final = 1 << 16  # enough of a file to see its first line
CAPTURE_FORMAT: Final = "monitor-capture"  # what lightspeed.trace.detect_format calls a capture


@click.group("monitor")
def command() -> None:
    """GPU and host counters beside a job: run, watch, report, serve (Prometheus)."""


def _interval_option(function: Any) -> Any:
    return click.option(
        "--interval",
        "interval_s",
        type=SAMPLE_INTERVAL,
        default="1s",
        show_default=True,
        help="Sampling interval (e.g. 1s, 100ms; NVML down to 10ms, host 50ms, DCGM 100ms).",
    )(function)


def _backend_option(function: Any) -> Any:
    return click.option(
        "--backend",
        "backend_names",
        multiple=True,
        type=click.Choice(BACKEND_NAMES),
        help="Counter source (repeatable). Default: host, plus NVML and DCGM where they answer.",
    )(function)


def _default_out() -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return lightspeed_home() / "monitor" / f"{stamp}-{uuid.uuid4().hex[:6]}"


@command.command("run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("cmd", nargs=-1, required=True, type=click.UNPROCESSED)
@_interval_option
@_backend_option
@click.option(
    "--out", "out_dir", type=OutputPath(file_okay=False, example="runs/monitor"), help="Run folder to write."
)
@click.option("--goodput", "goodput_run", type=click.Path(path_type=Path), help="Join this goodput run.")
@click.option(
    "--plot", "plot_path", type=OutputPath(example="counters.png"), help="Write counters over time."
)
@click.option("--no-save", is_flag=True, help="Do not keep the run in the results store.")
@json_option
def run_cmd(
    *,
    cmd: tuple[str, ...],
    interval_s: float,
    backend_names: tuple[str, ...],
    out_dir: Path | None,
    goodput_run: Path | None,
    plot_path: Path | None,
    no_save: bool,
    as_json: bool,
) -> int:
    """Run a command while sampling counters; report them joined to its goodput steps.

    Example: lightspeed monitor run --interval 100ms -- python examples/train_tiny_gpt.py --quick.
    A goodput Tracker in the command finds the monitor by itself (LIGHTSPEED_MONITOR_RUN).
    The exit code is the command's (128 + the signal's number when a signal ended it);
    SIGINT, SIGTERM and SIGHUP to the monitor are forwarded to the command's process group,
    and monitor.json says why the run stopped.
    """
    _check_run_options(goodput_run, plot_path)  # before the command: a typo must not cost a long job
    folder = out_dir or _default_out()
    run = run_command(
        command=cmd,
        out_dir=folder,
        interval_s=interval_s,
        backends=backend_names or None,
        stdout=sys.__stderr__ if as_json else None,  # the real fd 2: keeps our stdout JSON only
        on_sampling_stopped=_warn,
    )
    code = run.exit_code if run.exit_code is not None else 0
    if run.sampling_error:
        _warn(
            f"sampling stopped before the command ended ({run.sampling_error}); the counters cover part of it"
        )
    try:
        catalog = get_context().catalog()
        report = with_warnings(lambda: analyze_run(path=folder, goodput_run=goodput_run, catalog=catalog))
        stored = None if no_save else _store(report)
        _finish(report, plot_path, as_json, extra={"stored_run_id": stored})
    except LightspeedError as error:
        # the command's exit code is what schedulers and scripts act on: a report that fails after
        # the command ran is said, not returned in its place
        _warn(f"the command ended with exit code {code}, but its report failed: {error}")
        _warn(f"the samples are in {folder}: lightspeed monitor report {folder}")
        return code
    if not as_json:
        make_console().print(f"run folder: {folder}" + (f"  stored as run {stored}" if stored else ""))
    return code


def _warn(text: str) -> None:
    click.echo(f"lightspeed: warning: {text}", err=True)


def _check_run_options(goodput_run: Path | None, plot_path: Path | None) -> None:
    """Refuse a --goodput that is not a folder and a --plot that cannot be written, before the run."""
    if goodput_run is not None:
        check_input(
            goodput_run,
            what="goodput run folder",
            fix="name an existing run, or leave out --goodput: the command's Tracker announces its run",
            folder_ok=True,
        )
        if not goodput_run.is_dir():
            raise UserInputError(
                f"--goodput {goodput_run} is not a goodput run folder; name the folder the Tracker writes"
            )
    if plot_path is not None:
        save_monitor_plot(None, plot_path)  # draws nothing: the suffix and a writable folder


def _store(report: MonitorReport) -> str | None:
    records = [NewRecord(**item) for item in store_records(report)]
    if not records:
        return None
    label = " ".join(report.run.command)[:120] if report.run is not None else report.path
    with open_store(create=True) as store:
        return store.add_records(kind="monitor", records=records, label=label)


def _finish(
    report: MonitorReport, plot_path: Path | None, as_json: bool, extra: dict[str, Any] | None = None
) -> None:
    written = save_monitor_plot(monitor_counters_figure(report), plot_path) if plot_path is not None else []
    if as_json:
        payload = to_jsonable(report)
        payload.update(extra or {})
        payload["plots"] = [str(path) for path in written]
        print_json(payload)
        return
    render_monitor_report(report)
    if written:
        make_console().print("plot: " + ", ".join(str(path) for path in written))


@command.command("report")
@click.argument("run", metavar="RUN")
@click.option("--goodput", "goodput_run", type=click.Path(path_type=Path), help="Join this goodput run.")
@click.option(
    "--plot",
    "plot_path",
    type=OutputPath(example="counters.png"),
    help="Write counters over time (.png/.svg).",
)
@json_option
def report_cmd(*, run: str, goodput_run: Path | None, plot_path: Path | None, as_json: bool) -> None:
    """Summary, counters per goodput bucket, findings and plots of a monitor run.

    RUN is a run folder, a capture file, or a results-store run id (kind monitor).
    Example: lightspeed monitor report ~/.local/share/lightspeed/monitor/RUN --plot counters.png
    """
    path = _run_path(run)
    _refuse_other_format(path)
    catalog = get_context().catalog()
    report = with_warnings(lambda: analyze_run(path=path, goodput_run=goodput_run, catalog=catalog))
    _finish(report, plot_path, as_json)


def _run_path(run: str) -> Path:
    path = Path(run)
    if path.exists():
        return path
    if looks_like_path(run):
        check_input(
            path,
            what="monitor run folder or capture file",
            fix="pass a monitor run folder, a capture file or a store run id",
            folder_ok=True,
        )
    with open_store(create=False) as store:
        summary = store.run(run)
        records = store.records(run_id=summary.run_id)
    if summary.kind != "monitor" or not records:
        raise UserInputError(f"run {summary.run_id} is a {summary.kind!r} run, not a monitor run")
    folder = records[0].payload.get("path")
    if not isinstance(folder, str) or not Path(folder).exists():
        raise UserInputError(f"run {summary.run_id}'s folder {folder!r} is gone")
    return Path(folder)


def _refuse_other_format(path: Path) -> None:
    """A file another command reads (a profiler trace, Nsight output, a goodput or MLPerf log) given
    as a capture: say what it is and which command reads it. A JSON document no command reads as a
    capture (a gate sample file) is said to be no capture, not a bad first line to repair."""
    if path.is_file():
        found = detect_format(path, unknown="")
        if found and found != CAPTURE_FORMAT:
            raise wrong_format(path, found, "a lightspeed monitor capture (capture-*.jsonl)")
        if not found and _opens_a_json_document(path):
            raise DataFileError(
                path,
                "not a lightspeed monitor capture (a JSON document; a capture has one JSON object a line, "
                "the first a capture_start)",
                fix="pass a capture written by lightspeed monitor (capture-*.jsonl) or its run folder",
            )


def _opens_a_json_document(path: Path) -> bool:
    """Whether the file opens as a JSON document does (a lone ``{`` or ``[`` line, as indented JSON
    starts, or a list) rather than with one JSON object, as each line of a capture is."""
    with open_input(path, what="monitor capture (capture-*.jsonl)") as handle:
        head = handle.read(_PEEK_BYTES)
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n").partition(b"\n")[0].strip()
    return first in (b"{", b"[") or first.startswith(b"[")


def _monitor(
    *, interval_s: float, backend_names: tuple[str, ...], replay: Path | None, loop: bool
) -> Monitor:
    interval = interval_s
    if replay is not None:
        if backend_names:
            raise UserInputError("--replay plays a capture back; leave out --backend")
        # read here, not on the sampler's thread: its warnings (a line cut short) get the house form
        _refuse_other_format(replay)
        capture = with_warnings(lambda: read_capture(replay))
        return Monitor(backends=[ReplayBackend(capture, pace="time", loop=loop)], interval_s=interval)
    chosen, optional = make_backends(backend_names or None, interval_s=interval)
    return Monitor(backends=chosen, interval_s=interval, optional=optional)


def _start(monitor: Monitor) -> Any:
    """Start sampling and wait for the devices (warnings while the backends open: one line each);
    a backend that cannot open raises its own error here."""
    try:
        return with_warnings(lambda: monitor.start().wait_ready())
    except BaseException:
        with contextlib.suppress(Exception):  # the error above is the one to show
            monitor.stop()
        raise


def _stop(monitor: Monitor) -> None:
    """Stop sampling; an error that stopped the sampler early is one line (its traceback at -vv)."""
    try:
        monitor.stop()
    except LightspeedError as error:
        raise UnsupportedError(f"sampling stopped: {error}") from None
    except Exception as error:
        _log.debug("the sampler stopped on an error", exc_info=error)
        raise UnsupportedError(
            f"sampling stopped: {type(error).__name__}: {first_line(error)} (-vv shows the traceback)"
        ) from None


@contextlib.contextmanager
def _house_warnings() -> Iterator[None]:
    """While a long command runs, warnings from any thread (a scrape reading a goodput log) are
    printed at once as ``lightspeed: warning: ...``, as ``with_warnings`` prints them at the end."""
    previous = warnings.showwarning

    def show(message: Warning | str, *_args: Any, **_kwargs: Any) -> None:
        _warn(str(message))

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous


@command.command("watch")
@_interval_option
@_backend_option
@click.option(
    "--replay",
    type=InputFile(what="monitor capture", example="capture.jsonl"),
    help="Watch a capture file play back.",
)
@click.option("--count", type=REFRESHES, help="Stop after this many refreshes (default: Ctrl-C).")
@json_option
def watch_cmd(
    *,
    interval_s: float,
    backend_names: tuple[str, ...],
    replay: Path | None,
    count: int | None,
    as_json: bool,
) -> None:
    """A live view of every device's counters (--json: one JSON line per refresh).

    Example: lightspeed monitor watch --interval 500ms
    """
    monitor = _monitor(interval_s=interval_s, backend_names=backend_names, replay=replay, loop=False)
    devices = _start(monitor)
    try:
        with _house_warnings():
            _watch(monitor, devices, count, as_json)
    except KeyboardInterrupt:
        pass
    finally:
        _stop(monitor)


def _watch(monitor: Monitor, devices: Any, count: int | None, as_json: bool) -> None:
    console = make_console()
    seen = 0
    shown = 0  # no sample yet: nothing to print (a JSON 'null' line before the first)
    live = None
    if console.is_terminal and not as_json:
        from rich.live import Live

        live = Live(watch_table(devices, None), console=console, auto_refresh=False)
        live.start()
    try:
        while count is None or seen < count:
            time.sleep(min(0.05, monitor.interval_s / 4))
            if not monitor.running and monitor.num_samples == shown:
                break
            if monitor.num_samples == shown:
                continue
            shown = monitor.num_samples
            sample = monitor.latest()
            seen += 1
            if as_json:
                click.echo(json.dumps(to_jsonable(sample), allow_nan=False))
                continue
            title = f"lightspeed monitor: sample {shown}, every {monitor.interval_s:g} s"
            if live is not None:
                live.update(watch_table(devices, sample, title=title), refresh=True)
            else:
                console.print(watch_table(devices, sample, title=title))
    finally:
        if live is not None:
            live.stop()


@command.command("serve")
@click.option("--port", type=PORT, required=True, help="Port (0: any free).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@_interval_option
@_backend_option
@click.option(
    "--replay",
    type=InputFile(what="monitor capture", example="capture.jsonl"),
    help="Serve a capture file played back.",
)
@click.option("--loop/--no-loop", default=True, show_default=True, help="Replay the capture over and over.")
@click.option(
    "--goodput", "goodput_run", type=click.Path(file_okay=False, path_type=Path), help="Also export this run."
)
@click.option(
    "--duration", "duration_s", type=TIMEOUT, help="Stop after this long (default: until Ctrl-C or SIGTERM)."
)
@json_option
def serve_cmd(
    *,
    port: int,
    host: str,
    interval_s: float,
    backend_names: tuple[str, ...],
    replay: Path | None,
    loop: bool,
    goodput_run: Path | None,
    duration_s: float | None,
    as_json: bool,
) -> None:
    """A Prometheus exporter: dcgm-exporter's metric names plus lightspeed_step_seconds,
    lightspeed_goodput_ratio, lightspeed_mfu_ratio and host metrics.

    Example: lightspeed monitor serve --port 9400 --goodput runs/tiny-gpt
    """
    if goodput_run is not None and not goodput_run.is_dir():
        raise UserInputError(f"--goodput {goodput_run} is not a goodput run folder")
    monitor = _monitor(interval_s=interval_s, backend_names=backend_names, replay=replay, loop=loop)
    collector = MonitorCollector(monitor, hostname=_hostname(), goodput_run=goodput_run)
    _check_goodput(collector)  # before sampling and listening: a run it cannot read is refused
    _start(monitor)
    try:
        with _house_warnings():
            server = ExporterServer(collector, host=host, port=port)
            try:
                _announce(server, as_json)
                ended = _serve_until_stopped(monitor, duration_s)
            finally:
                server.close()  # before any error below: Prometheus sees the target down, not stale values
        if ended:
            click.echo(
                f"lightspeed: the replay ended after {monitor.num_samples} samples; stopped serving "
                "(--loop serves it over and over)",
                err=True,
            )
    finally:
        _stop(monitor)


def _check_goodput(collector: MonitorCollector) -> None:
    """The --goodput run's first read, refused with one line when it fails (an empty folder, logs
    that are not goodput logs): serving without its series would look like a run with none."""
    try:
        collector.check_goodput()
    except DataFileError as error:
        raise UserInputError(
            f"--goodput cannot be exported: {error}; or start serving once the Tracker has written "
            "its first log lines ('lightspeed goodput report FOLDER' reads the same logs)"
        ) from None


def _hostname() -> str:
    import socket

    return socket.gethostname()


def _announce(server: ExporterServer, as_json: bool) -> None:
    exporter = server.exporter
    if as_json:
        print_json({"url": exporter.url, "host": exporter.host, "port": exporter.port})
    else:
        click.echo(f"serving Prometheus metrics on {exporter.url} (Ctrl-C to stop)")
    sys.stdout.flush()


SERVE_POLL_S: Final = 0.25  # how soon serve notices that its sampler stopped


def _serve_until_stopped(monitor: Monitor, duration_s: float | None) -> bool:
    """Serve until Ctrl-C, SIGTERM, ``duration_s`` or the sampler stopping; ``True`` when a replay
    without --loop reached its end (its last sample is served for one more interval first).

    A sampler that stopped on an error (a GPU lost, a DCGM host engine restarted) ends serving at
    once, so that Prometheus marks the target down and its series go stale instead of repeating
    the last values; the caller then raises the error.
    """
    stop = threading.Event()

    def _on_signal(number: int, frame: FrameType | None) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, _on_signal)
    deadline = None if duration_s is None else time.monotonic() + duration_s
    try:
        while True:
            left = SERVE_POLL_S if deadline is None else min(SERVE_POLL_S, deadline - time.monotonic())
            if left <= 0 or stop.wait(left):
                return False
            if monitor.running:
                continue
            if monitor.error is not None:
                return False
            hold = (
                monitor.interval_s
                if deadline is None
                else min(monitor.interval_s, deadline - time.monotonic())
            )
            stop.wait(max(0.0, hold))
            return True
    except KeyboardInterrupt:
        return False
    finally:
        signal.signal(signal.SIGTERM, previous)

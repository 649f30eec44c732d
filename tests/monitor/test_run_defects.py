"""``monitor run`` and its report: backends open before the command, a sampler that dies is said
and never costs the command's exit code, options checked before the command, the header names the
backends that ran, and the whole-capture summary treats each counter by its kind."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lightspeed.errors import UnsupportedError, UserInputError
from lightspeed.monitor import HostBackend, read_capture, run_command, summarize_capture
from lightspeed.monitor.backend import Backend, DeviceInfo, Reading
from lightspeed.report.monitor import save_monitor_plot, summary_rows
from lightspeed.report.plots import new_figure, save_figure

from .conftest import NS, T0_NS, write_capture  # type: ignore[import-not-found]

GPU = DeviceInfo(device_id="gpu0", kind="gpu", name="NVIDIA H100 80GB HBM3", backend="nvml", index=0)
# a shell command that leaves a mark when it runs, then exits with 3
MARKED = "echo ran > {mark}; exit 3"
# waits (at most ~30 s, a bound against a hang, not a timing) until {flag} exists, then exits 3
WAIT_FOR = "i=0; while [ ! -e {flag} ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done; exit 3"


class CannotOpen(Backend):
    """An NVML that cannot start (no driver), as a GPU backend asked for by name."""

    name = "nvml"
    min_interval_s = 0.0

    def open(self) -> tuple[DeviceInfo, ...]:
        raise UnsupportedError("NVML cannot start (test): no NVIDIA driver")

    def read(self) -> Reading:
        raise AssertionError("never opened")


class LostAfter(Backend):
    """A GPU that answers ``num_reads`` times, then is lost (every later read raises, as a DCGM
    host engine that restarted does); the first failure touches ``flag``."""

    name = "nvml"
    min_interval_s = 0.0

    def __init__(self, num_reads: int, flag: Path) -> None:
        self.num_reads = num_reads
        self.flag = flag
        self.reads = 0

    def open(self) -> tuple[DeviceInfo, ...]:
        return (GPU,)

    def read(self) -> Reading:
        self.reads += 1
        if self.reads > self.num_reads:
            self.flag.touch()
            raise RuntimeError("NVML: GPU is lost")
        return {"gpu0": {"power_w": 300.0}}


def _backends(*made: Backend, optional: frozenset[str] = frozenset()) -> Callable[..., Any]:
    def make(names: Any = None, **_: Any) -> tuple[list[Backend], frozenset[str]]:
        return list(made), optional

    return make


# -- defect 1: the backends open before the command ------------------------------------------------


def test_a_backend_that_cannot_open_fails_before_the_command_runs(
    run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("lightspeed.monitor.runs.make_backends", _backends(CannotOpen()))
    mark, out = tmp_path / "ran", tmp_path / "m"
    result = run_cli(
        "monitor", "run", "--no-save", "--backend", "nvml", "--out", str(out), "--",
        "sh", "-c", MARKED.format(mark=mark),
    )  # fmt: skip
    assert result.code == 2
    assert "NVML cannot start (test)" in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert not mark.exists()  # the command never started
    assert not out.exists()  # and no folder is left behind


def test_an_empty_out_folder_is_left_empty_when_a_backend_cannot_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("lightspeed.monitor.runs.make_backends", _backends(CannotOpen()))
    out = tmp_path / "m"
    out.mkdir()
    mark = tmp_path / "ran"
    with pytest.raises(UnsupportedError, match="NVML cannot start"):
        run_command(command=["sh", "-c", MARKED.format(mark=mark)], out_dir=out, backends=["nvml"])
    assert not mark.exists()
    assert list(out.iterdir()) == []


def test_a_sampler_lost_mid_run_is_said_at_once_and_the_exit_code_is_the_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lost, told = tmp_path / "lost", tmp_path / "told"
    monkeypatch.setattr("lightspeed.monitor.runs.make_backends", _backends(LostAfter(2, lost)))
    messages: list[str] = []

    def said(message: str) -> None:
        messages.append(message)
        told.touch()  # the command below ends only once the monitor has said it

    run = run_command(
        command=["sh", "-c", WAIT_FOR.format(flag=told)],
        out_dir=tmp_path / "m",
        interval_s=0.05,
        on_sampling_stopped=said,
    )
    assert run.exit_code == 3
    assert len(messages) == 1
    assert "GPU is lost" in messages[0]
    assert run.sampling_error is not None
    assert "RuntimeError: NVML: GPU is lost" in run.sampling_error
    saved = json.loads((tmp_path / "m" / "monitor.json").read_text())
    assert saved["exit_code"] == 3
    assert "GPU is lost" in saved["sampling_error"]
    assert read_capture(next((tmp_path / "m").glob("capture-*.jsonl"))).num_samples == 2


def test_monitor_run_keeps_the_commands_exit_code_when_sampling_stops(
    run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lost = tmp_path / "lost"
    monkeypatch.setattr("lightspeed.monitor.runs.make_backends", _backends(LostAfter(1, lost)))
    out = tmp_path / "m"
    result = run_cli(
        "monitor", "run", "--no-save", "--interval", "50ms", "--out", str(out), "--",
        "sh", "-c", WAIT_FOR.format(flag=lost),
    )  # fmt: skip
    assert result.code == 3, result.err
    assert "lightspeed: warning: sampling stopped" in result.err
    assert "GPU is lost" in result.err
    assert "Traceback" not in result.err
    assert "sampling stopped before the command ended" in result.out  # the report says it too


def test_the_run_file_names_the_backends_that_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # auto mode: NVML is optional and cannot open, so only the host sampled
    monkeypatch.setattr(
        "lightspeed.monitor.runs.make_backends",
        _backends(HostBackend(), CannotOpen(), optional=frozenset({"nvml"})),
    )
    run = run_command(command=["true"], out_dir=tmp_path / "m", interval_s=0.05)
    assert run.backends == ("host",)
    assert json.loads((tmp_path / "m" / "monitor.json").read_text())["backends"] == ["host"]


# -- defect 2: --plot and --goodput are checked before the command ---------------------------------


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--plot", "{tmp}/p.txt"], "'.txt' is not a plot format"),
        (["--plot", "{tmp}/afile/x.png"], "cannot write the plot {tmp}/afile/x.png"),
        (["--plot", "/proc/x.png"], "cannot write the plot /proc/x.png"),
        (["--goodput", "{tmp}/nope"], "nope: no such file"),
        (["--goodput", "{tmp}/afile"], "is not a goodput run folder"),
    ],
)
def test_plot_and_goodput_are_checked_before_the_command_starts(
    run_cli: Any, tmp_path: Path, flags: list[str], message: str
) -> None:
    (tmp_path / "afile").write_text("x")
    mark, out = tmp_path / "ran", tmp_path / "m"
    result = run_cli(
        "monitor", "run", "--no-save", "--backend", "host", "--out", str(out),
        *(flag.format(tmp=tmp_path) for flag in flags), "--", "sh", "-c", MARKED.format(mark=mark),
    )  # fmt: skip
    assert result.code == 2
    assert message.format(tmp=tmp_path) in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert not mark.exists()
    assert not out.exists()


def test_a_report_that_fails_after_the_command_keeps_its_exit_code(run_cli: Any, tmp_path: Path) -> None:
    empty = tmp_path / "empty"  # a folder, but no goodput run is ever written there
    empty.mkdir()
    mark = tmp_path / "ran"
    result = run_cli(
        "monitor", "run", "--no-save", "--backend", "host", "--out", str(tmp_path / "m"),
        "--goodput", str(empty), "--", "sh", "-c", MARKED.format(mark=mark),
    )  # fmt: skip
    assert mark.exists()
    assert result.code == 3
    assert "lightspeed: warning: the command ended with exit code 3, but its report failed" in result.err
    assert "Traceback" not in result.err


def test_the_plot_error_names_the_file_with_its_suffix(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    figure, _ = new_figure()
    with pytest.raises(UserInputError, match=r"cannot write the plot .*afile/x\.png \("):
        save_figure(figure, tmp_path / "afile" / "x", ("png",))


def test_checking_a_plot_path_writes_nothing(tmp_path: Path) -> None:
    # a plot into a folder that does not exist is refused (no folder is made), as every --plot is
    with pytest.raises(UserInputError, match="no folder"):
        save_monitor_plot(None, tmp_path / "new" / "c.svg")
    assert save_monitor_plot(None, tmp_path / "c.svg") == [tmp_path / "c.svg"]
    assert list(tmp_path.iterdir()) == []


# -- defect 20: the header names the backends that ran ---------------------------------------------


def test_the_report_header_names_the_backends_of_the_capture(run_cli: Any, tmp_path: Path) -> None:
    folder = tmp_path / "m"
    capture = write_capture(folder / "capture-node1-7.jsonl", [{"host": {"cpu_util_ratio": 0.5}}])
    lines = capture.read_text().splitlines()
    header = json.loads(lines[0])
    header["backends"] = ["host"]  # NVML was asked for but could not open
    capture.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    run_file = {
        "v": 1, "run_id": "r1", "command": ["true"], "exit_code": 0, "start_epoch_s": T0_NS / NS,
        "end_epoch_s": T0_NS / NS + 1, "interval_s": 1.0, "backends": ["host", "nvml"], "host": "node1",
    }  # fmt: skip
    (folder / "monitor.json").write_text(json.dumps(run_file))
    result = run_cli("monitor", "report", str(folder))
    assert result.code == 0, result.err
    text = " ".join(result.out.split())
    assert "backends host capture" in text
    assert "nvml" not in text


# -- defect 21: the whole-capture summary by kind ----------------------------------------------------


def _gpu(t: int) -> dict[str, float]:
    return {
        "power_w": 200.0,
        "energy_j": 1000.0 + 200.0 * t,  # a cumulative counter: 200 J a second
        "clock_event_reasons": {5: 0x4, 7: 0x8}.get(t, 0),  # SW power cap at t=5, HW slowdown at t=7
    }


def _summaries(path: Path) -> dict[str, Any]:
    return {summary.metric: summary for summary in summarize_capture(read_capture(path))}


def test_the_summary_gives_a_counters_increase_and_a_bitmasks_union(tmp_path: Path) -> None:
    # sample i at t=i s for i = 0..10 (write_capture puts sample i one interval after its start)
    path = write_capture(
        tmp_path / "c.jsonl", [{"gpu0": _gpu(t)} for t in range(11)], devices=None, start_ns=T0_NS - NS
    )
    summaries = _summaries(path)
    energy = summaries["energy_j"]
    assert energy.increase == pytest.approx(2000.0)  # 3000 J - 1000 J over t=0..10
    assert (energy.mean, energy.minimum, energy.maximum) == (None, None, None)
    assert energy.last == pytest.approx(3000.0)
    reasons = summaries["clock_event_reasons"]
    assert reasons.bits_set == 0x4 | 0x8
    # each sample holds over the second before it; the first covers (-1, 0]: 11 s, 2 s with a bit
    assert reasons.set_ratio == pytest.approx(2 / 11)
    assert reasons.mean is None
    rows = {row[1]: row for row in summary_rows(list(summarize_capture(read_capture(path))))}
    assert rows["energy_j"][3] == "+2000 J"
    assert rows["clock_event_reasons"][3] == "0xc (18.2% set)"


def test_an_energy_counter_that_resets_counts_again_from_zero(tmp_path: Path) -> None:
    # 1000 + 200 t up to t=5 (2000 J), then the driver reloads: 200 (t - 6) from t=6 (0 J) to t=10
    energy = [1000.0 + 200.0 * t if t < 6 else 200.0 * (t - 6) for t in range(11)]
    path = write_capture(
        tmp_path / "c.jsonl", [{"gpu0": {"energy_j": value}} for value in energy], start_ns=T0_NS - NS
    )
    # 1000 J up to the reset, 0 J read right after it, 800 J after: 1800 J
    assert _summaries(path)["energy_j"].increase == pytest.approx(1800.0)


def test_the_summary_mean_is_time_weighted(tmp_path: Path) -> None:
    # samples at t=1, 2 and 4 s (the tick at 3 s came late), interval 1 s:
    # 0.2 over (0,1], 0.4 over (1,2], 1.0 over (2,4] -> (0.2 + 0.4 + 2.0) / 4 = 0.65
    host = {"device_id": "host", "kind": "host", "name": "node1", "backend": "psutil"}
    start = {"v": 1, "type": "capture_start", "t_ns": T0_NS, "host": "node1", "pid": 7,
             "interval_s": 1.0, "backends": ["host"], "meta": {}, "devices": [host]}  # fmt: skip
    lines = [start] + [
        {"type": "sample", "t_ns": T0_NS + t * NS, "d": {"host": {"cpu_util_ratio": value}}}
        for t, value in ((1, 0.2), (2, 0.4), (4, 1.0))
    ]
    path = tmp_path / "late.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    cpu = _summaries(path)["cpu_util_ratio"]
    assert cpu.mean == pytest.approx(0.65)
    assert (cpu.minimum, cpu.maximum, cpu.last) == (0.2, 1.0, 1.0)


def test_a_monitor_run_report_shows_counters_by_kind(run_cli: Any, tmp_path: Path) -> None:
    path = write_capture(
        tmp_path / "m" / "capture-node1-7.jsonl", [{"gpu0": _gpu(t)} for t in range(11)], start_ns=T0_NS - NS
    )
    result = run_cli("monitor", "report", str(path.parent), "--json")
    assert result.code == 0, result.err
    summaries = {item["metric"]: item for item in json.loads(result.out)["summaries"]}
    assert summaries["energy_j"]["increase"] == pytest.approx(2000.0)
    assert summaries["clock_event_reasons"]["bits_set"] == 12
    assert np.isclose(summaries["power_w"]["mean"], 200.0)

"""``lightspeed monitor run|report|watch|serve``: runs, joins, findings, bad input as one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tests.conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[2]

# A job with a goodput Tracker: it finds the monitor through LIGHTSPEED_MONITOR_RUN by itself.
JOB = """
import sys, time
from lightspeed.goodput import Tracker
with Tracker(sys.argv[1], flush_interval_s=0.05) as tracker:
    for _ in range(6):
        with tracker.data_wait():
            time.sleep(0.05)
        with tracker.step(tokens=100):
            end = time.process_time() + 0.05
            while time.process_time() < end:
                pass
sys.exit(int(sys.argv[2]))
"""


def _monitored_job(run_cli, tmp_path: Path, out: Path | str, exit_code: str = "0", *flags: str):  # type: ignore[no-untyped-def]
    """``monitor run`` (host backend, 100 ms) of the job above, its tracker run in tmp_path/run."""
    return run_cli(
        "monitor",
        "run",
        "--interval",
        "100ms",
        "--backend",
        "host",
        "--out",
        str(out),
        *flags,
        "--",
        sys.executable,
        str(_job(tmp_path)),
        str(tmp_path / "run"),
        exit_code,
    )


def _job(tmp_path: Path) -> Path:
    path = tmp_path / "job.py"
    path.write_text(JOB, encoding="utf-8")
    return path


def test_run_joins_the_trackers_steps_and_stores_the_run(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "mon"
    run_dir = tmp_path / "run"
    result = _monitored_job(run_cli, tmp_path, str(out), "0", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["run"]["exit_code"] == 0
    assert report["goodput_run"] == str(run_dir.resolve())
    joined = report["joined"]
    assert sum(1 for step in joined["steps"] if not step["wasted"]) == 6
    productive = next(b for b in joined["buckets"] if b["bucket"] == "productive")
    assert productive["counters"]["process_cpu_cores"] is not None  # the job's own CPU, while productive
    assert report["stored_run_id"]
    assert (out / "monitor.json").exists()
    assert list((out / "trackers").glob("*.json"))
    listed = run_cli("results", "list", "--kind", "monitor", "--json")
    assert report["stored_run_id"] in listed.out
    # the same report again, by folder and by stored run id; goodput report shows the counters too
    again = run_cli("monitor", "report", report["stored_run_id"], "--json")
    assert again.code == 0, again.err
    assert json.loads(again.out)["path"] == str(out.resolve())
    ledger = run_cli("goodput", "report", str(run_dir))
    assert ledger.code == 0, ledger.err
    assert "Counters per ledger bucket" in ledger.out


def test_run_passes_the_commands_exit_code_on(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = _monitored_job(run_cli, tmp_path, str(tmp_path / "m"), "3", "--no-save")
    assert result.code == 3
    assert "exit code 3" in result.out


def test_a_command_shorter_than_the_first_sample_is_a_run(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 'monitor run -- true' used to exit 2 with "no process with id N to watch"
    out = tmp_path / "m"
    result = run_cli(
        "monitor", "run", "--backend", "host", "--out", str(out), "--no-save", "--json", "--", "true"
    )
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["run"]["exit_code"] == 0
    assert report["captures"][0]["num_samples"] >= 1
    killed = run_cli("monitor", "run", "--backend", "host", "--out", str(tmp_path / "k"), "--no-save", "--",
                     "sh", "-c", "kill -KILL $$")  # fmt: skip
    assert killed.code == 137  # 128 + SIGKILL, as a shell reports it (it used to be 0)
    assert "ended by SIGKILL" in killed.out


def test_report_prints_summary_findings_and_a_plot(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "mon"
    _monitored_job(run_cli, tmp_path, str(out), "0", "--no-save")
    result = run_cli("monitor", "report", str(out), "--plot", str(tmp_path / "counters.png"))
    assert result.code == 0, result.err
    assert "Counters over the whole capture" in result.out
    assert "Counters per ledger bucket" in result.out
    assert (tmp_path / "counters.png").stat().st_size > 1000
    # the HTML report draws the monitor run: from its folder, and from the goodput run it watched
    for source in (out, tmp_path / "run"):
        page = tmp_path / f"{source.name}.html"
        html = run_cli("report", "--from", str(source), "-o", str(page), "--json")
        assert html.code == 0, html.err
        sections = {section["key"]: section for section in json.loads(html.out)["sections"]}
        assert sections["monitor"]["chart_names"] == ["counters-1"]
        assert "Counters beside the steps" in page.read_text() or "Monitoring" in page.read_text()


def test_watch_replays_a_capture_as_json_lines(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "mon"
    run_cli(
        "monitor",
        "run",
        "--interval",
        "100ms",
        "--backend",
        "host",
        "--out",
        str(out),
        "--no-save",
        "--",
        sys.executable,
        "-c",
        "import time; time.sleep(0.5)",
    )
    (capture,) = out.glob("capture-*.jsonl")
    result = run_cli(
        "monitor", "watch", "--replay", str(capture), "--interval", "50ms", "--count", "2", "--json"
    )
    assert result.code == 0, result.err
    lines = [json.loads(line) for line in result.out.splitlines()]
    assert len(lines) == 2
    assert "cpu_util_ratio" in lines[0]["reading"]["host"]
    table = run_cli("monitor", "watch", "--interval", "100ms", "--backend", "host", "--count", "1")
    assert table.code == 0, table.err
    assert "CPU" in table.out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--backend", "host", "--interval", "0s", "--", "true"], "0s is not above the minimum"),
        (["run", "--backend", "host", "--interval", "nan", "--", "true"], "as a duration"),
        (
            ["run", "--backend", "host", "--interval", "10ms", "--", "true"],
            "host backend samples at most every 50 ms",
        ),
        (["run", "--backend", "host", "--", "no-such-command-xyz"], "cannot run 'no-such-command-xyz'"),
        (["report", "nope/nowhere"], "no such file"),
        (["run", "--out", "/proc/nope", "--", "true"], "cannot create the monitor run folder /proc/nope"),
        (["serve", "--port", "99999"], "99999"),
        (["serve", "--port", "0", "--replay", "missing.jsonl"], "no such file"),
        (["watch", "--backend", "gpu"], "'gpu' is not one of"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(run_cli, tmp_path: Path, args: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    if args[0] == "run" and "--out" not in args:
        args = [*args[:1], "--out", str(tmp_path / "m"), *args[1:]]
    result = run_cli("monitor", *args)
    assert result.code == 2
    assert message in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert "Traceback" not in result.err


def test_a_malformed_capture_is_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "mon"
    folder.mkdir()
    (folder / "capture-x-1.jsonl").write_text('{"v": 1, "type": "capture_start"}\n')
    result = run_cli("monitor", "report", str(folder))
    assert result.code == 2
    assert "capture-x-1.jsonl:1" in result.err


def test_run_refuses_a_folder_in_use(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "x").write_text("")
    result = run_cli("monitor", "run", "--out", str(tmp_path / "m"), "--", "true")
    assert result.code == 2
    assert "is not empty" in result.err


@pytest.mark.slow
def test_the_tiny_gpt_example_under_monitor_run_has_host_counters_per_step_and_a_finding(  # type: ignore[no-untyped-def]
    run_cli, tmp_path: Path
) -> None:
    """The issue's 'done when', on this CPU-only machine: host counters joined to the tracker's steps."""
    pytest.importorskip("torch")
    out = tmp_path / "mon"
    result = run_cli(
        "monitor",
        "run",
        "--out",
        str(out),
        "--no-save",
        "--json",
        "--",
        sys.executable,
        str(ROOT / "examples" / "train_tiny_gpt.py"),
        "--quick",
        "--run-dir",
        str(tmp_path / "tiny"),
    )
    assert result.code == 0, result.err
    report = json.loads(result.out)
    joined = report["joined"]
    steps = [step for step in joined["steps"] if not step["wasted"]]
    assert len(steps) == 24  # --quick trains 24 steps, some of them twice after the crash
    assert all(step["counters"]["cpu_util_ratio"] is not None for step in steps)
    assert all(step["counters"]["process_cpu_cores"] is not None for step in steps)
    assert joined["num_gpus"] == 0
    rules = {finding["rule"] for finding in report["diagnosis"]["findings"]}
    # init (importing torch, building the model) and recovery (the restart after the SIGKILL) take
    # most of the quick run's wall time in the tracker's ledger; the finding says what the host did then
    assert "badput_hotspot" in rules
    hotspots = [f for f in report["diagnosis"]["findings"] if f["rule"] == "badput_hotspot"]
    assert {f["title"].split()[0] for f in hotspots} & {"init", "recovery"}
    assert all(any(e["counter"] == "process_cpu_cores" for e in f["evidence"]) for f in hotspots)
    for finding in report["diagnosis"]["findings"]:
        assert finding["evidence"]  # every finding names its counters


def test_report_on_a_real_h200_training_run(run_cli) -> None:  # type: ignore[no-untyped-def]
    """`monitor run` around benchmarks/gpu_train_step.py (Llama 3.2 1B, 30 steps of 4 x 4,096
    tokens) on the H200 lent to this project, NVML sampled every 200 ms
    (tests/fixtures/h200-train): the steps kept the GPU busy, the SW power cap held the clocks
    down, init took a quarter of the run, and the 29 s the script spent building its model on
    the CPU before creating its Tracker is start-up outside the run, not an idle stretch in it."""
    folder = FIXTURES / "h200-train"
    report = run_cli("monitor", "report", str(folder / "monitor"), "--goodput", str(folder / "run"), "--json")
    assert report.code == 0, report.err
    data = json.loads(report.out)
    findings = {finding["rule"]: finding for finding in data["diagnosis"]["findings"]}
    assert set(findings) == {"idle_outside_run", "throttling", "badput_hotspot"}
    assert "before the goodput run began" in findings["idle_outside_run"]["message"]
    assert "SW power cap" in findings["throttling"]["message"]
    joined = data["joined"]
    assert joined["productive_busy_ratio"] >= 0.95
    tokens = 30 * 4 * 4096
    assert joined["energy_per_token_j"] == pytest.approx(joined["productive_energy_j"] / tokens)
    # an H200 at its 700 W cap for ~10 s of steps: between 5 and 7 kJ
    assert 5_000 <= joined["productive_energy_j"] <= 7_000

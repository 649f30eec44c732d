"""Benchmark scripts that compare with a peer fail in one line, exit code 2 and no traceback when the
peer cannot be had (before anything is timed, and again on the next run, which finds the half-made
environment the failed install left); every script's --help works, the HTA worker's without HTA.

No network: pip runs with PIP_NO_INDEX=1, so that every install fails at once, as offline.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from scripts import load_script

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"
SCRIPTS = sorted(path.name for path in BENCHMARKS.glob("*.py") if not path.name.startswith("_"))
TESTS_SHARED = REPO / "tests" / "data" / "shared"  # the repository's copy of ../shared


def _offline_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PIP_NO_INDEX": "1", "LIGHTSPEED_SHARED": str(TESTS_SHARED), **extra}


def _run(script: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env if env is not None else os.environ.copy(),
        timeout=600,
        check=False,
    )


def _assert_one_line_failure(done: subprocess.CompletedProcess[str], script: str, *needles: str) -> str:
    """Exit code 2, no traceback, and a last line of stderr that names the script and says ``needles``."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{script}: "), done.stderr
    for needle in needles:
        assert needle in last, last
    return last


@pytest.fixture(scope="module")
def peers():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield load_script("benchmarks/_peers.py")
    finally:
        sys.path.remove(str(BENCHMARKS))


# --- the shared helper ------------------------------------------------------------------------


def test_a_peer_pip_cannot_install_is_one_line_naming_it_the_reason_and_the_fix(
    peers, tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    peer = peers.PythonPeer("fake peer 1.0", "surely-not-a-package-e12==1.0", "surely_not_a_module_e12")
    venv = tmp_path / "venv"
    for _ in range(2):  # the second time the half-made environment exists and is found wanting
        with pytest.raises(peers.PeerUnavailableError) as raised:
            peers.python_peer(peer, venv, venv_option="--peer-venv", without="pass --no-peer")
        message = str(raised.value)
        assert "\n" not in message
        assert message.startswith("fake peer 1.0 is not available: pip could not install")
        assert "surely-not-a-package-e12==1.0" in message
        assert "or pass --no-peer" in message
        assert (venv / "pyvenv.cfg").exists()


def test_an_environment_that_imports_the_peer_is_used_as_it_is(peers, tmp_path) -> None:  # type: ignore[no-untyped-def]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    marker = venv / "pyvenv.cfg"
    before = marker.stat().st_mtime_ns
    peer = peers.PythonPeer("json", "json==0", "json")  # a module every Python has: nothing to install
    assert peers.python_peer(peer, venv, venv_option="--peer-venv") == venv / "bin" / "python"
    assert marker.stat().st_mtime_ns == before  # not made again


def test_a_folder_that_is_not_an_environment_is_left_alone(peers, tmp_path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine", encoding="utf-8")
    peer = peers.PythonPeer("fake peer", "surely-not-a-package-e12==1.0", "surely_not_a_module_e12")
    with pytest.raises(peers.PeerUnavailableError, match=r"not a virtual environment.*--peer-venv"):
        peers.python_peer(peer, folder, venv_option="--peer-venv")
    assert (folder / "keep.txt").read_text(encoding="utf-8") == "mine"


def test_a_missing_program_that_apt_get_cannot_install_is_one_line(peers, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PATH", str(tmp_path))  # neither the program nor apt-get on it
    with pytest.raises(peers.PeerUnavailableError) as raised:
        peers.system_program("surely-not-a-program-e12", "surely-not-a-package-e12")
    assert "\n" not in str(raised.value)
    assert "sudo apt-get install surely-not-a-package-e12" in str(raised.value)


def test_run_main_turns_a_missing_prerequisite_into_one_line_and_exit_2(peers, capsys) -> None:  # type: ignore[no-untyped-def]
    def main() -> int:
        raise peers.PeerUnavailableError("peer X is not available; install it")

    with pytest.raises(SystemExit) as exited:
        peers.run_main(main)
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().endswith(": peer X is not available; install it")


# --- the scripts, run as a user runs them ---------------------------------------------------------


def test_search_speed_without_its_peer_fails_before_timing_and_again_on_the_next_run(tmp_path) -> None:
    out = tmp_path / "search_speed.json"
    env = _offline_env(PEER_VENV=str(tmp_path / "peer"))
    for _ in range(2):  # the second run finds the environment the first one left half-made
        done = _run("search_speed.py", "--out", str(out), env=env)
        _assert_one_line_failure(done, "search_speed.py", "llm-analysis", "--no-peer")
        assert "lightspeed search" not in done.stdout  # nothing was timed
        assert not out.exists()  # no record that reads as a run without a peer


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "args", "needle"),
    [
        ("nsys_load.py", ["--peer-venv", "{tmp}/peer", "--out", "{tmp}/out.json"], "nsys-tui"),
        ("trace_vs_hta.py", ["--hta-venv", "{tmp}/peer", "--out", "{tmp}/out.json"], "HTA"),
        ("trace_ranks.py", ["--hta-venv", "{tmp}/peer", "--out", "{tmp}/out.json"], "HTA"),
        (
            "aiconfigurator_compare.py",
            # the repository's copies of the published tables (a clone has no ../shared beside it)
            [
                "--out",
                "{tmp}/out",
                "--tables",
                "{repo}/tests/data/shared/validation/published-dev.tsv",
                "{repo}/tests/data/shared/validation/published-dev-2025.tsv",
            ],
            "aiconfigurator",
        ),
    ],
)
def test_a_script_whose_python_peer_cannot_be_installed_exits_2_in_one_line(
    script: str, args: list[str], needle: str, tmp_path: Path
) -> None:
    done = _run(script, *[arg.format(tmp=tmp_path, repo=REPO) for arg in args], env=_offline_env())
    _assert_one_line_failure(done, script, needle, "is not available")
    assert not (tmp_path / "out.json").exists()
    assert not (tmp_path / "out" / "compare.json").exists()


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("nvitop") is not None, reason="nvitop is installed here")
def test_monitor_overhead_without_nvitop_exits_2_instead_of_leaving_it_out(tmp_path: Path) -> None:
    out = tmp_path / "monitor.json"
    done = _run(
        "monitor_overhead.py", "--peer-venv", str(tmp_path / "peer"), "--out", str(out), env=_offline_env()
    )
    _assert_one_line_failure(done, "monitor_overhead.py", "nvitop", "--no-peer")
    assert not out.exists()


@pytest.mark.slow
def test_bench_membw_without_mbw_or_apt_get_exits_2_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "membw.json"
    done = _run("bench_membw.py", "--out", str(out), env=_offline_env(PATH=str(tmp_path)))
    _assert_one_line_failure(done, "bench_membw.py", "mbw", "apt-get install mbw")
    assert not out.exists()


def test_the_hta_worker_run_without_hta_says_so_in_one_line(tmp_path: Path) -> None:
    if importlib.util.find_spec("hta") is not None:
        pytest.skip("HTA is installed in this environment")
    done = _run("trace_hta_worker.py", "summary", str(tmp_path))
    _assert_one_line_failure(done, "trace_hta_worker.py", "HTA cannot be imported", "holistictraceanalysis")


# --- every script's --help ----------------------------------------------------------------------


@pytest.mark.slow
def test_every_benchmark_script_answers_help() -> None:
    """``--help`` of every script, run side by side once (most import lightspeed, some torch): one
    test, so that pytest's workers do not each run all of them."""
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        helps = dict(zip(SCRIPTS, pool.map(lambda script: _run(script, "--help"), SCRIPTS), strict=True))
    failed = {
        script: (done.returncode, done.stderr.strip().splitlines()[-1:])
        for script, done in helps.items()
        if done.returncode != 0 or "Traceback" in done.stderr or not done.stdout.startswith("usage: ")
    }
    assert failed == {}
    assert len(helps) == len(SCRIPTS) > 30

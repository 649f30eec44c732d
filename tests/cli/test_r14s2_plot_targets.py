"""Round 14 fix S2, defect 2: a --plot target that cannot be written (not a plot suffix, a FIFO, a
device, a folder that does not exist) is refused in one line before any work: ``bench`` measures
nothing and ``simulate`` runs nothing (both did all the work, then failed)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.cli import bench as cli_bench
from lightspeed.cli import simulate as cli_simulate
from lightspeed.report import check_roofline_plot, save_latency_load_plot
from lightspeed.store import open_store


def _never(*_: Any, **__: Any) -> Any:
    raise AssertionError("the work ran before the plot target was checked")


def _targets(tmp_path: Path) -> list[tuple[str, str]]:
    """(--plot value, what the refusal says) for each bad target."""
    fifo = tmp_path / "fifo.png"
    os.mkfifo(fifo)
    return [
        (str(tmp_path / "x.txt"), "'.txt' is not a plot format"),
        (str(fifo), "not a regular file or a folder"),
        ("/dev/null", "not a regular file or a folder"),
        (str(tmp_path / "nosuch" / "x.png"), "no folder"),
    ]


def test_bench_refuses_a_bad_plot_before_it_measures(  # type: ignore[no-untyped-def]
    run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    monkeypatch.setattr(cli_bench, "run_membw", _never)
    monkeypatch.setattr(cli_bench, "run_gemm", _never)
    for target, said in _targets(tmp_path):
        for suite in ("membw", "gemm"):
            result = run_cli("bench", suite, "--quick", "--device", "cpu", "--plot", target)
            one_line_error(result, "cannot", said)
            assert result.out == ""
    with open_store() as store:
        assert store.runs(include_incomplete=True) == []


def test_simulate_refuses_a_bad_plot_before_it_runs(  # type: ignore[no-untyped-def]
    run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cli_simulate, "simulate_deployment", _never)
    monkeypatch.setattr(cli_simulate, "load_sweep", _never)
    base = ("simulate", "--model", "llama-3-8b", "--system", "h100-sxm", "--precision", "fp8")
    for target, said in _targets(tmp_path):
        result = run_cli(*base, "--requests", "20", "--arrival-rate", "2", "--sweep", "--plot", target)
        one_line_error(result, "cannot", said)
        assert result.out == ""


def test_a_good_plot_target_is_left_untouched_by_the_check(tmp_path: Path) -> None:
    # every plot: the suffix's format only (round 15: the roofline also wrote r.svg beside r.png)
    assert check_roofline_plot(tmp_path / "r.png") == [tmp_path / "r.png"]
    assert save_latency_load_plot(None, tmp_path / "l.pdf") == [tmp_path / "l.pdf"]
    assert list(tmp_path.iterdir()) == []  # nothing written, no probe left behind


def test_a_plot_folder_gets_png_and_svg_for_mig_and_cost_as_for_every_plot(tmp_path: Path) -> None:
    """Every other --plot folder gets NAME.png and NAME.svg (DEFAULT_PLOT_FORMATS); the MIG layout
    and the cost tornado wrote only a PNG there."""
    from lightspeed.report.cost import save_tornado
    from lightspeed.report.mig import save_mig_plot

    assert save_mig_plot(None, {}, tmp_path) == [tmp_path / "mig-layout.png", tmp_path / "mig-layout.svg"]
    assert save_tornado(None, tmp_path) == [tmp_path / "tornado.png", tmp_path / "tornado.svg"]
    assert save_mig_plot(None, {}, tmp_path / "layout") == [tmp_path / "layout.png", tmp_path / "layout.svg"]
    assert list(tmp_path.iterdir()) == []  # only checked: nothing written

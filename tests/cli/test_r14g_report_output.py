"""`lightspeed report -o` writes one HTML file into a folder that exists: another suffix (there is
no PDF export) and a missing folder are refused in one line before anything is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from expect import one_line_error


@pytest.mark.parametrize("name", ["r.pdf", "r.png", "r"])
def test_a_suffix_other_than_html_is_refused_before_any_work(run_cli, tmp_path: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / name
    # the source does not exist: the refusal names the output, so it came before anything was read
    result = run_cli("report", "--from", str(tmp_path / "missing-run"), "-o", str(out))
    one_line_error(result, f"cannot write the report to {out}", ".html or .htm", "no PDF export")
    assert not out.exists()


def test_a_missing_folder_is_refused_not_made(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "nosuch" / "r.html"
    result = run_cli("report", "--from", str(tmp_path / "missing-run"), "-o", str(out))
    one_line_error(result, f"no folder {tmp_path / 'nosuch'}", "create it first")
    assert not (tmp_path / "nosuch").exists()


def test_htm_in_any_case_is_html(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # the suffix passes: what fails is the missing source, read after the output is checked
    result = run_cli("report", "--from", str(tmp_path / "missing-run"), "-o", str(tmp_path / "R.HTM"))
    assert result.code == 2
    assert "missing-run" in result.err
    assert "cannot write the report" not in result.err


def test_two_simulated_runs_of_one_model_have_titles_that_differ() -> None:
    # report --from a.json --from b.json of one model: the sections' titles name the deployment and
    # the load, so the navigation tells them apart
    from lightspeed.report.simulation_section import _title_details

    tp2 = {
        "plan": {"tp": 2, "pp": 1, "ep": 1, "dp_attention": 1, "replicas": 4, "precision": "fp8"},
        "workload": {"arrivals": {"kind": "closed", "concurrency": 128}},
    }
    tp8 = {
        "plan": {"tp": 8, "pp": 1, "ep": 1, "dp_attention": 1, "replicas": 1, "precision": "fp8"},
        "workload": {"arrivals": {"kind": "poisson", "rate_per_s": 10.0}},
    }
    assert _title_details(tp2).startswith(", tp=2 pp=1 x4 fp8, ")
    assert "128" in _title_details(tp2)
    assert _title_details(tp8) == ", tp=8 pp=1 fp8, Poisson 10 req/s"

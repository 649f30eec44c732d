"""Round 14 fix S2: ``lightspeed bench``'s options.

Defect 1: ``--dtype fp8`` on a CPU is refused in one line (torch emulates it: hours for a --quick
sweep); ``--dtype all`` leaves it out and says so on stderr.
Defect 2: the measurements are saved before the roofline is drawn, so a --plot that cannot be
written costs the plot, not the run.
Defect 3: an empty item (``bf16,,fp32``) or a dtype given twice (``bf16,bf16``) is refused, as every
list option refuses them, not run silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.bench import BenchResult, make_result
from lightspeed.cli import bench as cli_bench
from lightspeed.errors import UserInputError
from lightspeed.store import open_store

pytest.importorskip("torch")


def _never(**_: Any) -> list[BenchResult]:
    raise AssertionError("the suite ran")


def _stored_runs() -> list[Any]:
    with open_store() as store:
        return list(store.runs(include_incomplete=True))


# --- defect 1 ----------------------------------------------------------------------------------


def test_fp8_on_the_cpu_is_refused_in_one_line(run_cli) -> None:  # type: ignore[no-untyped-def]
    # the real run_gemm: its dtype check comes before any timing (the old code ran for an hour)
    result = run_cli("bench", "gemm", "--quick", "--no-save", "--device", "cpu", "--dtype", "fp8")
    one_line_error(result, "the CPU has no fp8 GEMM kernel", "use bf16 or fp32 on the CPU")


def test_all_on_the_cpu_leaves_fp8_out_with_a_note(  # type: ignore[no-untyped-def]
    run_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[list[str]] = []

    def fake_gemm(*, dtypes: list[str], **_: Any) -> list[BenchResult]:
        asked.append(list(dtypes))
        return []  # no results: the command stops there (as a non-zero torchrun rank)

    monkeypatch.setattr(cli_bench, "run_gemm", fake_gemm)
    result = run_cli("bench", "gemm", "--quick", "--no-save", "--device", "cpu", "--dtype", "all")
    assert result.code == 0, result.err
    assert len(asked) == 1
    assert "fp8" not in asked[0]
    assert "tf32" not in asked[0]
    assert "fp32" in asked[0]
    note = result.err.strip()
    assert note.startswith("lightspeed: note: --dtype all runs "), note
    assert "leaves out tf32, fp8" in note
    assert "'--dtype fp8' says why" in note


# --- defect 3 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "said"),
    [
        (("--dtype", "bf16,,fp32"), "--dtype 'bf16,,fp32': an empty item"),
        (("--dtype", "fp32,"), "--dtype 'fp32,': an empty item"),
        (("--dtype", "bf16,bf16"), "bf16 is given twice"),
        (("--dtype", "fp32,FP32"), "FP32 is given twice"),
        (("--dtype", "bf16", "--dtype", "bf16"), "bf16 is given twice"),
    ],
)
def test_an_empty_or_repeated_dtype_is_refused(  # type: ignore[no-untyped-def]
    run_cli, monkeypatch: pytest.MonkeyPatch, values: tuple[str, ...], said: str
) -> None:
    monkeypatch.setattr(cli_bench, "run_gemm", _never)
    result = run_cli("bench", "gemm", "--quick", "--device", "cpu", *values)
    one_line_error(result, said)
    assert _stored_runs() == []


@pytest.mark.parametrize(
    ("value", "said"),
    [("all_reduce,,all_gather", "an empty item"), ("all_reduce,all_reduce", "all_reduce is given twice")],
)
def test_an_empty_or_repeated_collective_is_refused(  # type: ignore[no-untyped-def]
    run_cli, monkeypatch: pytest.MonkeyPatch, value: str, said: str
) -> None:
    monkeypatch.setattr(cli_bench, "run_collectives", _never)
    result = run_cli("bench", "collectives", "--quick", "--device", "cpu", "--collective", value)
    one_line_error(result, f"--collective '{value}'", said)


# --- defect 2 ----------------------------------------------------------------------------------


def _triad() -> BenchResult:
    return make_result(
        suite="membw", name="stream triad", dtype="fp64", size_bytes=2**20, samples=[1e10], unit="B/s",
        best="max", sol=2e10, sol_note="memory SOL: test", correct=True, device="cpu",
        sol_device="test cpu",
        details={"bytes_moved": 3 * 2**20, "num_elements": 2**17, "num_threads": 1},
    )  # fmt: skip


def test_the_run_is_saved_before_a_plot_that_cannot_be_written(  # type: ignore[no-untyped-def]
    run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cli_bench, "run_membw", lambda **_: [_triad()])

    def plot_that_fails(*_: Any, path: Path, **__: Any) -> list[Path]:
        # the folder went away (or the disk filled up) while the suite ran
        raise UserInputError(
            f"cannot write the plot {path} (No space left on device); choose a writable path"
        )

    monkeypatch.setattr(cli_bench, "save_roofline", plot_that_fails)
    result = run_cli("bench", "membw", "--quick", "--device", "cpu", "--plot", str(tmp_path / "r.png"))
    one_line_error(result, "cannot write the plot")
    assert "stream triad" in result.out  # the results were shown
    assert "saved as run" in result.out  # and saved before the plot failed
    assert len(_stored_runs()) == 1

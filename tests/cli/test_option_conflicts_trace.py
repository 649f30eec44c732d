"""``trace`` refuses the options its analysis would ignore: --num-links without --link, the worker
options of --jobs where no worker runs (serially, or under Ray), and ``diff --top 0``."""

from __future__ import annotations

from pathlib import Path

import pytest

from expect import one_line_error

TRACES = Path(__file__).resolve().parents[1] / "data" / "shared" / "data" / "traces"
TRACE = str(TRACES / "triton_example" / "triton_example.json.gz")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["comms", TRACE, "--num-links", "4"], ("--num-links", "--link")),
        (["summary", TRACE, "--max-worker-memory", "1GB"], ("--max-worker-memory", "--jobs")),
        (["summary", TRACE, "--jobs", "1", "--max-worker-memory", "1GB"], ("--max-worker-memory",)),
        (["stragglers", TRACE, "--engine", "ray", "--jobs", "2"], ("--jobs", "--engine local")),
        (["comms", TRACE, "--engine", "ray", "--max-worker-memory", "1GB"], ("--max-worker-memory", "Ray")),
        (["diff", TRACE, TRACE, "--top", "0"], ("--top", "minimum")),
    ],
)
def test_trace_refuses(run_cli, args: list[str], words: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("trace", *args), *words)


def test_they_are_taken_where_they_apply(run_cli) -> None:  # type: ignore[no-untyped-def]
    assert run_cli("trace", "comms", TRACE, "--link", "ib-ndr", "--num-links", "4", "--json").code == 0
    assert run_cli("trace", "diff", TRACE, TRACE, "--top", "1", "--json").code == 0


def test_the_refusal_comes_before_the_trace_is_read(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    missing = str(tmp_path / "missing.json")
    one_line_error(run_cli("trace", "comms", missing, "--num-links", "4"), "--num-links")
    one_line_error(run_cli("trace", "comms", missing), "missing.json")

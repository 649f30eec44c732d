"""``compare systems --decompose``: one ratio reads the same everywhere it is printed (2 decimals,
the quotient of rates printed to 4 significant digits), and the attention spread line says how far
the printed ratios move with enough digits to see it (it printed "2.6x to 2.7x: 1.0-fold")."""

from __future__ import annotations

import re

import pytest

from lightspeed.report.inference import _ratio_spread_text

ARGS = [
    "compare",
    "systems",
    "--workload",
    "infer",
    "--model",
    "llama-3.1-8b",
    "--isl",
    "512",
    "--osl",
    "128",
    "--decompose",
    "--systems",
    "h100-sxm/3g.40gb",
    "h100-sxm",
]


def test_spread_of_printed_ratios_by_hand() -> None:
    text = _ratio_spread_text([("2.65x", "as catalogued"), ("2.60x", "MHA"), ("2.71x", "MLA-like")])
    # 2.71 / 2.60 = 1.04231 -> 1.04, not "1.0-fold"
    assert text == (
        "the ratio runs from 2.60x (MHA) to 2.71x (MLA-like): highest / lowest = 1.04, "
        "from the assumption about attention alone"
    )
    same = _ratio_spread_text([("0.87x", "as catalogued"), ("0.87x", "MHA"), ("0.87x", "MLA-like")])
    assert same == "the ratio is 0.87x under every attention: the assumption about attention does not move it"


def _cells(text: str, title: str) -> list[list[str]]:
    rows = []
    for line in text[text.index(title) :].splitlines()[1:]:
        if line.startswith("└"):
            break
        if line.startswith("│"):
            rows.append([cell.strip() for cell in line.strip().strip("│").split("│")])
    return rows


def test_the_same_ratio_reads_the_same_everywhere(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "400")  # a table row per line
    result = run_cli(*ARGS)
    assert result.code == 0, result.err
    text = result.out
    comparison = _cells(text, "best infer plan per system")
    first, last = (float(row[4].replace(",", "")) for row in (comparison[0], comparison[-1]))
    main_ratio = comparison[-1][5]
    assert main_ratio == f"{last / first:.2f}x"
    header = re.search(r": ([\d.,]+) / ([\d.,]+) tok/s per GPU = ([\d.]+x)", text)
    assert header is not None
    assert header[3] == main_ratio  # was one decimal in the header, two in the table
    assert float(header[1].replace(",", "")) == last  # the same printed rates
    cases = _cells(text, "the ratio under each attention")
    catalogued = next(row for row in cases if row[0].startswith("as catalogued") or row[0] == "as")
    assert catalogued[5] == main_ratio
    ratios = [float(row[5].rstrip("x")) for row in cases if row[5] != "-"]
    for row in cases:
        base, goal = (float(cell.replace(",", "")) for cell in row[3:5])
        assert row[5] == f"{goal / base:.2f}x"
    low, high = min(ratios), max(ratios)
    if low == high:
        assert f"the ratio is {low:.2f}x under every attention" in text
    else:
        assert f"from {low:.2f}x" in text
        assert f"to {high:.2f}x" in text
        assert f"highest / lowest = {high / low:.2f}," in text
    assert "-fold" not in text

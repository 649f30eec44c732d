"""Wide expert-load CSVs whose header names the experts by number (``layer,0,1,2,3``, pandas'
``,0,1,2,3``) are read with that row as a header, not as an extra MoE layer; a first row that
reads both ways is refused in one line; and the "top 1/8 share" is the hottest eighth of the
experts for any number of them (with 4 experts it was the whole hottest expert, a quarter)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from expect import one_line_error
from lightspeed.errors import DataFileError
from lightspeed.moe import expert_load_from_array, load_stats, read_expert_load


def _read(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "w.csv"
    path.write_text(text, encoding="utf-8")
    return read_expert_load(path)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("layer,0,1,2,3\nL0,10,20,30,40\nL1,5,5,5,5\n", ("L0", "L1")),  # expert ids under 'layer'
        (",0,1,2,3\n0,10,20,30,40\n1,5,5,5,5\n", ("0", "1")),  # pandas: df.to_csv() with its index
        ("layer,1,2,3,4\nL0,10,20,30,40\nL1,5,5,5,5\n", ("L0", "L1")),  # ids from 1
        ("layer_id,0,1,2,3\n0,10,20,30,40\n1,5,5,5,5\n", ("0", "1")),  # numbered layers
        ("0,1,2,3\nL0,10,20,30,40\nL1,5,5,5,5\n", ("L0", "L1")),  # ids above the counts only
        ("e0,e1,e2,e3\n10,20,30,40\n5,5,5,5\n", ("0", "1")),  # named experts, no layer column
        ("layer,e0,e1,e2,e3\n0,10,20,30,40\n1,5,5,5,5\n", ("0", "1")),
        ("L0,10,20,30,40\nL1,5,5,5,5\n", ("L0", "L1")),  # no header
        ("10,20,30,40\n5,5,5,5\n", ("0", "1")),
        ("3,1,2,4\n10,20,30,40\n5,5,5,5\n", ("0", "1", "2")),  # counts, not the ids in order
    ],
)
def test_header_rows_are_not_layers(tmp_path: Path, text: str, names: tuple[str, ...]) -> None:
    load = _read(tmp_path, text)
    assert load.layer_names == names
    assert load.num_experts == 4
    if len(names) == 2:
        assert load.counts == ((10.0, 20.0, 30.0, 40.0), (5.0, 5.0, 5.0, 5.0))


@pytest.mark.parametrize(
    "text",
    [
        "0,1,2,3\n10,20,30,40\n5,5,5,5\n",  # pandas' df.to_csv(index=False), or layer 0's counts?
        "1,2,3,4\n10,20,30,40\n",
        "L0,0,1,2,3\nL1,5,5,5,5\n",  # a header under an unknown heading, or layer L0's counts?
    ],
)
def test_a_first_row_that_reads_both_ways_is_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(DataFileError, match=r"w\.csv:1: the first row reads both as expert ids") as info:
        _read(tmp_path, text)
    assert "fix: start a header with 'layer'" in str(info.value)


def test_a_header_of_the_wrong_width_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="the header has 3 cells but the rows have 5"):
        _read(tmp_path, "e0,e1,e2\nL0,10,20,30,40\n")


def test_moe_stats_counts_two_layers(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "w.csv"
    path.write_text("layer,0,1,2,3\nL0,10,20,30,40\nL1,5,5,5,5\n", encoding="utf-8")
    result = run_cli("moe", "stats", str(path), "--gpus", "2", "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["num_layers"] == 2
    assert [layer["layer"] for layer in payload["layers"]] == ["L0", "L1"]
    path.write_text("0,1,2,3\n10,20,30,40\n5,5,5,5\n", encoding="utf-8")
    one_line_error(run_cli("moe", "stats", str(path), "--gpus", "2"), "reads both as expert ids")


@pytest.mark.parametrize(
    ("counts", "share"),
    [
        ([6, 2, 0, 0], 0.5 * 6 / 8),  # an eighth of 4 experts is half the hottest (6 of 8 tokens)
        ([1, 1, 1, 1], 1 / 8),  # even: 1/8 for any number of experts
        ([40, 30, 20, 10], 0.5 * 40 / 100),  # the brief's layer L0
        ([6, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0], 6 / 12 + 0.5 * 3 / 12),  # 12 / 8 = 1.5 experts
        ([5] + [1] * 15, (5 + 1) / 20),  # 16 / 8 = 2 whole experts
        ([1] * 64, 1 / 8),
    ],
)
def test_top_eighth_share_by_hand(counts: list[int], share: float) -> None:
    stats = load_stats(load=expert_load_from_array([counts]), num_gpus=1)
    assert stats.layers[0].top_eighth_share == pytest.approx(share, rel=1e-12)


def test_top_eighth_share_of_an_even_load_does_not_depend_on_the_expert_count() -> None:
    shares = [
        load_stats(load=expert_load_from_array([np.full(num, 3.0)]), num_gpus=1).layers[0].top_eighth_share
        for num in (2, 4, 6, 8, 12, 256)
    ]
    assert shares == pytest.approx([0.125] * 6)

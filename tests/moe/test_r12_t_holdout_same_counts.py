"""``moe balance --holdout`` refuses the --load window written again in another form (whitespace,
key order, CSV instead of JSON, the numbers re-serialised): the parsed counts are compared, not the
bytes, so the placement is never scored in-sample and called out-of-sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error

ARGS = ("moe", "balance", "--replicas", "4", "--gpus", "2")

# the --load window: two layers of four experts
COUNTS = [[6, 2, 4, 4], [1, 5, 3, 7]]


@pytest.fixture
def earlier(tmp_path: Path) -> Path:
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(COUNTS))
    return path


def _rewritten(tmp_path: Path) -> dict[str, Path]:
    """The same counts as ``COUNTS`` in other bytes, one file per way of writing them."""
    files = {
        "spaced.json": "[ [6,2,4,4] ,\n\n  [1,5,3,7] ]\n",
        "floats.json": "[[6.0, 2.0, 4.0, 4.0], [1e0, 5.00, 0.3e1, 7.0]]",
        "own.json": json.dumps(
            {
                "layers": [{"counts": COUNTS[0], "name": "gate0"}, {"counts": COUNTS[1], "name": "gate1"}],
                "schema_version": 1,
                "format": "lightspeed-expert-load",
            },
            indent=3,
        ),
        "keyed.json": json.dumps({"weight": COUNTS}),
        "wide.csv": "6,2,4,4\n1,5,3,7\n",
        "long.csv": "layer_id,expert_id,count\n"
        + "".join(
            f"{layer},{expert},{count}\n"
            for layer, row in enumerate(COUNTS)
            for expert, count in enumerate(row)
        ),
    }
    paths = {}
    for name, text in files.items():
        paths[name] = tmp_path / name
        paths[name].write_text(text)
    return paths


@pytest.mark.parametrize(
    "name", ["spaced.json", "floats.json", "own.json", "keyed.json", "wide.csv", "long.csv"]
)
def test_the_load_rewritten_is_no_later_window(run_cli, earlier: Path, tmp_path: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    holdout = _rewritten(tmp_path)[name]
    result = run_cli(*ARGS, "--load", str(earlier), "--holdout", str(holdout))
    line = one_line_error(result, "the --holdout window is the --load file", "fix:", "later window")
    assert str(earlier) in line
    assert str(holdout) in line


def test_a_rank_file_rewritten_is_refused_among_several(run_cli, earlier: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rank1 = tmp_path / "rank1.json"
    rank1.write_text(json.dumps([[1, 1, 1, 1], [2, 2, 2, 2]]))
    copy = tmp_path / "rank1.csv"
    copy.write_text("1,1,1,1\n2,2,2,2\n")
    result = run_cli(*ARGS, "--load", str(earlier), "--load", str(rank1), "--holdout", str(copy))
    line = one_line_error(result, "rank1.json", "rank1.csv", "fix:")
    assert "earlier.json" not in line  # the rank that matched is named, not every file


def test_the_ranks_added_are_no_later_window(run_cli, earlier: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # By hand: COUNTS + [[1, 1, 1, 1], [2, 2, 2, 2]] = [[7, 3, 5, 5], [3, 7, 5, 9]], the --load window.
    rank1 = tmp_path / "rank1.json"
    rank1.write_text(json.dumps([[1, 1, 1, 1], [2, 2, 2, 2]]))
    total = tmp_path / "total.csv"
    total.write_text("7,3,5,5\n3,7,5,9\n")
    result = run_cli(*ARGS, "--load", str(earlier), "--load", str(rank1), "--holdout", str(total))
    one_line_error(result, "total.csv", "the --load files", "earlier.json + ", "rank1.json", "fix:")


def test_a_later_window_one_token_apart_is_scored(run_cli, earlier: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # One token moved from expert 0 to expert 1 of layer 0: a different window, scored.
    # By hand: one slot per expert, two per GPU. Layer 0 (6, 2, 4, 4) is balanced only as {6, 2} /
    # {4, 4}: 8 + 8; layer 1 (1, 5, 3, 7) as {1, 7} / {5, 3}: 8 + 8. The later layer 0 (5, 3, 4, 4) on
    # {0, 1} / {2, 3} is 8 + 8 again, layer 1 unchanged: busiest over mean 16 / 16 = 1.0.
    later = tmp_path / "later.csv"
    later.write_text("5,3,4,4\n1,5,3,7\n")
    result = run_cli(*ARGS, "--load", str(earlier), "--holdout", str(later), "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["holdout"]["overall_out_of_sample"] == pytest.approx(1.0)

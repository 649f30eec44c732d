"""``moe balance --holdout`` refuses the --load file itself (by any name or as a copy) as the later
window: the placement would be scored in-sample and called out-of-sample."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from expect import one_line_error

ARGS = ("moe", "balance", "--replicas", "4", "--gpus", "2")


@pytest.fixture
def earlier(tmp_path: Path) -> Path:
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps([[6, 2, 4, 4]]))
    return path


def _other_names(earlier: Path) -> dict[str, str]:
    copy = earlier.with_name("copy.json")
    shutil.copyfile(earlier, copy)
    link = earlier.with_name("link.json")
    os.symlink(earlier, link)
    return {
        "same": str(earlier),
        "dotted": str(earlier.parent / "." / earlier.name),
        "link": str(link),
        "copy": str(copy),
    }


@pytest.mark.parametrize("how", ["same", "dotted", "link", "copy"])
def test_the_load_file_is_no_later_window(run_cli, earlier: Path, how: str) -> None:  # type: ignore[no-untyped-def]
    holdout = _other_names(earlier)[how]
    result = run_cli(*ARGS, "--load", str(earlier), "--holdout", holdout)
    one_line_error(result, "the --holdout window is the --load file", "fix:")


def test_one_of_several_load_files_is_refused_too(run_cli, earlier: Path) -> None:  # type: ignore[no-untyped-def]
    other = earlier.with_name("rank1.json")
    other.write_text(json.dumps([[1, 1, 1, 1]]))
    result = run_cli(*ARGS, "--load", str(earlier), "--load", str(other), "--holdout", str(other))
    one_line_error(result, "rank1.json")


def test_a_different_later_window_is_scored(run_cli, earlier: Path) -> None:  # type: ignore[no-untyped-def]
    # By hand: 6, 2, 4, 4 on 4 slots of 2 GPUs splits 8 + 8; the later 6, 6, 2, 2 on it is 12 vs 8 -> 1.5.
    later = earlier.with_name("later.json")
    later.write_text(json.dumps([[6, 6, 2, 2]]))
    result = run_cli(*ARGS, "--load", str(earlier), "--holdout", str(later), "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["holdout"]["overall_out_of_sample"] == 1.5

"""An expert-load file whose layer recorded no tokens is refused, not described as perfectly even:
``moe stats`` printed busiest over mean 1.00 for it and ``plan train --expert-load`` took an
imbalance of 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error


def _load(folder: Path, second: list[int]) -> Path:
    path = folder / "zeros.json"
    layers = [{"name": "l0", "counts": [5, 3, 8, 1, 2, 9, 4, 4]}, {"name": "l1", "counts": second}]
    document = {"format": "lightspeed-expert-load", "schema_version": 1, "num_steps": 4, "layers": layers}
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["moe", "stats", "{load}"],
        ["moe", "balance", "--load", "{load}", "--replicas", "8", "--gpus", "4"],
        ["plan", "train", "--model", "mixtral-8x7b", "--system", "dgx-h100", "--gpus", "8", "--ep", "8",
         "--global-batch", "64", "--zero", "1", "--no-fit-check", "--expert-load", "{load}"],
    ],
)  # fmt: skip
def test_a_layer_without_tokens_is_refused(run_cli, tmp_path: Path, command: list[str]) -> None:  # type: ignore[no-untyped-def]
    path = _load(tmp_path, [0] * 8)
    result = run_cli(*[str(path) if arg == "{load}" else arg for arg in command])
    one_line_error(result, str(path), "layer l1 recorded no tokens")


def test_the_other_formats_too(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sglang = tmp_path / "dump.csv"
    sglang.write_text("layer_id,expert_id,count\n3,0,5\n3,1,2\n4,0,0\n4,1,0\n")
    one_line_error(run_cli("moe", "stats", str(sglang)), str(sglang), "layer 4 recorded no tokens")
    table = tmp_path / "weight.json"
    table.write_text(json.dumps([[0, 0], [1, 2]]))
    one_line_error(run_cli("moe", "stats", str(table)), "layer 0 recorded no tokens")


def test_a_layer_with_tokens_on_some_experts_is_a_load(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("moe", "stats", str(_load(tmp_path, [0, 0, 0, 0, 0, 0, 0, 7])), "--json")
    assert result.code == 0, result.err


def test_a_skew_on_a_uniform_load_is_refused(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a uniform draw has no skew: --skew 2 was ignored without a word and the file written
    out = tmp_path / "load.json"
    command = ["moe", "synth", "--layers", "2", "--experts", "8", "--out", str(out)]
    one_line_error(run_cli(*command, "--distribution", "uniform", "--skew", "2"), "--skew", "uniform")
    assert not out.exists()
    assert run_cli(*command, "--distribution", "zipf", "--skew", "2").code == 0

"""``compare systems`` takes its systems in the order typed: ``--systems A B`` (one --systems, then
positional names) as documented, or positional names alone; a positional name before --systems
(compared after it, its --precision and --decompose ends swapped) is refused, as are an empty item
and a system named twice in the same format."""

from __future__ import annotations

import json

import pytest

from expect import one_line_error

COMPARE = ["compare", "systems", "--workload", "infer", "--model", "llama-3-8b", "--gpus", "1"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["dgx-h100", "--systems", "dgx-b200"], ("give the systems one way",)),
        (["--systems", "dgx-h100", "dgx-b200", "--systems", "gb200-nvl72"], ("give the systems one way",)),
        (["--systems", "dgx-h100,,dgx-b200"], ("--systems", "empty item")),
        (["--systems", "dgx-h100", "dgx-h100"], ("dgx-h100 is given twice",)),
        (["--systems", "dgx-h100,DGX-H100", "--precision", "fp8"], ("is given twice",)),
        (["--systems", "dgx-h100", "dgx-b200", "--precision", "fp8,,bf16"], ("--precision", "empty item")),
    ],
)
def test_compare_systems_refuses(run_cli, args: list[str], words: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli(*COMPARE, *args), *words)


@pytest.mark.parametrize(
    "args",
    [
        ["--systems", "dgx-h100", "dgx-b200"],  # the documented form
        ["dgx-h100", "dgx-b200"],
        ["--systems", "dgx-h100", "--systems", "dgx-b200"],
        ["--systems", "dgx-h100,dgx-b200"],
        ["--model", "llama-3-8b", "--systems", "dgx-h100", "--json", "dgx-b200"],
    ],
)
def test_the_systems_come_in_the_order_typed(run_cli, args: list[str]) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*COMPARE, *args, "--json")
    assert result.code == 0, result.err
    systems = [entry["system"] for entry in json.loads(result.out)["systems"]]
    assert [name.split(" ")[2] for name in systems] == ["dgx-h100", "dgx-b200"]


def test_one_system_in_two_formats_is_a_comparison(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*COMPARE, "--systems", "dgx-h100", "dgx-h100", "--precision", "fp8,bf16", "--json")
    assert result.code == 0, result.err
    assert [entry["precision"] for entry in json.loads(result.out)["systems"]] == ["fp8", "bf16"]

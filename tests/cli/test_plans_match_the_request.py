"""A plan of another size than asked, or one that cannot fit, is refused with the plan that would."""

from __future__ import annotations

from typing import Any

import pytest

TRAIN = ("--model", "llama-3-8b", "--system", "dgx-h100", "--global-batch", "64")


def _refused(result: Any, *fragments: str) -> None:
    assert result.code == 2, result.out
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        # used to plan 4 GPUs silently: dp 4 x tp 1 on a request of 2
        (("plan", "train", *TRAIN, "--gpus", "2", "--dp", "4", "--zero", "3"), ("not the 2", "--dp 2")),
        # 2 replicas of tp 2 are 4 GPUs
        (
            ("plan", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "2", "--tp", "2",
             "--replicas", "2"),
            ("uses 4 GPUs", "not the 2 requested", "--replicas 1"),
        ),
        (
            ("plan", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "2", "--tp", "2",
             "--disaggregated", "1:1"),
            ("uses 4 GPUs", "two replicas at least"),
        ),
        # a search used to exit 0 ranking plans that need terabytes per GPU
        (
            ("search", "train", "--model", "llama-3-405b", "--system", "dgx-h100", "--gpus", "8",
             "--global-batch", "64"),
            ("no plan of llama-3-405b on 8 GPUs", "per GPU", "79.65 GiB usable"),
        ),
        (("search", "train", *TRAIN, "--gpus", "12"), ("not a whole number of dgx-h100 nodes", "--gpus 16")),
        (
            ("compare", "systems", "--workload", "train", "--model", "llama-3-405b", "--systems", "dgx-h100",
             "--gpus", "8", "--global-batch", "64"),
            ("no plan of llama-3-405b", "fits"),
        ),
        (
            ("plan", "train", "--model", "llama-3-405b", "--system", "dgx-h100", "--gpus", "2048",
             "--tp", "8", "--pp", "16", "--vpp", "4", "--global-batch", "2048"),
            # pp=14 (the old hint) does not divide the 2,048 / tp 8 = 256 GPUs per tensor group
            ("126 layers", "allow uneven stages (--uneven-pipeline)"),
        ),
        # TensorRT-LLM runs on NVIDIA GPUs only: its profile used to price an MI300X deployment
        (
            ("plan", "infer", "--model", "llama-3-70b", "--system", "mi300x-platform", "--gpus", "8",
             "--tp", "8", "--serving", "trtllm-2025"),
            ("trtllm-2025", "does not run on AMD accelerators", "vllm-2025"),
        ),
    ],
)  # fmt: skip
def test_refused_with_the_plan_that_would_do(
    run_cli: Any, args: tuple[str, ...], fragments: tuple[str, ...]
) -> None:
    _refused(run_cli(*args), *fragments)


def test_a_search_on_part_of_a_node_plans_that_many_gpus(run_cli: Any) -> None:
    import json

    result = run_cli("search", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "4",
                     "--global-batch", "64", "--json")  # fmt: skip
    assert result.code == 0, result.err
    plans = json.loads(result.out)["plans"]
    assert plans
    assert all(plan["tp"] * plan["pp"] * plan["dp"] * plan["cp"] == 4 for plan in plans)

"""A tie on GPUs between MIG and whole GPUs goes to MIG only when its slices isolate services the
whole-GPU plan runs on a shared GPU; and the plan states the weight-only quantization an fp8 service
gets on a GPU without fp8 tensor cores, as ``plan infer`` does."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import load_catalog
from lightspeed.mig import plan_mig, planner
from lightspeed.mig.planner import Assignment, MigPlan, Strategy
from lightspeed.mig.services import read_workloads
from lightspeed.workload import load_models

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mig-workloads.toml"
ISOLATION = "slices are isolated"
# `lightspeed plan infer --model llama-3.1-8b --system a100-sxm --precision fp8` prints this assumption
A100_FP8 = "a100-sxm has no fp8 tensor cores: weights stored in fp8, GEMMs in bf16 (weight-only quantization)"


def _on(service: str, target: str, gpus: int, engine: str = "") -> Assignment:
    return Assignment(service, "m", target, 1, gpus, 1.0, 2.0, 0.1, 0.01, "tp=1", 2.0, engine=engine)


def _strategies(*, whole_engine: str) -> list[Strategy]:
    # Both plans take 2 GPUs: MIG puts chat and code on slices of one GPU, the other GPU serves a 70B;
    # whole GPUs give chat and code one GPU, either each a GPU of its own or shared (an engine).
    mig = Strategy("mig", 2, (_on("chat", "1g.10gb", 1), _on("code", "1g.10gb", 1), _on("big", "1 x g", 1)))
    if whole_engine:
        sharing = (_on("chat", "1 x g", 1, whole_engine), _on("code", "1 x g", 1, whole_engine))
        whole = Strategy("whole-gpu", 2, (*sharing, _on("big", "1 x g", 1)))
    else:
        whole = Strategy("whole-gpu", 2, (_on("chat", "1 x g", 1), _on("big", "1 x g", 1)))
    return [mig, whole, Strategy("time-sharing", None, (), reason="too big")]


def test_a_tie_with_whole_gpus_that_share_nothing_goes_to_whole_gpus() -> None:
    choice, lines = planner._explain(_strategies(whole_engine=""))
    assert choice == "whole-gpu"
    assert not any(ISOLATION in line for line in lines)
    assert any(line.startswith("mig needs 2 GPU(s) too") for line in lines)


def test_a_tie_with_whole_gpus_that_share_an_engine_goes_to_mig() -> None:
    choice, lines = planner._explain(_strategies(whole_engine="m fp8 on 1 x g"))
    assert choice == "mig"
    assert any(ISOLATION in line for line in lines)


@pytest.fixture(scope="module")
def a100_plan() -> MigPlan:
    catalog = load_catalog()
    return plan_mig(
        services=read_workloads(EXAMPLE, load_models()),
        accelerator=catalog.accelerator("a100-sxm"),
        catalog=catalog,
        models=load_models(),
    )


def test_example_on_a100_ties_without_sharing_and_takes_whole_gpus(a100_plan: MigPlan) -> None:
    mig, whole = a100_plan.strategy("mig"), a100_plan.strategy("whole-gpu")
    assert mig.num_gpus == whole.num_gpus  # the tie of the report
    assert not any(a.engine for a in whole.assignments)  # the whole-GPU plan shares no GPU
    assert a100_plan.choice == "whole-gpu"
    assert not any(ISOLATION in line for line in a100_plan.explanation)


def test_example_on_a100_notes_weight_only_fp8_once(a100_plan: MigPlan) -> None:
    assert a100_plan.assumptions.count(A100_FP8) == 1  # every service is fp8: said once

"""The default stack is the median published run, not the best (issue 28, point 2), and every profile
says which published rows its values rest on."""

from __future__ import annotations

import json
import statistics

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import search_training
from lightspeed.sol.core.serving_stacks import load_serving_stacks
from lightspeed.sol.core.stacks import default_stack_name, load_stack, load_stacks
from lightspeed.sol.core.uncertainty import speed_residual
from lightspeed.sol.validation.predict_runs import predict_run
from lightspeed.sol.validation.structured import PublishedRun, load_published_runs
from lightspeed.tour.scenarios import llama3_405b_training
from lightspeed.workload import ModelRegistry

# The highest MFU published for a BF16 run on H100 among the shipped rows: NVIDIA dgxc-benchmarking
# v25.04, Llama 3.1 70B on 2,048 H100, 54.32% (row T108).
MAX_PUBLISHED_H100_BF16_MFU = 0.5432


@pytest.fixture(scope="module")
def runs(catalog: Catalog, models: ModelRegistry) -> tuple[PublishedRun, ...]:
    return load_published_runs(catalog=catalog, models=models)


def test_the_default_is_the_median_of_published_runs(
    runs: tuple[PublishedRun, ...], catalog: Catalog
) -> None:
    default = load_stack()
    assert default.name == default_stack_name() == "published-median"
    modern = [run for run in runs if run.training is not None and load_stack(run.stack).from_year >= 2023]
    assert set(default.fitted_on) == {run.id for run in modern}
    # Every 2023-26 training row predicted on the default profile: half ran faster than predicted,
    # half slower (within one row: the fit's grid is 0.0125 wide).
    residuals = [
        speed_residual(run.metric, run.measured, predict_run(run, catalog, stack=default).predicted or 0.0)
        for run in modern
    ]
    faster = sum(residual > 0 for residual in residuals)
    assert abs(faster - len(residuals) / 2) <= 1.5
    assert abs(statistics.median(residuals)) < 0.02
    # It does not come from the best rows: below the kernel efficiency the named stacks share.
    assert default.kernel_efficiency < load_stack("megatron-core-2025").kernel_efficiency


def test_metas_405b_plans_on_the_default_stack(catalog: Catalog, models: ModelRegistry) -> None:
    # Llama 3 paper, Table 4: 430 / 400 / 380 TFLOP/s per GPU (8K tokens on 8,192 and 16,384 H100;
    # 131K tokens on 16,384 with CP16), counted as Meta counts them (6N + full attention).
    results = llama3_405b_training(catalog, models)
    for (estimate, _), published in zip(results, (430.0, 400.0, 380.0), strict=True):
        assert estimate.stack == default_stack_name()
        assert estimate.tflop_per_s_per_gpu == pytest.approx(published, rel=0.10)
        assert estimate.fits


def test_the_best_70b_plan_is_not_above_any_published_mfu(catalog: Catalog, models: ModelRegistry) -> None:
    result = search_training(
        model=models.get("llama-3-70b"),
        cluster=catalog.cluster("dgx-h100", num_accelerators=64),
        global_batch_size=128,
        seq_len=8192,
        top=1,
    )
    assert result.plans[0].stack == default_stack_name()
    assert result.plans[0].mfu < MAX_PUBLISHED_H100_BF16_MFU  # was 61.5% on megatron-core-2025 at 0.95


def test_every_profile_lists_the_rows_its_values_rest_on(runs: tuple[PublishedRun, ...]) -> None:
    ids = {run.id for run in runs}
    profiles = [*load_stacks().values(), *load_serving_stacks().values()]
    for profile in profiles:
        assert set(profile.fitted_on) <= ids, profile.name
        # validated_on: exactly the rows that ran on the profile
        assert set(profile.validated_on) == {run.id for run in runs if run.stack == profile.name}, (
            profile.name
        )
    vllm = load_serving_stacks()["vllm-2025"]
    assert vllm.validated_on == ()
    assert "none of them run on this profile" in vllm.fit_note()


def test_plan_train_and_plan_infer_say_what_the_profile_is_fitted_on(run_cli) -> None:  # type: ignore[no-untyped-def]
    train = run_cli(
        "plan",
        "train",
        "--model",
        "llama-3-8b",
        "--system",
        "dgx-h100",
        "--global-batch",
        "64",
        "--zero",
        "2",
        "--json",
    )
    assert train.code == 0, train.err
    assumptions = json.loads(train.out)["assumptions"]
    line = next(text for text in assumptions if text.startswith("software stack 'published-median'"))
    assert f"fitted on {len(load_stack().fitted_on)} published rows" in line
    infer = run_cli(
        "plan",
        "infer",
        "--model",
        "llama-3-8b",
        "--system",
        "dgx-h100",
        "--gpus",
        "1",
        "--serving",
        "vllm-2025",
        "--json",
    )
    assert infer.code == 0, infer.err
    text = " ".join(json.loads(infer.out)["assumptions"])
    assert "serving stack 'vllm-2025'" in text
    assert "none of them run on this profile" in text

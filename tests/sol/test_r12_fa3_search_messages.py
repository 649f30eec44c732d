"""Round 12, FA3: what ``plan train`` says when a batch does not split, and what ``search train``
says of a named plan and of plans that are one plan spelled twice.

1. A micro-batch that does not divide each replica's share is named as the cause (the global batch
   already splits over the replicas), and no "leave a degree free" when every degree was free.
2. A named plan that does not fit says so against the GPU's memory and how fast it would be, with
   no "within the model's error" (it cannot run) and no negative "the best is -5.5% faster".
3. A named plan that cannot exist is refused beside the search's results, its fix written as a
   ``--compare-plan`` writes it (``dp=16``, ``zero=1``), not as ``plan train``'s flags.
4. 'partial' recomputation that recomputes every layer is the 'full' plan: listed once, with a note.
"""

from __future__ import annotations

import json

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol import TrainingPlan, estimate_training
from lightspeed.sol.config import PLAN_KEYS
from lightspeed.sol.train.batch import split_batch
from lightspeed.sol.train.ranking import COMPARE_PLAN_FLAGS
from lightspeed.sol.train.search import search_training
from lightspeed.workload import ModelRegistry

SEARCH_70B = ["search", "train", "--model", "llama-3-70b", "--system", "dgx-h100", "--gpus", "64",
              "--global-batch", "128", "--seq", "8192"]  # fmt: skip
DEGREES = ("tp", "pp", "cp", "dp")


# --- 1: the micro-batch, not the global batch --------------------------------------------------------


def test_a_micro_batch_that_does_not_divide_the_share_is_named(models: ModelRegistry) -> None:
    # 16 sequences over dp=8: 2 per replica, which a micro-batch of 3 does not divide. Every dp the
    # free degrees give on 8 GPUs (1, 2, 4, 8) leaves 16/dp, a power of two: never a multiple of 3.
    plan = TrainingPlan(tp=1, pp=1, cp=1, dp=8, global_batch_size=16, micro_batch_size=3, seq_len=4096)
    with pytest.raises(InvalidPlanError) as raised:
        split_batch(plan, models.get("llama-3-8b"), free=DEGREES)
    message = str(raised.value)
    assert "micro-batch 3 does not divide the 2 sequences per replica" in message
    assert "try micro-batch size 2" in message  # the divisors of 2 are 1 and 2; 2 is nearest 3
    assert "multiple of 24" in message  # 8 replicas x 3 sequences a micro-batch
    assert "multiple of 8 (e.g. 16)" not in message  # the batch already given is no fix


def test_the_cli_names_the_micro_batch_with_the_degrees_left_free(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--global-batch", "16",
                     "--micro-batch", "3")  # fmt: skip
    assert result.code == 2
    assert "micro-batch 3 does not divide the 2 sequences per replica" in result.err
    assert "(e.g. 16)" not in result.err
    assert "Traceback" not in result.err


def test_no_leave_a_degree_free_when_every_setting_was_free(models: ModelRegistry) -> None:
    # 1,000 sequences on 10,000,000 GPUs: dp >= 10^7 / (32 x 32 x 16) = 610 (tp divides 32 heads, pp the
    # 32 layers, cp at most 16) and dp must divide 1,000, so dp = 1,000 and tp x pp x cp = 10,000 = 2^4 x 5^4:
    # no power-of-two TP or CP and no PP of at most 32 layers holds the 5^4. Nothing is left to free.
    gpus = 10_000_000
    plan = TrainingPlan(dp=gpus, global_batch_size=1000, seq_len=4096)
    with pytest.raises(InvalidPlanError) as raised:
        split_batch(plan, models.get("llama-3-8b"), free=(*DEGREES, "micro_batch_size"))
    message = str(raised.value)
    assert "leave" not in message
    assert "fewer than 10000000 GPUs" in message


def test_a_pinned_degree_is_named_as_the_one_to_free(models: ModelRegistry) -> None:
    # 20 sequences over dp=8 (tp, pp, cp pinned at 1): 2.5 per replica
    plan = TrainingPlan(tp=1, pp=1, cp=1, dp=8, global_batch_size=20, seq_len=4096)
    with pytest.raises(InvalidPlanError) as raised:
        split_batch(plan, models.get("llama-3-8b"), free=("dp", "micro_batch_size"))
    message = str(raised.value)
    assert "global batch 20 does not split over dp=8 (2.5 sequences per replica)" in message
    assert "leave tp or pp or cp free" in message


# --- 2: a named plan that does not fit ---------------------------------------------------------------


def test_a_named_plan_that_does_not_fit_says_how_fast_it_would_be(run_cli) -> None:  # type: ignore[no-untyped-def]
    # 70B at tp=2 and no ZeRO keeps every weight, gradient and Adam state on 32 replicas: far past 80 GB
    text = run_cli(*SEARCH_70B, "--compare-plan", "tp=2,pp=1,zero=0")
    assert text.code == 0, text.err
    line = " ".join(text.out.split("named plan:", 2)[-1].split())
    assert line.startswith("does not fit: needs")
    assert "usable" in line
    assert "within the model's error" not in line
    assert "-" not in line.split("usable")[1]  # no negative margin
    payload = json.loads(run_cli(*SEARCH_70B, "--compare-plan", "tp=2,pp=1,zero=0", "--json").out)
    named, best = payload["compared"], payload["plans"][0]
    assert named["rank"] is None
    # no memory for it, but no wait for a pipeline or TP exchange on every layer either: it is faster
    assert named["step_time_s"] < best["step_time_s"]
    # faster is a ratio of speeds: the best's step over the named plan's, minus one
    faster = best["step_time_s"] / named["step_time_s"] - 1.0
    shorter = 1.0 - named["step_time_s"] / best["step_time_s"]
    assert f"would be {faster:.1%} faster per step than the best" in line
    assert f"a step {shorter:.1%} shorter" in line


# --- 3: a named plan that cannot exist ---------------------------------------------------------------


def test_a_named_plan_on_the_wrong_gpu_count_is_refused_in_its_own_syntax(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # refused before the search runs (round 15: it was refused beside the results)
    with pytest.raises(InvalidPlanError, match=r"^--compare-plan: .*dp=16") as raised:  # 64 / (2 x 2)
        search_training(
            model=models.get("llama-3-70b"),
            cluster=catalog.cluster("dgx-h100", num_accelerators=64),
            global_batch_size=128,
            seq_len=8192,
            compare_plan=TrainingPlan(tp=2, pp=2, dp=3),
        )
    assert "--dp" not in str(raised.value)


def test_a_named_plan_the_stack_refuses_is_refused_beside_the_results(run_cli) -> None:  # type: ignore[no-untyped-def]
    # refused in one line before the search runs (round 15: it ran the search, exit 0)
    result = run_cli(*SEARCH_70B, "--compare-plan", "zero=3,pp=2")
    assert result.code == 2
    assert result.out == ""
    assert result.err.count("\n") == 1
    assert "--compare-plan:" in result.err
    assert "zero=1" in result.err
    assert "pp=1" in result.err
    assert "--zero" not in result.err
    assert "--pp" not in result.err


def test_every_flag_rewritten_is_a_compare_plan_key() -> None:
    assert set(COMPARE_PLAN_FLAGS) <= set(PLAN_KEYS)


# --- 4: one plan spelled twice -----------------------------------------------------------------------


def test_partial_recompute_of_every_layer_is_listed_once_as_full(
    catalog: Catalog, models: ModelRegistry
) -> None:
    model = models.get("llama-3-70b")
    cluster = catalog.cluster("dgx-h100", num_accelerators=64)
    stack = "megatron-deepspeed-2022"
    result = search_training(
        model=model, cluster=cluster, global_batch_size=128, seq_len=8192, top=8, stack=stack
    )
    # one plan: the same settings but the recompute policy, and the same step and memory to the byte
    shown = [
        (
            (
                e.plan.tp,
                e.plan.pp,
                e.plan.dp,
                e.plan.cp,
                e.plan.vpp,
                e.plan.zero_stage,
                e.plan.micro_batch_size,
            ),
            (e.step_time_s, e.memory_per_gpu_bytes),
        )
        for e in result.plans
    ]
    assert len(set(shown)) == len(shown)
    assert any("recompute=partial merged" in note and "recompute=full" in note for note in result.notes)


def test_partial_that_recomputes_every_layer_is_the_full_plan(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # the premise of the merge: 70B on 64 H100 at tp=4 pp=4, one micro-batch of 8K: the activations of
    # 20 layers x 4 micro-batches in flight do not fit beside the weights and states unless every
    # layer is recomputed, so 'partial' recomputes all of them; the step and memory are full's
    model = models.get("llama-3-70b")
    cluster = catalog.cluster("dgx-h100", num_accelerators=64)
    base = TrainingPlan(tp=4, pp=4, dp=4, zero_stage=1, global_batch_size=128, seq_len=8192)
    partial, full = (
        estimate_training(
            model=model,
            cluster=cluster,
            plan=base.with_changes(recompute=policy),
            stack="megatron-deepspeed-2022",
        )
        for policy in ("partial", "full")
    )
    assert partial.step_time_s == full.step_time_s
    assert partial.memory_per_gpu_bytes == full.memory_per_gpu_bytes

"""Bad values passed from Python get the command line's one-line refusals, not figures made of
them or raw Python errors (F4 defects 2, 3, 5 and 6)."""

from __future__ import annotations

import math
from typing import Any

import pytest

import lightspeed as ls
from lightspeed.errors import InvalidPlanError, PlanMismatchError, UserInputError
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.workload import training_flop


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: ls.ServingLoad(input_tokens=1000.5, output_tokens=10), "input_tokens must be a whole"),
        (lambda: ls.ServingLoad(1000, 10, concurrency=1.5), "concurrency must be a whole number"),
        (lambda: ls.ServingLoad(input_tokens="1000", output_tokens=10), "(got '1000', a str)"),
        (lambda: ls.ServingLoad(1000, 10, arrival_rate_per_s=math.nan), "arrival_rate_per_s must be"),
        (lambda: InferencePlan(tp=1.5), "tp must be a whole number"),
        (lambda: InferencePlan(max_batch=math.nan), "max_batch must be a whole number"),
    ],
)
def test_a_load_or_plan_of_bad_numbers_is_a_plan_error(make: Any, words: str) -> None:
    with pytest.raises(InvalidPlanError) as caught:
        make()
    assert words in str(caught.value)


def test_plan_memory_refuses_a_nan_data_parallel_size() -> None:
    with pytest.raises(UserInputError, match=r"dp must be a whole number >= 1 .*\(got nan, a float\)"):
        ls.plan_memory(model=ls.model("llama-3-8b"), dp=float("nan"))


@pytest.mark.parametrize("num_gpus", [math.nan, 1.5, True, "8", 0])
def test_cluster_refuses_a_count_that_is_no_whole_number(num_gpus: Any) -> None:
    with pytest.raises(InvalidPlanError, match="num_gpus must be a whole number >= 1"):
        ls.cluster("dgx-h100", num_gpus=num_gpus)


def test_cluster_refuses_what_no_whole_nodes_hold_as_gpus_does() -> None:
    """12 GPUs of 8-GPU nodes used to become 16 quietly; --gpus 12 is refused."""
    with pytest.raises(PlanMismatchError, match="12 GPUs are not a whole number of dgx-h100 nodes"):
        ls.cluster("dgx-h100", num_gpus=12)
    assert ls.cluster("dgx-h100", num_gpus=4).num_accelerators == 4  # part of one node (round 15: it was 8)
    assert ls.cluster("dgx-h100", num_gpus=16).num_nodes == 2


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: ls.LengthDistribution.fixed(1.5), "tokens must be a whole number"),
        (lambda: ls.LengthDistribution.fixed(float("nan")), "(got nan, a float)"),
        (lambda: ls.ServingWorkload(num_requests=1.5), "num_requests must be a whole number"),
        (lambda: ls.ServingWorkload(num_requests=float("nan")), "num_requests must be a whole number"),
        (lambda: ls.ServingWorkload(warmup_requests=-1), "warmup_requests must be a whole number >= 0"),
        (lambda: ls.ServingWorkload(prefix_hit_rate=math.nan), "prefix_hit_rate must be a finite number"),
    ],
)
def test_a_simulated_workload_of_bad_numbers_names_the_field(make: Any, words: str) -> None:
    with pytest.raises(UserInputError) as caught:
        make()
    assert words in str(caught.value)
    assert "--requests (nan)" not in str(caught.value)


def test_warmup_that_leaves_nothing_names_the_python_fields_too() -> None:
    with pytest.raises(UserInputError, match="warmup_requests below num_requests"):
        ls.ServingWorkload(num_requests=10, warmup_requests=10)


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: ls.hardware(None), "a hardware name must be text (such as 'h100-sxm'"),
        (lambda: ls.hardware(123), "not the int 123"),
        (lambda: ls.model(None), "a model name must be text (such as 'llama-3-70b'"),
        (lambda: ls.cluster(8), "a cluster must be a system name (a spec such as 9xdgx-h100@ib-ndr"),
        (lambda: ls.run({"model": "llama-3-8b"}), "run's configuration must be a job configuration"),
        (lambda: ls.run(None), "must be a job configuration (TrainingConfig(**settings)"),
    ],
)
def test_a_wrong_type_is_one_line_not_a_python_error(call: Any, words: str) -> None:
    with pytest.raises(UserInputError) as caught:
        call()
    assert words in str(caught.value)


@pytest.mark.parametrize(
    ("keywords", "words"),
    [
        ({"num_tokens": math.nan}, "num_tokens must be a finite number > 0"),
        ({"num_tokens": math.inf}, "num_tokens must be a finite number > 0"),
        ({"num_tokens": 1e12, "claimed_flop": math.nan}, "claimed_flop must be a finite number > 0"),
        ({"num_tokens": 1e12, "seq_len": 0}, "seq_len must be a whole number >= 1"),
        ({"num_tokens": 1e12, "tolerance": -1}, "tolerance must be a finite number >= 0"),
    ],
)
def test_training_flop_refuses_bad_numbers(keywords: dict[str, Any], words: str) -> None:
    with pytest.raises(UserInputError) as caught:
        training_flop(ls.model("llama-3-8b"), **keywords)
    assert words in str(caught.value)


def test_training_flop_keeps_an_explicit_sequence_length() -> None:
    """``seq_len`` given is used, not the pretraining length: 6N + attention at s=1 is 6N plus
    12·L·H·s-scale attention terms that grow with s, so s=1 counts less than s=8192."""
    spec = ls.model("llama-3-8b")
    short = training_flop(spec, num_tokens=1e12, seq_len=1, convention="6N+attention")
    long = training_flop(spec, num_tokens=1e12, seq_len=8192, convention="6N+attention")
    assert short.total_flop < long.total_flop


@pytest.mark.parametrize("bound", [math.nan, 0.0, -1.0, math.inf])
@pytest.mark.parametrize("name", ["max_ttft_s", "max_tpot_s"])
def test_search_inference_refuses_the_bound_itself(name: str, bound: float) -> None:
    with pytest.raises(InvalidPlanError, match=f"{name} must be a finite number > 0"):
        ls.search_inference(
            model=ls.model("llama-3-8b"),
            cluster=ls.cluster("dgx-h100"),
            load=ls.ServingLoad(1024, 256),
            **{name: bound},
        )


def test_a_name_where_the_engine_takes_the_thing_itself_says_how_to_make_it() -> None:
    # estimate_training(model="llama-3-70b") had been AttributeError: 'str' object has no attribute ...
    cluster = ls.cluster("dgx-h100", num_gpus=8)
    with pytest.raises(UserInputError, match=r"model must be a TransformerSpec \(lightspeed.model"):
        ls.estimate_training(model="llama-3-70b", cluster=cluster, plan=ls.TrainingPlan())
    with pytest.raises(UserInputError, match="cluster must be a Cluster"):
        ls.estimate_training(model=ls.model("llama-3-8b"), cluster="dgx-h100", plan=ls.TrainingPlan())
    with pytest.raises(UserInputError, match="plan must be a TrainingPlan"):
        ls.estimate_training(model=ls.model("llama-3-8b"), cluster=cluster, plan={"tp": 8})
    with pytest.raises(UserInputError, match="load must be a ServingLoad"):
        ls.estimate_inference(
            model=ls.model("llama-3-8b"), cluster=cluster, plan=ls.InferencePlan(), load=None
        )
    with pytest.raises(UserInputError, match="model must be a TransformerSpec"):
        ls.plan_memory(model="llama-3-70b")

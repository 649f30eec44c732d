"""Round 15, helper P: the curated API (``import lightspeed as ls``) as the CLI behaves.

Part of one node is that many GPUs, a search's serving precision follows ``--precision``'s rule
(``released`` by default), a wrong kind of argument is one ``UserInputError`` naming it, and
``dir(ls)`` lists the public names.
"""

from __future__ import annotations

from typing import Any

import pytest

import lightspeed as ls
from lightspeed.errors import InvalidPlanError, PlanMismatchError, UserInputError

# a short request: every search below runs in well under a second
LOAD = ls.ServingLoad(input_tokens=512, output_tokens=64)


@pytest.mark.parametrize("num_gpus", [1, 2, 3, 4])
def test_part_of_one_node_is_that_many_gpus(num_gpus: int) -> None:
    """`--system dgx-h100 --gpus 4` plans for 4 GPUs; ls.cluster(num_gpus=4) gave all 8."""
    cluster = ls.cluster("dgx-h100", num_gpus=num_gpus)
    assert (cluster.num_nodes, cluster.num_accelerators) == (1, num_gpus)
    # DGX H100: one 400G NIC per GPU (NVIDIA's DGX H100 user guide): the GPUs used keep theirs
    assert cluster.nics_per_accelerator == 1.0
    assert cluster.system.scale_up_domain_size == num_gpus


def test_a_named_fabric_keeps_its_nics_per_gpu_on_part_of_a_node() -> None:
    cluster = ls.cluster("1xdgx-h100@ethernet-200g:2nic", num_gpus=4)  # 2 x 25 GB/s under PCIe's 63
    assert cluster.num_accelerators == 4
    assert cluster.nics_per_accelerator == 2.0  # 2 per GPU as written, 8 NICs for the 4 GPUs


def test_searches_and_estimates_on_part_of_a_node_use_its_gpus() -> None:
    model = ls.model("llama-3-8b")
    four = ls.cluster("dgx-h100", num_gpus=4)
    training = ls.search_training(model=model, cluster=four, global_batch_size=64, seq_len=4096, top=1)
    assert training.num_gpus == 4
    assert training.plans[0].plan.num_gpus == 4
    serving = ls.search_inference(model=model, cluster=four, load=LOAD, precision="fp8")
    assert serving.num_gpus == 4
    assert serving.best.plan.num_gpus == 4
    one = ls.cluster("dgx-h100", num_gpus=1)
    with pytest.raises(PlanMismatchError, match="8 GPUs, not the 1"):
        ls.estimate_training(model=model, cluster=one, plan=ls.TrainingPlan(tp=8, global_batch_size=8))
    with pytest.raises(InvalidPlanError, match="needs 2 GPUs"):
        ls.estimate_inference(model=model, cluster=one, plan=ls.InferencePlan(tp=2), load=LOAD)


def test_a_count_of_no_whole_nodes_names_the_keyword_that_matches() -> None:
    with pytest.raises(PlanMismatchError, match=r"the plan that matches: num_gpus=16$") as caught:
        ls.cluster("dgx-h100", num_gpus=12)
    assert caught.value.nearest_plan == {"num_gpus": 16}


def test_search_inference_serves_the_released_format_by_default() -> None:
    """gpt-oss-120b is published with MXFP4 experts (OpenAI's model card: it runs on one 80 GB GPU),
    where 117B parameters in BF16 are 234 GB; the CLI (``--precision released``) runs it so."""
    oss = ls.model("gpt-oss-120b")
    one = ls.cluster("dgx-h100", num_gpus=1)
    assert ls.search_inference(model=oss, cluster=one, load=LOAD).best.plan.precision == "mxfp4"
    assert (
        ls.search_inference(model=oss, cluster=one, load=LOAD, precision="released").best.plan.precision
        == "mxfp4"
    )
    # Hopper's narrowest tensor-core format is FP8 (no FP4 units before Blackwell): 117 GB, a node
    node = ls.cluster("dgx-h100")
    assert (
        ls.search_inference(model=oss, cluster=node, load=LOAD, precision="auto").best.plan.precision == "fp8"
    )


def test_compare_systems_takes_released_for_serving() -> None:
    comparison = ls.compare_systems(
        model=ls.model("gpt-oss-120b"),
        clusters=[ls.cluster("dgx-h100")],
        workload="infer",
        precisions=["released"],
        options={"load": LOAD},
    )
    assert comparison.results[0].precision == "mxfp4"


def _clusters() -> list[Any]:
    return [ls.cluster("dgx-h100")]


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (
            lambda: ls.search_inference(model="llama-3-8b", cluster=ls.cluster("dgx-h100"), load=LOAD),
            "model must be a TransformerSpec",
        ),
        (
            lambda: ls.search_inference(model=ls.model("llama-3-8b"), cluster="dgx-h100", load=LOAD),
            "cluster must be a Cluster",
        ),
        (
            lambda: ls.search_inference(
                model=ls.model("llama-3-8b"), cluster=ls.cluster("dgx-h100"), load=None
            ),
            "load must be a ServingLoad",
        ),
        (
            lambda: ls.search_inference(
                model=ls.model("llama-3-8b"), cluster=ls.cluster("dgx-h100"), load=LOAD, precision=8
            ),
            "precision must be text",
        ),
        (
            lambda: ls.compare_systems(model=ls.model("llama-3-8b"), clusters="dgx-h100", workload="infer"),
            "clusters must be a list of clusters",
        ),
        (
            lambda: ls.compare_systems(model=ls.model("llama-3-8b"), clusters=["dgx-h100"], workload="infer"),
            "each of clusters must be a cluster",
        ),
        (
            lambda: ls.compare_systems(model=ls.model("llama-3-8b"), clusters=_clusters(), workload="infer"),
            "workload 'infer' needs options['load']",
        ),
        (
            lambda: ls.compare_systems(
                model=ls.model("llama-3-8b"),
                clusters=_clusters(),
                workload="train",
                options={"seq_len": 4096},
            ),
            "workload 'train' needs options['global_batch']",
        ),
        (
            lambda: ls.compare_systems(
                model=ls.model("llama-3-8b"),
                clusters=_clusters(),
                workload="train",
                options={"global_batch": 64},
            ),
            "workload 'train' needs options['seq_len']",
        ),
        (
            lambda: ls.compare_systems(
                model=ls.model("llama-3-8b"), clusters=_clusters(), workload="infer", options={"lod": LOAD}
            ),
            "compare_systems has no option 'lod'",
        ),
        (
            lambda: ls.compare_systems(
                model=ls.model("llama-3-8b"), clusters=_clusters(), workload="infer", options=[("load", LOAD)]
            ),
            "options must be a dict",
        ),
        (
            lambda: ls.ArrivalProcess.poisson("5"),
            "rate_per_s (requests per second) must be a finite number > 0",
        ),
        (lambda: ls.ArrivalProcess.gamma(2.0, "1"), "cv must be a finite number > 0"),
        (lambda: ls.ArrivalProcess.closed("4"), "concurrency (closed-loop users"),
        (
            lambda: ls.ServiceLevel(ttft_s="1"),
            "ttft_s (seconds) must be a finite number > 0 (got '1', a str)",
        ),
        (lambda: ls.ServiceLevel(tpot_s=0.05, attainment="0.9"), "SLO attainment"),
        (lambda: ls.ServiceLevel(tpot_s=0.05, per_limit="yes"), "per_limit must be a bool"),
        (lambda: ls.ServingWorkload(input_lengths=100), "input_lengths must be a LengthDistribution"),
        (lambda: ls.ServingWorkload(output_lengths=None), "output_lengths must be a LengthDistribution"),
        (lambda: ls.ServingWorkload(arrivals=None), "arrivals must be an ArrivalProcess"),
    ],
)
def test_a_wrong_kind_of_argument_is_one_user_error(call: Any, words: str) -> None:
    with pytest.raises(UserInputError) as caught:
        call()
    assert words in str(caught.value)


def test_bad_values_keep_their_refusals() -> None:
    with pytest.raises(UserInputError, match="finite number > 0"):
        ls.ServiceLevel(ttft_s=float("nan"))
    with pytest.raises(UserInputError, match="> 0 and <= 1"):
        ls.ServiceLevel(ttft_s=1.0, attainment=1.5)
    with pytest.raises(UserInputError, match="concurrency of at least 1"):
        ls.ArrivalProcess("closed")
    assert ls.ServiceLevel(ttft_s=2, attainment=1).attainment == 1  # whole numbers are numbers


def test_training_memory_counts_fp32_gradients_as_the_docstring_says() -> None:
    """BF16 mixed precision with Adam (ZeRO paper, section 3.1: 2 + 2 + 12 = 16 B/param with
    16-bit gradients): lightspeed keeps FP32 main gradients, as Megatron-LM does by default, so
    2 (weights) + 4 (gradients) + 4 (FP32 master) + 8 (two FP32 moments) = 18 B/param."""
    plan = ls.plan_memory(model=ls.model("llama-3-8b"), precision="bf16", training=True)
    assert plan.bytes_per_param == 2 + 4 + 4 + 8
    doc = ls.plan_memory.__doc__ or ""
    assert "store weights and\n    gradients in it" not in doc
    assert "FP32 gradients" in doc


def test_dir_lists_the_public_names_and_subpackages_only() -> None:
    names = dir(ls)
    assert set(ls.__all__) <= set(names)
    assert {"sol", "trace", "goodput", "catalog", "workload"} <= set(names)
    assert not {"TYPE_CHECKING", "attach", "logging", "annotations"} & set(names)
    assert all(hasattr(ls, name) for name in names)

"""Sequences past the model's context, 4-bit KV caches a GPU lacks, and the plans a training
search leaves out because the stack refuses them, in the engines.

Golden figures: Llama 3 8B's context is 8,192 positions (meta-llama/Meta-Llama-3-8B
config.json, max_position_embeddings, RoPE); OPT-66B's and GPT-3's positions are a learned
table of 2,048 (facebook/opt-66b config.json; Brown et al. 2020, n_ctx). FP4 tensor cores
exist from Blackwell (B200) on; H100 has FP8 and INT8, A100 INT8 but no FP8 (NVIDIA's
datasheets).
"""

from __future__ import annotations

import pytest

from lightspeed.catalog import load_catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol.infer import InferencePlan, ServingLoad, estimate_inference, search_inference
from lightspeed.sol.infer.plan import resolve_precisions
from lightspeed.sol.train import SearchSpace, TrainingPlan, estimate_training, search_training
from lightspeed.sol.train.plan import validate_plan
from lightspeed.workload import load_models


def _space(pp: tuple[int, ...]) -> SearchSpace:
    """One TP, CP, EP, VPP, micro-batch, recompute and schedule; every ZeRO stage; ``pp``."""
    return SearchSpace(
        tp=(1,),
        cp=(1,),
        pp=pp,
        ep=(1,),
        vpp=(1,),
        micro_batch=(1,),
        recompute=("none",),
        zero_stage=(0, 1, 2, 3),
        schedules=("1f1b",),
    )


def test_a_training_sequence_past_a_learned_table_is_refused() -> None:
    gpt3 = load_models().get("gpt-3-175b")
    validate_plan(TrainingPlan(seq_len=2048), gpt3)  # the table's last position runs
    with pytest.raises(InvalidPlanError, match="learned position table of 2,048 entries"):
        validate_plan(TrainingPlan(seq_len=2049), gpt3)


def test_a_training_estimate_notes_a_rope_sequence_past_the_context() -> None:
    cluster = load_catalog().cluster("dgx-h100")
    llama = load_models().get("llama-3-8b")
    plan = TrainingPlan(tp=8, global_batch_size=8, seq_len=16384)
    estimate = estimate_training(model=llama, cluster=cluster, plan=plan, check_fit=False)
    assert (
        estimate.assumptions[0]
        == "seq_len 16,384 is above llama-3-8b's context of 8,192 tokens (max_seq_len)"
    )
    within = estimate_training(model=llama, cluster=cluster, plan=plan.with_changes(seq_len=8192))
    assert not any("context of" in line for line in within.assumptions)


def test_an_inference_estimate_notes_a_request_past_the_context() -> None:
    cluster = load_catalog().cluster("dgx-h100", num_accelerators=1)
    llama = load_models().get("llama-3-8b")

    def assumptions(isl: int, osl: int) -> tuple[str, ...]:
        estimate = estimate_inference(
            model=llama, cluster=cluster, plan=InferencePlan(), load=ServingLoad(isl, osl)
        )
        return estimate.assumptions

    assert (
        assumptions(8000, 193)[0]
        == "isl+osl 8,193 is above llama-3-8b's context of 8,192 tokens (max_seq_len)"
    )
    assert not any("context of" in line for line in assumptions(8000, 192))


def test_an_inference_search_past_a_learned_table_is_refused() -> None:
    with pytest.raises(InvalidPlanError, match="isl\\+osl 2,049 is above opt-66b's learned position table"):
        search_inference(
            model=load_models().get("opt-66b"),
            cluster=load_catalog().cluster("dgx-h100"),
            load=ServingLoad(2000, 49),
        )


@pytest.mark.parametrize(
    ("gpu", "kv", "narrowest"),
    [("h100-sxm", "nvfp4", "fp8"), ("h100-sxm", "fp4", "fp8"), ("a100-sxm", "nvfp4", "int8")],
)
def test_a_4_bit_kv_cache_needs_fp4(gpu: str, kv: str, narrowest: str) -> None:
    catalog = load_catalog()
    with pytest.raises(
        InvalidPlanError, match=f"narrowest KV format is {narrowest}: use --kv-precision {narrowest}"
    ):
        resolve_precisions(InferencePlan(kv_precision=kv), catalog.accelerator(gpu))
    # the same cache on Blackwell, and an 8-bit one on the same GPU (vLLM and SGLang dequantize
    # an FP8 cache on GPUs without FP8 tensor cores), pass
    assert resolve_precisions(InferencePlan(kv_precision=kv), catalog.accelerator("b200")).kv_cache == kv
    assert resolve_precisions(InferencePlan(kv_precision="fp8"), catalog.accelerator(gpu)).kv_cache == "fp8"


def test_search_counts_the_plans_deepspeed_refuses() -> None:
    # 8 GPUs, batch 8, micro-batch 1: pp 1 (dp 8) and pp 2 (dp 4) both split the batch, so
    # 2 pipelines x 4 ZeRO stages = 8 plans, of which DeepSpeed's pipeline engine refuses
    # ZeRO-2 and ZeRO-3 with pp=2: 2 left out, 6 evaluated
    result = search_training(
        model=load_models().get("llama-3-8b"),
        cluster=load_catalog().cluster("dgx-h100"),
        global_batch_size=8,
        seq_len=4096,
        space=_space((1, 2)),
        stack="megatron-deepspeed-2022",
        require_fit=False,
    )
    assert result.num_plans_evaluated == 6
    refused = [note for note in result.notes if "left out" in note]
    assert len(refused) == 1
    assert refused[0].startswith(
        "2 plans with ZeRO-2/3 and pp>1 left out: DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3"
    )


def test_search_notes_each_reason_apart() -> None:
    # torchtitan's FSDP has no ZeRO-1 (refused with and without a pipeline: 2 plans), and
    # does not reshard under a pipeline (ZeRO-3 with pp=2: 1 plan); 8 - 3 = 5 evaluated
    result = search_training(
        model=load_models().get("llama-3-8b"),
        cluster=load_catalog().cluster("dgx-h100"),
        global_batch_size=8,
        seq_len=4096,
        space=_space((1, 2)),
        stack="torchtitan-2024",
        require_fit=False,
    )
    assert result.num_plans_evaluated == 5
    refused = sorted(note for note in result.notes if "left out" in note)
    assert len(refused) == 2
    assert refused[0].startswith("1 plan with ZeRO-3 and pp>1 left out: torchtitan does not reshard")
    assert refused[1].startswith(
        "2 plans with ZeRO-1 left out: FSDP and FSDP2 have no optimizer-only sharding"
    )


def test_search_notes_a_sequence_past_the_context() -> None:
    result = search_training(
        model=load_models().get("llama-3-8b"),
        cluster=load_catalog().cluster("dgx-h100"),
        global_batch_size=8,
        seq_len=16384,
        space=_space((1,)),
        stack="megatron-core-2025",
        require_fit=False,
    )
    assert result.notes[0] == "seq_len 16,384 is above llama-3-8b's context of 8,192 tokens (max_seq_len)"

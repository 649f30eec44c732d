"""Memory rules per stack (issue 28, point 1): bytes per parameter by hand, refusals, the search.

The hand calculations below follow what each framework's own documentation or code says it keeps:

* Megatron-Core, Distributed Optimizer guide (docs.nvidia.com/megatron-core/developer-guide/latest/
  api-guide/dist_optimizer.html): "bf16 parameters, fp32 gradients: 18 bytes without the distributed
  optimizer, 6 + 12/d with it"; the contiguous fp32 gradient buffer is kept whole. Megatron-FSDP's
  ``optim_grads`` shards gradients too, and ``MegatronFSDP.no_sync`` does not defer their
  reduce-scatter ("for grads shard mode there will actually always be gradient sync happening").
* DeepSpeed: ``PipelineEngine.__init__`` asserts ``zero_optimization_stage() < 2`` ("ZeRO-2 and
  ZeRO-3 are incompatible with pipeline parallelism", deepspeed/runtime/pipe/engine.py); bf16 with
  ZeRO-1 runs ``BF16_Optimizer``, whose ``fp32_groups_gradients_flat`` is a whole fp32 gradient
  buffer beside the partitioned fp32 master weights (deepspeed/runtime/bf16_optimizer.py).
* FSDP2 / torchtitan: ``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)`` over fp32
  parameters (the sharded parameter is the master weight); under pipeline parallelism
  ``reshard_after_forward`` is False by default and PyTorch's pipelining stage turns gradient sync
  off until the last micro-batch, so ``FSDPParam.to_accumulated_grad_if_needed`` accumulates the
  unsharded gradients in fp32. FSDP has no optimizer-only (ZeRO-1) strategy.
"""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol import TrainingPlan, estimate_training, load_stack, load_stacks, search_training
from lightspeed.sol.core.hardware import hardware_for
from lightspeed.sol.core.shapes import layer_shapes
from lightspeed.sol.core.sharding import ZERO_STAGES, load_all_memory_rules, load_memory_rules
from lightspeed.sol.train.grid import grid_from_plans
from lightspeed.sol.train.memory import stage_params, training_memory
from lightspeed.sol.train.search import SearchSpace
from lightspeed.sol.train.step import evaluate_grid
from lightspeed.sol.validation.train_settings import zero_stage_of
from lightspeed.workload import AttentionSpec, ModelRegistry, TransformerSpec

TINY = TransformerSpec(
    name="tiny",
    display_name="tiny dense model",
    num_layers=8,
    hidden_size=1024,
    ffn_hidden_size=4096,
    vocab_size=32000,
    attention=AttentionSpec("mha", 16, 16, 64),
    mlp="swiglu",
    max_seq_len=2048,
)
D = 8  # data-parallel ranks


def _model_state(catalog: Catalog, stack_name: str, zero: int, pp: int) -> tuple[float, float, float]:
    """(bytes of weights + gradients + optimizer per GPU, stage parameters, parameters per layer)."""
    stack = load_stack(stack_name)
    hardware = hardware_for(catalog.cluster("dgx-h100", num_nodes=2), "bf16", stack=stack)
    plan = TrainingPlan(
        pp=pp, dp=D, zero_stage=zero, global_batch_size=8 * D, seq_len=2048, micro_batch_size=1
    ).resolved(stack)
    grid = grid_from_plans([plan])
    params = stage_params(grid, TINY, layer_shapes(TINY))
    memory = training_memory(grid, TINY, layer_shapes(TINY), hardware, 2048, params=params)
    state = float(memory.weights_bytes[0] + memory.gradients_bytes[0] + memory.optimizer_bytes[0])
    total = float(params.dense[0])
    # a layer's parameters: the stage's less its embedding and untied LM head (32,000 x 1,024 each),
    # over its 8 layers (ZeRO-3 gathers whole layers, not the ends)
    ends = 2 * TINY.vocab_size * TINY.hidden_size
    return state, total, (total - ends) / float(params.layers_per_stage[0])


# (stack, ZeRO stage, pipeline size, bytes per parameter at rest with bf16 weights, fp32 grads, Adam 12)
BY_HAND = [
    ("megatron-core-2025", 0, 1, 2 + 4 + 12),  # DDP: 18
    ("megatron-core-2025", 1, 1, 2 + 4 + 12 / D),  # distributed optimizer: 6 + 12/d
    ("megatron-core-2025", 1, 2, 2 + 4 + 12 / D),  # ... the same under a pipeline
    ("megatron-core-2025", 2, 1, 2 + (4 + 12) / D),  # Megatron-FSDP optim_grads: 2 + 16/d
    ("megatron-core-2025", 2, 2, 2 + (4 + 12) / D),
    ("megatron-core-2025", 3, 1, (2 + 4 + 12) / D),  # optim_grads_params: 18/d (+ two gathered layers)
    ("megatron-deepspeed-2022", 1, 2, 2 + 4 + 12 / D),  # BF16_Optimizer: whole fp32 gradient buffer
    ("megatron-deepspeed-2022", 2, 1, 2 + (4 + 12) / D),  # ZeRO-2 without a pipeline
    ("megatron-deepspeed-2022", 3, 1, (2 + 4 + 12) / D),
    ("torchtitan-2024", 0, 1, 4 + 12),  # DDP + autocast: fp32 parameters (the master), fp32 grads, Adam
    ("torchtitan-2024", 2, 1, 2 + (4 + 12) / D),  # reshard_after_forward=False
    ("torchtitan-2024", 2, 2, 2 + 4 + 12 / D),  # under PP: bf16 params gathered, fp32 grads whole
    ("torchtitan-2024", 3, 1, (4 + 12) / D),  # fully_shard: fp32 shard + grads + moments (+ two layers)
]


@pytest.mark.parametrize(("stack", "zero", "pp", "per_param"), BY_HAND)
def test_model_state_is_what_the_framework_keeps(
    catalog: Catalog, stack: str, zero: int, pp: int, per_param: float
) -> None:
    state, params, per_layer = _model_state(catalog, stack, zero, pp)
    gathered = 2 * per_layer * 2.0 if zero == 3 else 0.0  # two layers' bf16 weights gathered at once
    assert state == pytest.approx(per_param * params + gathered, rel=1e-9)


@pytest.mark.parametrize(
    ("stack", "plan", "reason"),
    [
        ("megatron-deepspeed-2022", (2, 2), "incompatible with pipeline parallelism"),
        ("megatron-deepspeed-2022", (3, 2), "incompatible with pipeline parallelism"),
        ("torchtitan-2024", (1, 1), "no optimizer-only sharding"),
        ("torchtitan-2024", (3, 2), "does not reshard FSDP2 parameters after forward"),
        ("megatron-core-2025", (3, 2), "re-gather each stage's weights"),
        ("llm-foundry-2023", (3, 2), "has no pipeline parallelism"),
    ],
)
def test_what_a_framework_cannot_run_is_refused_with_its_reason(
    catalog: Catalog, models: ModelRegistry, stack: str, plan: tuple[int, int], reason: str
) -> None:
    zero, pp = plan
    named = TrainingPlan(pp=pp, dp=8 // pp, zero_stage=zero, global_batch_size=16, seq_len=4096)
    with pytest.raises(InvalidPlanError, match=reason):
        estimate_training(
            model=models.get("llama-3-8b"), cluster=catalog.cluster("dgx-h100"), plan=named, stack=stack
        )


def test_a_refusal_is_one_line_and_exit_code_2(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--pp", "2", "--zero", "2",
        "--global-batch", "16", "--stack", "megatron-deepspeed-2022",
    )  # fmt: skip
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "Traceback" not in result.err
    assert "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism" in result.err


def test_megatron_fsdp_reduces_sharded_gradients_after_every_micro_batch(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # With bf16 gradients the reduce-scatter and the parameter all-gather move the same bytes over
    # the same ring (S each). Without overlap the distributed optimizer costs S + S per step;
    # Megatron-FSDP optim_grads reduce-scatters after each of the m micro-batches: m S + S.
    stack = load_stack("megatron-core-2025")
    hardware = hardware_for(catalog.cluster("dgx-h100", num_nodes=4), "bf16", stack=stack)
    m = 8
    base = TrainingPlan(
        tp=8,
        pp=2,
        dp=2,
        global_batch_size=2 * m,
        seq_len=4096,
        dp_overlap=False,
        grad_reduce_precision="bf16",
    ).resolved(stack)
    plans = [base.with_changes(zero_stage=1), base.with_changes(zero_stage=2)]
    arrays = evaluate_grid(grid_from_plans(plans), models.get("llama-3-70b"), hardware, 4096)
    distributed_optimizer, megatron_fsdp = (float(arrays.parts["dp_comm"][i]) for i in range(2))
    assert megatron_fsdp / distributed_optimizer == pytest.approx((m + 1) / 2, rel=1e-6)


def test_deepspeed_zero1_all_reduces_its_whole_gradient_buffer(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # BF16_Optimizer hands the whole fp32 buffer to an all-reduce (2 (n-1)/n of it on a ring) where
    # Megatron's distributed optimizer reduce-scatters ((n-1)/n): with the same all-gather after it.
    def dp_comm(stack_name: str) -> float:
        stack = load_stack(stack_name)
        hardware = hardware_for(catalog.cluster("dgx-h100", num_nodes=4), "bf16", stack=stack)
        plan = TrainingPlan(
            tp=8, pp=2, dp=2, zero_stage=1, global_batch_size=16, seq_len=4096, dp_overlap=False
        ).resolved(stack)
        arrays = evaluate_grid(grid_from_plans([plan]), models.get("llama-3-70b"), hardware, 4096)
        return float(arrays.parts["dp_comm"][0])

    assert dp_comm("megatron-deepspeed-2022") > dp_comm("megatron-core-2025")


def test_deepspeeds_search_never_pairs_zero_2_or_3_with_a_pipeline(
    catalog: Catalog, models: ModelRegistry
) -> None:
    space = SearchSpace(
        tp=(8,), cp=(1,), pp=(1, 2, 4), ep=(1,), vpp=(1,), micro_batch=(1,),
        recompute=("full",), zero_stage=(0, 1, 2, 3), schedules=("1f1b",),
    )  # fmt: skip
    result = search_training(
        model=models.get("llama-3-70b"),
        cluster=catalog.cluster("dgx-h100", num_nodes=4),
        global_batch_size=64,
        seq_len=4096,
        space=space,
        top=20,
        stack="megatron-deepspeed-2022",
    )
    pairs = {(plan.plan.zero_stage, plan.plan.pp) for plan in result.plans}
    assert pairs, "the search ranked nothing"
    assert all(zero < 2 or pp == 1 for zero, pp in pairs)
    # pp 1: ZeRO 0-3; pp 2: ZeRO 0-1; pp 4 leaves dp = 32 / (8 x 4) = 1, where ZeRO shards over no
    # replica: ZeRO 0 and 1 are one plan
    assert result.num_plans_evaluated == 4 + 2 + 1


def test_the_405b_search_ranks_plans_costed_under_megatrons_rules(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """Issue 28's search: no plan in the top 10 keeps less than Megatron-Core keeps."""
    model = models.get("llama-3-405b")
    result = search_training(
        model=model,
        cluster=catalog.cluster("dgx-h100", num_accelerators=16384),
        global_batch_size=2048,
        seq_len=8192,
        top=10,
        max_tp=8,
        compare_plan=TrainingPlan(tp=8, pp=16, vpp=6, dp=128, recompute="selective"),
    )
    stack = load_stack()
    for estimate in result.plans:
        plan = estimate.plan
        rule = stack.sharding_rule(plan.zero_stage, pipeline=plan.pp > 1)
        grid = grid_from_plans([plan])
        params = stage_params(grid, model, layer_shapes(model))
        stage = float(params.dense[0])
        shards = plan.dp * plan.cp if rule.gradients == "sharded" else 1
        assert estimate.memory_bytes["gradients"] == pytest.approx(4.0 * stage / shards, rel=1e-9)
        if rule.gradients == "sharded" and plan.pp > 1:
            assert rule.gradient_reduce == "micro-batch"  # Megatron-FSDP: paid per micro-batch
    assert result.compared is not None
    assert result.compared.rank is not None
    assert result.compared.rank <= 50  # Meta's plan; 87th of 4,871 before these rules


@pytest.mark.parametrize(
    ("stack", "stage"),
    [(None, 2), ("megatron-core-2024", 1), ("torchtitan-2024", 2), ("megatron-deepspeed-2022", 1)],
)
def test_fsdp_under_a_pipeline_reads_as_the_stage_keeping_as_much(stack: str | None, stage: int) -> None:
    # Llama 3 paper, section 3.3.2: "FP32 gradient accumulation during backward computation over
    # multiple micro-batches", reduce-scattered in FP32: parameters gathered, gradients whole.
    profile = load_stack(stack) if stack else None
    assert zero_stage_of("FSDP-style (ZeRO)", pp=16, stack=profile)[0] == stage
    assert zero_stage_of("FSDP-style (ZeRO)", pp=1, stack=profile)[0] == 3


def test_every_stack_names_complete_and_sourced_memory_rules() -> None:
    families = load_all_memory_rules()
    assert set(families) == {"megatron", "deepspeed", "fsdp"}
    for stack in load_stacks().values():
        assert stack.memory_rules in families, stack.name
    for family in families.values():
        assert family.source
        assert family.display_name
        for stage in ZERO_STAGES:
            for pipeline in (False, True):
                rule = family.rule(stage, pipeline=pipeline)
                assert rule.source, (family.name, stage, pipeline)
                assert rule.refused == "" or len(rule.refused) > 40  # a refusal says why and what instead
    deepspeed = load_memory_rules("deepspeed")
    assert [deepspeed.rule(s, pipeline=True).allowed for s in ZERO_STAGES] == [True, True, False, False]

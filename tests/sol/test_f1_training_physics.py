"""Training-engine physics found by an expert check (issue 28 area), each against a hand count:
what each stack's selective recomputation drops, the interleaved schedule's in-flight micro-batches,
the working set of a fully recomputed layer, DeepSpeed's 1F1B-only pipeline engine, and the checks
on a plan's counts and a search's ``top``."""

from __future__ import annotations

import re

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol import estimate_training
from lightspeed.sol.core.hardware import hardware_for
from lightspeed.sol.core.shapes import layer_shapes
from lightspeed.sol.core.sharding import stacks_file
from lightspeed.sol.core.stacks import load_stack, load_stacks
from lightspeed.sol.train.grid import grid_from_plans
from lightspeed.sol.train.memory import stage_params, training_memory
from lightspeed.sol.train.plan import TrainingPlan, validate_plan
from lightspeed.sol.train.schedules import activations_in_flight
from lightspeed.sol.train.search import search_training
from lightspeed.sol.validation.rows import training_setup
from lightspeed.sol.validation.structured import load_published_runs
from lightspeed.workload import ModelRegistry

# Llama 3 8B: h 4096, 32 layers, SwiGLU 14336, 32 query heads and 8 KV heads of 128, vocabulary 128256.
H8, L8, F8, V8 = 4096, 32, 14336, 128256
S8 = 8192


def _activations(
    catalog: Catalog, models: ModelRegistry, plan: TrainingPlan, *, stack: str | None = None
) -> float:
    cluster = catalog.resolve_cluster("dgx-h100")
    estimate = estimate_training(model=models.get("llama-3-8b"), cluster=cluster, plan=plan, stack=stack)
    return estimate.memory_bytes["activations"]


# -- 1: what "selective" drops is the stack's ---------------------------------------------------


def test_megatron_profiles_recompute_core_attention_only() -> None:
    # Megatron-Core's recompute_modules default: ["core_attn"] (transformer_config.py); Megatron-LM
    # 2021-22 and Megatron-DeepSpeed checkpoint core attention (Korthikanti et al. 2022).
    for name in (
        "megatron-2021",
        "megatron-2022",
        "megatron-core-2024",
        "megatron-deepspeed-2022",
    ):
        assert load_stack(name).selective_recompute_modules == ("core_attention",), name
    # DeepSeek-V3: RMSNorm and MLA up-projections (section 3.2.3), SwiGLU outputs from cached inputs.
    deepseek = load_stack("deepseek-2024")
    assert [
        deepseek.recomputes_selectively(m)
        for m in ("core_attention", "norms", "activations", "mla_up_projections")
    ] == [
        False,
        True,
        True,
        True,
    ]
    assert load_stack("published-median").selective_recompute_modules == deepseek.selective_recompute_modules
    # Megatron-Core 0.12+ (2025 recipes) names the memory-bound modules (layernorm, moe_act, mla_up_proj)
    modules_2025 = load_stack("megatron-core-2025").selective_recompute_modules
    assert modules_2025 == deepseek.selective_recompute_modules
    for stack in load_stacks().values():
        assert stack.selective_recompute_modules, stack.name


def test_megatron_core_selective_with_fused_attention_keeps_what_none_keeps(
    catalog: Catalog, models: ModelRegistry
) -> None:
    plan = TrainingPlan(dp=8, global_batch_size=8, micro_batch_size=1, seq_len=S8, recompute="none")
    none = _activations(catalog, models, plan, stack="megatron-core-2024")
    selective = _activations(
        catalog, models, plan.with_changes(recompute="selective"), stack="megatron-core-2024"
    )
    assert selective == none  # core attention recomputed: FlashAttention keeps no score matrix


def test_the_default_profiles_selective_drops_norm_and_activation_outputs(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # Per layer and micro-batch at bf16 (2 bytes): the two norm outputs (2 x s x h) and the SwiGLU
    # output, the down-projection's input (s x ffn).
    plan = TrainingPlan(dp=8, global_batch_size=8, micro_batch_size=1, seq_len=S8, recompute="none")
    none = _activations(catalog, models, plan)
    selective = _activations(catalog, models, plan.with_changes(recompute="selective"))
    per_layer = 2 * S8 * H8 * 2 + S8 * F8 * 2
    assert per_layer == 369_098_752
    assert none - selective == pytest.approx(L8 * per_layer, rel=1e-12)


# -- 2: interleaved 1F1B holds at most m micro-batches ------------------------------------------


def test_interleaved_holds_p_plus_p_minus_1_over_v_capped_at_m_microbatches() -> None:
    # p = 16 stages, v = 6 chunks: warm-up (p-1)*2 + (v-1)*p = 110 chunks plus one, 1/6 of a stage
    # each: 111/6 = 18.5 micro-batches, when the step has them; with m = 2048/128 = 16 micro-batches
    # the first rank runs all 16 x 6 chunks forward first: 16 micro-batches' worth, not 18.5.
    plans = [
        TrainingPlan(tp=8, pp=16, dp=dp, vpp=6, global_batch_size=2048, seq_len=S8, schedule="interleaved")
        for dp in (64, 128)
    ]
    assert [plan.num_microbatches for plan in plans] == [32, 16]
    assert activations_in_flight(grid_from_plans(plans)).tolist() == [18.5, 16.0]


def test_llama3_405b_on_16k_gpus_holds_16_microbatches(catalog: Catalog, models: ModelRegistry) -> None:
    # Meta's plan: TP 8 (sequence parallel), PP 16 x VPP 6, 126 layers: ceil(126/16) = 8 layers on the
    # first stage; s = 8192, h = 16384, SwiGLU 53248, 128 query and 8 KV heads of 128, bf16 (2 bytes);
    # the default profile's selective drops norm and activation outputs, flash keeps no scores.
    tp, s, h = 8, 8192, 16384
    residuals = 2 * s * h / tp * 2  # layer input and the residual after attention (SP splits them)
    attention_out = s * (128 / tp) * 128 * 2 + s * (128 / tp) * 4  # O and the fp32 log-sum-exp
    qkv = s * ((128 / tp) * 128 + 1 * (128 + 128)) * 2  # 8 KV heads over TP 8: one a GPU
    swiglu_inputs = s * 2 * (53248 / tp) * 2
    per_layer = residuals + attention_out + qkv + swiglu_inputs
    assert per_layer == 357_040_128
    plan = TrainingPlan(
        tp=8, pp=16, dp=128, vpp=6, global_batch_size=2048, micro_batch_size=1, seq_len=s,
        schedule="interleaved", recompute="selective", uneven_pipeline=True,
    )  # fmt: skip
    cluster = catalog.cluster("dgx-h100", num_nodes=2048)  # 16,384 GPUs
    estimate = estimate_training(model=models.get("llama-3-405b"), cluster=cluster, plan=plan)
    assert estimate.memory_bytes["activations"] == pytest.approx(16 * 8 * per_layer, rel=1e-12)
    assert estimate.fits


# -- 3: full recomputation holds one layer's working set ----------------------------------------


def test_full_recompute_adds_the_working_set_of_the_layer_it_recomputes(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # Llama 3 8B, 8 x H100, ZeRO-2, micro-batch 1 of 8192 tokens, no TP or PP, bf16 (2 bytes).
    plan = TrainingPlan(
        dp=8, zero_stage=2, global_batch_size=64, micro_batch_size=1, seq_len=S8, recompute="full"
    )
    checkpoints = L8 * S8 * H8 * 2  # every layer's input (Korthikanti: 2sbhL)
    logits = 6 * S8 * V8  # Megatron's vocab-parallel cross-entropy: 4 + 2 bytes a logit
    # One layer's whole activations, less its input (a checkpoint already):
    residual = S8 * H8 * 2  # the residual after attention
    norms = 2 * S8 * H8 * 2  # two norm outputs
    attention = S8 * 32 * 128 * 2 + S8 * 32 * 4  # O and the fp32 log-sum-exp of flash attention
    qkv = S8 * (32 * 128 + 8 * (128 + 128)) * 2
    mlp = S8 * 2 * F8 * 2 + S8 * F8 * 2  # SwiGLU inputs (gate and up) and its output
    working_set = residual + norms + attention + qkv + mlp
    assert working_set == 1_074_790_400
    assert _activations(catalog, models, plan) == checkpoints + logits + working_set


def test_partial_recompute_that_recomputes_nothing_holds_no_working_set(
    catalog: Catalog, models: ModelRegistry
) -> None:
    plan = TrainingPlan(dp=8, global_batch_size=8, micro_batch_size=1, seq_len=2048, recompute="none")
    assert _activations(catalog, models, plan.with_changes(recompute="partial")) == _activations(
        catalog, models, plan
    )


# -- 4: DeepSpeed's pipeline engine runs 1F1B only ----------------------------------------------


def test_deepspeed_stack_refuses_an_interleaved_plan(models: ModelRegistry) -> None:
    stack = load_stack("megatron-deepspeed-2022")
    assert stack.pipeline_schedules == ("1f1b",)
    plan = TrainingPlan(tp=8, pp=8, dp=8, vpp=2, global_batch_size=512, seq_len=S8, zero_stage=1)
    with pytest.raises(InvalidPlanError, match=r"schedule interleaved \(vpp=2\).*runs only 1f1b"):
        validate_plan(plan, models.get("llama-3-70b"), 512, stack=stack)
    validate_plan(plan.with_changes(vpp=1), models.get("llama-3-70b"), 512, stack=stack)
    # other stacks run it
    validate_plan(plan, models.get("llama-3-70b"), 512, stack=load_stack("megatron-core-2024"))


def test_plan_train_refuses_it_in_one_line(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "plan", "train", "--model", "llama-3-70b", "--system", "dgx-h100", "--gpus", "512", "--seq", "8192",
        "--global-batch", "512", "--stack", "megatron-deepspeed-2022", "--tp", "8", "--pp", "8", "--vpp", "2",
        "--zero", "1",
    )  # fmt: skip
    assert result.code == 2
    assert "runs only 1f1b" in result.err
    assert "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_search_leaves_interleaved_plans_out_under_deepspeed(catalog: Catalog, models: ModelRegistry) -> None:
    result = search_training(
        model=models.get("llama-3-70b"),
        cluster=catalog.cluster("dgx-h100", num_nodes=64),
        global_batch_size=512,
        seq_len=S8,
        top=10,
        stack="megatron-deepspeed-2022",
    )
    assert all(estimate.plan.vpp == 1 for estimate in (*result.plans, *result.ties))
    assert any("interleaved schedule left out" in note and "runs only 1f1b" in note for note in result.notes)


# -- 5: the row's search names the values it tried -----------------------------------------------


def test_a_rows_search_note_lists_the_micro_batches_tried(catalog: Catalog, models: ModelRegistry) -> None:
    # T49, DeepSeek-V3: 15360 sequences over DP 128 = 120 a replica; 16 does not divide 120, so the
    # micro-batches tried are 1, 2, 4 and 8.
    runs = {run.id: run for run in load_published_runs(catalog=catalog, models=models)}
    spec = runs["T49"].training
    assert spec is not None
    setup = training_setup(spec, catalog)
    (note,) = [note for note in setup.assumptions if "searched over" in note]
    assert "searched over 4 plans (micro-batch [1, 2, 4, 8], vpp [1]" in note
    assert sorted({plan.micro_batch_size for plan in setup.plans}) == [1, 2, 4, 8]


# -- 6, 7: the stacks file says what is computed -------------------------------------------------


def test_stacks_file_carries_no_row_count_that_goes_stale() -> None:
    assert not re.search(r"\b\d+ of the \d+ rows\b", stacks_file().read_text(encoding="utf-8"))


def test_deepspeed_zero2_is_2_plus_16_over_n_and_says_so(catalog: Catalog, models: ModelRegistry) -> None:
    stack = load_stack("megatron-deepspeed-2022")
    rule = stack.sharding_rule(2, pipeline=False)
    assert "2 + 16/N" in rule.source  # what is computed
    assert "14/N" in rule.source  # beside the paper's figure for fp16 gradients
    model = models.get("llama-3-8b")
    hardware = hardware_for(catalog.cluster("dgx-h100", num_nodes=1), "bf16", stack=stack)
    plan = TrainingPlan(dp=8, zero_stage=2, global_batch_size=8, seq_len=2048).resolved(stack)
    memory = training_memory(grid_from_plans([plan]), model, layer_shapes(model), hardware, 2048)
    state = float(memory.weights_bytes[0] + memory.gradients_bytes[0] + memory.optimizer_bytes[0])
    params = float(stage_params(grid_from_plans([plan]), model, layer_shapes(model)).dense[0])
    assert state == pytest.approx((2 + 16 / 8) * params, rel=1e-9)


# -- 8, 9: counts are whole numbers within their bounds -------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("seq_len", 8192.5, "seq_len must be a whole number"),
        ("seq_len", 10**30, "seq_len must be a whole number >= 1 and <= 134,217,728"),
        ("global_batch_size", 10**30, "global_batch_size must be a whole number >= 1 and <= 1,073,741,824"),
        ("tp", True, "got True, a bool"),
        ("tp", float("nan"), "got nan, a float"),
        ("tp", 1.5, "got 1.5, a float"),
        ("tp", "8", "got '8', a str"),
        ("tp", 0, "tp must be a whole number >= 1"),
        ("zero_stage", 4, "zero_stage must be a whole number >= 0 and <= 3"),
        ("micro_batch_size", 0, "micro_batch_size must be a whole number >= 1"),
    ],
)
def test_a_plans_counts_are_checked(field: str, value: object, words: str) -> None:
    with pytest.raises(InvalidPlanError, match=re.escape(words)):
        TrainingPlan(**{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize("top", [0, -1])
def test_search_refuses_a_top_below_one(catalog: Catalog, models: ModelRegistry, top: int) -> None:
    with pytest.raises(InvalidPlanError, match="top must be a whole number >= 1"):
        search_training(
            model=models.get("llama-3-8b"),
            cluster=catalog.cluster("dgx-h100", num_nodes=1),
            global_batch_size=8,
            seq_len=2048,
            top=top,
        )

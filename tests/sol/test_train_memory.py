"""Training memory against Korthikanti et al. 2022 and the ZeRO paper, by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.core.hardware import Hardware, hardware_for
from lightspeed.sol.core.shapes import layer_shapes
from lightspeed.sol.core.stacks import load_stack
from lightspeed.sol.train.grid import grid_from_plans
from lightspeed.sol.train.memory import saved_per_layer, stage_params, training_memory
from lightspeed.sol.train.plan import TrainingPlan
from lightspeed.workload import AttentionSpec, TransformerSpec

# GPT-3 175B shapes as in Korthikanti et al. Table 3: a=96, h=12288, s=2048, L=96.
GPT3 = TransformerSpec(
    name="gpt3-shape",
    display_name="GPT-3 175B shape",
    num_layers=96,
    hidden_size=12288,
    ffn_hidden_size=4 * 12288,
    vocab_size=51200,
    attention=AttentionSpec("mha", 96, 96, 128, qkv_bias=True),
    mlp="gelu",
    position_embedding="learned",
    max_seq_len=2048,
    norm="layernorm",
    mlp_bias=True,
)
S, B, H, A = 2048, 1, 12288, 96


@pytest.fixture
def a100(catalog: Catalog) -> Hardware:
    return hardware_for(catalog.cluster("dgx-a100", num_nodes=1), "bf16", stack=load_stack("megatron-2021"))


def _activation(
    hardware: Hardware,
    tp: int,
    sequence_parallel: bool,
    recompute: str = "none",
    *,
    model: TransformerSpec = GPT3,
    attention: str = "unfused",
) -> float:
    plan = TrainingPlan(
        tp=tp,
        micro_batch_size=B,
        global_batch_size=1,
        seq_len=S,
        attention_impl=attention,
        dropout=attention == "unfused",
        sequence_parallel=sequence_parallel,
        recompute=recompute,
    ).resolved(hardware.stack)
    grid = grid_from_plans([plan])
    saved = saved_per_layer(grid, model, layer_shapes(model), hardware, seq_len=S, moe=model.moe is not None)
    return float((saved.checkpoint if recompute == "full" else saved.kept(grid))[0])


def test_no_parallelism_is_sbh_34_plus_5as_over_h(a100: Hardware) -> None:
    assert _activation(a100, 1, False) == pytest.approx(S * B * H * (34 + 5 * A * S / H))


def test_tensor_parallel_is_sbh_10_plus_24_over_t_plus_5as_over_ht(a100: Hardware) -> None:
    t = 8
    assert _activation(a100, t, False) == pytest.approx(S * B * H * (10 + 24 / t + 5 * A * S / (H * t)))


def test_sequence_parallel_divides_everything_by_t(a100: Hardware) -> None:
    t = 8
    assert _activation(a100, t, True) == pytest.approx(S * B * H / t * (34 + 5 * A * S / H))


def test_selective_recompute_drops_the_score_matrix(a100: Hardware) -> None:
    t = 8
    assert _activation(a100, t, True, "selective") == pytest.approx(34 * S * B * H / t)


def test_full_recompute_keeps_the_layer_input(a100: Hardware) -> None:
    assert _activation(a100, 8, True, "full") == pytest.approx(2 * S * B * H / 8)


def test_fused_attention_keeps_outputs_and_softmax_statistics_not_scores(a100: Hardware) -> None:
    # Flash attention, no dropout: 34 sbh less the 2 dropout masks, plus the fp32 log-sum-exp
    # (4 bytes per head per token); no score matrix.
    t = 8
    flash = _activation(a100, t, True, attention="flash")
    assert flash == pytest.approx(S * B * H / t * 32 + S * B * A / t * 4)


def test_selective_with_fused_attention_drops_norm_and_activation_outputs(a100: Hardware) -> None:
    # A stack whose selective recomputes norms and activations (the default profile; Megatron-Core
    # with --recompute-modules layernorm moe_act): the two norm outputs (2 sbh each) and the GELU
    # output (the fc2 input, 8 sbh) are recomputed: 12 sbh fewer. Megatron's own default (core
    # attention alone) frees nothing with fused attention (tests/sol/test_f1_training_physics.py).
    t = 8
    default = replace(a100, stack=load_stack("published-median"))
    flash = _activation(default, t, True, attention="flash")
    selective = _activation(default, t, True, "selective", attention="flash")
    assert flash - selective == pytest.approx(12 * S * B * H / t)


def test_fp8_stacks_keep_linear_inputs_in_one_byte(catalog: Catalog) -> None:
    # Transformer Engine stores the inputs of FP8 linears in FP8: with SP over t the two norm
    # outputs go from 2 x 2 to 2 x 1 sbh/t bytes (-2), the fc2 input from 8 to 4 (-4), and the
    # out-projection keeps an FP8 copy of the attention output beside the kernel's own (+1).
    cluster = catalog.cluster("dgx-h100", num_nodes=1)
    bf16 = _activation(hardware_for(cluster, "bf16"), 8, True, attention="flash")
    fp8 = _activation(hardware_for(cluster, "fp8"), 8, True, attention="flash")
    per = S * B * H / 8
    assert bf16 - fp8 == pytest.approx(per * (2 + 4 - 1))


def test_mixed_precision_adam_is_18_bytes_per_param_and_zero_shards_it(a100: Hardware) -> None:
    hardware = a100
    shapes = layer_shapes(GPT3)
    base = TrainingPlan(
        pp=96, dp=1, global_batch_size=96, micro_batch_size=1, seq_len=S, zero_stage=0
    ).resolved(hardware.stack)
    params = float(stage_params(grid_from_plans([base]), GPT3, shapes).dense[0])
    memory = training_memory(grid_from_plans([base]), GPT3, shapes, hardware, S)
    state = float(memory.weights_bytes[0] + memory.gradients_bytes[0] + memory.optimizer_bytes[0])
    assert state == pytest.approx(18 * params)  # 2 (bf16) + 4 (fp32 main grad) + 12 (Adam)
    zero1 = base.with_changes(zero_stage=1, dp=8, global_batch_size=8 * 96, pp=96)
    memory1 = training_memory(grid_from_plans([zero1]), GPT3, shapes, hardware, S)
    state1 = float(memory1.weights_bytes[0] + memory1.gradients_bytes[0] + memory1.optimizer_bytes[0])
    assert state1 == pytest.approx((6 + 12 / 8) * params)  # Megatron distributed optimizer: 6 + 12/DP


def _loss_bytes(catalog: Catalog, stack: str, *, tp: int, pp: int) -> float:
    """Activation bytes of a GPT-3-shaped micro-batch on ``stack``, minus the same with no loss."""
    cluster = catalog.cluster("dgx-h100", num_nodes=1)
    shapes = layer_shapes(GPT3)

    def activations(loss_bytes: float | None) -> float:
        hardware = hardware_for(cluster, "bf16", stack=load_stack(stack))
        if loss_bytes is not None:
            hardware = replace(hardware, stack=replace(hardware.stack, loss_bytes_per_logit=loss_bytes))
        plan = TrainingPlan(
            tp=tp, pp=pp, global_batch_size=pp, micro_batch_size=1, seq_len=S, recompute="full"
        ).resolved(hardware.stack)
        return float(training_memory(grid_from_plans([plan]), GPT3, shapes, hardware, S).activations_bytes[0])

    return activations(None) - activations(0.0)


def test_the_loss_peak_is_the_stacks_cross_entropy(catalog: Catalog) -> None:
    """Megatron's vocab-parallel cross-entropy turns one fp32 copy of the bf16 logits into the
    softmax and the gradient in place: 4 + 2 bytes a logit; torchtitan's F.cross_entropy on
    pred.float() frees pred before backward, whose peak holds log-softmax's fp32 output, its
    gradient and the logits' fp32 gradient: 4 + 4 + 4. Over TP 2 each rank holds half the
    vocabulary; with pipeline stages here the first stage, with two micro-batches of checkpoints,
    still outweighs the last one's logits."""
    logits = S * 1 * 51200
    assert _loss_bytes(catalog, "megatron-core-2025", tp=2, pp=1) == pytest.approx(6 * logits / 2)
    assert _loss_bytes(catalog, "torchtitan-2024", tp=2, pp=1) == pytest.approx(12 * logits / 2)
    assert _loss_bytes(catalog, "torchtitan-2024", tp=2, pp=2) == 0.0


def test_zero3_gathers_two_layers_not_the_embedding_spread_over_them(catalog: Catalog) -> None:
    """Llama 3 8B, ZeRO-3 over 8 H100: each GPU rests on an eighth of the 16-bit weights and
    gathers two whole layers beside them. One layer: attention 4096 x (4096 + 2 x 1024) + 4096 x
    4096, MLP 3 x 4096 x 14336, two norms of 4096 = 218,112,000 parameters; two of them at 2 bytes
    = 872,448,000 bytes (spreading the embedding and LM head over the layers had made it 1.004 GB)."""
    from lightspeed.sol import estimate_training
    from lightspeed.workload import load_models, parameter_counts

    model = load_models().get("llama-3-8b")
    cluster = catalog.resolve_cluster("dgx-h100")
    plan = TrainingPlan(dp=8, zero_stage=3, global_batch_size=64, seq_len=4096, recompute="full")
    estimate = estimate_training(model=model, cluster=cluster, plan=plan)
    per_layer = 4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336 + 2 * 4096
    assert per_layer == 218_112_000
    shard = parameter_counts(model).total_params * 2 / 8
    assert estimate.memory_bytes["weights"] == pytest.approx(shard + 2 * per_layer * 2, rel=1e-6)

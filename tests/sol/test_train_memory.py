"""Training memory against Korthikanti et al. 2022 and the ZeRO paper, by hand."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.core.hardware import hardware_for
from lightspeed.sol.core.shapes import layer_shapes
from lightspeed.sol.train.grid import grid_from_plans
from lightspeed.sol.train.memory import _activation_bytes_per_layer, stage_params, training_memory
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


def _activation(tp: int, sequence_parallel: bool, recompute: str = "none") -> float:
    plan = TrainingPlan(
        tp=tp,
        micro_batch_size=B,
        global_batch_size=1,
        seq_len=S,
        attention_impl="unfused",
        dropout=True,
        sequence_parallel=sequence_parallel,
        recompute=recompute,
    )
    kept, full = _activation_bytes_per_layer(
        grid_from_plans([plan]), GPT3, layer_shapes(GPT3), act=2.0, seq_len=S, moe=False
    )
    return float((full if recompute == "full" else kept)[0])


def test_no_parallelism_is_sbh_34_plus_5as_over_h() -> None:
    assert _activation(1, False) == pytest.approx(S * B * H * (34 + 5 * A * S / H))


def test_tensor_parallel_is_sbh_10_plus_24_over_t_plus_5as_over_ht() -> None:
    t = 8
    assert _activation(t, False) == pytest.approx(S * B * H * (10 + 24 / t + 5 * A * S / (H * t)))


def test_sequence_parallel_divides_everything_by_t() -> None:
    t = 8
    assert _activation(t, True) == pytest.approx(S * B * H / t * (34 + 5 * A * S / H))


def test_selective_recompute_drops_the_score_matrix() -> None:
    t = 8
    assert _activation(t, True, "selective") == pytest.approx(34 * S * B * H / t)


def test_full_recompute_keeps_the_layer_input() -> None:
    assert _activation(8, True, "full") == pytest.approx(2 * S * B * H / 8)


def test_mixed_precision_adam_is_18_bytes_per_param_and_zero_shards_it(catalog: Catalog) -> None:
    cluster = catalog.cluster("dgx-a100", num_nodes=1)
    hardware = hardware_for(cluster, "bf16")
    shapes = layer_shapes(GPT3)
    base = TrainingPlan(pp=96, dp=1, global_batch_size=96, micro_batch_size=1, seq_len=S, zero_stage=0)
    params = float(stage_params(grid_from_plans([base]), GPT3, shapes).dense[0])
    memory = training_memory(grid_from_plans([base]), GPT3, shapes, hardware, S)
    state = float(memory.weights_bytes[0] + memory.gradients_bytes[0] + memory.optimizer_bytes[0])
    assert state == pytest.approx(18 * params)  # 2 (bf16) + 4 (fp32 main grad) + 12 (Adam)
    zero1 = base.with_changes(zero_stage=1, dp=8, global_batch_size=8 * 96, pp=96)
    memory1 = training_memory(grid_from_plans([zero1]), GPT3, shapes, hardware, S)
    state1 = float(memory1.weights_bytes[0] + memory1.gradients_bytes[0] + memory1.optimizer_bytes[0])
    assert state1 == pytest.approx((6 + 12 / 8) * params)  # Megatron distributed optimizer: 6 + 12/DP

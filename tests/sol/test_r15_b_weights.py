"""Round 15, helper B: INT4 weights carry their group scales, a published checkpoint's own groups
and the layers it keeps 16-bit (Kimi K2 Thinking) reach memory and the GEMMs' weight reads, and an
activation format no GEMM pairs with the weights is refused. Golden values by hand from the
checkpoints' published layouts and Kimi K2's config.json."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import DataFileError, InvalidPlanError
from lightspeed.sol import InferencePlan
from lightspeed.sol.core.shapes import layer_shapes
from lightspeed.sol.infer.checkpoints import as_published, checkpoint_for, load_checkpoints
from lightspeed.sol.infer.estimate_notes import assumption_lines
from lightspeed.sol.infer.inference_hardware import InferenceHardware, inference_hardware_for
from lightspeed.sol.infer.iteration import IterationGrid, iteration_cost
from lightspeed.sol.infer.memory import stage_weight_bytes
from lightspeed.sol.infer.plan import pairs_with
from lightspeed.units import bytes_per_element, element_bits
from lightspeed.workload import ModelRegistry

# Kimi K2 (moonshotai/Kimi-K2-Thinking config.json): 61 layers, the first dense; hidden 7168;
# MLA with 64 heads, q_lora_rank 1536, kv_lora_rank 512, qk_nope 128 + qk_rope 64, v_head 128;
# 384 routed experts and 1 shared expert of 2048; dense MLP 18432; vocabulary 163,840.
HIDDEN = 7168
ATTENTION_PARAMS = (
    HIDDEN * 1536  # q_a
    + 1536 * 64 * (128 + 64)  # q_b
    + HIDDEN * (512 + 64)  # kv_a
    + 512 * 64 * (128 + 128)  # kv_b
    + 64 * 128 * HIDDEN  # o
)  # 101,122,048 per layer
EXPERT_PARAMS = 3 * HIDDEN * 2048  # gate, up, down: 44,040,192
DENSE_MLP_PARAMS = 3 * HIDDEN * 18432
TABLE_PARAMS = 2 * 163_840 * HIDDEN  # embedding and LM head, untied
ROUTER_PARAMS = 60 * HIDDEN * 384
KIMI_INT4 = 0.5 + 2.0 / 32.0  # one BF16 scale per 32 INT4 weights, symmetric (no zero point)


def test_plain_int4_counts_awq_group_scales() -> None:
    # AWQ/GPTQ: 4-bit weights, per group of 128 one FP16 scale (2 B) and one packed 4-bit zero
    assert bytes_per_element("int4") == pytest.approx(0.5 + (2.0 + 0.5) / 128.0)
    assert element_bits("int4") == 4.0  # the element alone, as quantizers count bits


def test_kimi_checkpoint_gives_its_own_groups_and_kept_layers() -> None:
    kimi = checkpoint_for("kimi-k2", "int4")
    assert kimi is not None
    assert kimi.weight_bytes_per_element == pytest.approx(KIMI_INT4)
    assert kimi.kept_layers == ("shared_experts", "dense_mlp")


def _kimi_hardware(models: ModelRegistry, catalog: Catalog, **plan: object) -> InferenceHardware:
    model = models.get("kimi-k2")
    cluster = catalog.resolve_cluster("dgx-h200", 1)
    return inference_hardware_for(cluster, InferencePlan(**plan), model=model)  # type: ignore[arg-type]


def test_kimi_k2_int4_weights_come_to_about_594_gb(models: ModelRegistry, catalog: Catalog) -> None:
    # By hand: routed experts 60 x 384 x 44.04M = 1.0147e12 params x 0.5625 = 570.76 GB; in BF16
    # attention 61 x 101.12M, shared experts 60 x 44.04M, the dense MLP 396.4M, embedding and LM head
    # 2.349e9 = 11.556e9 params = 23.11 GB; the router 0.165e9 params (BF16 in the checkpoint, the
    # engine's weight format: 0.2 GB either way). 594.2 GB; the old count (0.5 B everywhere but
    # attention and the tables) was 516.7 GB.
    model = models.get("kimi-k2")
    routed = 60 * 384 * EXPERT_PARAMS * KIMI_INT4
    sixteen_bit = 2.0 * (61 * ATTENTION_PARAMS + 60 * EXPERT_PARAMS + DENSE_MLP_PARAMS + TABLE_PARAMS)
    by_hand = routed + sixteen_bit + 2.0 * ROUTER_PARAMS
    assert by_hand == pytest.approx(594.2e9, rel=1e-3)
    weights = stage_weight_bytes(
        model,
        layer_shapes(model),
        _kimi_hardware(models, catalog, precision="int4"),
        tp=np.asarray(1.0),
        pp=np.asarray(1.0),
        ep=np.asarray(1.0),
        dp_attention=np.asarray(1.0),
    )
    assert float(weights) == pytest.approx(by_hand, rel=0.005)


def _decode_grid() -> IterationGrid:
    one = np.asarray([1.0])
    zero = np.asarray([0.0])
    return IterationGrid(
        tp=one,
        pp=one,
        ep=one,
        dp_attention=one,
        decode_sequences=one,
        query_tokens=one,
        decode_context=zero,
        prefill_tokens=zero,
        prefill_context=zero,
        prefill_requests=zero,
        group_prefill_tokens=zero,
    )


def test_kimi_gemms_read_the_kept_layers_in_bf16(models: ModelRegistry, catalog: Catalog) -> None:
    # One decode token on one GPU reads every weight it touches once. Kimi as shipped keeps the
    # attention projections, the shared experts and the dense MLP in BF16; asking for INT4
    # attention (--attention-weights int4) puts all three in the checkpoint's INT4 (0.5625 B). The
    # step then reads (61 x 101.12M + 60 x 44.04M + 396.4M) x (2 - 0.5625) bytes less; the routed
    # experts and the LM head read the same in both. (1%: a GEMM's time near the ridge combines its
    # math with its traffic, EfficiencyModel.kernel_s; the old engine saved 61 x 101.12M x 1.5 =
    # 9.25e9 bytes, 30% less.)
    kept_params = 61 * ATTENTION_PARAMS + 60 * EXPERT_PARAMS + DENSE_MLP_PARAMS
    model = models.get("kimi-k2")
    shipped = _kimi_hardware(models, catalog, precision="int4")
    all_int4 = _kimi_hardware(models, catalog, precision="int4", attention_weights="int4")
    reads = [
        float(iteration_cost(_decode_grid(), model, hardware).parts["weight_reads"][0])
        for hardware in (shipped, all_int4)
    ]
    saved_bytes = (reads[0] - reads[1]) * shipped.stream_bytes_per_s
    assert saved_bytes == pytest.approx(kept_params * (2.0 - KIMI_INT4), rel=0.01)


def test_the_assumptions_line_names_the_kept_layers(models: ModelRegistry, catalog: Catalog) -> None:
    hardware = _kimi_hardware(models, catalog, precision="int4", tp=8)
    hardware = replace(hardware, precisions=as_published(hardware.precisions, "kimi-k2"))
    line = assumption_lines(hardware, InferencePlan(precision="int4", tp=8), "continuous")[0]
    assert "weights int4 (0.5625 B/param" in line
    assert "attention projections, shared experts and dense-layer MLPs bf16 (2 B/param" in line


def test_other_models_keep_their_formats(models: ModelRegistry, catalog: Catalog) -> None:
    cluster = catalog.resolve_cluster("dgx-h200", 1)
    llama = models.get("llama-3-8b")
    hardware = inference_hardware_for(cluster, InferencePlan(precision="int4"), model=llama)
    assert as_published(hardware.precisions, "llama-3-8b") == hardware.precisions
    assert hardware.precisions.weight_bytes_per_element == pytest.approx(0.5 + 2.5 / 128)


@pytest.mark.parametrize(
    ("extra", "wording"),
    [
        ("group_size = 32\n", "need both group_size and scale_format"),
        ('group_size = 32\nscale_format = "e8m0"\n', "unknown scale format"),
        ('kept_layers = ["routers"]\n', "unknown kept layer kind"),
    ],
)
def test_a_bad_checkpoint_entry_is_refused(tmp_path: Path, extra: str, wording: str) -> None:
    path = tmp_path / "checkpoints.toml"
    path.write_text(
        'schema_version = 1\n[[checkpoint]]\nmodel = "m"\nname = "n"\nprecision = "int4"\n'
        f'attention_weights = "bf16"\nsource = "s"\n{extra}',
        encoding="utf-8",
    )
    with pytest.raises(DataFileError, match=wording):
        load_checkpoints(path)


@pytest.mark.parametrize(
    ("weights", "inputs"),
    [
        ("bf16", "fp8"),
        ("fp8", "int8"),
        ("fp8", "nvfp4"),
        ("int8", "fp8"),
        ("nvfp4", "int8"),
        ("fp32", "bf16"),
    ],
)
def test_inputs_no_gemm_pairs_with_the_weights_are_refused(weights: str, inputs: str) -> None:
    # a tensor-core GEMM takes both operands in one format: BF16 weights on FP8 tensor cores would
    # need FP8 weights, FP8 weights have no INT8 MMA
    assert not pairs_with(weights, inputs)
    with pytest.raises(InvalidPlanError, match=f"activation precision {inputs} is .* the {weights} weights"):
        InferencePlan(precision=weights, activation_precision=inputs)


@pytest.mark.parametrize(
    ("weights", "inputs"),
    [
        ("int8", "bf16"),  # W8A16
        ("int4", "fp16"),  # W4A16
        ("int4", "fp8"),  # W4A8 (TensorRT-LLM w4a8_awq)
        ("int4", "int8"),  # W4A8 (QServe)
        ("int8", "int8"),  # SmoothQuant W8A8
        ("nvfp4", "fp8"),  # NVFP4 weights, FP8 activations
        ("mxfp8", "fp8"),
        ("fp8", "fp8"),
    ],
)
def test_real_schemes_pass(weights: str, inputs: str) -> None:
    assert pairs_with(weights, inputs)
    assert InferencePlan(precision=weights, activation_precision=inputs).activation_precision == inputs


def test_cli_refuses_narrower_activations_in_one_line(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "plan", "infer", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "bf16",
        "--activation-precision", "fp8", "--concurrency", "1",
    )  # fmt: skip
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "Traceback" not in result.err
    assert "narrower than the bf16 weights" in result.err
    assert "--activation-precision one of fp32, bf16, fp16" in result.err

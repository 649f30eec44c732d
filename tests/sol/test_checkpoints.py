"""Quantized checkpoints that keep their attention projections apart (issue 28, engine physics):
gpt-oss ships MXFP4 experts and BF16 everything else; NVIDIA's DeepSeek-R1 FP4 checkpoint NVFP4
FFNs and experts and BF16 attention. Golden values: the publishers' own checkpoint sizes and the
models' published shapes, computed by hand below."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import DataFileError, InvalidPlanError
from lightspeed.sol import InferencePlan, ServingLoad, estimate_inference, search_inference
from lightspeed.sol.infer.checkpoints import checkpoint_for, load_checkpoints
from lightspeed.sol.serve.goodput_search import search_goodput
from lightspeed.sol.serve.run_metrics import ServiceLevel
from lightspeed.workload import ModelRegistry

GIB = 2**30


def _weights_gib(models: ModelRegistry, catalog: Catalog, model: str, system: str, **plan: object) -> float:
    estimate = estimate_inference(
        model=models.get(model),
        cluster=catalog.resolve_cluster(system, 1),
        plan=InferencePlan(**plan),  # type: ignore[arg-type]
        load=ServingLoad(1024, 16, concurrency=1),
    )
    return estimate.memory_bytes["weights"] / GIB


@pytest.mark.parametrize(("model", "published_gib"), [("gpt-oss-120b", 60.8), ("gpt-oss-20b", 12.8)])
def test_gpt_oss_weights_match_the_published_checkpoint(
    models: ModelRegistry, catalog: Catalog, model: str, published_gib: float
) -> None:
    # OpenAI's model card, table 1: checkpoint sizes 60.8 GiB and 12.8 GiB. By hand for 120b
    # (config.json: 36 layers, hidden 2880, 64 query and 8 KV heads of 64, 128 experts of 2880,
    # vocabulary 201,088): experts 36 x 128 x 3 x 2880 x 2880 = 114.65e9 params at 4.25 bits =
    # 60.91 GB; embedding and LM head 2 x 201,088 x 2880 = 1.16e9 params in 16 bits = 2.32 GB;
    # attention 36 x (2880 x 4096 + 2 x 2880 x 512 + 4096 x 2880) = 0.96e9 params, in BF16 1.91 GB
    # (in MXFP4 it would be 0.51 GB); router 13e6 params. In BF16: 65.17 GB = 60.7 GiB; with MXFP4
    # attention 63.77 GB = 59.4 GiB, 2.3% short of the card.
    mixed = _weights_gib(models, catalog, model, "dgx-h200", precision="mxfp4")
    uniform = _weights_gib(models, catalog, model, "dgx-h200", precision="mxfp4", attention_weights="mxfp4")
    assert mixed == pytest.approx(published_gib, rel=0.005)
    assert abs(uniform / published_gib - 1.0) > 0.02


def test_deepseek_fp4_keeps_its_attention_in_bf16(models: ModelRegistry, catalog: Catalog) -> None:
    # DeepSeek-V3's MLA projections per layer (config.json: hidden 7168, q_lora_rank 1536,
    # kv_lora_rank 512, 128 heads, qk_nope 128 + qk_rope 64, v_head 128):
    # q_a 7168 x 1536 + q_b 1536 x 128 x 192 + kv_a 7168 x (512 + 64) + kv_b 512 x 128 x (128 + 128)
    # + o 128 x 128 x 7168 = 187,105,280, over 61 layers 11,413,422,080. With attention data
    # parallelism (tp=1) every GPU holds all of them: BF16 (2 B) instead of NVFP4 (0.5625 B) adds
    # 11,413,422,080 x 1.4375 = 16.41e9 bytes per GPU.
    plan = {"precision": "nvfp4", "ep": 8, "dp_attention": 8}
    model, system = models.get("deepseek-v3"), catalog.resolve_cluster("dgx-b200", 8)
    load = ServingLoad(1024, 16, concurrency=1)
    shipped = estimate_inference(model=model, cluster=system, plan=InferencePlan(**plan), load=load)  # type: ignore[arg-type]
    all_fp4 = estimate_inference(
        model=model,
        cluster=system,
        plan=InferencePlan(**plan, attention_weights="nvfp4"),
        load=load,  # type: ignore[arg-type]
    )
    extra_bytes = shipped.memory_bytes["weights"] - all_fp4.memory_bytes["weights"]
    assert extra_bytes == pytest.approx(11_413_422_080 * 1.4375, rel=0.005)
    assert shipped.precisions.attention_weights == "bf16"
    assert shipped.precisions.attention_compute == "bf16"
    assert any("nvidia/DeepSeek-R1-FP4" in note for note in shipped.precisions.notes)
    # One decode step: the BF16 projections stream 16.4 GB more per GPU at full bandwidth, but the
    # NVFP4 ones stream only on the SMs their few output tiles fill (FlashInfer issue #1732: an FP4
    # GEMV at 1.78 TB/s where FP16 reaches 5-6 TB/s), so at one request BF16 attention costs less
    # than its bytes: TensorRT-LLM's blog 1 keeps it in BF16 for batch-1 latency ("low-precision
    # attention computation doesn't help with performance").
    extra_s = shipped.tpot_s - all_fp4.tpot_s
    assert 0.0 < extra_s < 16.4e9 / 8e12


def test_models_without_such_a_checkpoint_are_unchanged(models: ModelRegistry, catalog: Catalog) -> None:
    model, system = models.get("llama-3-8b"), catalog.resolve_cluster("dgx-b200", 1)
    load = ServingLoad(1000, 1000)
    implicit_plan = InferencePlan(precision="nvfp4")
    explicit_plan = InferencePlan(precision="nvfp4", attention_weights="nvfp4")
    implicit = estimate_inference(model=model, cluster=system, plan=implicit_plan, load=load)
    explicit = estimate_inference(model=model, cluster=system, plan=explicit_plan, load=load)
    assert checkpoint_for("llama-3-8b", "nvfp4") is None
    assert implicit.tpot_s == explicit.tpot_s
    assert implicit.memory_bytes == explicit.memory_bytes
    assert implicit.precisions.attention_weights == "nvfp4"


def test_the_plan_overrides_the_checkpoint(models: ModelRegistry, catalog: Catalog) -> None:
    estimate = estimate_inference(
        model=models.get("gpt-oss-20b"),
        cluster=catalog.resolve_cluster("dgx-h200", 1),
        plan=InferencePlan(precision="mxfp4", attention_weights="fp8"),
        load=ServingLoad(1024, 16, concurrency=1),
    )
    assert estimate.precisions.attention_weights == "fp8"
    assert estimate.precisions.attention_compute == "fp8"  # W8A8 on Hopper's FP8 tensor cores
    assert not any("openai/gpt-oss-20b" in note for note in estimate.precisions.notes)


def test_an_unknown_attention_format_is_refused() -> None:
    with pytest.raises(InvalidPlanError, match="attention weight precision 'fp5'"):
        InferencePlan(attention_weights="fp5")


def test_the_cli_refuses_an_unknown_attention_format(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "plan", "infer", "--model", "gpt-oss-20b", "--system", "dgx-h100", "--attention-weights", "fp5"
    )
    assert result.code == 2
    assert "--attention-weights" in result.err
    assert "Traceback" not in result.err


_ENTRY = '[[checkpoint]]\nmodel = "m"\nname = "n"\nprecision = "{precision}"\nattention_weights = "bf16"\n'


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (_ENTRY.format(precision="fp5") + 'source = "s"', "unknown weight format"),
        (_ENTRY.format(precision="nvfp4"), "missing field"),
    ],
)
def test_a_bad_checkpoint_entry_is_refused(tmp_path: Path, entry: str, problem: str) -> None:
    path = tmp_path / "checkpoints.toml"
    path.write_text(f"schema_version = 1\n{entry}\n", encoding="utf-8")
    with pytest.raises(DataFileError, match=problem):
        load_checkpoints(path)


def test_two_entries_for_one_model_and_precision_are_refused(tmp_path: Path) -> None:
    entry = _ENTRY.format(precision="nvfp4") + 'source = "s"\n'
    path = tmp_path / "checkpoints.toml"
    path.write_text("schema_version = 1\n" + entry + entry, encoding="utf-8")
    with pytest.raises(DataFileError, match="two checkpoints"):
        load_checkpoints(path)


def test_a_search_keeps_the_attention_weights(models: ModelRegistry, catalog: Catalog) -> None:
    model, cluster, load = (
        models.get("gpt-oss-20b"),
        catalog.resolve_cluster("dgx-h100", 1),
        ServingLoad(1024, 256),
    )
    default = search_inference(model=model, cluster=cluster, load=load, precision="mxfp4")
    assert default.best.precisions.attention_weights == "bf16"  # the published checkpoint's
    requested = search_inference(
        model=model, cluster=cluster, load=load, precision="mxfp4", attention_weights="fp8"
    )
    assert requested.best.plan.attention_weights == "fp8"
    assert requested.best.precisions.attention_compute == "fp8"
    assert requested.best.memory_bytes["weights"] < default.best.memory_bytes["weights"]


def test_the_goodput_search_simulates_its_finalists_in_their_attention_weights(
    models: ModelRegistry, catalog: Catalog
) -> None:
    """The finalists the simulator ranks are the frontier's own plans (they were read back from
    their descriptions, which carry neither the KV replication nor an expert placement)."""
    found = search_goodput(
        model=models.get("gpt-oss-20b"),
        cluster=catalog.resolve_cluster("dgx-h100", 1),
        load=ServingLoad(1024, 256),
        slo=ServiceLevel(ttft_s=2.0, tpot_s=0.05),
        rate_per_s=2.0,
        precision="mxfp4",
        attention_weights="fp8",
        num_requests=40,
        finalists=2,
    )
    assert all(point.deployment.attention_weights == "fp8" for point in found.analytic.frontier)
    assert all(point.plan == point.deployment.describe() for point in found.analytic.frontier)
    assert {entry.plan.attention_weights for entry in found.ranking} == {"fp8"}

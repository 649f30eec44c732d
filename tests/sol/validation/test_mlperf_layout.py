"""The layout an MLPerf row that states none runs (``infer_load.mlperf_split``): the TP split with
the most simulated Offline throughput and, on an MoE no single GPU holds, attention data
parallelism with the experts over the group (DEP) where its steady state is faster. The expected
layouts are the
submitters' own, read in NVIDIA's MLPerf Inference v5.1 configs (``ntuhpc/inference_results_v5.1``
@387c3dd0, ``closed/NVIDIA/configs/B200-SXM-180GBx8/Offline/``): ``deepseek-r1.py`` sets
``tensor_parallelism: 8``, ``enable_attention_dp: True`` and ``moe_expert_parallelism: 8`` (DEP8),
``mixtral-8x7b.py`` ``tensor_parallelism: 1`` (eight TP1 replicas)."""

from __future__ import annotations

from lightspeed.catalog import Catalog
from lightspeed.sol.serve.mlperf_inference import load_mlperf_workload
from lightspeed.sol.validation.infer_load import _plan, _tp_sizes, mlperf_kv_precision, mlperf_split
from lightspeed.workload import ModelRegistry
from probes import DATA, read_probe


def test_an_mlperf_deepseek_r1_row_without_a_layout_runs_attention_dp_with_ep8(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # Dell's XE9680L (8 B200) DeepSeek-R1 Offline, v5.1: no layout in the row. The TP splits'
    # finite runs had chosen TP 4 x2 (14,333 tokens/s predicted against 30,493 measured)
    spec = read_probe(DATA / "probe-serving-8.tsv", "U17", catalog, models)
    plan = spec.plan
    assert (plan.tp, plan.ep, plan.dp_attention, plan.replicas) == (1, 8, 8, 1)
    # the best TP split (tp=4 x2) weighed against DEP8 at their steady state
    assert any("MLPerf row without a layout: DEP8" in line and "(tp=4)" in line for line in spec.assumptions)


def test_an_mlperf_mixtral_row_without_a_layout_runs_tp1_replicas(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # Google's B200 Mixtral 8x7B Offline, v5.0 (NVIDIA's harness): one GPU holds it, so eight TP1
    # replicas, which exchange nothing (NVIDIA's own setting), are not weighed against DEP
    spec = read_probe(DATA / "probe-serving-3.tsv", "R17", catalog, models)
    plan = spec.plan
    assert (plan.tp, plan.ep, plan.dp_attention, plan.replicas) == (1, 1, 1, 8)
    assert any(
        "tp=1 x8 replicas, the most simulated throughput of 4 TP splits" in line for line in spec.assumptions
    )


def test_the_tp_sizes_an_mlperf_submitter_tunes_over() -> None:
    # powers of two inside the scale-up domain that divide the GPUs (DEP takes the largest)
    assert _tp_sizes(8, 8) == [1, 2, 4, 8]
    # 72 GB200 in one NVLink domain: 72 is not a power of two, 16 and up do not divide it
    assert _tp_sizes(72, 72) == [1, 2, 4, 8]
    assert _tp_sizes(6, 8) == [1, 2]
    assert _tp_sizes(16, 8) == [1, 2, 4, 8]  # two 8-GPU nodes: TP stays in a node


def test_a_row_stating_its_own_expert_or_data_parallelism_is_not_given_dep(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # without expert layouts (a row whose EP or DP cell says what it ran) only TP splits are tried
    workload = load_mlperf_workload("deepseek-r1").workload("offline")
    cluster = catalog.resolve_cluster("dgx-b200", 8)
    layout = mlperf_split(
        models.get("deepseek-v3"), cluster, "nvfp4", workload, num_gpus=8, expert_layouts=False
    )
    assert layout.groups == 1
    assert layout.tp in (4, 8)  # 671B parameters in NVFP4 fit no fewer than four B200
    assert "TP splits" in layout.note
    assert "attention-DP" not in layout.note


def test_layouts_are_weighed_with_the_kv_cache_the_row_is_predicted_with() -> None:
    # MLPerf closed submissions keep the KV cache in FP8 beside 8-bit or narrower weights (NVIDIA's
    # configs: kv_cache_dtype 'fp8'); the layouts are weighed with the cache the row then runs
    assert [mlperf_kv_precision(weights) for weights in ("nvfp4", "fp8", "bf16")] == ["fp8", "fp8", None]
    assert _plan(1, 8, 8, "nvfp4", None).kv_precision == "fp8"
    assert _plan(2, 1, 8, "bf16", None).kv_precision is None

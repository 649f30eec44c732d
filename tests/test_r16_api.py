"""Round 16, Python API: search defaults as the CLI's, token lengths, suggestions, messages."""

from __future__ import annotations

from pathlib import Path

import pytest

import lightspeed as ls
from lightspeed.catalog import load_catalog
from lightspeed.cli.options import GPUS, SEQ_LEN
from lightspeed.errors import LightspeedError, PlanDoesNotFitError, UnknownNameError
from lightspeed.workload import load_models

# DGX H100: 8 GPUs on one NVLink/NVSwitch domain (NVIDIA DGX H100 datasheet)
DGX_H100_NVLINK_GPUS = 8
SERVING_PLAN = Path(__file__).resolve().parents[1] / "examples" / "plans" / "llama-3-70b-fp8-serving.toml"


def test_search_training_refuses_a_search_where_no_plan_fits_as_the_cli_does() -> None:
    # Llama 3 405B with mixed-precision Adam holds 16 bytes per parameter (bf16 weights and
    # gradients, fp32 master weights and two moments): 405e9 x 16 / 64 = 101 GB per GPU even fully
    # sharded, above an H100's 80 GB, so no plan on 64 H100s can run
    assert 405e9 * 16 / 64 > 80e9
    model, cluster = ls.model("llama-3-405b"), ls.cluster("dgx-h100", num_gpus=64)
    with pytest.raises(PlanDoesNotFitError, match=r"^no plan of llama-3-405b on 64 GPUs .* fits"):
        ls.search_training(model=model, cluster=cluster, global_batch_size=16, seq_len=8192)
    ranked = ls.search_training(
        model=model, cluster=cluster, global_batch_size=16, seq_len=8192, require_fit=False
    )
    assert not ranked.plans[0].fits  # opting out ranks the plans that cannot run, as before


def test_search_training_keeps_tp_within_the_nvlink_domain_by_default() -> None:
    model, cluster = ls.model("llama-3-8b"), ls.cluster("dgx-h100", num_gpus=32)
    common = {"model": model, "cluster": cluster, "global_batch_size": 64, "seq_len": 4096, "top": 50}
    default = ls.search_training(**common)
    capped = ls.search_training(**common, max_tp=DGX_H100_NVLINK_GPUS)
    across = ls.search_training(**common, max_tp=32)
    assert default.num_plans_evaluated == capped.num_plans_evaluated
    assert across.num_plans_evaluated > default.num_plans_evaluated  # TP 16 and 32 tried too
    assert max(estimate.plan.tp for estimate in default.plans) <= DGX_H100_NVLINK_GPUS


def test_a_plan_file_read_as_the_wrong_configuration_names_the_python_class() -> None:
    with pytest.raises(LightspeedError) as raised:
        ls.TrainingConfig.from_file(SERVING_PLAN)
    assert "ServingConfig.from_file" in str(raised.value)
    assert "lightspeed plan infer --config" in str(raised.value)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("8k", 8192), ("128k", 131_072), ("1K", 1024), ("1.5k", 1536), ("1m", 1_048_576), ("8000", 8000)],
)
def test_token_lengths_read_k_as_1024(text: str, tokens: int) -> None:
    # Llama 3: "8K context" = 8,192 tokens, "128K" = 131,072; MLPerf "ISL 1K" = 1,024
    assert SEQ_LEN.convert(text, None, None) == tokens


def test_counts_that_are_not_token_lengths_keep_k_as_1000() -> None:
    assert GPUS.convert("16k", None, None) == 16_000


def test_a_token_length_refuses_a_suffix_no_length_has() -> None:
    with pytest.raises(Exception, match="8,192 tokens"):
        SEQ_LEN.convert("8b", None, None)


def _closest(error: UnknownNameError) -> list[str]:
    return list(error.closest)


def test_model_suggestions_name_each_model_once() -> None:
    models = load_models()
    with pytest.raises(UnknownNameError) as raised:
        models.entry("llama-70b")
    closest = [models.get(found).name for found in _closest(raised.value)]
    assert "llama-2-70b" in closest
    assert len(closest) == len(set(closest))  # llama2-70b is llama-2-70b: suggested once


@pytest.mark.parametrize(
    ("text", "canonical", "alias"),
    [("2xdgx-h10", "dgx-h100", "dgxh100"), ("2xdgx-h100@ib-nrd", "ib-ndr", "ib-ndr-400")],
)
def test_hardware_suggestions_name_each_record_once(text: str, canonical: str, alias: str) -> None:
    with pytest.raises(UnknownNameError) as raised:
        load_catalog().resolve_cluster(text)
    closest = _closest(raised.value)
    assert canonical in closest
    assert alias not in closest  # the same record again


def test_an_unknown_mig_profile_reads_as_one_sentence() -> None:
    with pytest.raises(UnknownNameError) as raised:
        load_catalog().accelerator("h100-sxm/3g.4gb")
    message = str(raised.value)
    assert message.startswith("unknown MIG profile '3g.4gb'; closest: 3g.40gb")
    assert "profile of" not in message

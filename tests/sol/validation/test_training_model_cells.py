"""A training row's model cell read as its writers mean it (issue 28, reading and coverage).

Rows the thirty-sixth session's reader refused for their model alone: torchtitan's ``DeepSeek V3
671B DistMoE`` (its MoE implementation's label after the size), dgxc-benchmarking's ``Paxml
GPT175B`` and ``GPT3 5B`` (their dimensions but no heads),
GLM-130B and SmolLM2-135M (not in the catalog). A label is taken off only after a parameter count,
so ``GPT3 5B`` never reads as GPT-3 175B; heads are taken as multi-head attention only where the
row's parameter count confirms the shape that makes."""

from __future__ import annotations

import dataclasses
import re

import pytest

from lightspeed.sol.validation.published import PublishedRow, RowError
from lightspeed.sol.validation.row_model import resolve_model
from lightspeed.sol.validation.train_settings import zero_stage_of
from lightspeed.workload import ModelRegistry, parameter_counts


def _row(**cells: str) -> PublishedRow:
    return PublishedRow(row_id="M1", kind="train", line=2, cells=cells)


@pytest.mark.parametrize(
    ("model", "name"),
    [
        ("DeepSeek V3 671B DistMoE", "deepseek-v3"),
        ("DeepSeek V3 671B DistMoE, MTP1 (one MTP layer)", "deepseek-v3"),
        ("GLM-130B", "glm-130b"),
        ("SmolLM2-135M (config only, trained from scratch 100 iters)", "smollm2-135m"),
    ],
)
def test_a_model_cell_names_its_catalog_model(models: ModelRegistry, model: str, name: str) -> None:
    spec, note = resolve_model(models, _row(model=model))
    assert spec.name == name
    assert f"-> catalog model {name}" in note


def test_a_size_keeps_its_own_model_and_is_never_cut_to_a_family_name(models: ModelRegistry) -> None:
    # 'GPT3 5B' holds 'gpt3', an alias of GPT-3 175B: with no dimensions it is refused, never read
    # as the 175B model
    with pytest.raises(RowError, match="not in the catalog"):
        resolve_model(models, _row(model="GPT3 5B (Paxml GPT5B)"))


# Paxml's GPT 5B as dgxc-benchmarking's README states it: 24 layers, hidden 4096, vocab 51200, 5B
# parameters, no head count. By hand, a GPT block of width h holds 12 h^2 weights (4 h^2 of
# attention, 8 h^2 of a 4h MLP) whatever its heads: 24 x 12 x 4096^2 = 4.832e9, plus 51,200 x 4096
# = 0.210e9 of embedding, 2048 x 4096 = 0.008e9 of learned positions and an untied head of 0.210e9
# (biases and norms about 0.001e9): 5.26e9, within 10% of 5.
PAXML_5B = {
    "model": "GPT3 5B (Paxml GPT5B)",
    "layers": "24",
    "hidden": "4096",
    "vocab": "51200",
    "seq": "2048",
}


def test_heads_left_out_are_multi_head_when_the_parameter_count_confirms_it(models: ModelRegistry) -> None:
    spec, note = resolve_model(models, _row(params_B="5", **PAXML_5B))
    assert (spec.attention.kind, spec.attention.num_heads, spec.attention.num_kv_heads) == ("mha", 32, 32)
    assert parameter_counts(spec).total_params == pytest.approx(5.26e9, rel=0.005)
    assert "heads not given: 32 heads of 128" in note
    assert "match the row's 5B" in note
    # the head count changes neither the weights nor the FLOPs of an MHA model
    other = dataclasses.replace(
        spec, attention=dataclasses.replace(spec.attention, num_heads=64, num_kv_heads=64, head_dim=64)
    )
    assert parameter_counts(other).total_params == parameter_counts(spec).total_params


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("7", "make 5.26B parameters, not the row's 7B"),  # grouped heads or a gated MLP would explain it
        ("n/r", "lacks heads(kv) and a parameter count"),
        ("nan", "lacks heads(kv) and a parameter count"),
        ("0", "lacks heads(kv) and a parameter count"),
    ],
)
def test_heads_left_out_without_a_matching_parameter_count_are_refused(
    models: ModelRegistry, params: str, message: str
) -> None:
    with pytest.raises(RowError, match=re.escape(message)):
        resolve_model(models, _row(params_B=params, **PAXML_5B))


@pytest.mark.parametrize(
    ("model", "source", "mtp_modules"),
    [
        # torchtitan's report titles the table 'PP1, MTP disabled'; the model cell names no MTP
        ("DeepSeek V3 671B DistMoE", "section 'Latest successful runs' > 'PP1, MTP disabled' table", 0),
        # the model cell names the MTP layer the run trains: the source's words do not override it
        ("DeepSeek V3 671B DistMoE, MTP1 (one MTP layer)", "report; 'PP1, MTP disabled' elsewhere", 1),
        ("DeepSeek-V3 (without MTP)", "", 0),
        ("DeepSeek-V3", "", 1),
    ],
)
def test_a_run_that_trains_no_mtp_module_is_read_so(
    models: ModelRegistry, model: str, source: str, mtp_modules: int
) -> None:
    spec, _ = resolve_model(models, _row(model=model, source=source))
    assert spec.num_mtp_modules == mtp_modules


def test_torchtitans_never_reshard_keeps_parameters_gathered() -> None:
    # torchtitan's fsdp_reshard_after_forward = "never" keeps the parameters gathered between forward
    # and backward: gradients and optimizer state sharded, ZeRO-2 (it was read as full sharding)
    assert zero_stage_of('FSDP256 (fsdp_reshard_after_forward="never")')[0] == 2
    assert zero_stage_of('FSDP256 (fsdp_reshard_after_forward="always")')[0] == 3

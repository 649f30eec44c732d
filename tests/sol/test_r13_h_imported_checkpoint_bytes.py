"""An imported quantized config.json stores the attention projections its quantization block leaves
16-bit in 16 bits, whatever folder it is read from (review 13, helper H): the published gpt-oss
config.json from a folder not named after the catalog model gives the catalog's weight bytes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import UserInputError
from lightspeed.sol import InferencePlan, ServingLoad, estimate_inference
from lightspeed.workload import ModelRegistry, TransformerSpec, spec_from_hf_config

HF_CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"

# gpt-oss-120b by hand, from its published config.json: 36 layers, hidden 2880, 64 query and 8 KV
# heads of 64, 128 experts of 2880 with biases, vocabulary 201,088, untied embeddings.
#   experts   36 x 128 x (3 x 2880 x 2880 + 3 x 2880)             = 114,701,598,720 at 0.53125 B
#   attention 36 x (2880 x 4096 + 2 x 2880 x 512 + 4096 x 2880
#                   + 4096 + 512 + 512 + 2880)                    =     955,802,880 at 2 B (bf16)
#   embedding and LM head 2 x 201,088 x 2880                      =   1,158,266,880 at 2 B
#   routers   36 x (2880 x 128 + 128)                             =      13,275,648 at 2 B
#   norms     (2 x 36 + 1) x 2880                                 =         210,240 at 2 B
# = 60,935,224,320 + 2 x 2,127,555,648 = 65,190,335,616 B (60.71 GiB; the model card: 60.8 GiB).
# With the attention in MXFP4 instead it would be 955,802,880 x (2 - 0.53125) = 1.40 GB less.
HAND_WEIGHT_BYTES = 114_701_598_720 * 0.53125 + 2 * (955_802_880 + 1_158_266_880 + 13_275_648 + 210_240)
ATTENTION_PARAMS = 955_802_880


def _weight_bytes(spec: TransformerSpec, catalog: Catalog, **plan: object) -> float:
    estimate = estimate_inference(
        model=spec,
        cluster=catalog.resolve_cluster("dgx-h200", 1),
        plan=InferencePlan(**plan),  # type: ignore[arg-type]
        load=ServingLoad(1024, 16, concurrency=1),
    )
    return float(estimate.memory_bytes["weights"])


def _imported(tmp_path: Path, folder: str) -> TransformerSpec:
    path = tmp_path / folder / "config.json"
    path.parent.mkdir()
    path.write_text((HF_CONFIGS / "gpt-oss-120b" / "config.json").read_text(encoding="utf-8"))
    return spec_from_hf_config(path)


def test_an_imported_gpt_oss_keeps_its_attention_bf16_from_any_folder(
    tmp_path: Path, models: ModelRegistry, catalog: Catalog
) -> None:
    spec = _imported(tmp_path, "gptoss120b")
    assert (spec.release_format, spec.release_attention_format) == ("mxfp4", "bf16")
    imported = _weight_bytes(spec, catalog, precision="mxfp4")
    # within 5e-4 (33 MB): the engine stores the routers in the run's format (13.3e6 params,
    # 19.5 MB less than in bf16); the attention's 1.40 GB (2.1%) is far outside it
    assert imported == pytest.approx(HAND_WEIGHT_BYTES, rel=5e-4)
    assert imported == _weight_bytes(models.get("gpt-oss-120b"), catalog, precision="mxfp4")
    uniform = _weight_bytes(spec, catalog, precision="mxfp4", attention_weights="mxfp4")
    assert imported - uniform == pytest.approx(ATTENTION_PARAMS * (2 - 0.53125), rel=1e-6)


def test_the_16_bit_attention_is_the_release_formats_only(tmp_path: Path, catalog: Catalog) -> None:
    spec = _imported(tmp_path, "gptoss120b")
    # served in another format, every linear layer is stored in it (as for a catalog model)
    uniform = _weight_bytes(spec, catalog, precision="fp8", attention_weights="fp8")
    assert _weight_bytes(spec, catalog, precision="fp8") == uniform


def test_the_engine_says_where_the_attention_format_comes_from(tmp_path: Path, catalog: Catalog) -> None:
    spec = _imported(tmp_path, "gptoss120b")
    estimate = estimate_inference(
        model=spec,
        cluster=catalog.resolve_cluster("dgx-h200", 1),
        plan=InferencePlan(precision="mxfp4"),
        load=ServingLoad(1024, 16, concurrency=1),
    )
    assert estimate.precisions.attention_weights == "bf16"
    assert any(
        "as its config.json's quantization_config keeps them" in note for note in estimate.precisions.notes
    )


def test_a_release_attention_format_must_be_a_format(models: ModelRegistry) -> None:
    with pytest.raises(UserInputError, match="release attention format 'fp5' is not one of"):
        replace(models.get("gpt-oss-120b"), release_attention_format="fp5")

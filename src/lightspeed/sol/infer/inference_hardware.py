"""What an inference estimate needs of a cluster for one deployment's formats.

:func:`inference_hardware_for` bundles the compute peak of the activation
format, the attention peak (FP8 attention over an FP8 KV cache where the GPU
computes in it), HBM and fabric, the serving stack's profile, the latency
floors and the documented serving defaults of ``sol/data/efficiency.toml``
(``[inference]``). It also applies what a published checkpoint or a server's
kernels impose on the formats (attention projections kept wider, TensorRT-LLM's
weight-only INT8 MoE), with a note for each.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path

from lightspeed.catalog import Cluster
from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import UnsupportedError
from lightspeed.paths import package_data
from lightspeed.records import Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.hardware import Hardware, LatencyFloors, hardware_for, load_latency_floors
from lightspeed.sol.core.serving_choice import serving_stack_on
from lightspeed.sol.core.serving_stacks import ServingStack
from lightspeed.sol.infer.checkpoints import as_published, checkpoint_for
from lightspeed.sol.infer.plan import (
    InferencePlan,
    Precisions,
    kept_layers_text,
    resolve_precisions,
    sixteen_bit_format,
)
from lightspeed.workload import TransformerSpec


@dataclass(frozen=True)
class InferenceParameters(Record):
    """Global serving parameters from the ``[inference]`` table of ``sol/data/efficiency.toml``."""

    kv_cache_memory_fraction: float
    prefill_chunk_tokens: int
    stream_memory_efficiency: float
    source: str


def _data_file() -> Path:
    return package_data("sol", "data", "efficiency.toml")


@functools.lru_cache(maxsize=4)
def load_inference_parameters(path: Path | None = None) -> InferenceParameters:
    """The documented serving defaults (read once)."""
    file = path or _data_file()
    fields = Fields(str(file), load_toml(file))
    table = fields.table("inference")
    assert table is not None
    return InferenceParameters(
        kv_cache_memory_fraction=table.number("kv_cache_memory_fraction"),
        prefill_chunk_tokens=table.integer("prefill_chunk_tokens", minimum=1),
        stream_memory_efficiency=table.number("stream_memory_efficiency"),
        source=table.string("source"),
    )


@dataclass(frozen=True)
class InferenceHardware(Record):
    """A cluster's figures for one deployment's formats (compute peak, HBM, fabric, efficiencies)."""

    hardware: Hardware
    precisions: Precisions
    parameters: InferenceParameters
    attention_peak_flop_per_s: float
    gemm_model: EfficiencyModel
    serving: ServingStack
    floors: LatencyFloors
    # the attention projections' GEMMs: ``hardware`` unless they run in another format
    attention_hardware: Hardware
    # a mixed checkpoint's wider layers (``precisions.wider_compute``); ``None`` without one
    wider_hardware: Hardware | None = None

    @property
    def indexer_peak_flop_per_s(self) -> float:
        """A sparse-attention indexer's peak: FP8 where the GPU has it (the indexer scores in FP8:
        DeepSeek-V3.2-Exp's ``fp8_index``, DeepGEMM's ``fp8_mqa_logits``), else the attention's."""
        rows = self.hardware.accelerator.compute
        return rows["fp8"].dense_per_s if "fp8" in rows else self.attention_peak_flop_per_s

    @property
    def sustained_scale(self) -> float:
        """Clock under a power cap times the serving stack's share of the kernel ceilings."""
        return self.hardware.clock_fraction * self.serving.kernel_efficiency

    @property
    def stream_bytes_per_s(self) -> float:
        """HBM bandwidth that streaming kernels reach."""
        return self.hardware.memory_bandwidth_bytes_per_s * self.parameters.stream_memory_efficiency


def inference_hardware_for(
    cluster: Cluster,
    plan: InferencePlan,
    efficiency: EfficiencyModel | None = None,
    serving: str | ServingStack | None = None,
    *,
    model: TransformerSpec | None = None,
) -> InferenceHardware:
    """Bundle what an inference estimate needs for ``plan``'s formats on ``cluster``.

    The GEMM peak is the dense figure of the activation format's compute row;
    attention runs in the KV cache's format when the GPU computes in it (FP8
    attention over an FP8 cache), else in bf16. Inference GEMMs use the family's
    ceiling and tile quantization but not the training fit's size factor, which
    amounts to a fixed cost per GEMM (tens of microseconds at bf16) that would swamp a
    decode step; the fixed GPU time per kernel (``runtime.toml`` ``[launch]``) stands in for it.
    A calibration's measured HBM efficiency scales the weight/KV streaming efficiency
    (:meth:`~lightspeed.sol.core.efficiency.EfficiencyModel.streaming_efficiency`).
    With ``model``, a plan that does not set ``attention_weights`` takes them from the model's
    published checkpoint in ``plan.precision`` (:func:`~lightspeed.sol.infer.checkpoints.checkpoint_for`).
    """
    accelerator = cluster.system.accelerator
    profile = serving_stack_on(serving, accelerator.vendor).for_pipeline(plan.pp)
    profile = profile.for_speculation(plan.speculative is not None)
    plan, checkpoint_note = _checkpoint_formats(plan, model)
    plan, plugin_note = _moe_plugin_formats(plan, model, profile, sixteen_bit_format(accelerator))
    precisions = resolve_precisions(
        plan, accelerator, kv_cache_default=profile.kv_cache_default_on(accelerator.vendor)
    )
    if model is not None:  # the checkpoint's scale groups and the layer kinds it keeps 16-bit
        precisions = as_published(precisions, model.name)
    notes = tuple(note for note in (checkpoint_note, plugin_note) if note)
    if notes:
        precisions = replace(precisions, notes=(*precisions.notes, *notes))
    hardware = hardware_for(cluster, precisions.compute, efficiency, asked=plan.precision)
    attention_hardware = (
        hardware
        if precisions.attention_compute == precisions.compute
        else hardware_for(cluster, precisions.attention_compute, efficiency)
    )
    wider_hardware = (
        hardware_for(cluster, precisions.wider_compute, efficiency) if precisions.wider_share > 0 else None
    )
    kv_row = precisions.kv_cache if precisions.kv_cache in accelerator.compute else None
    attention_row = kv_row if kv_row in ("fp8", "bf16", "fp16") else "bf16"
    if attention_row not in accelerator.compute:
        raise UnsupportedError(f"{accelerator.name} has no {attention_row} compute figure for attention")
    parameters = load_inference_parameters()
    streaming = hardware.efficiency.streaming_efficiency(parameters.stream_memory_efficiency)
    if streaming != parameters.stream_memory_efficiency:  # a calibration's measured HBM efficiency
        parameters = replace(parameters, stream_memory_efficiency=streaming)
    if profile.token_budget is not None:  # the server's own default prompt-token budget
        budget = profile.token_budget.value(
            accelerator=accelerator.name, memory_bytes=accelerator.memory_usable_bytes
        )
        parameters = replace(parameters, prefill_chunk_tokens=budget)
    return InferenceHardware(
        hardware=hardware,
        precisions=precisions,
        parameters=parameters,
        attention_peak_flop_per_s=accelerator.compute[attention_row].dense_per_s,
        gemm_model=hardware.efficiency.with_overrides(gemm_half_saturation_flop=0.0),
        serving=profile,
        floors=load_latency_floors(),
        attention_hardware=attention_hardware,
        wider_hardware=wider_hardware,
    )


# TensorRT-LLM's MoE plugin takes 16-bit (or FP8) activations only: INT8 expert weights run as
# weight-only GEMMs (CutlassMoeFCRunner<half|bf16, uint8_t>; no INT8-activation runner).
_MOE_PLUGIN_SOURCE = (
    "NVIDIA/TensorRT-LLM cpp/tensorrt_llm/plugins/mixtureOfExperts/mixtureOfExpertsPlugin.cpp "
    "@3c44cb97, MixtureOfExpertsPlugin::init: FP16/BF16 activations with FP16/BF16, INT8 or INT4 "
    "weights, no INT8 activations"
)


def _moe_plugin_formats(
    plan: InferencePlan, model: TransformerSpec | None, serving: ServingStack, sixteen_bit: str
) -> tuple[InferencePlan, str]:
    """``plan`` as TensorRT-LLM runs an INT8 MoE: weight-only GEMMs in ``sixteen_bit``, with a note;
    unchanged for other formats, dense models, other servers or an explicit GEMM input format."""
    if (
        plan.precision != "int8"
        or plan.activation_precision is not None
        or model is None
        or model.moe is None
        or "tensorrt-llm" not in serving.frameworks
    ):
        return plan, ""
    note = f"INT8 on TensorRT-LLM's MoE plugin is weight-only: GEMMs in {sixteen_bit} ({_MOE_PLUGIN_SOURCE})"
    return plan.with_changes(activation_precision=sixteen_bit), note


def _config_details(release_source: str) -> str:
    """What an imported config.json's quantization block says beyond its format (the layers it
    keeps 16-bit that are not modelled), in parentheses; empty for any other source."""
    if release_source.startswith("config.json") and ";" in release_source:
        return f" ({release_source})"
    return ""


def _checkpoint_formats(plan: InferencePlan, model: TransformerSpec | None) -> tuple[InferencePlan, str]:
    """``plan`` with the attention weights of ``model``'s published checkpoint in its precision
    (and a note saying so) when the plan leaves them unset and such a checkpoint exists (in
    ``sol/data/checkpoints.toml``, else the model's own ``release_attention_format`` at its
    release format: what an imported config.json's quantization_config leaves 16-bit); the note
    also says when the precision is the one the model is released in."""
    if model is None:
        return plan, ""
    released = ""
    if plan.precision == model.release_format and model.release_source:
        released = (
            f"{plan.precision} is the format {model.display_name} is released in (--precision sets another)"
            + _config_details(model.release_source)
            if model.release_format != "bf16"
            else f"bf16: {model.release_source}"  # a quantization block the importer could not read
        )
    if plan.attention_weights is not None:
        return plan, released
    checkpoint = checkpoint_for(model.name, plan.precision)
    if checkpoint is not None:
        attention, shipped = checkpoint.attention_weights, f"as {checkpoint.name} ships them"
        kept = kept_layers_text(checkpoint.kept_layers)
    elif model.release_attention_format is not None and plan.precision == model.release_format:
        attention, shipped = (
            model.release_attention_format,
            "as its config.json's quantization_config keeps them",
        )
        kept = kept_layers_text(())
    else:
        return plan, released
    note = (
        f"{kept} in {attention} {shipped}, the other linear layers in {plan.precision} "
        "(--attention-weights sets them)"
    )
    return plan.with_changes(attention_weights=attention), "; ".join(
        part for part in (released, note) if part
    )


__all__ = ["InferenceHardware", "InferenceParameters", "inference_hardware_for", "load_inference_parameters"]

"""The weight format of a Hugging Face ``config.json``: what its ``quantization_config`` names.

A checkpoint published in FP8, MXFP4, NVFP4 or a 4- or 8-bit integer format says so in
``quantization_config``: ``quant_method`` (``fp8``, ``fbgemm_fp8``, ``mxfp4``), ModelOpt's
``quant_algo``, GPTQ's and AWQ's ``bits``, or compressed-tensors' first config group.
:func:`release_format` reads it into one of the engine's formats (bf16 without a block, or with
one it does not understand, said so); :func:`~lightspeed.workload.hf_config.spec_from_hf_config`
stores it as the spec's ``release_format``.
"""

from __future__ import annotations

from typing import Any, Final

# quantization_config.quant_method values that name one weight format
_QUANT_METHODS: Final = {"fp8": "fp8", "fbgemm_fp8": "fp8", "mxfp4": "mxfp4"}
# ModelOpt's quant_algo (NVIDIA TensorRT Model Optimizer checkpoints)
_MODELOPT_ALGOS: Final = {"FP8": "fp8", "FP8_BLOCK_SCALES": "fp8", "NVFP4": "nvfp4", "W4A16_AWQ": "int4"}
# compressed-tensors weights: (num_bits, type) -> format
_COMPRESSED_TENSORS: Final = {
    (8, "float"): "fp8",
    (8, "int"): "int8",
    (4, "int"): "int4",
    (4, "float"): "nvfp4",
}


def release_format(data: dict[str, Any]) -> tuple[str, str]:
    """(weight format, what says so) of a ``config.json``'s ``quantization_config``: bf16 without
    one; the format it names (fp8, mxfp4, ModelOpt's FP8/NVFP4, GPTQ/AWQ and compressed-tensors
    bit widths); bf16 with a note saying the block was not understood otherwise.

    >>> release_format({"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}})
    ('fp8', "config.json quantization_config: quant_method 'fp8'")
    """
    config = data.get("quantization_config")
    if config is None:
        return "bf16", ""
    if not isinstance(config, dict):
        return (
            "bf16",
            "config.json quantization_config is not an object lightspeed reads; "
            "taken as bf16 (pass --precision)",
        )
    method = str(config.get("quant_method", "")).lower()
    found = _QUANT_METHODS.get(method)
    if method == "modelopt":
        found = _MODELOPT_ALGOS.get(str(config.get("quant_algo", "")).upper())
    elif method in ("gptq", "awq"):
        bits = config.get("bits")
        found = {4: "int4", 8: "int8"}.get(bits) if isinstance(bits, int) else None
    elif method == "compressed-tensors":
        found = _compressed_tensors_format(config)
    if found is None:
        return "bf16", (
            f"config.json quantization_config: quant_method {method!r} is not a format lightspeed reads; "
            "taken as bf16 (pass --precision)"
        )
    return found, f"config.json quantization_config: quant_method {method!r}"


def _compressed_tensors_format(config: dict[str, Any]) -> str | None:
    """The weight format of the first config group of a compressed-tensors block."""
    groups = config.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        return None
    weights = next(iter(groups.values()))
    weights = weights.get("weights") if isinstance(weights, dict) else None
    if not isinstance(weights, dict):
        return None
    bits = weights.get("num_bits")
    return _COMPRESSED_TENSORS.get((bits, str(weights.get("type", "")))) if isinstance(bits, int) else None


__all__ = ["release_format"]

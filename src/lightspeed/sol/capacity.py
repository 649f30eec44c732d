"""Capacity planning: the bytes a model's state takes and how many GPUs hold it.

Model state per parameter (REFERENCE.md section 2, the ZeRO paper):

- inference: the weights in the serving precision; by default (or ``"released"``) the
  format the model's checkpoint is published in (``TransformerSpec.release_format``: MXFP4
  experts for gpt-oss, FP8 for DeepSeek-V3, BF16 for most), as ``plan infer`` assumes;
- training with a mixed-precision optimizer: the weights in the training
  precision, the main gradients ``plan train`` keeps under the default stack
  (FP32, the plan's ``grad_reduce_precision``: Megatron-Core's contiguous
  gradient buffer; weights wider than that keep gradients in their own
  precision), the optimizer's moments (Adam: 8 bytes) and an FP32 master copy
  of the weights (4 bytes): ``2 + 4 + 12 = 18`` bytes with BF16, Megatron's
  figure (``gradient_precision="bf16"`` gives the ZeRO paper's 16);
- training that computes in 8 or 4 bits (FP8, MXFP8, NVFP4, MXFP4 recipes):
  the training engine's rule (:mod:`lightspeed.sol.train.memory`, what
  ``plan train`` counts), since no framework stores FP8 weights or gradients:
  16-bit weights plus the low-precision copy the GEMMs read (in that format:
  1 byte for FP8, 0.5625 for NVFP4, where the stack keeps one), the same FP32
  main gradients and the optimizer with its FP32 master weights:
  ``2 + 1 + 4 + 12 = 19`` bytes, one more than BF16.

ZeRO over ``dp`` data-parallel ranks divides what it shards by ``dp``, as the
default stack's memory rules do (Megatron-Core's distributed optimizer and
Megatron-FSDP): stage 1 the optimizer state and master weights
(``6 + 12/dp`` bytes per parameter per GPU with BF16 Adam), stage 2 also the
gradients (``2 + 16/dp``), stage 3 also the weights (``18/dp``). Without ZeRO
each replica holds everything.

The GPU count is the fewest GPUs whose memory holds that state when each
replica is split over model-parallel GPUs (tensor/pipeline parallel) and
there are ``dp`` replicas: ``ceil(bytes_per_param·N / memory) · dp``. It is a
lower bound: activations, KV cache, the CUDA context and fragmentation are
not counted. Counts use the device's *usable* memory: what the driver reports
(``Accelerator.memory_device_bytes``, the memory ``plan`` and ``search`` size
deployments with); the *listed* figure (the datasheet's usable memory) and the
*nominal* one (the vendor's headline capacity) are given beside it.

>>> from lightspeed.catalog import load_catalog
>>> from lightspeed.workload import load_models
>>> plan = plan_memory(model=load_models().get("llama-3-70b"), precision="bf16",
...                    accelerator=load_catalog().accelerator("h100-sxm"))
>>> plan.gpus_needed
2
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from lightspeed.catalog import Accelerator, System
from lightspeed.errors import UserInputError
from lightspeed.limits import MAX_ACCELERATORS, check_kind, check_whole
from lightspeed.records import Record
from lightspeed.sol.core.hardware import QUANTIZED_LINEAR_ROWS
from lightspeed.sol.core.stacks import load_stack
from lightspeed.sol.infer.checkpoints import QuantizedCheckpoint, checkpoint_for
from lightspeed.sol.infer.plan import kept_layers_text
from lightspeed.sol.train.memory import check_gradient_precision, weight_copy_bytes
from lightspeed.sol.train.plan import TRAINING_PRECISIONS, TrainingPlan
from lightspeed.units import bytes_per_element, compute_precision, format_bytes, format_count
from lightspeed.workload import TransformerSpec, optimizer_state_bytes, parameter_counts

COMPONENTS = ("weights", "gradients", "optimizer", "master_weights")
_FULL_PRECISION_BYTES = 4.0  # fp32: such weights need no separate master copy
_STORED_WEIGHT_PRECISION = "bf16"  # what such recipes keep the weights in (Transformer Engine, Megatron-Core)
_SIXTEEN_BIT_BYTES = 2.0  # embeddings, LM head and norms of quantized serving weights
RELEASED = "released"  # the precision that names the format a model's checkpoint is published in
_TRAINING_DEFAULT_PRECISION = "bf16"  # what a training run computes in unless told


@dataclass(frozen=True)
class MemoryPlan(Record):
    """Bytes of a model's state and the GPUs and nodes that hold it.

    ``components`` (bytes, over the whole job: every data-parallel replica)
    sum to ``total_bytes``. ``bytes_per_param`` is what one GPU holds per
    parameter of its replica's share (the ZeRO formula). ``precision`` is the
    one asked for (the compute precision when training); ``weight_precision``
    and ``gradient_precision`` what the weights and gradients are stored in.
    ``gpus_needed`` and ``nodes_needed`` use usable memory
    (``memory_usable_bytes``: what the driver reports, the memory ``plan`` and
    ``search`` use, equal to ``memory_device_bytes``; the ``*_at_device``
    fields are the same counts, kept for older readers), ``*_at_listed`` the
    datasheet's usable figure (``memory_listed_bytes``), ``*_at_nominal`` the
    nominal capacity; all are ``None`` when no device was given. ``device`` is
    the GPU or system asked for, ``accelerator`` the GPU whose memory is used.
    """

    model: str
    precision: str
    training: bool
    optimizer: str | None
    zero_stage: int
    dp: int
    num_params: int
    bytes_per_param: float
    components: Mapping[str, float]
    total_bytes: float
    device: str | None
    accelerator: str | None
    memory_usable_bytes: float | None
    memory_nominal_bytes: float | None
    gpus_per_node: int
    model_parallel_gpus: int | None
    gpus_needed: int | None
    nodes_needed: int | None
    bytes_per_gpu: float | None
    gpus_needed_at_nominal: int | None
    nodes_needed_at_nominal: int | None
    assumptions: tuple[str, ...]
    # what a process can allocate (the driver's figure where the catalog records it, the memory
    # `plan` and `search` size deployments with) and the GPUs and nodes that hold the state in it:
    # the usable memory and the headline counts above, under their older names
    memory_device_bytes: float | None = None
    gpus_needed_at_device: int | None = None
    nodes_needed_at_device: int | None = None
    # the datasheet's usable figure (the catalog's `usable` key) and the counts at it
    memory_listed_bytes: float | None = None
    gpus_needed_at_listed: int | None = None
    nodes_needed_at_listed: int | None = None
    weight_precision: str = ""
    gradient_precision: str | None = None
    # training: the stack profile whose rule gave the default gradients and weight copy (the
    # default stack, what `plan train` uses unless told otherwise); None when serving
    stack: str | None = None


@dataclass(frozen=True)
class _PerParam:
    weights: float  # in bytes, the low-precision copy included
    gradients: float
    optimizer: float
    master_weights: float
    weight_precision: str
    gradient_precision: str
    weight_copy: float = 0.0  # in bytes: the 8- or 4-bit copy an FP8/FP4 recipe keeps beside the weights
    gradients_given: bool = False  # the gradients' precision was asked for (else plan train's default)


def _ceil(value: float) -> int:
    """Ceiling that ignores float noise (160e9 / 80e9 must be 2, not 3)."""
    return math.ceil(value * (1.0 - 1e-12))


def _check(training: bool, zero_stage: int, dp: int, gpus_per_node: int, has_both: bool) -> None:
    """The bounds of ``memory``'s options (docs/limits.md): ZeRO stage 0 to 3, ``dp`` and
    ``gpus_per_node`` whole numbers from 1 to the most accelerators."""
    check_whole("zero_stage (the ZeRO stage)", zero_stage, minimum=0, maximum=3)
    if zero_stage and not training:
        raise UserInputError("ZeRO shards training state (gradients, optimizer): plan with training")
    check_whole("dp", dp, maximum=MAX_ACCELERATORS)
    check_whole("gpus_per_node", gpus_per_node, maximum=MAX_ACCELERATORS)
    if has_both:
        raise UserInputError("give a GPU or a system, not both (the system names its GPU)")


def _per_param(
    spec: TransformerSpec,
    *,
    precision: str,
    training: bool,
    optimizer: str,
    gradient_precision: str | None,
    master_weights: bool | None,
) -> _PerParam:
    if not training:
        return _PerParam(
            _served_weight_bytes(spec, precision), 0.0, 0.0, 0.0, precision, gradient_precision or precision
        )
    stored, copy, default_gradients = _training_storage(precision)
    gradients_in = gradient_precision or default_gradients
    check_gradient_precision(gradients_in)
    weights = bytes_per_element(stored)
    keep_master = weights < _FULL_PRECISION_BYTES if master_weights is None else master_weights
    state = optimizer_state_bytes(spec, optimizer=optimizer, master_weights=keep_master)
    return _PerParam(
        weights=weights + copy,
        gradients=bytes_per_element(gradients_in),
        optimizer=state.state_bytes_per_param,
        master_weights=state.master_weights_bytes_per_param,
        weight_precision=stored,
        gradient_precision=gradients_in,
        weight_copy=copy,
        gradients_given=gradient_precision is not None,
    )


def _published_format(spec: TransformerSpec, precision: str) -> tuple[QuantizedCheckpoint | None, float]:
    """(``spec``'s published checkpoint in ``precision``, or None; bytes per weight stored in
    ``precision``: the checkpoint's own scale groups where it has them)."""
    checkpoint = checkpoint_for(spec.name, precision)
    narrow = bytes_per_element(precision) if checkpoint is None else checkpoint.weight_bytes_per_element
    return checkpoint, narrow


def _served_weight_bytes(spec: TransformerSpec, precision: str) -> float:
    """Bytes per parameter, on average, of weights held to serve in ``precision``: below 16 bits the
    embedding table, the LM head and the norms stay in 16 bits, as the serving engine holds them
    (:func:`lightspeed.sol.infer.memory.stage_weight_bytes`; quantizers leave them so); the
    layers' matrices take ``precision`` (block scales included)."""
    checkpoint, narrow = _published_format(spec, precision)
    if narrow >= _SIXTEEN_BIT_BYTES:
        return narrow
    counts = parameter_counts(spec)
    kept = counts.embedding_params + counts.lm_head_params + counts.norm_params
    wide, wide_bytes = 0, _SIXTEEN_BIT_BYTES
    if checkpoint is not None:  # the layers the published checkpoint stores as its attention
        wide = counts.attention_params
        wide += counts.shared_expert_params if "shared_experts" in checkpoint.kept_layers else 0
        wide += counts.dense_mlp_params if "dense_mlp" in checkpoint.kept_layers else 0
        wide_bytes = bytes_per_element(checkpoint.attention_weights)
    narrow_params = counts.total_params - kept - wide
    total_bytes = narrow * narrow_params + _SIXTEEN_BIT_BYTES * kept + wide_bytes * wide
    return total_bytes / counts.total_params


def _training_storage(precision: str) -> tuple[str, float, str]:
    """(weights' storage precision, bytes of a low-precision copy, default gradient precision) of a
    run that trains in ``precision``, as the training engine counts it under the default stack
    (:func:`lightspeed.sol.train.memory.training_memory`).

    16 bits and wider store the weights in what they compute in; an FP8/FP4 recipe keeps 16-bit
    weights plus the copy the GEMMs read where the stack keeps one. The gradients are the plan's
    main gradients (FP32, :func:`_main_gradients`) in both.
    """
    if compute_precision(precision) not in QUANTIZED_LINEAR_ROWS:
        if bytes_per_element(precision) < bytes_per_element(_STORED_WEIGHT_PRECISION):
            raise UserInputError(
                f"no training recipe computes in {precision}; training precisions: "
                f"{', '.join(TRAINING_PRECISIONS)} (or drop --training to hold {precision} weights)"
            )
        return precision, 0.0, _main_gradients(precision)
    copy = weight_copy_bytes(precision) if load_stack().fp8_weight_copy else 0.0
    return _STORED_WEIGHT_PRECISION, copy, _main_gradients(_STORED_WEIGHT_PRECISION)


def _main_gradients(stored: str) -> str:
    """The gradients' precision ``plan train`` counts for weights stored in ``stored``: the plan's
    main gradients (:attr:`TrainingPlan.grad_reduce_precision`, FP32), or the weights' own precision
    where it is wider (FP64 weights keep FP64 gradients)."""
    main = TrainingPlan.grad_reduce_precision
    return stored if bytes_per_element(stored) > bytes_per_element(main) else main


def _components(num_params: int, per: _PerParam, zero_stage: int, dp: int) -> dict[str, float]:
    """Bytes over the whole job: a sharded component is held once, an unsharded one per replica."""

    def copies(sharded_from_stage: int) -> int:
        return 1 if zero_stage >= sharded_from_stage else dp

    return {
        "weights": num_params * per.weights * copies(3),
        "gradients": num_params * per.gradients * copies(2),
        "optimizer": num_params * per.optimizer * copies(1),
        "master_weights": num_params * per.master_weights * copies(1),
    }


def plan_memory(
    *,
    model: TransformerSpec,
    precision: str | None = None,
    training: bool = False,
    optimizer: str = "adam",
    zero_stage: int = 0,
    dp: int = 1,
    accelerator: Accelerator | None = None,
    system: System | None = None,
    gradient_precision: str | None = None,
    master_weights: bool | None = None,
    gpus_per_node: int = 8,
) -> MemoryPlan:
    """Bytes of ``model``'s state and the GPUs (of ``accelerator`` or ``system``) that hold it.

    ``precision`` is the weights' storage precision, or with ``training`` the
    precision the run computes in (``None``: the format ``model``'s checkpoint is published in to
    serve, ``"released"`` the same, :attr:`~lightspeed.workload.TransformerSpec.release_format`;
    bf16 to train): 16 bits and wider store the weights in it,
    while an 8- or 4-bit run (fp8, mxfp8, nvfp4, mxfp4) keeps 16-bit weights and
    a low-precision copy; either keeps FP32 gradients (the main gradients ``plan
    train`` counts; FP64 weights keep FP64 ones). So BF16 with Adam holds
    2 (weights) + 4 (gradients) + 4 (FP32 master) + 8 (two FP32 moments) = 18 bytes
    per parameter. ``gradient_precision`` overrides the gradients' storage;
    ``master_weights`` (FP32 copy) defaults to on below FP32. GPUs are counted
    at usable memory, what the driver reports. ``gpus_per_node`` applies to a
    bare ``accelerator``; a ``system`` brings its own count.

    >>> from lightspeed.workload import load_models
    >>> plan_memory(model=load_models().get("dense-100t"), precision="bf16").total_bytes / 1e12  # TB
    200.041174925312
    >>> plan_memory(model=load_models().get("llama-3-8b"), precision="bf16", training=True).bytes_per_param
    18.0
    >>> plan_memory(model=load_models().get("llama-3-8b"), precision="fp8", training=True).bytes_per_param
    19.0
    """
    check_kind("model", model, TransformerSpec, "lightspeed.model('llama-3-70b')")
    _check(training, zero_stage, dp, gpus_per_node, accelerator is not None and system is not None)
    asked = precision
    precision = _precision(model, precision, training=training)
    num_params = parameter_counts(model).total_params
    per = _per_param(
        model,
        precision=precision,
        training=training,
        optimizer=optimizer,
        gradient_precision=gradient_precision,
        master_weights=master_weights,
    )
    components = _components(num_params, per, zero_stage, dp)
    per_gpu = _bytes_per_param_per_gpu(per, zero_stage, dp)
    device = system.accelerator if system is not None else accelerator
    node_size = system.num_accelerators if system is not None else gpus_per_node
    counts = _gpu_counts(per_gpu * num_params, dp, node_size, device)
    return MemoryPlan(
        model=model.name,
        precision=precision,
        training=training,
        optimizer=optimizer if training else None,
        zero_stage=zero_stage,
        dp=dp,
        num_params=num_params,
        bytes_per_param=per_gpu,
        components=components,
        total_bytes=sum(components.values()),
        device=(system.name if system is not None else accelerator.name if accelerator is not None else None),
        accelerator=device.name if device is not None else None,
        memory_usable_bytes=device.memory_device_bytes if device is not None else None,
        memory_nominal_bytes=device.memory_nominal_bytes if device is not None else None,
        gpus_per_node=node_size,
        model_parallel_gpus=counts.model_parallel_gpus,
        gpus_needed=counts.gpus_needed,
        nodes_needed=counts.nodes_needed,
        bytes_per_gpu=counts.bytes_per_gpu,
        gpus_needed_at_nominal=counts.gpus_needed_at_nominal,
        nodes_needed_at_nominal=counts.nodes_needed_at_nominal,
        memory_device_bytes=device.memory_device_bytes if device is not None else None,
        gpus_needed_at_device=counts.gpus_needed,
        nodes_needed_at_device=counts.nodes_needed,
        memory_listed_bytes=device.memory_usable_bytes if device is not None else None,
        gpus_needed_at_listed=counts.gpus_needed_at_listed,
        nodes_needed_at_listed=counts.nodes_needed_at_listed,
        weight_precision=per.weight_precision,
        gradient_precision=per.gradient_precision if training else None,
        stack=load_stack().name if training else None,
        assumptions=_assumptions(
            model=model,
            num_params=num_params,
            precision=precision,
            per=per,
            zero_stage=zero_stage,
            dp=dp,
            per_gpu=per_gpu,
            device=device,
            node_size=node_size,
            system=system,
            training=training,
            released=asked in (None, RELEASED),
        ),
    )


def _precision(model: TransformerSpec, precision: str | None, *, training: bool) -> str:
    """The format ``plan_memory`` counts in: ``precision`` as given; unset, the model's published
    format to serve and bf16 to train; ``released`` the published format (serving only)."""
    if precision is None:
        return _TRAINING_DEFAULT_PRECISION if training else model.release_format
    check_kind("precision", precision, str, "a format such as 'bf16' or 'fp8', or 'released'", what="text")
    if precision != RELEASED:
        return precision
    if training:
        raise UserInputError(
            f"precision {RELEASED!r} names the format {model.name}'s checkpoint is served in "
            f"({model.release_format}); with training give the precision the run computes in: "
            f"{', '.join(TRAINING_PRECISIONS)}"
        )
    return model.release_format


def _bytes_per_param_per_gpu(per: _PerParam, zero_stage: int, dp: int) -> float:
    def share(sharded_from_stage: int) -> float:
        return 1.0 / dp if zero_stage >= sharded_from_stage else 1.0

    return per.weights * share(3) + per.gradients * share(2) + (per.optimizer + per.master_weights) * share(1)


@dataclass(frozen=True)
class _GpuCounts:
    model_parallel_gpus: int | None = None
    gpus_needed: int | None = None
    nodes_needed: int | None = None
    bytes_per_gpu: float | None = None
    gpus_needed_at_nominal: int | None = None
    nodes_needed_at_nominal: int | None = None
    gpus_needed_at_listed: int | None = None
    nodes_needed_at_listed: int | None = None


def _gpu_counts(replica_bytes: float, dp: int, node_size: int, device: Accelerator | None) -> _GpuCounts:
    """GPUs and nodes at usable memory (what the driver reports), at the listed and at the nominal."""
    if device is None:
        return _GpuCounts()
    per_replica = _ceil(replica_bytes / device.memory_device_bytes)
    at_nominal = _ceil(replica_bytes / device.memory_nominal_bytes) * dp
    at_listed = _ceil(replica_bytes / device.memory_usable_bytes) * dp
    return _GpuCounts(
        model_parallel_gpus=per_replica,
        gpus_needed=per_replica * dp,
        nodes_needed=_ceil(per_replica * dp / node_size),
        bytes_per_gpu=replica_bytes / per_replica,
        gpus_needed_at_nominal=at_nominal,
        nodes_needed_at_nominal=_ceil(at_nominal / node_size),
        gpus_needed_at_listed=at_listed,
        nodes_needed_at_listed=_ceil(at_listed / node_size),
    )


def _assumptions(
    *,
    model: TransformerSpec,
    num_params: int,
    precision: str,
    per: _PerParam,
    zero_stage: int,
    dp: int,
    per_gpu: float,
    device: Accelerator | None,
    node_size: int,
    system: System | None,
    training: bool,
    released: bool,
) -> tuple[str, ...]:
    lines = [f"{model.name}: {num_params:,} parameters ({format_count(num_params)})"]
    if model.num_mtp_modules:
        lines[0] += f", its {model.num_mtp_modules} multi-token-prediction module(s) excluded"
    if training:
        lines.extend(_training_lines(precision, per))
    else:
        if released:
            lines.append(_released_line(model))
        lines.append(_served_weights_line(model, precision, per.weights))
        lines.append(
            "weights only: activations, optimizer state and inputs come on top (and a KV cache to serve)"
        )
    lines.extend(_sharding_lines(zero_stage, dp, per_gpu))
    lines.extend(_device_lines(device, node_size, system))
    lines.append("units: GB = 1e9 bytes, TB = 1e12; GiB = 2^30, TiB = 2^40")
    return tuple(lines)


def _released_line(model: TransformerSpec) -> str:
    """What the default (``released``) serving precision resolved to, and where that comes from."""
    return (
        f"precision {RELEASED}: {model.release_format}, the format {model.name}'s checkpoint is "
        "published in, as 'plan infer' assumes (--precision bf16, fp8, ... for another)"
    )


def _served_weights_line(model: TransformerSpec, precision: str, weights: float) -> str:
    checkpoint, narrow = _published_format(model, precision)
    if weights == narrow:
        return f"weights at {precision}: {weights:g} bytes/parameter"
    kept = "the embedding table, LM head and norms in 16 bits as served"
    if checkpoint is not None:
        kept += (
            f", the {kept_layers_text(checkpoint.kept_layers)} in {checkpoint.attention_weights} "
            f"as {checkpoint.name} ships them"
        )
    return (
        f"weights at {precision} ({narrow:.4g} bytes/parameter), {kept}: {weights:.4g} "
        "bytes/parameter on average"
    )


def _sharding_lines(zero_stage: int, dp: int, per_gpu: float) -> list[str]:
    if dp == 1:
        return []
    if zero_stage == 0:
        return [f"no ZeRO: each of the {dp} data-parallel replicas holds a full copy of the state"]
    shards = {1: "optimizer state and master weights", 2: "gradients, optimizer state and master weights"}
    sharded = shards.get(zero_stage, "weights, gradients, optimizer state and master weights")
    return [f"ZeRO-{zero_stage} shards the {sharded} over dp={dp}: {per_gpu:.4g} bytes/parameter per GPU"]


def _training_lines(precision: str, per: _PerParam) -> list[str]:
    total = per.weights + per.gradients + per.optimizer + per.master_weights
    if per.weight_precision == precision:
        weights = f"{per.weights:g} (weights, {precision})"
        lines = []
    else:
        stored = per.weights - per.weight_copy
        copy = f" + {per.weight_copy:g} {precision} copy" if per.weight_copy else ""
        weights = f"{per.weights:g} (weights: {stored:g} {per.weight_precision}{copy})"
        lines = [
            f"{precision} training computes in {precision} and stores what 'plan train' counts "
            f"(Transformer Engine, Megatron-Core): {per.weight_precision} weights"
            + (f" with the {precision} copy the GEMMs read" if per.weight_copy else "")
            + f" and {per.gradient_precision} gradients; --grad-precision sets the gradients' storage"
        ]
    return [
        f"mixed-precision training: {weights} + {per.gradients:g} (gradients, {per.gradient_precision}) "
        f"+ {per.optimizer:g} (optimizer state) + {per.master_weights:g} (fp32 master weights) = "
        f"{total:g} bytes/parameter",
        *lines,
        _stack_line(per),
        "activations and inputs come on top",
    ]


def _stack_line(per: _PerParam) -> str:
    """Which stack's rule the training state follows: the default profile, what ``plan train`` and
    ``search train`` use unless ``--stack`` names another."""
    stack = load_stack()
    rules = f"'plan train's default stack, {stack.name} ({stack.sharding.display_name})"
    if per.gradients_given:
        return f"gradients in {per.gradient_precision} as --grad-precision asks; ZeRO stages as under {rules}"
    return (
        f"gradients in {per.gradient_precision}: the main gradients kept under {rules}, whose ZeRO "
        "stages these follow too; --grad-precision bf16 stores 16-bit gradients (the ZeRO paper's count)"
    )


def _device_lines(device: Accelerator | None, node_size: int, system: System | None) -> list[str]:
    if device is None:
        return ["no GPU or system given: GPU and node counts not computed"]
    usable, listed, nominal = (
        device.memory_device_bytes,
        device.memory_usable_bytes,
        device.memory_nominal_bytes,
    )
    both = f"{format_bytes(usable)} ({format_bytes(usable, binary=True)}) usable per GPU"
    if device.memory_reported_bytes:
        lines = [
            f"{device.name}: {both}, what the driver reports (nvidia-smi memory.total) and the memory "
            f"'plan' and 'search' size deployments with; {format_bytes(listed)} "
            f"({format_bytes(listed, binary=True)}) listed on the datasheet, {format_bytes(nominal)} "
            f"({format_bytes(nominal, binary=True)}) nominal; GPU counts use usable memory, the "
            "listed and nominal counts are shown for comparison",
        ]
    else:
        lines = [
            f"{device.name}: {both}, as listed (the catalog has no driver-reported figure), of "
            f"{format_bytes(nominal)} ({format_bytes(nominal, binary=True)}) nominal; GPU counts use "
            "usable memory, nominal is shown for comparison",
        ]
    lines.append(
        "all usable memory holds model state (nothing reserved for the CUDA context, "
        "activations or fragmentation): a lower bound"
    )
    if system is not None:
        lines.append(f"nodes are {system.name}: {node_size} GPUs each")
    else:
        lines.append(f"nodes of {node_size} GPUs (HGX/DGX-style); give a system for another node size")
    return lines

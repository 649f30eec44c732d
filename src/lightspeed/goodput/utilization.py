"""MFU and HFU: useful FLOPs per second against the accelerators' dense peak.

``mfu = tokens * model_flop_per_token / (seconds * num_accelerators * peak)``
with the dense peak of the precision run (PaLM's definition, REFERENCE §2);
HFU uses hardware FLOP per token (counting activation recomputation). Both are
computed twice: over the whole wall time (``mfu``) and over productive step
time only (``step_mfu``). Nothing falls back to a default device or model: when
either is unknown, the figures are ``None`` and ``reason`` says why.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace
from typing import Final

from lightspeed.catalog import Accelerator, Catalog, load_catalog
from lightspeed.errors import LightspeedError, UnknownNameError, UserInputError
from lightspeed.goodput.reader import Workload
from lightspeed.records import Record
from lightspeed.workload import MFU_CONVENTION, ModelRegistry

DEFAULT_CONVENTION = MFU_CONVENTION  # what plan train predicts MFU in, so the two compare


_COUNTS: Final = ("num_nodes", "num_accelerators")


def figure_problem(name: str, value: object) -> str:
    """Why ``value`` is no valid ``name`` (``""`` when it is one, or ``None``): counts of nodes and
    accelerators are whole numbers >= 1, FLOP figures and token rates finite numbers > 0."""
    if value is None:
        return ""
    number = None if isinstance(value, bool) or not isinstance(value, numbers.Real) else float(value)
    if name in _COUNTS:
        valid = isinstance(value, numbers.Integral) and number is not None and number >= 1
        return "" if valid else f"{name} must be a whole number >= 1, got {value!r}"
    valid = number is not None and 0 < number < math.inf
    return "" if valid else f"{name} must be a finite number > 0, got {value!r}"


def check_figures(**figures: object) -> None:
    """Refuse the first figure :func:`figure_problem` finds wrong (``UserInputError``)."""
    for name, value in figures.items():
        if problem := figure_problem(name, value):
            raise UserInputError(problem)


@dataclass(frozen=True)
class Utilization(Record):
    """MFU/HFU with everything they were computed from, or the reason they are unavailable."""

    mfu: float | None = None
    hfu: float | None = None
    step_mfu: float | None = None
    step_hfu: float | None = None
    model: str | None = None
    device: str | None = None
    precision: str = "bf16"
    seq_len: int | None = None
    model_flop_per_token: float | None = None
    hardware_flop_per_token: float | None = None
    convention: str = ""
    formula: str = ""
    peak_flop_per_s: float | None = None
    peak_source: str = ""  # "catalog" (the device's dense peak) or "given" (recorded at job start or passed)
    num_accelerators: int | None = None
    reason: str = ""
    above_peak_ratio: float | None = None  # set (and the figures left out) when MFU/HFU came out above 100%


@dataclass(frozen=True)
class FlopsPerTokenFigures(Record):
    """Model and hardware FLOP per token with the convention and formula used."""

    model_flop_per_token: float
    hardware_flop_per_token: float | None
    convention: str
    formula: str


def utilization(
    *,
    tokens: float,
    total_s: float,
    productive_s: float,
    workload: Workload,
    num_accelerators: int | None,
    catalog: Catalog | None = None,
    models: ModelRegistry | None = None,
    convention: str = DEFAULT_CONVENTION,
    flops: FlopsPerTokenFigures | None = None,
) -> Utilization:
    """MFU/HFU of ``tokens`` processed in ``total_s`` (wall) and ``productive_s`` (steps)."""
    base = Utilization(
        model=workload.model,
        device=workload.system,
        precision=workload.precision,
        seq_len=workload.seq_len,
        num_accelerators=num_accelerators,
    )
    try:
        figures = flops or model_flops(workload=workload, models=models, convention=convention)
    except LightspeedError as error:
        return replace(base, reason=str(error))
    base = replace(
        base,
        model_flop_per_token=figures.model_flop_per_token,
        hardware_flop_per_token=figures.hardware_flop_per_token,
        convention=figures.convention,
        formula=figures.formula,
    )
    try:
        peak, device = peak_flop_per_s(workload=workload, catalog=catalog)
    except LightspeedError as error:
        return replace(base, reason=str(error))
    source = "given" if workload.peak_flop_per_s is not None else "catalog"
    base = replace(base, device=device, peak_flop_per_s=peak, peak_source=source)
    if tokens <= 0:
        return replace(base, reason="no tokens were recorded (pass tokens= to tracker.step)")
    if not num_accelerators:
        return replace(base, reason="the number of accelerators is unknown")
    capacity = num_accelerators * peak
    hardware = figures.hardware_flop_per_token
    result = replace(
        base,
        mfu=_ratio(tokens * figures.model_flop_per_token, total_s * capacity),
        step_mfu=_ratio(tokens * figures.model_flop_per_token, productive_s * capacity),
        hfu=_ratio(tokens * hardware, total_s * capacity) if hardware is not None else None,
        step_hfu=_ratio(tokens * hardware, productive_s * capacity) if hardware is not None else None,
    )
    checked = _above_peak_left_out(result, workload.precision)
    if workload.peak_flop_per_s is None and checked.above_peak_ratio is None:
        return _above_gemm_ceiling(checked, resolve_accelerator(catalog=catalog, name=device))
    return checked


def _above_gemm_ceiling(result: Utilization, accelerator: Accelerator) -> Utilization:
    """A step MFU above what the device's best GEMMs reach at the precision (its family's measured
    ceiling, MAMF) is kept but flagged: no step outruns its GEMMs, so an input (most often the
    precision: an FP8 run counted against the BF16 peak) does not match the run."""
    from lightspeed.sol.core.efficiency import default_efficiency  # the engines only where needed
    from lightspeed.units import compute_precision

    if result.step_mfu is None or result.reason:
        return result
    ceiling = default_efficiency(accelerator.family).gemm_ceiling(compute_precision(result.precision))
    if result.step_mfu <= ceiling:
        return result
    return replace(
        result,
        reason=f"step MFU {result.step_mfu:.0%} is above the {ceiling:.0%} of the {result.precision} peak "
        f"that {accelerator.name}'s best GEMMs reach (its family's measured ceiling): no step outruns its "
        "GEMMs, so the precision (an FP8 run: --precision fp8), the FLOP per token, the model or the "
        "number of accelerators does not match this run",
    )


def _above_peak_left_out(result: Utilization, precision: str) -> Utilization:
    """MFU or HFU above 100% of the peak is no measurement (an input is wrong): that figure is left
    out, ``above_peak_ratio`` keeps what it came to and ``reason`` says which inputs to check."""
    mfu_high = (result.step_mfu or 0.0) > 1.0
    hfu_high = (result.step_hfu or 0.0) > 1.0
    if not (mfu_high or hfu_high):
        return result
    name, ratio, wall = (
        ("MFU", result.step_mfu, result.mfu) if mfu_high else ("HFU", result.step_hfu, result.hfu)
    )
    over_wall = f", {wall:.0%} over the wall time" if wall is not None else ""
    return replace(
        result,
        mfu=None if mfu_high else result.mfu,
        step_mfu=None if mfu_high else result.step_mfu,
        hfu=None,
        step_hfu=None,
        above_peak_ratio=ratio,
        reason=f"{name} n/a: the step {name} (over productive step time) comes out at {ratio:.0%} of the "
        f"{precision} peak{over_wall}, which no run reaches: "
        "the precision (a lower one such as fp8: --precision fp8), the FLOP per token, the model or the "
        "number of accelerators does not match this run",
    )


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator > 0 else None


def model_flops(
    *, workload: Workload, models: ModelRegistry | None = None, convention: str = DEFAULT_CONVENTION
) -> FlopsPerTokenFigures:
    """Model and hardware FLOP per token of the workload's training.

    Given directly (``model_flop_per_token``), else from the model registry at
    the workload's sequence length under ``convention``. ``training="lora"``
    counts a frozen base model: forward plus the backward pass for activation
    gradients, i.e. twice the forward FLOPs of the weight matmuls, plus three
    times the forward FLOPs of attention scores and values (both operands are
    activations, so their backward is complete); the adapters (rank 16 is under
    0.1% of a 70B model's weights) are left out. Hardware FLOPs add the
    recomputed forward pass (``recompute="full"``) or attention (``"selective"``).
    """
    for name in ("model_flop_per_token", "hardware_flop_per_token"):
        if problem := figure_problem(name, getattr(workload, name)):
            raise UserInputError(f"MFU unavailable: the recorded {problem}")
    if workload.model_flop_per_token is not None:
        hardware = workload.hardware_flop_per_token
        if hardware is None and workload.recompute == "none":
            hardware = workload.model_flop_per_token
        return FlopsPerTokenFigures(
            model_flop_per_token=workload.model_flop_per_token,
            hardware_flop_per_token=hardware,
            convention="given",
            formula="model FLOP per token given by the user",
        )
    if workload.model is None:
        raise UserInputError("MFU unavailable: no model recorded (pass model= to the Tracker or --model)")
    if workload.seq_len is None:
        raise UserInputError("MFU unavailable: no sequence length recorded (pass seq_len= or --seq-len)")
    from lightspeed.workload import flops_per_token, load_models  # loaded only when a model is named

    spec = (models if models is not None else load_models()).get(workload.model)
    plain = flops_per_token(spec, seq_len=workload.seq_len, convention=convention)
    attention_forward = plain.attention_training_flop / 3.0
    if workload.training == "lora":
        model = 2.0 * plain.forward_flop + attention_forward
        formula = (
            f"LoRA: 2 x forward + attention forward = 2 x {plain.forward_flop:.4g} + "
            f"{attention_forward:.4g} FLOP, forward = ({plain.formula}) / 3"
        )
    else:
        model = plain.training_flop
        formula = f"{plain.formula} = {plain.substituted}"
    extra = 0.0
    if workload.recompute == "full":
        recomputed = flops_per_token(spec, seq_len=workload.seq_len, convention=convention, recompute=True)
        extra = recomputed.training_flop - plain.training_flop
    elif workload.recompute == "selective":
        extra = attention_forward
    return FlopsPerTokenFigures(
        model_flop_per_token=model,
        hardware_flop_per_token=model + extra,
        convention=f"{plain.convention}{' (LoRA)' if workload.training == 'lora' else ''}",
        formula=formula,
    )


def peak_flop_per_s(*, workload: Workload, catalog: Catalog | None = None) -> tuple[float, str]:
    """Dense peak FLOP/s of one accelerator at the run's precision, and the device's name."""
    if problem := figure_problem("peak_flop_per_s", workload.peak_flop_per_s):
        raise UserInputError(f"MFU unavailable: the recorded {problem}")
    if workload.peak_flop_per_s is not None:
        return workload.peak_flop_per_s, workload.system or "given"
    if workload.system is None:
        raise UserInputError("MFU unavailable: no device recorded (pass system= to the Tracker or --system)")
    accelerator = resolve_accelerator(catalog=catalog, name=workload.system)
    return accelerator.dense_flop_per_s(workload.precision), accelerator.name


def resolve_accelerator(*, catalog: Catalog | None, name: str) -> Accelerator:
    """The accelerator called ``name``, or the accelerator of the system called ``name``."""
    if catalog is None:
        catalog = load_catalog()
    try:
        accelerator: Accelerator = catalog.accelerator(name)
        return accelerator
    except UnknownNameError as unknown_device:
        try:
            system_accelerator: Accelerator = catalog.system(name).accelerator
            return system_accelerator
        except UnknownNameError:
            raise unknown_device from None

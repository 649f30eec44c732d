"""Turn a published training row into a model, a cluster and candidate plans.

Rules for what a row leaves unsaid (documented in ``docs/sol.md``):

* **Software stack** (:func:`lightspeed.sol.core.stacks.stack_for`): the
  framework the row names (``torchtitan``, ``Megatron-Bridge``, ``llm-foundry``,
  ...) in the year of its software (:func:`row_year`: a ``YY.MM`` release or
  container, else the source's year, else 2020 for Ampere/Volta and 2024 for
  later); a row naming none takes the Megatron profile of its year. The stack
  sets attention kernel, dropout, sequence parallelism, overlap, FP8 storage and
  what "selective" recomputation means; the row's own words override
  (:func:`_stated_settings`).
* **Unreported micro-batch, interleaving depth or recomputation**: the fastest
  plan that fits among the valid values (published runs report tuned setups).
* **Sharding** (:func:`zero_stage_of`): ``ZeRO-k`` -> k, FSDP -> 3 (with PP: 2, or
  the stage of the row's stack that keeps as much), ``distributed optimizer`` or a
  bare ``ZeRO`` -> 1, ``none`` -> 0, unreported -> 1.
* **FLOP convention** of a TFLOP/s or MFU figure (:func:`flop_convention`):
  ``96-form`` -> Megatron's with the recompute pass, ``72-form`` -> without,
  ``model TFLOP/s`` -> 6N + causal attention; else as the named stack counts its
  own figures; a row naming no framework -> 6N + 12·L·h·s (PaLM).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Final

from lightspeed.catalog import Accelerator, Catalog, Cluster
from lightspeed.errors import InvalidPlanError
from lightspeed.records import Record
from lightspeed.sol.core.stacks import Stack, stack_for
from lightspeed.sol.train.batch import split_batch
from lightspeed.sol.train.plan import TrainingPlan
from lightspeed.sol.validation.hardware_text import resolve_row_cluster
from lightspeed.sol.validation.published import (
    PublishedRow,
    RowError,
    first_number,
    integer_cell,
    is_missing,
    parenthesized_number,
)
from lightspeed.sol.validation.readings import Reading, read_cell
from lightspeed.workload import AttentionSpec, ModelRegistry, TransformerSpec

METRICS = (
    "tflop_per_s_per_gpu",
    "step_time_s",
    "gpu_hours",
    "time_to_train_s",
    "mfu",
    "tokens_per_s",
    "tokens_per_s_per_gpu",
    "samples_per_s",
    "samples_per_s_per_gpu",
    "hfu",
    "memory_per_gpu_bytes",
)


@dataclass(frozen=True)
class RowSetup(Record):
    """Everything needed to predict one training row, plus what was assumed."""

    model: TransformerSpec
    cluster: Cluster
    plans: tuple[TrainingPlan, ...]
    metric: str
    measured: float
    flop_convention: str
    flop_recompute: bool
    flop_causal: bool
    num_tokens: float | None
    assumptions: tuple[str, ...] = field(default_factory=tuple)
    reading: Reading | None = None
    readings: tuple[Reading, ...] = ()
    stack: Stack | None = None


_CONTAINER: Final = re.compile(
    r"\b(2\d)\.(?:0[1-9]|1[0-2])\s+\w*\s*container|\bv(2\d)\.(?:0[1-9]|1[0-2])\b", re.IGNORECASE
)


def row_year(row: PublishedRow, accelerator: Accelerator) -> tuple[int, str]:
    """(year of the software a row ran, where it was read): a ``YY.MM`` release or container
    (``v25.04``, ``25.11 NeMo Container``), else the first year the source names (``2024-12``,
    ``SC21``), else 2020 for Ampere/Volta and 2024 for later hardware."""
    source = row.text("source")
    release = _CONTAINER.search(source)
    if release:
        return 2000 + int(release.group(1) or release.group(2)), f"release {release.group(0)}"
    match = re.search(r"\b(20[12]\d)\b", source) or re.search(r"\bSC(\d\d)\b", source)
    if match:
        year = int(match.group(1))
        return (year if year > 100 else 2000 + year), f"'{match.group(0)}' in the source"
    if accelerator.architecture.lower() in ("ampere", "volta"):
        return 2020, "no year in the source: 2020 for Ampere"
    return 2024, f"no year in the source: 2024 for {accelerator.architecture}"


def resolve_cluster(catalog: Catalog, row: PublishedRow, num_gpus: int) -> tuple[Cluster, list[str]]:
    """The cluster of a row (:func:`~lightspeed.sol.validation.hardware_text.resolve_row_cluster`)."""
    return resolve_row_cluster(catalog, row, num_gpus)


def _heads(text: str) -> tuple[int | None, int | None]:
    heads = integer_cell(text)
    kv_match = re.search(r"\((\d+)\s*kv\)", text)
    return heads, (int(kv_match.group(1)) if kv_match else heads)


def model_from_dims(row: PublishedRow) -> TransformerSpec:
    """A GPT-style model (MHA, 4h GELU MLP, learned positions, LayerNorm, biases) from a
    row's dimensions, or a Llama-style one (SwiGLU, RoPE, RMSNorm) when the row has KV heads."""
    layers = integer_cell(row.text("layers"))
    hidden = integer_cell(row.text("hidden"))
    heads, kv_heads = _heads(row.text("heads(kv)"))
    ffn_text = row.text("ffn")
    ffn = parenthesized_number(ffn_text) or first_number(ffn_text) if not is_missing(ffn_text) else None
    vocab_text = row.text("vocab")
    vocab = first_number(vocab_text) if not is_missing(vocab_text) else None
    missing = [
        name
        for name, value in (("layers", layers), ("hidden", hidden), ("heads(kv)", heads), ("vocab", vocab))
        if value is None
    ]
    if missing or layers is None or hidden is None or heads is None or vocab is None:
        raise RowError(
            f"model {row.text('model')!r} is not in the catalog and the row lacks {', '.join(missing)}"
        )
    gqa = kv_heads is not None and kv_heads != heads
    seq = integer_cell(row.text("seq"), 2048) or 2048
    ffn_size = int(ffn) if ffn and ffn > 16 else 4 * hidden
    return TransformerSpec(
        name=row.text("model").lower().replace(" ", "-"),
        display_name=row.text("model"),
        num_layers=layers,
        hidden_size=hidden,
        ffn_hidden_size=ffn_size,
        vocab_size=int(vocab),
        attention=AttentionSpec(
            "gqa" if gqa else "mha", heads, kv_heads or heads, hidden // heads, qkv_bias=not gqa
        ),
        mlp="swiglu" if gqa else "gelu",
        position_embedding="rope" if gqa else "learned",
        max_seq_len=seq,
        norm="rmsnorm" if gqa else "layernorm",
        mlp_bias=not gqa,
    )


def resolve_model(registry: ModelRegistry, row: PublishedRow) -> tuple[TransformerSpec, str]:
    """The catalog model a row names (text before any parenthesis), else one built from its dims."""
    name = re.split(r"[(]", row.text("model"))[0].strip()
    found = registry.find(name) if name else None
    if found is not None:
        return found.spec, f"model '{row.text('model')}' -> catalog model {name}"
    spec = model_from_dims(row)
    return (
        spec,
        f"model '{row.text('model')}' built from the row's dimensions ({spec.mlp}, {spec.attention.kind})",
    )


def zero_stage_of(text: str, pp: int = 1, stack: Stack | None = None) -> tuple[int, str]:
    """(ZeRO stage, note) of a sharding cell.

    ``ZeRO-k`` is k; FSDP (v1's default FULL_SHARD, FSDP2's ``fully_shard``,
    Megatron-FSDP, ``FSDP=N`` with N > 1) shards everything: 3, except with
    pipeline parallelism, where FSDP keeps parameters gathered across the
    micro-batches (torchtitan's ``reshard_after_forward=False``, Llama 3's
    FSDP) and accumulates fp32 gradients whole until the last one (Llama 3
    paper, section 3.3.2): ZeRO-2 in FSDP's terms, and under a ``stack`` with
    other memory rules the stage that keeps the same (the distributed
    optimizer's ZeRO-1 in Megatron's); ``FSDP=0``, a distributed optimizer or
    a bare ``ZeRO`` is 1; ``none`` is 0; unreported 1.
    """
    lowered = text.lower()
    match = re.search(r"zero-?(\d)", lowered)
    if match:
        return int(match.group(1)), f"sharding '{text}' -> ZeRO-{match.group(1)}"
    sized = re.search(r"fsdp\s*=\s*(\d+)", lowered)
    fsdp = ("fsdp" in lowered and not sized) or (sized is not None and int(sized.group(1)) > 1)
    if fsdp or "full_shard" in lowered or "full shard" in lowered:
        if pp > 1:
            return _fsdp_under_pipeline(text, pp, stack)
        return 3, f"sharding '{text}' -> ZeRO-3 (FSDP full sharding)"
    if "distributed optimizer" in lowered or "zero" in lowered or "fsdp" in lowered:
        return 1, f"sharding '{text}' -> ZeRO-1 (distributed optimizer)"
    if lowered.startswith("none"):
        return 0, "sharding none -> ZeRO-0 (DDP)"
    return 1, "sharding not reported -> ZeRO-1"


def _fsdp_under_pipeline(text: str, pp: int, stack: Stack | None) -> tuple[int, str]:
    """FSDP under PP in the stack's terms: the stage keeping parameters and gradients whole."""
    kept = {"weights": "whole", "gradients": "whole", "optimizer": "sharded"}
    stage = None if stack is None else stack.sharding.stage_keeping(**kept, pipeline=True)
    if stack is None or stage is None or stage == 2:
        return 2, f"sharding '{text}' with pp={pp} -> ZeRO-2 (FSDP keeps parameters gathered under PP)"
    return stage, (
        f"sharding '{text}' with pp={pp} -> ZeRO-{stage} under {stack.name}: FSDP under PP keeps parameters "
        f"gathered and fp32 gradients whole until the last micro-batch, as the "
        f"{stack.sharding_rule(stage, pipeline=True).name} does"
    )


def _recompute(text: str, stack: Stack) -> str:
    lowered = text.lower()
    if "per-op" in lowered or "(op" in lowered:
        return "op"
    if "selective" in lowered or "partial" in lowered:
        return stack.selective_recompute
    if lowered.startswith("full") or "full activation" in lowered:
        return "full"
    return "none"


def _precision(text: str) -> str:
    lowered = text.lower()
    for key in ("fp8", "fp4", "fp16", "bf16", "fp32"):
        if key in lowered:
            return key
    return "bf16"


def _global_batch(text: str, dp: int, seq_len: int) -> int | None:
    per_dp = re.search(r"(\d+)\s*/\s*dp", text.lower())
    if per_dp:
        return int(per_dp.group(1)) * dp
    ramp = re.search(r"ramp to (\d+)", text.lower())
    if ramp:
        return int(ramp.group(1))
    if "token" in text.lower():
        tokens = first_number(text)
        return round(tokens * 1.048576 / seq_len) if tokens else None  # "16M tokens" is 16 x 2^20
    return integer_cell(text)


@dataclass(frozen=True)
class _Degrees:
    tp: int
    pp: int
    dp: int
    ep: int
    cp: int


def _degrees(row: PublishedRow, num_gpus: int) -> _Degrees:
    tp = integer_cell(row.text("TP"), 1) or 1
    pp = integer_cell(row.text("PP"), 1) or 1
    cp = integer_cell(row.text("CP"), 1) or 1
    ep = integer_cell(row.text("EP"), 1) or 1
    dp_text = row.text("DP")
    # a DP cell that starts with a number is the degree; text such as "ZeRO-1" names sharding only
    dp = integer_cell(dp_text, None) if re.match(r"\s*\d", dp_text) else None
    if dp is not None and tp * pp * cp * dp != num_gpus:
        raise RowError(
            f"TP x PP x CP x DP = {tp} x {pp} x {cp} x {dp} = {tp * pp * cp * dp} GPUs, "
            f"not the {num_gpus} GPUs reported"
        )
    if dp is None:
        if num_gpus % (tp * pp * cp):
            raise RowError(f"{num_gpus} GPUs do not split into TP x PP x CP = {tp * pp * cp}")
        dp = num_gpus // (tp * pp * cp)
    return _Degrees(tp, pp, dp, ep, cp)


def _stated_settings(text: str, zero_stage: int, stack: Stack) -> dict[str, object]:
    """What the row's own words change from its stack's defaults."""
    settings: dict[str, object] = {}
    if "tp all-reduce" in text:
        settings["sequence_parallel"] = False
    if zero_stage >= 3:  # ZeRO-3/FSDP prefetch parameters and overlap by design
        settings["dp_overlap"] = True
    if "asynctp" in text.replace(" ", "").replace("-", "") and "with asynctp" not in text:
        settings["tp_overlap"] = True
    if settings.get("sequence_parallel") is False or stack.sequence_parallel:
        return settings
    return {**settings, "sequence_parallel": False}


def _split_over_free_degrees(
    row: PublishedRow, base: dict[str, object], model: TransformerSpec, stack: Stack
) -> tuple[_Degrees, dict[str, object], str]:
    """The row's degrees and settings with those it leaves unstated (TP, PP, CP, DP cells empty
    or n/r) chosen so that its global batch splits over DP, and the sentence saying what was chosen."""
    cells = {"tp": "TP", "pp": "PP", "cp": "CP"}
    free = [name for name, cell in cells.items() if is_missing(row.text(cell))]
    if not re.match(r"\s*\d", row.text("DP")):
        free.append("dp")
    try:
        split = split_batch(TrainingPlan(**base), model, free=free, stack=stack)  # type: ignore[arg-type]
    except InvalidPlanError as error:
        raise RowError(f"{error}; give the batch or the GPU split the run used") from None
    plan = split.plan
    degrees = _Degrees(plan.tp, plan.pp, plan.dp, plan.ep, plan.cp)
    changed = {"tp": plan.tp, "pp": plan.pp, "cp": plan.cp, "dp": plan.dp}
    return degrees, {**base, **changed, "uneven_pipeline": model.num_layers % plan.pp != 0}, split.note


def candidate_plans(
    row: PublishedRow, model: TransformerSpec, num_gpus: int, stack: Stack
) -> tuple[list[TrainingPlan], list[str]]:
    """Every plan the row allows: reported settings fixed, unreported ones enumerated."""
    degrees = _degrees(row, num_gpus)
    seq_len = integer_cell(row.text("seq"), model.max_seq_len) or model.max_seq_len
    batch = _global_batch(row.text("global_batch"), degrees.dp, seq_len)
    if batch is None:
        raise RowError("global_batch is not reported; a prediction needs it")
    micro = integer_cell(row.text("micro_batch"))
    vpp_text = row.text("VPP").lower()
    schedule = "dualpipe" if "dualpipe" in vpp_text else "1f1b"
    fixed_vpp = integer_cell(vpp_text) if not is_missing(vpp_text) and "yes" not in vpp_text else None
    vpps = (
        [fixed_vpp]
        if fixed_vpp
        else ([2, 3, 4, 6, 8] if "yes" in vpp_text or "interleav" in vpp_text else [1])
    )
    micros = [micro] if micro else [1, 2, 4, 8, 16]
    recompute_text = row.text("recompute")
    recomputes = (
        ["none", stack.selective_recompute, "partial", "full"]
        if is_missing(recompute_text)
        else [_recompute(recompute_text, stack)]
    )
    joined = row.joined()
    zero_stage, zero_note = zero_stage_of(row.text("sharding"), degrees.pp, stack)
    base = dict(
        tp=degrees.tp,
        pp=degrees.pp,
        dp=degrees.dp,
        ep=degrees.ep,
        cp=degrees.cp,
        zero_stage=zero_stage,
        schedule=schedule,
        global_batch_size=batch,
        seq_len=seq_len,
        precision=_precision(row.text("precision")),
        uneven_pipeline=model.num_layers % degrees.pp != 0,
        **_stated_settings(joined, zero_stage, stack),
    )
    split_note = ""
    if batch % degrees.dp:  # search the degrees the row leaves unstated (issue 28)
        degrees, base, split_note = _split_over_free_degrees(row, base, model, stack)
    plans = []
    for vpp, micro_batch, recompute in itertools.product(vpps, micros, recomputes):
        if (batch // degrees.dp) % micro_batch:
            continue
        if vpp > 1 and (batch // degrees.dp // micro_batch) % degrees.pp:
            continue
        plan = TrainingPlan(vpp=vpp, micro_batch_size=micro_batch, recompute=recompute, **base)  # type: ignore[arg-type]
        plans.append(plan.resolved(stack))
    if not plans:
        raise RowError(f"no micro-batch in {micros} divides the {batch // degrees.dp} sequences per replica")
    first = plans[0]
    notes = [
        *([split_note] if split_note else []),
        zero_note,
        f"{stack.name}: attention {first.attention_impl}, dropout {first.dropout}, sequence parallel "
        f"{first.sequence_parallel}, DP overlap {first.dp_overlap}, TP overlap {first.tp_overlap}",
    ]
    if len(plans) > 1:
        notes.append(
            f"unreported settings searched over {len(plans)} plans (micro-batch {micros}, vpp {vpps}, "
            f"recompute {recomputes}): the fastest that fits"
        )
    return plans, notes


TRAIN_METRICS_NEEDING_TOKENS = ("gpu_hours", "time_to_train_s")


def choose_reading(
    readings: tuple[Reading, ...], keys: tuple[str, ...], num_gpus: int, node_gpus: int
) -> Reading:
    """The first reading whose quantity the engine predicts (per-node values made per GPU).

    Readings of a token-budget metric without the budget in the text are skipped
    (a GPU-hours figure needs ``for 14.8T tokens``); aggregate PFLOP/s becomes TFLOP/s per GPU.
    """
    skipped = []
    for reading in readings:
        reading = reading.per_gpu(node_gpus)
        if reading.value is None or reading.key not in keys:
            skipped.append(reading)
            continue
        if reading.key in TRAIN_METRICS_NEEDING_TOKENS and reading.num_tokens is None:
            skipped.append(reading)
            continue
        if reading.key == "pflop_per_s":
            return _replace_reading(
                reading, "tflop_per_s_per_gpu", reading.value / num_gpus, "aggregate / GPUs"
            )
        return reading
    texts = "; ".join(f"'{r.metric_text}'" for r in skipped) or "(empty)"
    needs_budget = [r for r in skipped if r.key in TRAIN_METRICS_NEEDING_TOKENS]
    if needs_budget and len(needs_budget) == len(skipped):
        raise RowError(
            "a GPU-hours or time-to-train row must name its token budget in the metric "
            "(e.g. 'for 14.8T tokens')"
        )
    raise RowError(f"metric {texts} is not one lightspeed can predict ({', '.join(keys)})")


def _replace_reading(reading: Reading, key: str, value: float, note: str) -> Reading:
    data = reading.to_dict()
    data.update(key=key, value=value, scope="gpu", notes=(*reading.notes, note))
    return Reading(**data)


def parse_metric(row: PublishedRow) -> tuple[str, float]:
    """(metric key, measured value in base units) of a training row: the first metric
    piece lightspeed predicts, paired by position with its value (``docs/sol.md``)."""
    readings = read_cell(row.text("metric"), row.text("measured"), kind="train")
    if not readings or all(reading.value is None for reading in readings):
        raise RowError(f"measured value {row.text('measured')!r} has no number")
    reading = choose_reading(readings, (*METRICS, "pflop_per_s"), 1, 8)
    assert reading.value is not None
    return reading.key, reading.value


def flop_convention(
    row: PublishedRow, stack: Stack, reading: Reading | None = None, *, framework_named: bool = True
) -> tuple[str, bool, bool, str]:
    """(convention, counts recompute, causal, note) that a row's FLOP figures use.

    What the row says wins (``96-form``, ``72-form``, ``model TFLOP/s``); else a
    framework's own figures count as its stack does (Megatron-LM 2021 counted the
    recompute pass); a row naming no framework counts as PaLM (6N + 12·L·h·s).
    """
    joined = row.joined()
    full = row.text("recompute").lower().startswith("full")
    if "96-form" in joined:
        return "megatron", True, False, "FLOPs by Megatron's 96-form (recompute pass included)"
    if "72-form" in joined:
        return "megatron", False, "non-causal" not in joined, "FLOPs by Megatron's 72-form"
    if reading is not None and reading.flop_basis == "model":
        return "6N+causal-attention", False, False, "model FLOPs: 6N + causal attention (Megatron's count)"
    if framework_named:
        counts = stack.published_flop_counts_recompute and full
        return (
            stack.published_flop_convention,
            counts,
            False,
            f"FLOPs as {stack.name} counts them ({stack.published_flop_convention}"
            + (", recompute pass included)" if counts else ")"),
        )
    return "6N+attention", False, False, "FLOPs as 6N + 12·L·h·s (PaLM convention; the row states none)"


def row_setup(row: PublishedRow, catalog: Catalog, registry: ModelRegistry) -> RowSetup:
    """Model, cluster, candidate plans and metric of a training row."""
    num_gpus = integer_cell(row.text("GPUs"))
    if not num_gpus:
        raise RowError("GPUs is not reported")
    model, model_note = resolve_model(registry, row)
    cluster, cluster_notes = resolve_cluster(catalog, row, num_gpus)
    year, year_note = row_year(row, cluster.system.accelerator)
    stack, stack_note = stack_for(
        " ".join((row.text("source"), row.text("sharding"), row.text("precision"))), year
    )
    plans, plan_notes = candidate_plans(row, model, num_gpus, stack)
    readings = read_cell(row.text("metric"), row.text("measured"), kind="train")
    if not readings or all(reading.value is None for reading in readings):
        raise RowError(f"measured value {row.text('measured')!r} has no number")
    reading = choose_reading(readings, (*METRICS, "pflop_per_s"), num_gpus, cluster.system.num_accelerators)
    assert reading.value is not None
    metric, measured, num_tokens = reading.key, reading.value, reading.num_tokens
    named = "names no framework" not in stack_note
    convention, recompute, causal, flop_note = flop_convention(row, stack, reading, framework_named=named)
    return RowSetup(
        model=model,
        cluster=cluster,
        plans=tuple(plans),
        metric=metric,
        measured=measured,
        flop_convention=convention,
        flop_recompute=recompute,
        flop_causal=causal,
        num_tokens=num_tokens,
        assumptions=(model_note, *cluster_notes, f"{stack_note} ({year_note})", *plan_notes, flop_note),
        reading=reading,
        readings=readings,
        stack=stack,
    )

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
  the stage of the predicting stack that keeps as much), ``distributed optimizer`` or a
  bare ``ZeRO`` -> 1, ``none`` -> 0, unreported -> 1.
* **Unreported TP or PP**: every split of the GPUs (:func:`_free_splits`), the fastest
  that fits kept with the other unreported settings.
* **A global batch that does not split over DP** (TP and PP stated): the degrees the row
  leaves unstated (CP, DP cells empty) are searched for a split
  (:func:`lightspeed.sol.train.batch.split_batch`).
* **FLOP convention** of a TFLOP/s or MFU figure (:func:`flop_convention`):
  ``96-form`` -> Megatron's with the recompute pass, ``72-form`` -> without,
  ``model TFLOP/s`` -> 6N + causal attention; else as the named stack counts its
  own figures; a row naming no framework -> 6N + 12·L·h·s (PaLM).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Final

from lightspeed.catalog import Accelerator, Catalog, Cluster
from lightspeed.errors import InvalidPlanError, UserInputError
from lightspeed.records import Record
from lightspeed.sol.core.stacks import Stack, load_stack, stack_for
from lightspeed.sol.train.batch import candidate_splits, split_batch
from lightspeed.sol.train.plan import TrainingPlan
from lightspeed.sol.validation.hardware_text import (
    HardwareSpec,
    cluster_of,
    read_hardware,
    row_gpus,
)
from lightspeed.sol.validation.published import (
    BINARY_SUFFIXES,
    DECIMAL_SUFFIXES,
    PublishedRow,
    RowError,
    degree_cell,
    first_number,
    format_keys,
    integer_cell,
    is_missing,
    parenthesized_number,
    size_cell,
)
from lightspeed.sol.validation.readings import Reading, not_predicted_reason, read_cell
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
    peak_flop_per_s: float | None = None


@dataclass(frozen=True)
class PlanSpec(Record):
    """A published run's parallel plan: what it reported, and for each setting it left unsaid the
    values searched (the fastest plan that fits wins). ``recompute`` values are policies, where
    ``selective`` is the predicting stack's own (Megatron's core attention, torchtitan's per-op).
    ``fsdp_under_pipeline``: FSDP with PP, whose ZeRO stage is the predicting stack's that keeps
    parameters and gradients whole (``zero_stage`` is the run's own stack's);
    ``free_degrees``: the degrees the source left unstated, searched if the batch does not split."""

    tp: int
    pp: int
    dp: int
    ep: int
    cp: int
    zero_stage: int
    schedule: str
    global_batch_size: int
    seq_len: int
    precision: str
    micro_batch_sizes: tuple[int, ...]
    vpps: tuple[int, ...]
    recomputes: tuple[str, ...]
    sequence_parallel: bool | None = None
    tp_overlap: bool | None = None
    fsdp_under_pipeline: bool = False
    free_degrees: tuple[str, ...] = ()
    etp: int = 1


@dataclass(frozen=True)
class FlopCount(Record):
    """How the publisher counted the FLOPs of a TFLOP/s or MFU figure
    (:func:`lightspeed.workload.flops.flops_per_token`'s arguments)."""

    convention: str
    counts_recompute: bool
    causal: bool


@dataclass(frozen=True, kw_only=True)
class RunSpec(Record):
    """What every published run names: its row, model (``model_name`` when it is the registry's,
    else ``None``: built from the row's dimensions), hardware and GPUs, the quantity it reports
    (``measured`` in base units) and how it was read (``assumptions``, ``reading``)."""

    row_id: str
    model: TransformerSpec
    model_name: str | None
    hardware: HardwareSpec
    num_gpus: int
    metric: str
    measured: float
    assumptions: tuple[str, ...] = ()
    reading: Reading | None = None
    readings: tuple[Reading, ...] = ()


@dataclass(frozen=True, kw_only=True)
class TrainingRowSpec(RunSpec):
    """A published training run in typed fields, nothing left to read from text: what the
    structured rows hold and what the TSV reader makes of a row. ``stack`` names the profile of
    the software the run used (``docs/sol.md``)."""

    plan: PlanSpec
    flops: FlopCount
    stack: str
    num_tokens: float | None = None
    peak_flop_per_s: float | None = None


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


_NO_MTP: Final = re.compile(r"\b(?:w/o|without|no)\s+(?:the\s+)?mtp\b", re.IGNORECASE)


def resolve_model(registry: ModelRegistry, row: PublishedRow) -> tuple[TransformerSpec, str]:
    """The catalog model a row names (text before any parenthesis), else one built from its dims."""
    name = re.split(r"[(]", row.text("model"))[0].strip()
    found = registry.find(name) if name else None
    if found is not None:
        note = f"model '{row.text('model')}' -> catalog model {name}"
        if found.spec.num_mtp_modules and _NO_MTP.search(row.text("model")):
            return dataclasses.replace(found.spec, num_mtp_modules=0), f"{note}, its MTP modules not trained"
        return found.spec, note
    unsupported = registry.unsupported_model(name) if name else None
    if unsupported is not None:  # never a plain transformer built from its dimensions
        raise RowError(unsupported.refusal(name))
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
    match = _ZERO_STAGE.search(lowered)
    if match:
        return int(match.group(1)), f"sharding '{text}' -> ZeRO-{match.group(1)}"
    if _KEEPS_PARAMETERS.search(lowered):
        # FSDP's SHARD_GRAD_OP, FSDP2's reshard_after_forward=False: parameters stay gathered
        # between forward and backward, gradients and optimizer state sharded
        return 2, f"sharding '{text}' -> ZeRO-2 (FSDP keeps parameters gathered)"
    if _REPLICATED.search(lowered):
        return 0, f"sharding '{text}' -> ZeRO-0 (DDP: every rank keeps everything)"
    if _is_fsdp(lowered):
        if pp > 1:
            return _fsdp_under_pipeline(text, pp, stack)
        return 3, f"sharding '{text}' -> ZeRO-3 (FSDP full sharding)"
    if "distributed optimizer" in lowered or "zero" in lowered or "fsdp" in lowered:
        return 1, f"sharding '{text}' -> ZeRO-1 (distributed optimizer)"
    if lowered.startswith("none"):
        return 0, "sharding none -> ZeRO-0 (DDP)"
    return 1, "sharding not reported -> ZeRO-1"


# ``ZeRO-3``, ``ZeRO3``, ``ZeRO stage 3``, ``ZeRO (stage 2)``
_ZERO_STAGE: Final = re.compile(r"zero[\s-]*(?:\(?\s*stage\s*)?(\d)")
_KEEPS_PARAMETERS: Final = re.compile(r"shard_grad_op|reshard_after_forward\s*=\s*false")
# plain data parallelism: ``DDP``, ``no sharding``, ``none``, FSDP's ``NO_SHARD`` strategy (``FSDP +
# DDP`` shards, so not here)
_REPLICATED: Final = re.compile(
    r"^\s*(?:ddp|no sharding|none|not sharded)\b(?!.*(?:fsdp|zero|shard_))|\bno_shard\b"
)


def _is_fsdp(lowered: str) -> bool:
    """Whether a lower-case sharding cell names full FSDP sharding (not ``FSDP=0``, not ZeRO-k):
    FSDP, FULL_SHARD, FSDP2's ``fully_shard``, or HSDP (full sharding within each replica group)."""
    if _ZERO_STAGE.search(lowered):
        return False
    sized = re.search(r"fsdp\s*=\s*(\d+)", lowered)
    fsdp = ("fsdp" in lowered and not sized) or (sized is not None and int(sized.group(1)) > 1)
    named = ("full_shard", "full shard", "fully_shard", "fully shard", "hsdp", "hybrid_shard", "hybrid shard")
    return fsdp or any(word in lowered for word in named)


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


def _recompute(text: str) -> str:
    """The policy a recompute cell names (``selective``: the predicting stack's selective one);
    activation or gradient checkpointing said with no policy is full recomputation (PyTorch's
    ``checkpoint`` of whole blocks, Hugging Face's ``gradient_checkpointing``)."""
    lowered = text.lower()
    if "per-op" in lowered or "(op" in lowered:
        return "op"
    if "selective" in lowered or "partial" in lowered:
        return "selective"
    if _NO_RECOMPUTE.search(lowered):
        return "none"
    if re.search(r"\bfull\b", lowered) or _CHECKPOINTING.search(lowered):
        return "full"
    return "none"


# ``none``, ``no AC``, ``no recompute``, ``off``, ``disabled``, ``without checkpointing``
_NO_RECOMPUTE: Final = re.compile(r"^\s*(?:none|no|off|false|disabled?|without)\b")
# checkpointing or recomputation said without a policy: ``activation checkpointing``, ``AC``,
# ``gradient checkpointing``, ``recompute all layers``
_CHECKPOINTING: Final = re.compile(r"checkpoint|\bac\b|recomput|\bremat")


def _precision(text: str) -> tuple[str, str]:
    """(training precision, note) a cell names, spelled as frameworks do or not (``torchao
    Float8``: fp8); block-scaled formats (``MXFP8``) before their family, TF32 before FP32;
    bf16 where it names none."""
    lowered = format_keys(text)
    for key in ("mxfp8", "nvfp4", "mxfp4", "fp8", "fp4", "fp16", "bf16", "tf32", "fp32"):
        if key in lowered:
            return key, f"precision '{text.strip()}' -> {key}"
    if is_missing(text):
        return "bf16", "precision not stated: bf16"
    return "bf16", f"precision '{text.strip()}' names no format lightspeed reads: bf16"


def _global_batch(text: str, dp: int, seq_len: int) -> int | None:
    """Sequences a global-batch cell states: ``32/DP`` per replica, ``ramp to N``, sequences
    times their length (``2048 x 8192 tokens``), a token count (:func:`_sequences_of_tokens`),
    or a count of sequences (``2K`` is 2,048)."""
    lowered = text.lower()
    per_dp = re.search(r"(\d+)\s*/\s*dp", lowered)
    if per_dp:
        return int(per_dp.group(1)) * dp
    ramp = re.search(r"ramp to (\d+)", lowered)
    if ramp:
        return int(ramp.group(1))
    if "token" in lowered:
        product = _SEQUENCES_TIMES_LENGTH.search(lowered)
        if product:
            return int(product.group(1).replace(",", ""))
        return _sequences_of_tokens(lowered, dp, seq_len)
    return size_cell(text)


# ``2048 x 8192 tokens``: sequences times their length
_SEQUENCES_TIMES_LENGTH: Final = re.compile(r"(\d[\d,]*)\s*[x×*]\s*\d[\d,]*k?\s*(?:-?\s*token)")
_TOKEN_COUNT: Final = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*([km])?(?![a-z])")
# how far a token count may sit from a whole batch that splits over DP (a figure rounded to
# three digits, ``16.8M``, is 0.1% from 2,048 x 8,192)
_BATCH_ROUNDING: Final = 0.03


def _sequences_of_tokens(lowered: str, dp: int, seq_len: int) -> int | None:
    """Sequences a token count makes at ``seq_len``: ``16M`` read as 16 x 2^20 or 16 x 10^6,
    whichever gives a batch that splits over ``dp`` within rounding, the rounder in binary first
    (batches are powers of two or near them: ``16.8M`` at 8,192 is 2,048, not 2,152); an exact
    count (``16,777,216``) divided as it is."""
    match = _TOKEN_COUNT.search(lowered)
    if match is None:
        return None
    number = float(match.group(1).replace(",", ""))
    if not math.isfinite(number) or number <= 0:
        raise RowError(f"a global batch of {match.group(0)!r} tokens is not a positive number")
    suffix = match.group(2)
    readings = (number * BINARY_SUFFIXES[suffix], number * DECIMAL_SUFFIXES[suffix]) if suffix else (number,)
    batches = []
    for tokens in readings:
        sequences = tokens / seq_len
        nearest = max(dp, round(sequences / dp) * dp)
        distance = abs(sequences - nearest) / nearest
        if distance <= _BATCH_ROUNDING:
            batches.append((-_twos(nearest), distance, nearest))
    return min(batches)[2] if batches else round(readings[0] / seq_len)


def _twos(count: int) -> int:
    """How many times 2 divides ``count`` (``2048`` -> 11)."""
    return (count & -count).bit_length() - 1


@dataclass(frozen=True)
class _Degrees:
    tp: int
    pp: int
    dp: int
    ep: int
    cp: int
    etp: int = 1


_ETP: Final = re.compile(r"\bETP\s*=?\s*(\d+)", re.IGNORECASE)


def _degrees(row: PublishedRow, num_gpus: int) -> _Degrees:
    tp = degree_cell(row, "TP", 1) or 1
    pp = degree_cell(row, "PP", 1) or 1
    cp = degree_cell(row, "CP", 1) or 1
    ep = degree_cell(row, "EP", 1) or 1
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
    etp = _ETP.search(row.text("EP"))  # "8 (ETP 4)": Megatron's expert tensor parallelism
    return _Degrees(tp, pp, dp, ep, cp, int(etp.group(1)) if etp else 1)


def _stated_settings(text: str) -> dict[str, bool]:
    """What the row's own words change from its stack's defaults (``TP all-reduce``, ``AsyncTP``)."""
    settings = {}
    if "tp all-reduce" in text:
        settings["sequence_parallel"] = False
    if "asynctp" in text.replace(" ", "").replace("-", "") and "with asynctp" not in text:
        settings["tp_overlap"] = True
    return settings


SEARCHED_MICRO_BATCH_SIZES: Final = (1, 2, 4, 8, 16)
# Megatron-LM's ``--num-layers-per-virtual-pipeline-stage`` (layers per model chunk, not chunks)
_LAYERS_PER_VIRTUAL_STAGE: Final = re.compile(r"layers[\s_-]+per[\s_-]+virtual")
SEARCHED_VPPS: Final = (2, 3, 4, 6, 8)
SEARCHED_RECOMPUTES: Final = ("none", "selective", "partial", "full")


def read_plan(
    row: PublishedRow, model: TransformerSpec, num_gpus: int, stack: Stack
) -> tuple[PlanSpec, list[str]]:
    """The plan a row reports (ZeRO stage in ``stack``'s terms); for a micro-batch, interleaving
    depth or recompute policy it leaves unsaid, the values searched."""
    degrees = _degrees(row, num_gpus)
    seq_len = size_cell(row.text("seq"), model.max_seq_len) or model.max_seq_len
    batch = _global_batch(row.text("global_batch"), degrees.dp, seq_len)
    if batch is None:
        raise RowError("global_batch is not reported; a prediction needs it")
    micro = integer_cell(row.text("micro_batch"))
    vpp_text = row.text("VPP").lower()
    # the schedule's name is not the depth: ``interleaved 1F1B (v=6)`` is 6
    vpp_number = re.sub(r"\b1f1b\b", "", vpp_text)
    fixed_vpp = integer_cell(vpp_number) if not is_missing(vpp_text) and "yes" not in vpp_text else None
    if fixed_vpp and _LAYERS_PER_VIRTUAL_STAGE.search(vpp_text):
        # Megatron's --num-layers-per-virtual-pipeline-stage N: a stage's whole layers in chunks of N
        fixed_vpp = max(1, model.num_layers // (degrees.pp * fixed_vpp))
    interleaved = "yes" in vpp_text or "interleav" in vpp_text
    recompute_text = row.text("recompute")
    zero_stage, zero_note = zero_stage_of(row.text("sharding"), degrees.pp, stack)
    precision, precision_note = _precision(row.text("precision"))
    free = [name for name, cell in (("tp", "TP"), ("pp", "PP"), ("cp", "CP")) if is_missing(row.text(cell))]
    plan = PlanSpec(
        tp=degrees.tp,
        pp=degrees.pp,
        dp=degrees.dp,
        ep=degrees.ep,
        cp=degrees.cp,
        zero_stage=zero_stage,
        schedule="dualpipe" if "dualpipe" in vpp_text else "1f1b",
        global_batch_size=batch,
        seq_len=seq_len,
        precision=precision,
        micro_batch_sizes=(micro,) if micro else SEARCHED_MICRO_BATCH_SIZES,
        vpps=(fixed_vpp,) if fixed_vpp else (SEARCHED_VPPS if interleaved else (1,)),
        recomputes=SEARCHED_RECOMPUTES if is_missing(recompute_text) else (_recompute(recompute_text),),
        fsdp_under_pipeline=degrees.pp > 1 and _is_fsdp(row.text("sharding").lower()),
        free_degrees=(*free, *(() if re.match(r"\s*\d", row.text("DP")) else ("dp",))),
        etp=degrees.etp,
        **_stated_settings(row.joined()),
    )
    return plan, [precision_note, zero_note]


def _plan_settings(spec: PlanSpec, stack: Stack) -> dict[str, bool]:
    """The settings a plan fixes against its stack's defaults: what the row says, no sequence
    parallelism where the stack has none, and DP overlap under ZeRO-3/FSDP (they prefetch
    parameters and overlap by design)."""
    settings: dict[str, bool] = {}
    if spec.sequence_parallel is False or not stack.sequence_parallel:
        settings["sequence_parallel"] = False
    if spec.zero_stage >= 3:
        settings["dp_overlap"] = True
    if spec.tp_overlap:
        settings["tp_overlap"] = True
    return settings


def _zero_stage(spec: PlanSpec, stack: Stack) -> tuple[int, list[str]]:
    """The run's ZeRO stage on ``stack``: FSDP under PP takes the stage of ``stack`` that keeps as
    much (on another stack than the run's it may differ from ``spec.zero_stage``)."""
    if not spec.fsdp_under_pipeline:
        return spec.zero_stage, []
    stage, note = _fsdp_under_pipeline("FSDP", spec.pp, stack)
    return stage, [note] if stage != spec.zero_stage else []


def _split(
    spec: PlanSpec, base: dict[str, object], model: TransformerSpec, stack: Stack
) -> tuple[dict[str, object], str]:
    """``base`` with the degrees the row leaves unstated chosen so that its global batch splits over
    DP, and the sentence saying what was chosen."""
    try:
        split = split_batch(TrainingPlan(**base), model, free=spec.free_degrees, stack=stack)  # type: ignore[arg-type]
    except InvalidPlanError as error:
        raise RowError(f"{error}; give the batch or the GPU split the run used") from None
    plan = split.plan
    changed = {"tp": plan.tp, "pp": plan.pp, "cp": plan.cp, "dp": plan.dp}
    return {**base, **changed, "uneven_pipeline": model.num_layers % plan.pp != 0}, split.note


def candidate_plans(
    spec: PlanSpec, model: TransformerSpec, stack: Stack
) -> tuple[list[TrainingPlan], list[str]]:
    """Every plan ``spec`` allows on ``stack``: reported settings fixed, unreported ones enumerated
    (with TP or PP unreported, every split of the GPUs: :func:`_free_splits`)."""
    zero_stage, notes = _zero_stage(spec, stack)
    base: dict[str, object] = dict(
        tp=spec.tp,
        pp=spec.pp,
        dp=spec.dp,
        ep=spec.ep,
        etp=spec.etp,
        cp=spec.cp,
        zero_stage=zero_stage,
        schedule=spec.schedule,
        global_batch_size=spec.global_batch_size,
        seq_len=spec.seq_len,
        precision=spec.precision,
        uneven_pipeline=model.num_layers % spec.pp != 0,
        **_plan_settings(spec, stack),
    )
    splits = _free_splits(spec, base, model) if {"tp", "pp"} & set(spec.free_degrees) else []
    if splits:
        bases = [{**base, **split} for split in splits]
        notes.append(
            f"TP/PP not reported: {len(splits)} splits of the GPUs searched (the batch dividing DP); "
            "the fastest that fits"
        )
    else:
        if spec.global_batch_size % spec.dp:  # search the degrees the row leaves unstated
            base, split_note = _split(spec, base, model, stack)
            notes.append(split_note)
        bases = [base]
    recomputes = [
        stack.selective_recompute if policy == "selective" else policy for policy in spec.recomputes
    ]
    plans = [plan for each in bases for plan in _settings_plans(spec, each, recomputes, stack)]
    if not plans:
        per_replica = spec.global_batch_size // int(str(bases[0]["dp"]))
        micros = list(spec.micro_batch_sizes)
        if any(per_replica % micro == 0 for micro in micros):
            # they divide, but an interleaved schedule needs its micro-batches in whole rounds of PP
            pp = int(str(bases[0]["pp"]))
            raise RowError(
                f"the {per_replica} sequences per replica split into no whole number of rounds of pp={pp} "
                f"micro-batches, which the interleaved schedule needs (micro-batch sizes {micros}); state "
                "the batch the run reached or its interleaving depth"
            )
        raise RowError(f"no micro-batch in {micros} divides the {per_replica} sequences per replica")
    first = plans[0]
    notes.append(
        f"{stack.name}: attention {first.attention_impl}, dropout {first.dropout}, sequence parallel "
        f"{first.sequence_parallel}, DP overlap {first.dp_overlap}, TP overlap {first.tp_overlap}"
    )
    if len(plans) > 1:
        notes.append(
            f"unreported settings searched over {len(plans)} plans (micro-batch "
            f"{list(spec.micro_batch_sizes)}, vpp {list(spec.vpps)}, recompute {recomputes}): "
            "the fastest that fits"
        )
    return plans, notes


def _free_splits(spec: PlanSpec, base: dict[str, object], model: TransformerSpec) -> list[dict[str, object]]:
    """The degrees of every split of the GPUs a row leaving TP or PP unstated allows
    (:func:`lightspeed.sol.train.batch.candidate_splits` over its free degrees; the plans a
    split makes invalid are dropped with the others when the fastest that fits is chosen)."""
    plan = TrainingPlan(**{**base, "micro_batch_size": 1})  # type: ignore[arg-type]
    return [
        {
            "tp": split.tp,
            "pp": split.pp,
            "cp": split.cp,
            "dp": split.dp,
            "uneven_pipeline": model.num_layers % split.pp != 0,
        }
        for split in candidate_splits(plan, model, spec.free_degrees)
    ]


def _settings_plans(
    spec: PlanSpec, base: dict[str, object], recomputes: list[str], stack: Stack
) -> list[TrainingPlan]:
    """The plans of one split: every unreported micro-batch, interleaving depth and recompute."""
    batch, dp, pp = spec.global_batch_size, int(str(base["dp"])), int(str(base["pp"]))
    plans = []
    for vpp, micro_batch, recompute in itertools.product(spec.vpps, spec.micro_batch_sizes, recomputes):
        if (batch // dp) % micro_batch:
            continue
        if vpp > 1 and (batch // dp // micro_batch) % pp:
            continue
        plan = TrainingPlan(vpp=vpp, micro_batch_size=micro_batch, recompute=recompute, **base)  # type: ignore[arg-type]
        plans.append(plan.resolved(stack))
    return plans


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
    reasons = [reason for r in skipped if (reason := not_predicted_reason(r.metric_text))]
    if reasons:
        raise RowError(f"metric {texts} is not predicted: {reasons[0]}")
    raise RowError(f"metric {texts} is not one lightspeed can predict ({', '.join(keys)})")


# The abbreviations torchtitan's metric log prints (``tps``, its older ``wps``): tokens per second
# per device (torchtitan/components/metrics.py: tokens / (time x the non-data-parallel size)).
_LOG_TOKEN_RATE: Final = re.compile(r"^\s*(?:tps|wps)\b(?!.*\b(?:total|global|aggregate|cluster|job)\b)")


def _log_rate_per_device(reading: Reading, stack: Stack) -> Reading:
    """A bare ``tps`` / ``wps`` of a torchtitan row is its log's rate per device, not the job's."""
    if (
        reading.key != "tokens_per_s"
        or not stack.name.startswith("torchtitan")
        or not _LOG_TOKEN_RATE.search(reading.metric_text.lower())
        or reading.value is None
    ):
        return reading
    return _replace_reading(
        reading,
        "tokens_per_s_per_gpu",
        reading.value,
        "torchtitan's log prints tps per device (tokens over time x the non-data-parallel size)",
    )


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


def registry_name(registry: ModelRegistry, model: TransformerSpec) -> str | None:
    """``model``'s registry name when it is the registry's model, else ``None`` (built from dims)."""
    try:
        return model.name if registry.get(model.name) == model else None
    except UserInputError:
        return None


def read_training_row(row: PublishedRow, catalog: Catalog, registry: ModelRegistry) -> TrainingRowSpec:
    """A training row of a published-results table in typed fields (the rules in the module docs)."""
    num_gpus, gpus_note = row_gpus(catalog, row)
    model, model_note = resolve_model(registry, row)
    hardware, span = read_hardware(catalog, row.text("hardware"))
    cluster, _ = cluster_of(catalog, hardware, num_gpus)
    year, year_note = row_year(row, cluster.system.accelerator)
    stack, stack_note = stack_for(
        " ".join((row.text("source"), row.text("sharding"), row.text("precision"))), year
    )
    plan, plan_notes = read_plan(row, model, num_gpus, stack)
    readings = read_cell(row.text("metric"), row.text("measured"), kind="train")
    if not readings or all(reading.value is None for reading in readings):
        raise RowError(f"measured value {row.text('measured')!r} has no number")
    reading = choose_reading(readings, (*METRICS, "pflop_per_s"), num_gpus, cluster.system.num_accelerators)
    reading = _log_rate_per_device(reading, stack)
    assert reading.value is not None
    named = "names no framework" not in stack_note
    convention, recompute, causal, flop_note = flop_convention(row, stack, reading, framework_named=named)
    return TrainingRowSpec(
        row_id=row.row_id,
        model=model,
        model_name=registry_name(registry, model),
        hardware=hardware,
        num_gpus=num_gpus,
        plan=plan,
        metric=reading.key,
        measured=reading.value,
        flops=FlopCount(convention, recompute, causal),
        stack=stack.name,
        num_tokens=reading.num_tokens,
        peak_flop_per_s=reading.peak_flop_per_s,
        assumptions=(
            model_note,
            f"hardware '{row.text('hardware')}' -> '{span}'",
            f"{stack_note} ({year_note})",
            *plan_notes,
            flop_note,
            *([gpus_note] if gpus_note else []),
        ),
        reading=reading,
        readings=readings,
    )


def training_setup(spec: TrainingRowSpec, catalog: Catalog, *, stack: Stack | None = None) -> RowSetup:
    """Cluster and candidate plans of a typed training row, on its own stack or on ``stack``."""
    chosen = stack or load_stack(spec.stack)
    cluster, cluster_notes = cluster_of(catalog, spec.hardware, spec.num_gpus)
    plans, plan_notes = candidate_plans(spec.plan, spec.model, chosen)
    notes = [*spec.assumptions, *cluster_notes, *plan_notes]
    if chosen.name != spec.stack:
        notes.append(f"predicted on the stack {chosen.name}, not the run's own {spec.stack}")
    return RowSetup(
        model=spec.model,
        cluster=cluster,
        plans=tuple(plans),
        metric=spec.metric,
        measured=spec.measured,
        flop_convention=spec.flops.convention,
        flop_recompute=spec.flops.counts_recompute,
        flop_causal=spec.flops.causal,
        num_tokens=spec.num_tokens,
        assumptions=tuple(notes),
        reading=spec.reading,
        readings=spec.readings,
        stack=chosen,
        peak_flop_per_s=spec.peak_flop_per_s,
    )


def row_setup(row: PublishedRow, catalog: Catalog, registry: ModelRegistry) -> RowSetup:
    """Model, cluster, candidate plans and metric of a training row of a table."""
    return training_setup(read_training_row(row, catalog, registry), catalog)

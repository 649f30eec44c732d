"""Turn a published training row into a model, a cluster and candidate plans.

Rules for what a row leaves unsaid (documented in ``docs/sol.md``):

* **Framework era** from the publication year in the source (``SC21``,
  ``2022``) or, without a year, from the hardware (Hopper and later = modern):
  up to 2021 Megatron-LM had no sequence parallelism, no overlap of the
  gradient all-reduce, unfused attention and dropout; 2022 added sequence
  parallelism; from 2023 FlashAttention, no dropout, overlapped DP.
* **Unreported micro-batch or interleaving depth**: the fastest plan that fits
  among the valid values (published runs report tuned configurations).
* **Sharding**: ``ZeRO-k`` -> k, ``FSDP FULL_SHARD`` -> 3, ``FSDP-style``/
  ``distributed optimizer`` -> 1, ``none`` -> 0 (DDP), unreported -> 1.
* **FLOP convention** of a TFLOP/s or MFU figure: ``96-form`` or Narayanan et
  al. -> Megatron's formula with the recompute pass; ``72-form`` -> Megatron's
  without; ``6N + 12·L·d·s`` -> PaLM-style; otherwise PaLM-style (6N + full attention).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from lightspeed.catalog import Accelerator, Catalog, Cluster, System
from lightspeed.errors import UserInputError
from lightspeed.records import Record
from lightspeed.sol.train.plan import TrainingPlan
from lightspeed.sol.validation.published import (
    PublishedRow,
    RowError,
    first_number,
    integer_cell,
    is_missing,
    parenthesized_number,
)
from lightspeed.units import parse_count
from lightspeed.workload import AttentionSpec, ModelRegistry, TransformerSpec

FABRIC_KEYWORDS = (
    ("xdr", "ib-xdr"),
    ("ndr", "ib-ndr"),
    ("hdr", "ib-hdr"),
    ("roce 800", "ethernet-800g"),
    ("roce", "ethernet-400g"),
    ("ib 50gb/s", "ib-ndr"),
    ("ib 25gb/s", "ib-hdr"),
)
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


def _year(row: PublishedRow, accelerator: Accelerator) -> int:
    source = row.text("source")
    match = re.search(r"\b(20[12]\d)\b", source) or re.search(r"\bSC(\d\d)\b", source)
    if match:
        year = int(match.group(1))
        return year if year > 100 else 2000 + year
    return 2020 if accelerator.architecture.lower() in ("ampere", "volta") else 2024


def resolve_accelerator(catalog: Catalog, text: str) -> Accelerator:
    """The accelerator a hardware cell names (``A100-SXM4-80GB (Selene, ...)``, ``H100``)."""
    pieces = [piece.strip() for piece in re.split(r"[,;()]", text) if piece.strip()]
    for piece in pieces:
        words = piece.split()
        for count in range(len(words), 0, -1):
            candidate = " ".join(words[:count])
            for name in _prefixes(candidate):
                found = catalog.find_device(name) if hasattr(catalog, "find_device") else None
                if found is None:
                    try:
                        found = catalog.accelerator(name)
                    except UserInputError:
                        found = None
                if found is not None:
                    return found
    raise RowError(f"hardware {text!r} names no accelerator in the catalog (see 'lightspeed hw list')")


def _prefixes(candidate: str) -> list[str]:
    parts = candidate.split("-")
    return ["-".join(parts[:count]) for count in range(len(parts), 0, -1)]


def default_system(catalog: Catalog, accelerator: Accelerator) -> System:
    """The catalog's 8-GPU (or rack) system built around ``accelerator``."""
    candidates = [s for s in catalog.systems.values() if s.accelerator.name == accelerator.name]
    if not candidates:
        raise RowError(f"no system in the catalog is built from {accelerator.name}; add one with --catalog")
    candidates.sort(key=lambda s: (s.system_type != "node", s.num_accelerators != 8, s.name))
    return candidates[0]


def resolve_cluster(catalog: Catalog, row: PublishedRow, num_gpus: int) -> tuple[Cluster, list[str]]:
    """The cluster of a row: its accelerator's default system, over the fabric the text names."""
    text = row.text("hardware")
    accelerator = resolve_accelerator(catalog, text)
    system = default_system(catalog, accelerator)
    lowered = text.lower()
    fabric = next((link for keyword, link in FABRIC_KEYWORDS if keyword in lowered), None)
    if fabric is not None and fabric not in catalog.links:
        fabric = None
    nodes = max(1, -(-num_gpus // system.num_accelerators))
    cluster = catalog.cluster(system.name, num_nodes=nodes, fabric=fabric)
    notes = [f"hardware '{text}' -> {nodes} x {system.name}" + (f" over {fabric}" if fabric else "")]
    return cluster, notes


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
    if name:
        try:
            return registry.get(name), f"model '{row.text('model')}' -> catalog model {name}"
        except UserInputError:
            pass
    spec = model_from_dims(row)
    return (
        spec,
        f"model '{row.text('model')}' built from the row's dimensions ({spec.mlp}, {spec.attention.kind})",
    )


def _zero_stage(text: str) -> int:
    lowered = text.lower()
    match = re.search(r"zero-?(\d)", lowered)
    if match:
        return int(match.group(1))
    if "full_shard" in lowered or "full shard" in lowered:
        return 3
    if "fsdp" in lowered or "zero" in lowered or "distributed optimizer" in lowered:
        return 1
    if lowered.startswith("none"):
        return 0
    return 1


def _recompute(text: str) -> str:
    lowered = text.lower()
    if "selective" in lowered or "partial" in lowered:
        return "selective"
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


def _era_settings(year: int, text: str, zero_stage: int) -> dict[str, object]:
    overlap_named = "overlap" in text
    return {
        "attention_impl": "unfused" if year <= 2022 else "flash",
        "dropout": year <= 2022,
        "sequence_parallel": None if year >= 2022 and "tp all-reduce" not in text else False,
        # ZeRO-3 prefetches parameters and overlaps by design (DeepSpeed overlap_comm, FSDP prefetch).
        "dp_overlap": year >= 2022 or overlap_named or zero_stage >= 3,
        # By 2024 Megatron-Core (--tp-comm-overlap) and PyTorch (async TP) overlap TP collectives.
        "tp_overlap": year >= 2024 or (overlap_named and year >= 2023),
    }


def candidate_plans(
    row: PublishedRow, model: TransformerSpec, num_gpus: int, year: int
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
        ["none", "selective", "partial", "full"]
        if is_missing(recompute_text)
        else [_recompute(recompute_text)]
    )
    joined = row.joined()
    zero_stage = _zero_stage(row.text("sharding"))
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
        **_era_settings(year, joined, zero_stage),
    )
    plans = []
    for vpp, micro_batch, recompute in itertools.product(vpps, micros, recomputes):
        if batch % degrees.dp or (batch // degrees.dp) % micro_batch:
            continue
        if vpp > 1 and (batch // degrees.dp // micro_batch) % degrees.pp:
            continue
        plans.append(TrainingPlan(vpp=vpp, micro_batch_size=micro_batch, recompute=recompute, **base))  # type: ignore[arg-type]
    if not plans:
        raise RowError(f"no micro-batch in {micros} divides the {batch // degrees.dp} sequences per replica")
    notes = [
        f"framework era {year}: attention {base['attention_impl']}, dropout {base['dropout']}, "
        f"DP overlap {base['dp_overlap']}"
    ]
    if len(plans) > 1:
        notes.append(
            f"unreported settings searched over {len(plans)} plans (micro-batch {micros}, vpp {vpps}, "
            f"recompute {recomputes}): the fastest that fits"
        )
    return plans, notes


_TIME_UNITS = (
    ("ms", 1e-3),
    ("min", 60.0),
    ("hour", 3600.0),
    ("day", 86400.0),
    (" d", 86400.0),
    (" h", 3600.0),
)


def _seconds(value: float, text: str) -> float:
    """``value`` in seconds, from the first time unit named in ``text`` (seconds if none)."""
    lowered = f" {text.lower()}"
    hits = [(lowered.find(unit), factor) for unit, factor in _TIME_UNITS if unit in lowered]
    return value * min(hits)[1] if hits else value


def parse_metric(row: PublishedRow) -> tuple[str, float]:
    """(metric key, measured value in base units) of a training row.

    The first metric the text names is the one measured (``137 (44%); 4.4 PF``).
    Rates are per GPU when the text says so (``per GPU``, ``/GPU``), else for the job.
    """
    metric = row.text("metric").lower()
    measured_text = row.text("measured")
    measured = first_number(measured_text)
    if measured is None:
        raise RowError(f"measured value {measured_text!r} has no number")
    per_gpu = "per gpu" in metric or "/gpu" in metric
    if "gpu-hours" in metric or "gpu hours" in metric:
        return "gpu_hours", measured
    if "iteration time" in metric or "step time" in metric:
        return "step_time_s", _seconds(measured, metric + " " + measured_text)
    if metric.startswith("mfu"):
        return "mfu", measured / 100.0
    if "tflop" in metric:
        return "tflop_per_s_per_gpu", measured
    if "tokens/s" in metric:
        return ("tokens_per_s_per_gpu" if per_gpu else "tokens_per_s"), measured
    if "samples/s" in metric or "sequences/s" in metric:
        return ("samples_per_s_per_gpu" if per_gpu else "samples_per_s"), measured
    if "time to train" in metric or metric.startswith(("days", "hours", "training time")):
        return "time_to_train_s", _seconds(measured, metric.split(";")[0] + " " + measured_text)
    raise RowError(f"metric {row.text('metric')!r} is not one lightspeed can predict ({', '.join(METRICS)})")


def flop_convention(row: PublishedRow) -> tuple[str, bool, bool, str]:
    """(convention, counts recompute, causal, note) that a row's FLOP figures use."""
    joined = row.joined()
    if "96-form" in joined or ("narayanan" in joined and "full" in row.text("recompute").lower()):
        return (
            "megatron",
            True,
            False,
            "FLOPs as Narayanan et al. count them (96-form, recompute pass included)",
        )
    if "72-form" in joined:
        return "megatron", False, "non-causal" not in joined, "FLOPs by Megatron's 72-form"
    return "6N+attention", False, False, "FLOPs as 6N + 12·L·h·s (PaLM convention; the row states none)"


def row_setup(row: PublishedRow, catalog: Catalog, registry: ModelRegistry) -> RowSetup:
    """Model, cluster, candidate plans and metric of a training row."""
    num_gpus = integer_cell(row.text("GPUs"))
    if not num_gpus:
        raise RowError("GPUs is not reported")
    model, model_note = resolve_model(registry, row)
    cluster, cluster_notes = resolve_cluster(catalog, row, num_gpus)
    if cluster.num_accelerators != num_gpus and cluster.num_nodes > 1:
        raise RowError(f"{num_gpus} GPUs is not a whole number of {cluster.system.name} nodes")
    year = _year(row, cluster.system.accelerator)
    plans, plan_notes = candidate_plans(row, model, num_gpus, year)
    metric, measured = parse_metric(row)
    convention, recompute, causal, flop_note = flop_convention(row)
    tokens_match = re.search(r"([\d.]+\s*[kmbt]?)\s*tokens", row.text("metric").lower())
    num_tokens = parse_count(tokens_match.group(1).replace(" ", "").upper()) if tokens_match else None
    if metric in ("gpu_hours", "time_to_train_s") and num_tokens is None:
        raise RowError(
            "a GPU-hours or time-to-train row must name its token budget in the metric "
            "(e.g. 'for 14.8T tokens')"
        )
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
        assumptions=(model_note, *cluster_notes, *plan_notes, flop_note),
    )

"""Why one system serves more tokens per GPU than another: the ratio split into factors that do
not depend on the order they are applied in, and how much the answer depends on attention.

A throughput ratio between a baseline and a target system (H100 at FP8 vs GB200 NVL72 at
NVFP4) comes from several changes at once: the tensor cores, the number format, the HBM,
and the rest of the system (its scale-up domain and network). Applied one at a time, each
change's factor depends on which came before it (more HBM buys more once FP4 has shrunk
the weights). :func:`decompose_ratio` searches the best deployment for every combination of
the changes (``2**k`` searches for ``k`` factors, each combination once) and gives each factor
its Shapley value in log space: the mean, over every order of applying the changes, of the
logarithm of what that change multiplies the throughput by. The factors are then independent
of the order they are listed in and multiply exactly to the ratio. Beside it each factor's
``alone`` (applied first, to the baseline) and ``last`` (applied last, to everything else)
bound it: the Shapley factor is a weighted geometric mean of the factors over all orders,
which run from one to the other when the changes interact monotonically. Where adding one change
to some combination lowers the best throughput, :class:`RatioDrop` names the combination and the
cause read from the two best deployments (a GPU count the plans must fill, GEMMs in another
format: NVFP4 weights dequantized into 16-bit GEMMs without FP4 tensor cores, or FP4 GEMMs whose
few output tiles leave SMs idle at decode batches).

:func:`attention_sensitivity` repeats the decomposition with the model's attention replaced
by MHA, GQA with 8 KV heads and an MLA-like latent, to show how much of the answer rests on an
attention a vendor does not publish (GPT-MoE-1.8T's).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from lightspeed.catalog import Accelerator, Cluster
from lightspeed.errors import UserInputError
from lightspeed.records import JsonDict, Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.hardware import hardware_for
from lightspeed.sol.systems import SystemResult, best_infer_result
from lightspeed.units import element_bits
from lightspeed.workload import AttentionSpec, TransformerSpec
from lightspeed.workload.counts import kv_cache_bytes_per_token
from lightspeed.workload.spec import grouped_attention_kind

FACTORS: Final = ("tensor cores", "precision", "memory", "scale-up domain")
# DeepSeek-V3's latent attention (its config.json): 512-value KV latent, 64-value decoupled RoPE
# key, Q/K heads of 128 + 64, V heads of 128, a 1,536-wide query bottleneck
MLA_SHAPES: Final = {
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "q_lora_rank": 1536,
}
GQA_KV_HEADS: Final = 8
_COMPUTE_FIELDS: Final = ("compute", "family", "num_compute_units")
# every memory figure of the record, read from it so that a new one cannot be missed: the planner
# sizes memory from ``memory_device_bytes``, the driver's reported figure where there is one, so
# swapping only the listed and nominal capacities left the baseline's capacity in place
_MEMORY_FIELDS: Final = tuple(
    field.name for field in dataclasses.fields(Accelerator) if field.name.startswith("memory_")
)


def shapley_factors(names: Sequence[str], value: Callable[[frozenset[str]], float]) -> dict[str, float]:
    """Each name's multiplicative share of ``value(all) / value(none)``: ``exp`` of its Shapley
    value for the game ``log value(S)``. The factors multiply to the ratio and do not depend on
    the order of ``names``; ``value`` is called once per subset (``2**len(names)`` calls).

    By hand, two changes that give 2x and 3x alone and 12x together: ``a`` is worth 2x first
    and 12/3 = 4x second, so sqrt(2 x 4) = 2.83x; ``b`` sqrt(3 x 6) = 4.24x; 2.83 x 4.24 = 12.

    >>> rates = {frozenset(): 1.0, frozenset("a"): 2.0, frozenset("b"): 3.0, frozenset("ab"): 12.0}
    >>> {name: round(factor, 3) for name, factor in shapley_factors("ab", rates.__getitem__).items()}
    {'a': 2.828, 'b': 4.243}
    """
    if len(set(names)) != len(names):
        raise ValueError(f"factor names repeat: {list(names)}")
    logs: dict[frozenset[str], float] = {}

    def log_value(subset: frozenset[str]) -> float:
        if subset not in logs:
            found = value(subset)
            if not found > 0:
                raise ValueError(f"value of {sorted(subset)} is {found}: Shapley factors need > 0")
            logs[subset] = math.log(found)
        return logs[subset]

    count = len(names)
    factors = {}
    for name in names:
        others = [other for other in names if other != name]
        total = 0.0
        for size in range(count):
            weight = math.factorial(size) * math.factorial(count - size - 1) / math.factorial(count)
            for subset in itertools.combinations(others, size):
                before = frozenset(subset)
                total += weight * (log_value(before | {name}) - log_value(before))
        factors[name] = math.exp(total)
    return factors


@dataclass(frozen=True)
class Coalition(Record):
    """The baseline with some of the target's changes: the best deployment the search finds
    (``tokens_per_s_per_gpu`` ``None`` with ``reason`` when none meets the bounds).
    ``num_gpus``: the GPUs the per-GPU rate divides by; ``gemm_format``: the tensor-core row its
    GEMMs run on (``bf16`` for NVFP4 weights on a GPU without FP4 tensor cores);
    ``fp4_tiles``: whether those are FP4 GEMMs priced by their output tiles per SM."""

    changes: tuple[str, ...]
    system: str
    precision: str
    plan: str
    tokens_per_s_per_gpu: float | None
    reason: str = ""
    num_gpus: int = 0
    gemm_format: str = ""
    fp4_tiles: bool = False


@dataclass(frozen=True)
class RatioDrop(Record):
    """Adding ``added`` to the changes ``before`` lowers the best tokens/s per GPU (the changes do
    not interact monotonically there), and the ``cause`` read from the two best deployments."""

    added: str
    before: tuple[str, ...]
    tokens_per_s_per_gpu_before: float
    tokens_per_s_per_gpu_after: float
    cause: str


@dataclass(frozen=True)
class RatioFactor(Record):
    """One change's share of the ratio: ``factor`` is its Shapley factor (order-independent);
    ``alone_factor`` what it buys applied first, ``last_factor`` applied last; ``log_share`` its
    part of ``log(ratio)`` (negative when it costs throughput)."""

    name: str
    change: str
    factor: float
    alone_factor: float | None
    last_factor: float | None
    log_share: float | None


@dataclass(frozen=True)
class RatioStep(Record):
    """One change on one path from the baseline to the target (in the order listed), and what it
    buys given the ones before: the sequential view, which depends on that order."""

    name: str
    change: str
    system: str
    precision: str
    plan: str
    tokens_per_s_per_gpu: float
    factor: float
    alone_factor: float | None


@dataclass(frozen=True)
class RatioDecomposition(Record):
    """Per-GPU throughput target/baseline as a product of order-independent factors, with every
    combination of the changes that was searched. ``factors`` is empty (and ``note`` says why)
    when some combination has no deployment that meets the bounds."""

    model: str
    baseline: str
    target: str
    baseline_tokens_per_s_per_gpu: float
    target_tokens_per_s_per_gpu: float
    ratio: float
    factors: tuple[RatioFactor, ...]
    steps: tuple[RatioStep, ...]
    coalitions: tuple[Coalition, ...]
    note: str
    drops: tuple[RatioDrop, ...] = ()


def _with_accelerator(cluster: Cluster, **changes: Any) -> Cluster:
    system = cluster.system
    accelerator = dataclasses.replace(system.accelerator, **changes)
    return dataclasses.replace(cluster, system=dataclasses.replace(system, accelerator=accelerator), label="")


@dataclass(frozen=True)
class _Ends:
    """The two systems and formats being compared."""

    baseline: Cluster
    target: Cluster
    baseline_precision: str
    target_precision: str

    def changes(self) -> dict[str, str]:
        """What each factor changes, in words."""
        goal = self.target.system.accelerator
        return {
            "tensor cores": f"{goal.name} compute rows at {self.baseline_precision}",
            "precision": f"{self.baseline_precision} -> {self.target_precision}",
            "memory": f"HBM of {goal.name}",
            "scale-up domain": f"{self.target.name}: {self.target.system.scale_up_domain_size}-GPU domain "
            "(and the rest of the system)",
        }

    def coalition(self, chosen: frozenset[str]) -> tuple[Cluster, str, str]:
        """The cluster, format and name of the baseline with the ``chosen`` changes of the target."""
        base = self.target if "scale-up domain" in chosen else self.baseline
        swaps: dict[str, Any] = {}
        borrowed = []
        for factor, fields in (("tensor cores", _COMPUTE_FIELDS), ("memory", _MEMORY_FIELDS)):
            source = (self.target if factor in chosen else self.baseline).system.accelerator
            if source is not base.system.accelerator:
                swaps.update({field: getattr(source, field) for field in fields})
                borrowed.append(f"{source.name}'s {'tensor cores' if factor == 'tensor cores' else 'HBM'}")
        cluster = _with_accelerator(base, **swaps) if swaps else base
        name = base.name + (f" with {' and '.join(borrowed)}" if borrowed else "")
        precision = self.target_precision if "precision" in chosen else self.baseline_precision
        return cluster, precision, name


def _search_coalitions(
    model: TransformerSpec,
    ends: _Ends,
    factors: Sequence[str],
    options: JsonDict,
    efficiency: EfficiencyModel | None,
) -> dict[frozenset[str], Coalition]:
    """Every combination of the changes, searched once."""
    found = {}
    for size in range(len(factors) + 1):
        for subset in itertools.combinations(factors, size):
            chosen = frozenset(subset)
            cluster, precision, name = ends.coalition(chosen)
            ordered = tuple(factor for factor in FACTORS if factor in chosen)
            try:
                result = best_infer_result(model, cluster, precision, options, efficiency)
            except UserInputError as error:
                found[chosen] = Coalition(ordered, name, precision, "", None, str(error))
                continue
            found[chosen] = _coalition(ordered, name, result, cluster, efficiency)
    return found


def _coalition(
    changes: tuple[str, ...],
    name: str,
    result: SystemResult,
    cluster: Cluster,
    efficiency: EfficiencyModel | None,
) -> Coalition:
    """One searched combination, with what :func:`_drop_cause` compares."""
    assert result.infer is not None
    gemm_format = result.infer.precisions.compute
    hardware = hardware_for(cluster, gemm_format, efficiency)
    tiles = hardware.efficiency.fp4_tile_rows and hardware.efficiency.fp4_tile_columns
    return Coalition(
        changes=changes,
        system=name,
        precision=result.precision,
        plan=result.plan,
        tokens_per_s_per_gpu=result.throughput_tokens_per_s_per_gpu,
        num_gpus=result.num_gpus,
        gemm_format=gemm_format,
        fp4_tiles=gemm_format == "fp4" and bool(tiles and cluster.system.accelerator.num_compute_units),
    )


def _drop_cause(before: Coalition, after: Coalition) -> str:
    """Why ``after`` (one change more) serves fewer tokens per GPU than ``before``."""
    causes = []
    if after.num_gpus != before.num_gpus:
        causes.append(
            f"every plan must fill {after.num_gpus} GPUs instead of {before.num_gpus} and tokens/s per "
            "GPU counts them all"
        )
    if after.gemm_format != before.gemm_format:
        causes.append(_format_cause(before, after))
    return "; ".join(causes) or f"the best plan changes ({before.plan} -> {after.plan})"


def _format_cause(before: Coalition, after: Coalition) -> str:
    """What running the GEMMs on another tensor-core row costs."""
    text = f"GEMMs on {after.gemm_format} instead of {before.gemm_format} tensor cores"
    if after.fp4_tiles:
        return (
            f"{text}: an FP4 GEMM keeps one output tile per SM, so at decode batches its weights "
            f"stream on a share of the SMs, where {before.precision} weights in {before.gemm_format} "
            "GEMMs stream on all"
        )
    if element_bits(after.gemm_format) > element_bits(after.precision):
        return (
            f"{text}: without {after.precision} tensor cores its weights are dequantized into "
            f"{after.gemm_format} GEMMs, whose prompt math is slower than {before.gemm_format}'s"
        )
    return text


def _drops(coalitions: Mapping[frozenset[str], Coalition], factors: Sequence[str]) -> tuple[RatioDrop, ...]:
    """Every (combination, change) where adding the change lowers the best rate."""
    drops = []
    for chosen, before in coalitions.items():
        for name in (factor for factor in factors if factor not in chosen):
            after = coalitions[chosen | {name}]
            low, high = after.tokens_per_s_per_gpu, before.tokens_per_s_per_gpu
            if low is not None and high is not None and low < high:
                drops.append(RatioDrop(name, before.changes, high, low, _drop_cause(before, after)))
    return tuple(drops)


def _drops_text(drops: Sequence[RatioDrop]) -> str:
    """The drops in one sentence for the note (empty without any)."""
    if not drops:
        return ""
    each = [
        f"{drop.added} added to {' + '.join(drop.before) or 'the baseline'} lowers "
        f"{drop.tokens_per_s_per_gpu_before:.4g} to {drop.tokens_per_s_per_gpu_after:.4g} tok/s/GPU "
        f"({drop.cause})"
        for drop in drops
    ]
    return "; not monotonic: " + "; ".join(each)


def _rate(coalitions: Mapping[frozenset[str], Coalition], chosen: frozenset[str]) -> float | None:
    return coalitions[chosen].tokens_per_s_per_gpu


def _quotient(top: float | None, bottom: float | None) -> float | None:
    return None if top is None or bottom is None else top / bottom


def _factors(
    coalitions: Mapping[frozenset[str], Coalition], factors: Sequence[str], changes: Mapping[str, str]
) -> tuple[RatioFactor, ...]:
    everything = frozenset(factors)
    ratio = _quotient(_rate(coalitions, everything), _rate(coalitions, frozenset()))
    shapley = shapley_factors(factors, lambda chosen: coalitions[chosen].tokens_per_s_per_gpu or 0.0)
    return tuple(
        RatioFactor(
            name=name,
            change=changes[name],
            factor=shapley[name],
            alone_factor=_quotient(_rate(coalitions, frozenset({name})), _rate(coalitions, frozenset())),
            last_factor=_quotient(_rate(coalitions, everything), _rate(coalitions, everything - {name})),
            log_share=math.log(shapley[name]) / math.log(ratio) if ratio and ratio != 1.0 else None,
        )
        for name in factors
    )


def _steps(
    coalitions: Mapping[frozenset[str], Coalition], factors: Sequence[str], changes: Mapping[str, str]
) -> tuple[RatioStep, ...]:
    """The changes applied one after another in the order listed (empty if one is infeasible)."""
    base = _rate(coalitions, frozenset())
    steps, chosen, previous = [], frozenset[str](), base
    for name in ("baseline", *factors):
        if name != "baseline":
            chosen = chosen | {name}
        coalition = coalitions[chosen]
        rate = coalition.tokens_per_s_per_gpu
        if rate is None or previous is None or base is None:
            return ()
        alone = None if name == "baseline" else _quotient(_rate(coalitions, frozenset({name})), base)
        change = coalition.system + f" at {coalition.precision}" if name == "baseline" else changes[name]
        system, precision, plan = coalition.system, coalition.precision, coalition.plan
        steps.append(RatioStep(name, change, system, precision, plan, rate, rate / previous, alone))
        previous = rate
    return tuple(steps)


def decompose_ratio(
    *,
    model: TransformerSpec,
    baseline: Cluster,
    target: Cluster,
    baseline_precision: str,
    target_precision: str,
    options: JsonDict,
    efficiency: EfficiencyModel | None = None,
    factors: Sequence[str] = FACTORS,
) -> RatioDecomposition:
    """Split target/baseline inference tokens/s per GPU into order-independent factors (see the
    module docstring) among ``factors`` (any order of :data:`FACTORS`):

    * ``tensor cores``: the target GPU's compute rows and efficiency family;
    * ``precision``: the target's number format;
    * ``memory``: the target GPU's HBM capacity and bandwidth;
    * ``scale-up domain``: the target system itself (its NVLink domain, network and the GPU's
      other figures), keeping whichever of the above are not applied.

    Every combination is searched again under the same bounds (``options`` as for
    :func:`~lightspeed.sol.systems.compare_systems`), so a factor includes the re-planning the
    change allows.
    """
    unknown = [name for name in factors if name not in FACTORS]
    if unknown or len(set(factors)) != len(factors) or set(factors) != set(FACTORS):
        raise UserInputError(f"factors must be an order of {', '.join(FACTORS)} (got {', '.join(factors)})")
    ends = _Ends(baseline, target, baseline_precision, target_precision)
    coalitions = _search_coalitions(model, ends, factors, options, efficiency)
    base, goal = (_rate(coalitions, chosen) for chosen in (frozenset(), frozenset(factors)))
    if base is None or goal is None:
        raise UserInputError(coalitions[frozenset() if base is None else frozenset(factors)].reason)
    missing = [c for c in coalitions.values() if c.tokens_per_s_per_gpu is None]
    infeasible = [" + ".join(c.changes) or "none" for c in missing]
    changes = ends.changes()
    note = (
        "Shapley factors: each change's mean log-factor over every order of applying the changes; "
        "they multiply to the ratio whatever the order"
    )
    drops = _drops(coalitions, factors)
    note += _drops_text(drops)
    if infeasible:
        note = f"no deployment meets the bounds with the changes {'; '.join(infeasible)}: no factors"
    return RatioDecomposition(
        model=model.name,
        baseline=f"{baseline.name} at {baseline_precision}",
        target=f"{target.name} at {target_precision}",
        baseline_tokens_per_s_per_gpu=base,
        target_tokens_per_s_per_gpu=goal,
        ratio=goal / base,
        factors=() if infeasible else _factors(coalitions, factors, changes),
        steps=_steps(coalitions, factors, changes),
        coalitions=tuple(coalitions.values()),
        note=note,
        drops=drops,
    )


@dataclass(frozen=True)
class AttentionCase(Record):
    """The decomposition with one attention in the model (``decomposition`` ``None`` with
    ``reason`` when a system cannot serve it under the bounds)."""

    name: str
    attention: str
    catalogued: bool
    kv_cache_bytes_per_token: float
    kv_precision: str
    decomposition: RatioDecomposition | None
    reason: str = ""


@dataclass(frozen=True)
class AttentionSensitivity(Record):
    """How much the ratio depends on the attention: the lowest and highest ratio over the cases
    and their quotient (``spread``)."""

    model: str
    cases: tuple[AttentionCase, ...]
    ratio_low: float | None
    ratio_high: float | None
    spread: float | None
    note: str


def _describe(attention: AttentionSpec) -> str:
    """``MHA 120 KV heads x 128``, ``MLA latent 512 + 64``: what one token caches per layer."""
    if attention.kind == "mla":
        return f"MLA latent {attention.kv_lora_rank} + {attention.qk_rope_head_dim}"
    return f"{attention.kind.upper()} {attention.num_kv_heads} KV heads x {attention.head_dim}"


def _dense(own: AttentionSpec, kind: str, num_kv_heads: int, head_dim: int) -> AttentionSpec:
    return dataclasses.replace(
        own,
        kind=kind,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
        v_head_dim=None,
        q_lora_rank=None,
        kv_lora_rank=None,
        qk_nope_head_dim=None,
        qk_rope_head_dim=None,
    )


def _latent(own: AttentionSpec) -> AttentionSpec:
    return dataclasses.replace(
        own,
        kind="mla",
        num_kv_heads=own.num_heads,
        head_dim=MLA_SHAPES["qk_nope_head_dim"] + MLA_SHAPES["qk_rope_head_dim"],
        kv_lora_rank=MLA_SHAPES["kv_lora_rank"],
        qk_rope_head_dim=MLA_SHAPES["qk_rope_head_dim"],
        qk_nope_head_dim=MLA_SHAPES["qk_nope_head_dim"],
        v_head_dim=MLA_SHAPES["v_head_dim"],
        q_lora_rank=MLA_SHAPES["q_lora_rank"],
        qk_norm=False,  # MLA's norms are its latents' (counted by the MLA shapes)
        output_gate=False,
    )


def attention_variants(model: TransformerSpec) -> tuple[tuple[str, AttentionSpec], ...]:
    """The model's own attention, then MHA, GQA with 8 KV heads (or the largest divisor of the
    heads below 8) and an MLA-like latent (DeepSeek-V3's shapes), leaving out repeats."""
    own = model.attention
    heads = own.num_heads
    head_dim = own.head_dim if own.kind != "mla" else (own.v_head_dim or own.head_dim)
    groups = max(d for d in range(1, GQA_KV_HEADS + 1) if heads % d == 0)
    cases = [
        ("as catalogued", own),
        ("MHA", _dense(own, "mha", heads, head_dim)),
        (f"GQA, {groups} KV heads", _dense(own, grouped_attention_kind(heads, groups), groups, head_dim)),
        ("MLA-like latent", _latent(own)),
    ]
    unique: list[tuple[str, AttentionSpec]] = []
    for name, attention in cases:
        if all(attention != seen for _, seen in unique):
            unique.append((name, attention))
    return tuple(unique)


def attention_sensitivity(
    *,
    model: TransformerSpec,
    baseline: Cluster,
    target: Cluster,
    baseline_precision: str,
    target_precision: str,
    options: JsonDict,
    efficiency: EfficiencyModel | None = None,
) -> AttentionSensitivity:
    """:func:`decompose_ratio` for each of :func:`attention_variants` (the rest of the model kept)."""
    cases = []
    for name, attention in attention_variants(model):
        variant = dataclasses.replace(model, attention=attention)
        kv = kv_cache_bytes_per_token(variant, baseline_precision)
        described = _describe(attention)
        catalogued = attention == model.attention
        try:
            decomposition = decompose_ratio(
                model=variant,
                baseline=baseline,
                target=target,
                baseline_precision=baseline_precision,
                target_precision=target_precision,
                options=options,
                efficiency=efficiency,
            )
        except UserInputError as error:
            cases.append(AttentionCase(name, described, catalogued, kv, baseline_precision, None, str(error)))
            continue
        cases.append(AttentionCase(name, described, catalogued, kv, baseline_precision, decomposition))
    ratios = [case.decomposition.ratio for case in cases if case.decomposition is not None]
    low, high = (min(ratios), max(ratios)) if ratios else (None, None)
    return AttentionSensitivity(
        model=model.name,
        cases=tuple(cases),
        ratio_low=low,
        ratio_high=high,
        spread=high / low if low and high else None,
        note="each case replaces only the attention (MLA-like also changes the attention projections' "
        "weights); every deployment is searched again",
    )


__all__ = [
    "FACTORS",
    "AttentionCase",
    "AttentionSensitivity",
    "Coalition",
    "RatioDecomposition",
    "RatioDrop",
    "RatioFactor",
    "RatioStep",
    "attention_sensitivity",
    "attention_variants",
    "decompose_ratio",
    "shapley_factors",
]

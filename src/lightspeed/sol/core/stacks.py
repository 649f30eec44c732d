"""Software-stack profiles: what a training framework of a given era runs, as data.

The kernel ceilings of a device family (``sol/data/efficiency.toml``) are what
the best public kernels reach; a :class:`Stack` says which kernels a framework
runs on them (unfused attention, FlashAttention-2 or the best fused kernel),
how much HBM traffic its elementwise ops cost, what it overlaps, how it
recomputes and casts to FP8, how it counts FLOPs in its own figures, and the
one fitted number: ``kernel_efficiency``, the share of the ceilings its GEMM and
attention kernels sustain in a whole step. Profiles live in
``sol/data/stacks.toml`` with their sources.

>>> stack = load_stack("torchtitan-2024")
>>> stack.attention, stack.selective_recompute, stack.dp_overlap
('flash2', 'op', True)
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import DataFileError, UnknownNameError
from lightspeed.records import Record
from lightspeed.sol.core.sharding import (
    MemoryRules,
    ShardingRule,
    load_all_memory_rules,
    load_memory_rules,
    stacks_file,
)

FloatArray = npt.NDArray[np.float64]
ATTENTION_KERNELS: Final = ("unfused", "flash2", "flash")
SELECTIVE_POLICIES: Final = ("selective", "op")
# What a stack's ``selective`` recomputation may rerun in backward instead of keeping
# (Megatron-Core's ``recompute_modules``, in lightspeed's words): core attention (its score
# matrix when unfused; a fused kernel keeps nothing the checkpoint frees but its softmax
# statistics), the norms' outputs, the activation functions' outputs (the MoE expert outputs
# before the combine follow from them), MLA's up-projected Q/K/V.
SELECTIVE_MODULES: Final = ("core_attention", "norms", "activations", "mla_up_projections")
# The pipeline schedules lightspeed prices (a stack's ``pipeline_schedules`` names those its
# framework runs; ``interleaved`` is 1F1B over virtual chunks)
PIPELINE_SCHEDULES: Final = ("1f1b", "gpipe", "interleaved", "zb1p", "dualpipe", "dualpipev")
FP8_SCALINGS: Final = ("delayed", "current", "block")
FP8_STORAGE: Final = ("none", "linear-inputs", "linear-and-swiglu-inputs")
STACKS_SCHEMA_VERSION: Final = 1
# Bytes per element of an FP8 cast: read the 16-bit tensor (2), write the row-wise and the
# column-wise (transposed, for the weight gradient) FP8 copies (1 + 1); current scaling reads
# the tensor once more for its amax first (2); block scales add a scale byte per 32 values.
FP8_CAST_BYTES: Final = {"delayed": 4.0, "current": 6.0, "block": 4.0 + 2.0 / 32.0}
# Bytes per element of quantizing a 16-bit tensor to a 4-bit training format: read it (2), write
# the row-wise and column-wise copies at half a byte with one scale byte per block (16 values for
# NVFP4's E4M3 scales, 32 for MXFP4's E8M0). NVFP4's second-level FP32 scale is the tensor's amax,
# so an amax pass reads it first (2), one pass for the amax before and after the random Hadamard
# transform of the weight-gradient inputs (Transformer Engine's ``quantize_transpose_nvfp4`` casts
# and transposes in one kernel, its Hadamard amax kernel takes both amaxes in one read). A plain
# ``fp4`` trains as NVFP4 (the 4-bit recipe Transformer Engine has).
FP4_CAST_BYTES: Final = {
    "nvfp4": 2.0 + 2.0 + 2.0 * (0.5 + 1.0 / 16.0),
    "mxfp4": 2.0 + 2.0 * (0.5 + 1.0 / 32.0),
}
# torch.compile said to be off: ``no compile``, ``without torch.compile``, ``torch.compile off``,
# ``compile = false``, ``compile: off``, ``compile disabled``, ``eager mode``.
_NO_COMPILE: Final = re.compile(
    r"\b(?:no|without)\s+(?:torch\.)?compile"
    r"|\bcompile(?:d)?\b[\s\"'_]*(?:[:=]|is)?[\s\"']*(?:off|false|disabled?|none|0)\b"
)


@dataclass(frozen=True)
class Stack(Record):
    """One software-stack profile (see ``sol/data/stacks.toml`` for every field)."""

    name: str
    display_name: str
    frameworks: tuple[str, ...]
    from_year: int
    to_year: int
    attention: str
    dropout: bool
    sequence_parallel: bool
    dp_overlap: bool
    tp_overlap: bool
    elementwise_traffic_factor: float
    selective_recompute: str
    fp8_scaling: str
    fp8_activation_storage: str
    published_flop_convention: str
    published_flop_counts_recompute: bool
    kernel_efficiency: float
    source: str
    fit_group: str = ""
    compile: bool = False
    zero3_flat_ring: bool = False
    ep_node_dedupe: bool = False
    overlap_contention: float = 0.0
    moe_efficiency: float = 1.0
    optimizer_bytes_per_param: float = 12.0
    loss_bytes_per_logit: float = 8.0
    fp8_weight_copy: bool = True
    context_parallel: bool = True
    pipeline_parallel: bool = True
    memory_rules: str = "megatron"
    fitted_on: tuple[str, ...] = ()
    validated_on: tuple[str, ...] = ()
    selective_recompute_modules: tuple[str, ...] = ("core_attention",)
    pipeline_schedules: tuple[str, ...] = PIPELINE_SCHEDULES
    own_pipeline_schedule: str | None = None

    @property
    def group(self) -> str:
        """The profile whose fitted ``kernel_efficiency`` this one shares (itself by default)."""
        return self.fit_group or self.name

    def recomputes_selectively(self, module: str) -> bool:
        """Whether the stack's ``selective`` recomputation reruns ``module`` (one of
        :data:`SELECTIVE_MODULES`) rather than keep its output for backward: Megatron-Core's
        default is core attention alone (its 2025 recipes name the memory-bound modules);
        DeepSeek-V3 recomputes norms, SwiGLU outputs and MLA up-projections; a per-op (``op``)
        stack's rule is its own (:mod:`lightspeed.sol.train.memory`).

        >>> stack = load_stack("megatron-core-2024")
        >>> stack.recomputes_selectively("core_attention"), stack.recomputes_selectively("norms")
        (True, False)
        """
        assert module in SELECTIVE_MODULES, module
        return module in self.selective_recompute_modules

    def runs_schedule(self, schedule: str) -> bool:
        """Whether the stack's framework runs the pipeline ``schedule`` (DeepSpeed's pipeline
        engine runs 1F1B only).

        >>> load_stack("megatron-deepspeed-2022").runs_schedule("interleaved")
        False
        """
        return schedule in self.pipeline_schedules

    @property
    def sharding(self) -> MemoryRules:
        """What the stack keeps per parameter under each ZeRO stage (:mod:`lightspeed.sol.core.sharding`)."""
        return load_memory_rules(self.memory_rules)

    def sharding_rule(self, zero_stage: int, *, pipeline: bool) -> ShardingRule:
        """The rule of ``zero_stage`` under this stack, with or without pipeline parallelism."""
        return self.sharding.rule(zero_stage, pipeline=pipeline)

    def fit_note(self) -> str:
        """Which published rows its fitted values rest on (:func:`fit_note`)."""
        return fit_note(self.fitted_on, self.validated_on)

    def exposed_s(self, communication_s: ArrayLike, hideable_s: ArrayLike) -> FloatArray:
        """Seconds an overlapped collective still costs: what compute cannot cover, plus the
        ``overlap_contention`` share of the covered part (NCCL kernels take SMs and HBM
        bandwidth from the GEMMs they run beside)."""
        return exposed_overlap_s(communication_s, hideable_s, self.overlap_contention)

    def cast_bytes(self, precision: str) -> float:
        """HBM bytes per element of quantizing a 16-bit tensor to ``precision`` (an 8- or 4-bit
        training format: :data:`FP8_CAST_BYTES` under the stack's FP8 scaling, MXFP8's block
        scaling, :data:`FP4_CAST_BYTES`).

        >>> stack = load_stack("megatron-core-2025")
        >>> stack.cast_bytes("fp8"), stack.cast_bytes("mxfp8"), stack.cast_bytes("nvfp4")
        (6.0, 4.0625, 5.125)
        """
        four_bit = "nvfp4" if precision == "fp4" else precision
        if four_bit in FP4_CAST_BYTES:
            return FP4_CAST_BYTES[four_bit]
        scaling = "block" if precision.startswith("mx") else self.fp8_scaling
        return FP8_CAST_BYTES[scaling]

    def with_fitted(
        self,
        *,
        kernel_efficiency: float | None = None,
        overlap_contention: float | None = None,
        moe_efficiency: float | None = None,
    ) -> Stack:
        """A copy with other fitted values (used by the fit script)."""
        return replace(
            self,
            kernel_efficiency=self.kernel_efficiency if kernel_efficiency is None else kernel_efficiency,
            overlap_contention=self.overlap_contention if overlap_contention is None else overlap_contention,
            moe_efficiency=self.moe_efficiency if moe_efficiency is None else moe_efficiency,
        )


def _ids(ids: tuple[str, ...], shown: int = 6) -> str:
    return ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def fit_note(fitted_on: tuple[str, ...], validated_on: tuple[str, ...]) -> str:
    """``fitted on 25 published rows (T34, ...); 1 ran on this profile`` or ``not fitted on any
    published row``: the rows of ``sol/validation/data/published-runs.toml`` a profile's fitted
    values come from, and those run on the profile itself (``validated_on``).

    >>> fit_note((), ())
    'not fitted on any published row'
    >>> fit_note(("T1", "T2"), ())
    'fitted on 2 published rows (T1, T2), none of them run on this profile'
    """
    if not fitted_on:
        return "not fitted on any published row"
    own = (
        f"{len(validated_on)} of them run on this profile"
        if validated_on
        else "none of them run on this profile"
    )
    return f"fitted on {len(fitted_on)} published rows ({_ids(fitted_on)}), {own}"


def exposed_overlap_s(communication_s: ArrayLike, hideable_s: ArrayLike, contention: float) -> FloatArray:
    """Seconds of ``communication_s`` still exposed when ``hideable_s`` of compute can cover it: what
    runs past the compute, plus ``contention`` of the covered part (shared SMs and memory).

    >>> float(exposed_overlap_s(3.0, 2.0, 0.1))
    1.2
    """
    communication = np.asarray(communication_s, dtype=np.float64)
    hideable = np.asarray(hideable_s, dtype=np.float64)
    covered = np.minimum(communication, hideable)
    exposed: FloatArray = np.maximum(communication - hideable, 0.0) + contention * covered
    return exposed


def choice_of(table: Fields, key: str, allowed: tuple[str, ...], default: str | None = None) -> str:
    """``table[key]``, one of ``allowed`` (``default`` where the key is absent, when given)."""
    value = table.string(key) if default is None else table.string(key, default)
    if value not in allowed:
        raise DataFileError(table.path, f"{key} must be one of {', '.join(allowed)}", field=key, value=value)
    return value


def _parse(name: str, table: Fields, contention: float) -> Stack:
    return Stack(
        name=name,
        display_name=table.string("display_name"),
        frameworks=tuple(word.lower() for word in table.strings("frameworks")),
        from_year=table.integer("from_year", minimum=1990),
        to_year=table.integer("to_year", minimum=1990),
        attention=choice_of(table, "attention", ATTENTION_KERNELS),
        dropout=table.boolean("dropout"),
        sequence_parallel=table.boolean("sequence_parallel"),
        dp_overlap=table.boolean("dp_overlap"),
        tp_overlap=table.boolean("tp_overlap"),
        elementwise_traffic_factor=table.number("elementwise_traffic_factor"),
        selective_recompute=choice_of(table, "selective_recompute", SELECTIVE_POLICIES),
        fp8_scaling=choice_of(table, "fp8_scaling", FP8_SCALINGS),
        fp8_activation_storage=choice_of(table, "fp8_activation_storage", FP8_STORAGE),
        published_flop_convention=table.string("published_flop_convention"),
        published_flop_counts_recompute=table.boolean("published_flop_counts_recompute"),
        kernel_efficiency=table.number("kernel_efficiency"),
        source=table.string("source"),
        fit_group=table.string("fit_group", ""),
        compile=table.boolean("compile", False),
        zero3_flat_ring=table.boolean("zero3_flat_ring", False),
        ep_node_dedupe=table.boolean("ep_node_dedupe", False),
        overlap_contention=contention,
        moe_efficiency=table.number("moe_efficiency", 1.0),
        optimizer_bytes_per_param=table.number("optimizer_bytes_per_param", 12.0),
        loss_bytes_per_logit=table.number("loss_bytes_per_logit", 8.0),
        fp8_weight_copy=table.boolean("fp8_weight_copy", True),
        context_parallel=table.boolean("context_parallel", True),
        pipeline_parallel=table.boolean("pipeline_parallel", True),
        memory_rules=table.string("memory_rules", "megatron"),
        fitted_on=table.strings("fitted_on"),
        validated_on=table.strings("validated_on"),
        selective_recompute_modules=choices_of(table, "selective_recompute_modules", SELECTIVE_MODULES),
        pipeline_schedules=choices_of(table, "pipeline_schedules", PIPELINE_SCHEDULES, PIPELINE_SCHEDULES),
        own_pipeline_schedule=(
            table.choice("own_pipeline_schedule", PIPELINE_SCHEDULES, "pipeline schedule")
            if "own_pipeline_schedule" in table.data
            else None
        ),
    )


def choices_of(
    table: Fields, key: str, allowed: tuple[str, ...], default: tuple[str, ...] | None = None
) -> tuple[str, ...]:
    """``table[key]``, a list of names each one of ``allowed`` (``default`` where the key is
    absent, when given; else the list is required and may not be empty)."""
    if key not in table.data and default is not None:
        return default
    values = table.strings(key)
    if not values:
        raise DataFileError(
            table.path, f"{key} must name at least one of {', '.join(allowed)}", field=key, value=[]
        )
    unknown = [value for value in values if value not in allowed]
    if unknown:
        raise DataFileError(
            table.path, f"{key} must name only {', '.join(allowed)}", field=key, value=unknown[0]
        )
    return values


@functools.lru_cache(maxsize=4)
def _load(file: Path) -> tuple[str, Mapping[str, Stack]]:
    fields = Fields(str(file), load_toml(file))
    version = fields.integer("schema_version", minimum=1)
    if version != STACKS_SCHEMA_VERSION:
        raise DataFileError(file, f"unsupported schema_version {version}", field="schema_version")
    contention = fields.number("overlap_contention", positive=False)
    stacks = {name: _parse(name, table, contention) for name, table in fields.tables("stack").items()}
    default = fields.string("default")
    if default not in stacks:
        raise DataFileError(file, "default names no profile", field="default", value=default)
    families = load_all_memory_rules(file)
    for stack in stacks.values():
        if stack.memory_rules not in families:
            raise DataFileError(
                file,
                f"[stack.{stack.name}] memory_rules names no [memory_rules.*] table "
                f"(known: {', '.join(sorted(families))})",
                field="memory_rules",
                value=stack.memory_rules,
            )
    return default, stacks


@functools.lru_cache(maxsize=4)
def _load_caps(file: Path) -> Mapping[str, float]:
    fields = Fields(str(file), load_toml(file))
    table = fields.table("kernel_efficiency_cap", required=False)
    if table is None:
        return {}
    return {key.lower(): table.number(key) for key in table.data}


def kernel_efficiency_cap(architecture: str) -> float | None:
    """The highest ``kernel_efficiency`` any stack was fitted to on ``architecture`` (``None`` if
    no published row ran on it): a stack is never assumed to do better on a generation than the
    best one measured there (a 2025 stack on A100 is capped by what 2021-24 stacks reached)."""
    return _load_caps(stacks_file()).get(architecture.lower())


# Off while the profiles are fitted: the caps are written from the fitted values, so a fit that
# saw them would be bounded by the fit before it.
_CAPS_ON: Final = contextvars.ContextVar("kernel_efficiency_caps_on", default=True)


@contextlib.contextmanager
def caps_off() -> Iterator[None]:
    """Within the block, :func:`capped` leaves every stack as it is (the fit script's predictions)."""
    token = _CAPS_ON.set(False)
    try:
        yield
    finally:
        _CAPS_ON.reset(token)


def capped(stack: Stack, architecture: str) -> Stack:
    """``stack`` with its kernel efficiency capped for ``architecture`` (:func:`kernel_efficiency_cap`)."""
    if not _CAPS_ON.get():
        return stack
    cap = kernel_efficiency_cap(architecture)
    if cap is None or stack.kernel_efficiency <= cap:
        return stack
    return replace(stack, kernel_efficiency=cap)


def load_stacks(path: Path | None = None) -> Mapping[str, Stack]:
    """Every profile of the shipped data file (read once), by name."""
    return _load(path or stacks_file())[1]


def default_stack_name() -> str:
    """The profile the CLI and library use unless told otherwise (the current stack)."""
    return _load(stacks_file())[0]


def load_stack(name: str | None = None) -> Stack:
    """The profile called ``name`` (default: :func:`default_stack_name`)."""
    stacks = load_stacks()
    key = default_stack_name() if name is None else name
    if key not in stacks:
        raise UnknownNameError("software stack", key, list(stacks), hint="see sol/data/stacks.toml")
    return stacks[key]


class _Years(Protocol):
    """A profile's years (training :class:`Stack` or serving profile)."""

    @property
    def from_year(self) -> int: ...

    @property
    def to_year(self) -> int: ...


def year_distance(stack: _Years, year: int) -> int:
    """Years between ``year`` and the years a profile (training or serving) stands for; 0 inside them."""
    return max(stack.from_year - year, year - stack.to_year, 0)


def _no_profile(lowered: str) -> str:
    """``names no framework``, or ``names Colossal-AI, which has no profile`` when the text names a
    framework of ``unprofiled_frameworks`` (``sol/data/stacks.toml``)."""
    known = [name for name in _unprofiled(stacks_file()) if name.lower() in lowered]
    return f"names {known[0]}, which has no profile" if known else "names no framework"


@functools.lru_cache(maxsize=4)
def _unprofiled(file: Path) -> tuple[str, ...]:
    return Fields(str(file), load_toml(file)).strings("unprofiled_frameworks")


def stack_for(text: str, year: int) -> tuple[Stack, str]:
    """(profile, why) for a published row: the framework its ``text`` names, in its ``year``.

    The profiles whose framework words occur in the text (the most specific
    word wins); among them the one whose years hold ``year`` (else the
    nearest), compiled when the text says ``torch.compile``. A text that names
    no framework gets the default profile (the median of published runs) from
    2023 on, the Megatron profile of its year before.

    >>> stack_for("pytorch/torchtitan benchmarks ... no compile", 2024)[0].name
    'torchtitan-2024'
    >>> stack_for("Colossal-AI benchmark", 2024)[1]
    'stack published-median: the row names Colossal-AI, which has no profile, 2024: the default profile'
    """
    lowered = text.lower()
    stacks = list(load_stacks().values())
    named = [
        (max(len(w) for w in s.frameworks if w in lowered), s)
        for s in stacks
        if any(w in lowered for w in s.frameworks)
    ]
    if named:
        longest = max(length for length, _ in named)
        candidates = [stack for length, stack in named if length == longest]
        reason = "names " + next(w for w in candidates[0].frameworks if w in lowered and len(w) == longest)
    elif year >= load_stack().from_year:
        default = load_stack()
        return default, f"stack {default.name}: the row {_no_profile(lowered)}, {year}: the default profile"
    else:
        candidates = [stack for stack in stacks if "megatron" in stack.frameworks]
        reason = f"{_no_profile(lowered)}: the Megatron profile of its year"
    compiled = "compile" in lowered and not _NO_COMPILE.search(lowered)
    matching = [stack for stack in candidates if stack.compile == compiled] or candidates
    chosen = min(matching, key=lambda stack: (year_distance(stack, year), stack.name))
    return chosen, f"stack {chosen.name}: the row {reason}, {year}" + (
        " with torch.compile" if compiled else ""
    )


__all__ = [
    "ATTENTION_KERNELS",
    "FP4_CAST_BYTES",
    "FP8_CAST_BYTES",
    "PIPELINE_SCHEDULES",
    "SELECTIVE_MODULES",
    "Stack",
    "capped",
    "caps_off",
    "choice_of",
    "choices_of",
    "default_stack_name",
    "exposed_overlap_s",
    "fit_note",
    "kernel_efficiency_cap",
    "load_stack",
    "load_stacks",
    "stack_for",
    "year_distance",
]

"""Serving-stack profiles: what an inference server of a given era runs, as data.

A :class:`ServingStack` is the serving counterpart of a training
:class:`~lightspeed.sol.core.stacks.Stack`: the kernels and fitted efficiency of
a server release (TensorRT-LLM, vLLM, SGLang, ...), its scheduler's defaults
(token budget, sequence cap, how prefill steps run, how the KV cache is held
and what its memory share is of), its host time per iteration, and which
accelerators it runs on. Profiles live in ``sol/data/stacks.toml`` under
``[serving.*]`` with their sources; :mod:`~lightspeed.sol.core.serving_choice` picks the one a
published row names or a deployment runs.

>>> load_serving_stack("trtllm-2025").prefill_steps
'mixed'
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import DataFileError, UnknownNameError
from lightspeed.records import Record
from lightspeed.sol.core.sharding import stacks_file
from lightspeed.sol.core.stacks import (
    FloatArray,
    choice_of,
    exposed_overlap_s,
    fit_note,
)

BoolArray = npt.NDArray[np.bool_]
Release = tuple[int, int]  # a server's release, major.minor
DECODE_KV_READS: Final = ("per_kv_head", "per_query_head")
# How a server's step takes prompts: beside the running decodes (chunked prefill, in-flight
# batching) or in steps of their own that pause every decode (vLLM V0's and SGLang's defaults)
PREFILL_STEPS: Final = ("mixed", "separate")
# How a server's scheduler holds the KV cache of a request it admits: the whole prompt and
# output from admission, or blocks as the sequence grows (preempting when they run out)
KV_ALLOCATIONS: Final = ("reserve", "on-demand")
# what the server's memory fraction is of: the memory left after the weights (TensorRT-LLM's
# kv_cache_free_gpu_mem_fraction) or the whole GPU, weights and activations included (vLLM's
# gpu_memory_utilization)
KV_MEMORY_OF: Final = ("free", "total")
# What a server stores the KV cache in when nothing says (InferencePlan.kv_precision unset):
# ``quantized``, FP8 with 8-bit or narrower weights (TensorRT-LLM's quantized checkpoints carry
# an FP8 KV cache), or ``model``, the model's 16-bit dtype whatever the weights' format (vLLM's
# and SGLang's ``--kv-cache-dtype auto``).
KV_CACHE_DEFAULTS: Final = ("quantized", "model")
GIB_BYTES: Final = 1024.0**3
# accelerator vendors as the catalog names them (``Accelerator.vendor``)
VENDORS: Final = ("NVIDIA", "AMD", "Intel", "Google")


@dataclass(frozen=True)
class GpuDefault(Record):
    """A server setting whose default depends on the GPU, read from the server's source.

    ``tiers`` are ``(memory below GiB, value)`` in increasing memory; a GPU at or above the last
    bound (or any GPU, without tiers) takes ``largest``; a GPU whose name holds a word of
    ``excludes`` takes the first tier's value.

    >>> sglang_tokens = GpuDefault(((35.0, 2048), (160.0, 8192)), 16384)
    >>> [sglang_tokens.value(accelerator="x", memory_bytes=gib * 2**30) for gib in (24, 80, 180)]
    [2048, 8192, 16384]
    >>> GpuDefault(((70.0, 256),), 1024, ("a100",)).describe()
    '256 below 70 GiB, else 1,024 (a100: 256)'
    """

    tiers: tuple[tuple[float, int], ...]
    largest: int
    excludes: tuple[str, ...] = ()
    source: str = ""

    def value(self, *, accelerator: str, memory_bytes: float) -> int:
        """The default on ``accelerator`` with ``memory_bytes`` of memory."""
        if self.tiers and any(word in accelerator.lower() for word in self.excludes):
            return self.tiers[0][1]
        for below_gib, value in self.tiers:
            if memory_bytes < below_gib * GIB_BYTES:
                return value
        return self.largest

    def describe(self) -> str:
        """The rule in words, for a plan's assumptions."""
        if not self.tiers:
            return f"{self.largest:,}"
        tiers = ", ".join(f"{value:,} below {below:g} GiB" for below, value in self.tiers)
        excluded = f" ({', '.join(self.excludes)}: {self.tiers[0][1]:,})" if self.excludes else ""
        return f"{tiers}, else {self.largest:,}{excluded}"


@dataclass(frozen=True)
class SequenceCap(Record):
    """The most sequences one scheduler (a replica, or one attention-data-parallel rank) keeps
    in flight when the user sets no cap: the server's own default, read from its source.

    ``by_gpu`` is the cap (vLLM: 1,024 on GPUs of at least 70 GiB that are not A100s, else 256);
    a server that derives it from its KV cache (SGLang: ``kv_tokens / context_length *
    per_context_window``, kept between ``by_gpu``'s value and ``most`` and at most half the KV
    tokens) gives ``per_context_window``.

    >>> cap = SequenceCap(GpuDefault((), 2048), most=4096, per_context_window=512.0)
    >>> int(cap.limit(kv_tokens=1_000_000, context_tokens=131072, accelerator="H100", memory_bytes=80e9))
    3906
    """

    by_gpu: GpuDefault
    most: int | None = None
    per_context_window: float = 0.0

    def limit(
        self, *, kv_tokens: ArrayLike, context_tokens: int, accelerator: str, memory_bytes: float
    ) -> FloatArray:
        """The cap for a scheduler holding ``kv_tokens`` of KV cache on ``accelerator``."""
        tokens = np.asarray(kv_tokens, dtype=np.float64)
        value = float(self.by_gpu.value(accelerator=accelerator, memory_bytes=memory_bytes))
        if self.per_context_window <= 0.0:
            return np.full_like(tokens, value)
        derived = np.floor(tokens / context_tokens * self.per_context_window)
        capped = np.clip(derived, value, self.most or np.inf)
        result: FloatArray = np.minimum(capped, np.floor(tokens / 2.0))
        return result

    def describe(self) -> str:
        """The rule in words, for a plan's assumptions."""
        if self.per_context_window > 0.0:
            return (
                f"KV tokens / context length x {self.per_context_window:g}, within "
                f"{self.by_gpu.describe()}-{self.most or 0:,} and at most half the KV tokens"
            )
        return self.by_gpu.describe()


@dataclass(frozen=True)
class ServingStack(Record):
    """One inference-server profile (``[serving.*]`` in ``sol/data/stacks.toml``).

    ``cuda_graphs``: decode steps replay CUDA graphs, so the host issues no kernel
    (else it issues each one, ``kernel_launch_s``, ahead of the GPU); a step that carries prompt
    tokens replays them only up to ``prefill_graph_tokens`` tokens in the step (vLLM V1's
    piecewise graphs; 0: never, as SGLang's extend batches and TensorRT-LLM's decode-only graphs),
    above which the host issues its kernels;
    ``overlap_scheduler``: the host's per-step work (``iteration_overhead_s``) runs
    while the GPU computes the previous step, so it costs only what the GPU time
    does not cover, and a request that arrives during a step joins the iteration after the next
    (the simulator's engine); ``overlap_with_pipeline`` false: the server turns it off under
    pipeline parallelism (:meth:`for_pipeline`). Read from the server's documentation
    (``launch_source``). ``speculative_max_sequences``: the sequence cap the server sets itself
    when speculative decoding is on and the user sets none, and ``overlap_with_speculation``
    false: it turns its overlap scheduler off then (:meth:`for_speculation`;
    ``speculation_source``).
    ``versions``: the server's releases the profile stands for (``(0, 5), (0, 6)``; empty: every
    release of its years), which picks it for a row that names its version.
    ``decode_kv_reads``: how the decode attention kernel reads a grouped-query (GQA/MQA) KV cache,
    ``per_kv_head`` (each KV head once for its group of query heads) or ``per_query_head`` (one
    thread block per query head, each reading its KV head again: the masked MHA kernel of
    TensorRT-LLM before its XQA kernel), read from the server's documentation (``decode_kv_source``).
    ``expert_load_balancer``: the server's published expert-parallel recipes place redundant experts
    by measured load (EPLB), so the busiest EP rank gets only the measured residual over the mean
    (``sol/data/routing.toml``); read from those recipes (``expert_load_balancer_source``).
    ``vendors``: whose accelerators the server runs on (``NVIDIA``, ``AMD``, ``Intel``, ``Google``).
    ``prefill_steps``: ``mixed`` (a step takes prompt tokens beside every running decode: chunked
    prefill, in-flight batching) or ``separate`` (a step that admits prompts runs no decode, which
    waits for the next step: the defaults of vLLM V0 and SGLang), with ``mixed_steps_above_context``, the
    model context above which the server mixes them by default on NVIDIA GPUs (0: never),
    ``mla_separate_steps``: it never mixes them for an MLA model (vLLM 0.7 forced it off), and
    ``whole_prompts``: a separate step admits a prompt only whole (vLLM V0) rather than in chunks
    of the token budget (SGLang), all read from the server's code (``prefill_steps_source``).
    ``kv_memory_of``: what the KV cache's share of memory (``kv_cache_memory_fraction``) is of:
    ``free``, the memory left after the weights, workspace and runtime (TensorRT-LLM's
    ``kv_cache_free_gpu_mem_fraction``), or ``total``, the whole GPU's, from which the weights,
    workspace and runtime are then taken (vLLM's ``gpu_memory_utilization``), read from the
    server's code (``kv_memory_source``); ``kv_memory_share_by_tp``: where the server's default
    share of the whole GPU depends on the GPUs of a replica's stage (SGLang's
    ``mem_fraction_static``), the share from each size up (else ``kv_cache_memory_fraction``).
    ``kv_allocation``: ``reserve`` (a request's prompt and output are held from admission:
    TensorRT-LLM's ``GUARANTEED_NO_EVICT``) or ``on-demand`` (blocks as the sequence grows, the
    last admitted preempted and recomputed when they run out: vLLM), read from the server's code
    (``kv_allocation_source``); ``admission_watermark``: the share of the KV blocks an on-demand
    server leaves free when it admits a prompt (vLLM V0's block manager: 1%), so that the running
    sequences have room to grow (``admission_watermark_source``). ``sparse_attention_min_heads``:
    the query heads a rank's sparse-attention kernel computes at least, padding fewer (vLLM's
    FlashMLA sparse kernels: 64; 0 for none), read from the server's code
    (``sparse_attention_source``). ``kv_cache_default``: the KV cache's format where nothing
    names one (:data:`KV_CACHE_DEFAULTS`), except on ``kv_cache_quantized_vendors``' accelerators,
    whose documented recipe for a quantized model quantizes the cache too, read from the server's
    code and docs (``kv_cache_source``)."""

    name: str
    display_name: str
    frameworks: tuple[str, ...]
    from_year: int
    to_year: int
    kernel_efficiency: float
    iteration_overhead_s: float
    source: str
    fit_group: str = ""
    versions: tuple[tuple[int, int], ...] = ()
    decode_kv_reads: str = "per_kv_head"
    decode_kv_source: str = ""
    attention_dp_efficiency: float = 1.0
    two_batch_overlap: bool = False
    overlap_contention: float = 0.0
    decode_batch_per_rank: tuple[tuple[str, int], ...] = ()
    sequence_cap: SequenceCap | None = None
    token_budget: GpuDefault | None = None
    kernel_fit_group: str = ""
    host_fit_group: str = ""
    cuda_graphs: bool = False
    prefill_graph_tokens: int = 0
    prefill_graph_source: str = ""
    kv_memory_of: str = "free"
    kv_memory_source: str = ""
    kv_cache_default: str = "quantized"
    kv_cache_quantized_vendors: tuple[str, ...] = ()
    kv_cache_source: str = ""
    kv_memory_share_by_tp: tuple[tuple[int, float], ...] = ()
    overlap_scheduler: bool = False
    overlap_with_pipeline: bool = True
    speculative_max_sequences: int | None = None
    overlap_with_speculation: bool = True
    speculation_source: str = ""
    launch_source: str = ""
    fitted_on: tuple[str, ...] = ()
    validated_on: tuple[str, ...] = ()
    host_per_sequence_s: float = 0.0
    host_per_sequence_source: str = ""
    expert_load_balancer: bool = False
    expert_load_balancer_source: str = ""
    vendors: tuple[str, ...] = VENDORS
    prefill_steps: str = "mixed"
    mixed_steps_above_context: int = 0
    mla_separate_steps: bool = False
    whole_prompts: bool = False
    prefill_steps_source: str = ""
    kv_allocation: str = "reserve"
    kv_allocation_source: str = ""
    admission_watermark: float = 0.0
    admission_watermark_source: str = ""
    sparse_attention_min_heads: int = 0
    sparse_attention_source: str = ""

    def fit_note(self) -> str:
        """Which published rows its fitted values rest on (:func:`fit_note`)."""
        return fit_note(self.fitted_on, self.validated_on)

    def separate_prefill_steps(self, context_tokens: int, vendor: str, *, mla: bool = False) -> bool:
        """Whether a step that runs prompts runs no decodes for a model of ``context_tokens``
        context on ``vendor``'s GPUs: ``prefill_steps = "separate"`` (vLLM V0's default scheduler),
        unless the server turns chunked prefill on by default, as vLLM V0 does on NVIDIA GPUs for a
        context above ``mixed_steps_above_context`` (``prefill_steps_source``), but not for an MLA
        model (``mla``) where the server forces it off (``mla_separate_steps``: vLLM 0.7).

        >>> stack = load_serving_stack("vllm-2024")
        >>> stack.separate_prefill_steps(4096, "NVIDIA"), stack.separate_prefill_steps(131072, "NVIDIA")
        (True, False)
        >>> stack.separate_prefill_steps(131072, "AMD")  # chunked prefill stays off on ROCm
        True
        >>> stack.separate_prefill_steps(163840, "NVIDIA", mla=True)  # and for DeepSeek's MLA
        True
        """
        if self.prefill_steps != "separate":
            return False
        if mla and self.mla_separate_steps:
            return True
        chunked_by_default = 0 < self.mixed_steps_above_context < context_tokens and vendor == "NVIDIA"
        return not chunked_by_default

    def for_pipeline(self, pp: int) -> ServingStack:
        """The profile as it runs a plan of ``pp`` pipeline stages: without its overlap scheduler
        where the server turns that off under pipeline parallelism (``overlap_with_pipeline``)."""
        if pp > 1 and self.overlap_scheduler and not self.overlap_with_pipeline:
            return replace(self, overlap_scheduler=False)
        return self

    def for_speculation(self, speculating: bool) -> ServingStack:
        """The profile as it runs a plan with speculative decoding (``speculating``): the server's
        own sequence cap for it (``speculative_max_sequences``, in place of its default cap) and
        without its overlap scheduler where the server turns that off
        (``overlap_with_speculation``).

        >>> stack = load_serving_stack("sglang-2025").for_speculation(True)
        >>> stack.overlap_scheduler, int(stack.sequence_cap.limit(kv_tokens=1e6, context_tokens=4096,
        ...     accelerator="H200", memory_bytes=141e9))
        (False, 48)
        """
        if not speculating:
            return self
        changes: dict[str, Any] = {}
        if self.speculative_max_sequences is not None:
            cap = self.speculative_max_sequences
            changes["sequence_cap"] = SequenceCap(GpuDefault((), cap), most=cap)
        if self.overlap_scheduler and not self.overlap_with_speculation:
            changes["overlap_scheduler"] = False
        return replace(self, **changes) if changes else self

    def covers_version(self, version: tuple[int, int]) -> bool:
        """Whether the profile stands for the server's release ``version`` (``(major, minor)``)."""
        return not self.versions or self.versions[0] <= version <= self.versions[-1]

    def decode_kv_reads_per_kv_head(self, query_heads: ArrayLike, kv_heads: ArrayLike) -> FloatArray:
        """How many times decode attention reads each cached KV head: once, or once per query head
        of its group (``per_query_head``; MLA's latent is read once either way, the caller's rule).

        >>> stack = load_serving_stack("trtllm-2023")
        >>> float(stack.decode_kv_reads_per_kv_head(16.0, 2.0))  # Llama 2 70B on a TP4 GPU
        8.0
        """
        query = np.asarray(query_heads, dtype=np.float64)
        if self.decode_kv_reads != "per_query_head":
            return np.ones_like(query)
        result: FloatArray = np.maximum(query / np.asarray(kv_heads, dtype=np.float64), 1.0)
        return result

    def host_s(self, sequences: ArrayLike) -> FloatArray:
        """The host's work for one step of a scheduler running ``sequences`` sequences: the fixed
        ``iteration_overhead_s`` and ``host_per_sequence_s`` for each sequence (the server's own
        per-request bookkeeping: scheduling, sampling, stop checks, responses)."""
        result: FloatArray = self.iteration_overhead_s + self.host_per_sequence_s * np.asarray(
            sequences, dtype=np.float64
        )
        return result

    def kv_cache_default_on(self, vendor: str) -> str:
        """What the server stores an unnamed KV cache in on ``vendor``'s accelerators
        (:data:`KV_CACHE_DEFAULTS`): its own default, or ``quantized`` where that vendor's
        documented recipe quantizes the cache (``kv_cache_quantized_vendors``)."""
        return "quantized" if vendor in self.kv_cache_quantized_vendors else self.kv_cache_default

    def issues_kernels(
        self, prompt_tokens: float | FloatArray, step_tokens: float | FloatArray
    ) -> bool | BoolArray:
        """Whether the host issues every kernel of a step with ``prompt_tokens`` prompt tokens
        among ``step_tokens`` tokens (floats, or arrays of them: a bool or a bool array): always
        without CUDA graphs; with them, a step that carries prompt tokens beyond what the server's
        graphs cover (``prefill_graph_tokens``). Plain comparisons, so the simulator's timer calls
        it per step at the cost of two."""
        if not self.cuda_graphs:
            return True
        return (prompt_tokens > 0.0) & (step_tokens > self.prefill_graph_tokens)

    def kv_memory_share(self, stage_gpus: ArrayLike, default: float) -> FloatArray:
        """The share of memory the KV cache's rule takes (:attr:`kv_memory_of`) for stages of
        ``stage_gpus`` GPUs: from :attr:`kv_memory_share_by_tp` where the server has one, else
        ``default`` (``kv_cache_memory_fraction``)."""
        gpus = np.asarray(stage_gpus, dtype=np.float64)
        share: FloatArray = np.full(np.shape(gpus), default, dtype=np.float64)
        for size, value in self.kv_memory_share_by_tp:
            share = np.where(gpus >= size, value, share)
        return share

    @property
    def group(self) -> str:
        """The profile whose fitted values this one shares (itself by default)."""
        return self.fit_group or self.name

    @property
    def kernel_group(self) -> str:
        """The profile whose fitted ``kernel_efficiency`` this one shares (``kernel_fit_group``:
        stacks built on the same kernels), while its ``attention_dp_efficiency`` stays its group's own."""
        return self.kernel_fit_group or self.group

    @property
    def host_group(self) -> str:
        """The profile whose fitted ``iteration_overhead_s`` this one shares (``host_fit_group``:
        a server whose step loop does the same serial host work, as TensorRT-LLM's C++ executor of
        0.8-0.21 does what the 0.5-0.7 C++ runtime did), else its group's."""
        return self.host_fit_group or self.group

    def decode_batch_limit(self, architecture: str) -> int | None:
        """Most decoding sequences one attention-DP rank runs on ``architecture`` in the
        stack's wide-EP recipe (``None``: only the KV cache limits it)."""
        return dict(self.decode_batch_per_rank).get(architecture.lower())

    def exposed_s(self, communication_s: ArrayLike, hideable_s: ArrayLike) -> FloatArray:
        """Seconds an overlapped all-to-all still costs (the rule of :meth:`Stack.exposed_s`)."""
        return exposed_overlap_s(communication_s, hideable_s, self.overlap_contention)


def _parse_serving(name: str, table: Fields, contention: float) -> ServingStack:
    return ServingStack(
        name=name,
        display_name=table.string("display_name"),
        frameworks=tuple(word.lower() for word in table.strings("frameworks")),
        from_year=table.integer("from_year", minimum=1990),
        to_year=table.integer("to_year", minimum=1990),
        kernel_efficiency=table.number("kernel_efficiency"),
        iteration_overhead_s=table.number("iteration_overhead_s", positive=False),
        source=table.string("source"),
        fit_group=table.string("fit_group", ""),
        versions=_versions(table),
        decode_kv_reads=choice_of(table, "decode_kv_reads", DECODE_KV_READS, DECODE_KV_READS[0]),
        decode_kv_source=table.string("decode_kv_source", ""),
        attention_dp_efficiency=table.number("attention_dp_efficiency", 1.0),
        two_batch_overlap=table.boolean("two_batch_overlap", False),
        overlap_contention=contention,
        decode_batch_per_rank=_per_architecture(table, "decode_batch_per_rank"),
        sequence_cap=_sequence_cap(table.table("max_sequences", required=False)),
        token_budget=_token_budget(table.table("max_batched_tokens", required=False)),
        kernel_fit_group=table.string("kernel_fit_group", ""),
        host_fit_group=table.string("host_fit_group", ""),
        cuda_graphs=table.boolean("cuda_graphs", False),
        prefill_graph_tokens=table.integer("prefill_graph_tokens", 0),
        prefill_graph_source=table.string("prefill_graph_source", ""),
        overlap_scheduler=table.boolean("overlap_scheduler", False),
        overlap_with_pipeline=table.boolean("overlap_with_pipeline", True),
        speculative_max_sequences=table.optional_integer("speculative_max_sequences"),
        overlap_with_speculation=table.boolean("overlap_with_speculation", True),
        speculation_source=table.string("speculation_source", ""),
        launch_source=table.string("launch_source", ""),
        fitted_on=table.strings("fitted_on"),
        validated_on=table.strings("validated_on"),
        host_per_sequence_s=table.number("host_per_sequence_s", 0.0, positive=False),
        host_per_sequence_source=table.string("host_per_sequence_source", ""),
        expert_load_balancer=table.boolean("expert_load_balancer", False),
        expert_load_balancer_source=table.string("expert_load_balancer_source", ""),
        vendors=_vendors(table),
        prefill_steps=choice_of(table, "prefill_steps", PREFILL_STEPS, PREFILL_STEPS[0]),
        mixed_steps_above_context=table.integer("mixed_steps_above_context", 0),
        mla_separate_steps=table.boolean("mla_separate_steps", False),
        whole_prompts=table.boolean("whole_prompts", False),
        prefill_steps_source=table.string("prefill_steps_source", ""),
        kv_allocation=choice_of(table, "kv_allocation", KV_ALLOCATIONS, KV_ALLOCATIONS[0]),
        kv_memory_of=choice_of(table, "kv_memory_of", KV_MEMORY_OF, KV_MEMORY_OF[0]),
        kv_memory_source=table.string("kv_memory_source", ""),
        kv_cache_default=choice_of(table, "kv_cache_default", KV_CACHE_DEFAULTS, KV_CACHE_DEFAULTS[0]),
        kv_cache_quantized_vendors=table.strings("kv_cache_quantized_vendors"),
        kv_cache_source=table.string("kv_cache_source", ""),
        kv_memory_share_by_tp=_share_by_tp(table),
        kv_allocation_source=table.string("kv_allocation_source", ""),
        admission_watermark=_watermark(table),
        admission_watermark_source=table.string("admission_watermark_source", ""),
        sparse_attention_min_heads=table.integer("sparse_attention_min_heads", 0),
        sparse_attention_source=table.string("sparse_attention_source", ""),
    )


def _watermark(table: Fields) -> float:
    """``admission_watermark``: a share of the KV blocks, from 0 (none) to below 1."""
    share = table.number("admission_watermark", 0.0, positive=False)
    if not 0.0 <= share < 1.0:
        raise DataFileError(
            table.path,
            "expected a share of the KV blocks from 0 to below 1",
            field="admission_watermark",
            value=share,
            fix="write admission_watermark = 0.01 for 1%",
        )
    return share


def _share_by_tp(table: Fields) -> tuple[tuple[int, float], ...]:
    """``[serving.X.kv_memory_share_by_tp]``: ``"8" = 0.81`` (from 8 GPUs a stage up, 81% of each
    GPU for the weights and the KV cache), keys whole numbers >= 1 (1 among them), shares in (0, 1)."""
    shares = table.table("kv_memory_share_by_tp", required=False)
    if shares is None:
        return ()
    pairs = []
    for key in shares.data:
        if not key.isdigit() or int(key) < 1:
            raise DataFileError(
                table.path,
                "expected the GPUs of a stage (a whole number >= 1) as each key",
                field="kv_memory_share_by_tp",
                value=key,
                fix='write "8" = 0.81',
            )
        share = shares.number(key)
        if not 0.0 < share < 1.0:
            raise DataFileError(
                table.path,
                "expected a share of the GPU's memory between 0 and 1",
                field=f"kv_memory_share_by_tp.{key}",
                value=share,
                fix='write "8" = 0.81 for 81%',
            )
        pairs.append((int(key), share))
    if 1 not in dict(pairs):
        raise DataFileError(
            table.path,
            "the shares must start at one GPU a stage",
            field="kv_memory_share_by_tp",
            value=sorted(dict(pairs)),
            fix='add "1" = <share>',
        )
    return tuple(sorted(pairs))


def _vendors(table: Fields) -> tuple[str, ...]:
    """``vendors = ["NVIDIA", "AMD"]``: at least one, each a known accelerator vendor."""
    names = table.strings("vendors")
    unknown = [name for name in names if name not in VENDORS]
    if not names or unknown:
        raise DataFileError(
            table.path,
            f"vendors must name at least one of {', '.join(VENDORS)}",
            field="vendors",
            value=names,
        )
    return names


def release_range(texts: tuple[str, ...] | list[str], path: object, field: str) -> tuple[Release, Release]:
    """``["0.5", "0.6"]``: the first and last release (major.minor) of a range, refused naming
    ``field`` unless it is two releases in order (the profiles' ``versions`` and the packages'
    ``releases``)."""
    parsed = [re.fullmatch(r"(\d+)\.(\d+)", text) for text in texts]
    if len(texts) != 2 or not all(parsed):
        raise DataFileError(
            path,
            'a release range must be ["first major.minor", "last major.minor"]',
            field=field,
            value=texts,
        )
    first, last = ((int(match.group(1)), int(match.group(2))) for match in parsed if match)
    if first > last:
        raise DataFileError(path, "the first release comes after the last", field=field, value=texts)
    return first, last


def _versions(table: Fields) -> tuple[tuple[int, int], ...]:
    """``versions = ["0.5", "0.6"]``: the first and last release (major.minor) a profile stands for."""
    texts = table.strings("versions")
    return release_range(texts, table.path, "versions") if texts else ()


def _gpu_default(table: Fields) -> GpuDefault:
    tiers = table.data.get("tiers", [])
    valid = isinstance(tiers, list) and all(
        isinstance(tier, list)
        and len(tier) == 2
        and all(isinstance(number, int | float) for number in tier)
        and tier[0] > 0
        and tier[1] >= 1
        for tier in tiers
    )
    if not valid:
        raise DataFileError(
            table.path, "tiers must be [[memory below GiB, value], ...]", field="tiers", value=tiers
        )
    return GpuDefault(
        tiers=tuple((float(below), int(value)) for below, value in tiers),
        largest=table.integer("largest", minimum=1),
        excludes=tuple(word.lower() for word in table.strings("excludes")),
        source=table.string("source"),
    )


def _token_budget(table: Fields | None) -> GpuDefault | None:
    return None if table is None else _gpu_default(table)


def _sequence_cap(table: Fields | None) -> SequenceCap | None:
    if table is None:
        return None
    return SequenceCap(
        by_gpu=_gpu_default(table),
        most=table.optional_integer("most"),
        per_context_window=table.number("per_context_window", 0.0, positive=False),
    )


def _per_architecture(table: Fields, key: str) -> tuple[tuple[str, int], ...]:
    limits = table.table(key, required=False)
    if limits is None:
        return ()
    return tuple((name.lower(), limits.integer(name, minimum=1)) for name in sorted(limits.data))


@functools.lru_cache(maxsize=4)
def _load_serving(file: Path) -> Mapping[str, ServingStack]:
    fields = Fields(str(file), load_toml(file))
    contention = fields.number("overlap_contention", positive=False)
    stacks = {
        name: _parse_serving(name, table, contention) for name, table in fields.tables("serving").items()
    }
    for stack in stacks.values():
        _check_shared_values(file, stack, stacks)
    return stacks


def _check_shared_values(file: Path, stack: ServingStack, stacks: Mapping[str, ServingStack]) -> None:
    """A ``fit_group``/``kernel_fit_group``/``host_fit_group`` names a serving profile whose fitted
    kernel efficiency (or host time per iteration) this one repeats (the fit script writes both; a
    hand edit must keep them equal)."""
    for key in ("fit_group", "kernel_fit_group", "host_fit_group"):
        named = getattr(stack, key)
        if named and named not in stacks:
            raise DataFileError(
                file, f"[serving.{stack.name}] {key} names no serving profile", field=key, value=named
            )
    shared = stacks[stack.kernel_group]
    if not math.isclose(shared.kernel_efficiency, stack.kernel_efficiency, rel_tol=1e-9):
        raise DataFileError(
            file,
            f"[serving.{stack.name}] kernel_efficiency {stack.kernel_efficiency:g} differs from "
            f"{shared.name}'s {shared.kernel_efficiency:g}, whose fitted value it shares",
            field="kernel_efficiency",
            value=stack.kernel_efficiency,
        )
    host = stacks[stack.host_group]
    if not math.isclose(host.iteration_overhead_s, stack.iteration_overhead_s, rel_tol=1e-9, abs_tol=1e-12):
        raise DataFileError(
            file,
            f"[serving.{stack.name}] iteration_overhead_s {stack.iteration_overhead_s:g} differs from "
            f"{host.name}'s {host.iteration_overhead_s:g}, whose fitted value it shares",
            field="iteration_overhead_s",
            value=stack.iteration_overhead_s,
        )


DEFAULT_SERVING_STACK: Final = "trtllm-2025"


def load_serving_stacks(path: Path | None = None) -> Mapping[str, ServingStack]:
    """Every serving profile of the shipped data file, by name."""
    return _load_serving(path or stacks_file())


def load_serving_stack(name: str | None = None) -> ServingStack:
    """The serving profile called ``name`` (default: the current TensorRT-LLM one)."""
    stacks = load_serving_stacks()
    key = DEFAULT_SERVING_STACK if name is None else name
    if key not in stacks:
        raise UnknownNameError("serving stack", key, list(stacks), hint="see sol/data/stacks.toml")
    return stacks[key]


__all__ = [
    "DECODE_KV_READS",
    "DEFAULT_SERVING_STACK",
    "KV_ALLOCATIONS",
    "KV_CACHE_DEFAULTS",
    "KV_MEMORY_OF",
    "PREFILL_STEPS",
    "VENDORS",
    "GpuDefault",
    "Release",
    "SequenceCap",
    "ServingStack",
    "load_serving_stack",
    "load_serving_stacks",
    "release_range",
]

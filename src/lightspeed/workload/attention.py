"""Attention variants: which layers attend to the whole context, and how many tokens each keeps.

Every layer of a model is of one kind:

* ``full``: a token attends to every earlier token and itself;
* ``sliding``: to the last ``sliding_window`` tokens (Mistral 7B v0.1: 4,096 on
  every layer; Gemma 2: 4,096 on every other layer; Gemma 3: 1,024 on five
  layers of six; gpt-oss: 128 on every other layer);
* ``chunked``: to the earlier tokens of its own ``attention_chunk_size``-token
  chunk (Llama 4: 8,192 on three layers of four; the fourth attends to
  everything, without RoPE);
* ``sparse``: to the ``index_topk`` earlier tokens a lightning indexer picks
  (DeepSeek Sparse Attention: DeepSeek-V3.2 and GLM-5, 2,048 on every layer).
  It keeps every token, as a full layer does, and reads only those it picks; the
  indexer itself scores every kept token (:func:`indexer_tokens`).

With ``full_attention_interval`` N, layer ``i`` (0-based) is full when
``(i + 1) % N == 0``: the placement of the transformers implementations
(Gemma 2 ``is_sliding = not bool(layer_idx % 2)``, Gemma 3 ``(layer_idx + 1) %
sliding_window_pattern``, gpt-oss ``layer_types``, Llama 4 ``no_rope_layers``).

What a layer keeps in its KV cache for a sequence of ``c`` tokens so far
(:func:`cached_tokens`): ``c`` (full), ``min(c, W)`` (sliding: the window, as
TensorRT-LLM's cyclic cache of ``max_attention_window`` tokens, vLLM's sliding-
window manager and SGLang's SWA pool keep it), ``c - C·(⌈c/C⌉ - 1)`` (chunked: the
tokens of the chunk the last token is in, ``((c - 1) mod C) + 1`` for whole ``c > 0``: ``C`` at
``c = C``, ``1`` at ``c = C + 1``; vLLM frees the earlier chunks). A server that
never evicts a running request reserves, for a request that will reach ``t``
tokens, ``t``, ``min(t, W)`` or ``min(t, C)`` per layer (:func:`reserved_tokens`); a
sparse layer, as a full one, keeps ``c`` and reserves ``t``.

The tokens a query attends to, averaged over a causal prompt of ``s`` tokens
(:func:`attended_tokens`), set the attention FLOPs: ``s/2`` (full), ``W - W²/2s``
(sliding, ``s > W``; sparse, with ``W`` the ``index_topk``), about ``C/2``
(chunked, ``s > C``); counted without the causal mask (the full-square
convention) they are ``s``, ``min(s, W)`` and ``Σ C_k²/s`` over the chunks ``C_k`` (``C`` for whole
chunks; a partial last chunk counts its own length). What a decode step
reads of a layer (:func:`mean_read_tokens`) is what it keeps, except a sparse
layer's ``min(c, W)``. Averages are over a continuum of positions (a token more or less
per layer is below what any estimate resolves).

>>> from lightspeed.workload import load_models
>>> gemma = load_models().get("gemma-3-27b")
>>> layer_attention_kinds(gemma).count("full"), round(float(kv_cache_bytes(gemma, "bf16", 32768)) / 2**30, 3)
(10, 2.906)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from lightspeed.errors import UserInputError
from lightspeed.records import Record
from lightspeed.workload.counts import kv_bytes_per_token_per_layer
from lightspeed.workload.spec import LAYER_ATTENTION_KINDS, TransformerSpec

FloatArray = npt.NDArray[np.float64]


def layer_attention_kinds(spec: TransformerSpec) -> tuple[str, ...]:
    """The kind of every layer of ``spec`` that attends: ``full``, ``sliding`` or ``chunked``
    (a hybrid's attention blocks, all ``full``; its Mamba, MLP and MoE blocks keep no KV cache).

    >>> from lightspeed.workload import load_models
    >>> layer_attention_kinds(load_models().get("gpt-oss-20b"))[:4]
    ('sliding', 'full', 'sliding', 'full')
    """
    attention = spec.attention
    if attention.layer_types:
        return attention.layer_types
    if spec.is_hybrid:
        return ("full",) * spec.num_attention_layers
    local = attention.local_kind
    interval = attention.full_attention_interval
    if local == "full":
        return ("full",) * spec.num_layers
    if interval is None:
        return (local,) * spec.num_layers
    return tuple("full" if (index + 1) % interval == 0 else local for index in range(spec.num_layers))


@dataclass(frozen=True)
class LayerGroup(Record):
    """Layers of one attention kind: how many, what share of the model's layers (a hybrid's
    blocks), and their span."""

    kind: str
    num_layers: int
    share: float
    span_tokens: int | None


def layer_groups(spec: TransformerSpec) -> tuple[LayerGroup, ...]:
    """The model's layers grouped by kind (full first), with their share of all layers.

    >>> from lightspeed.workload import load_models
    >>> [(g.kind, g.num_layers) for g in layer_groups(load_models().get("llama-4-scout"))]
    [('full', 12), ('chunked', 36)]
    """
    counts = Counter(layer_attention_kinds(spec))
    span = spec.attention.local_span
    return tuple(
        LayerGroup(
            kind=kind,
            num_layers=counts[kind],
            share=counts[kind] / spec.num_layers,
            span_tokens=None if kind == "full" else span,
        )
        for kind in LAYER_ATTENTION_KINDS
        if counts[kind]
    )


def _tokens(values: ArrayLike, what: str) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if np.any(~np.isfinite(array)) or np.any(array < 0):
        raise UserInputError(f"{what} must be finite token counts >= 0 (got {values!r})")
    return array


def _kept(kind: str) -> str:
    """The kind whose rule says what a layer of ``kind`` keeps: a sparse layer keeps every token."""
    return "full" if kind == "sparse" else kind


def _read(kind: str) -> str:
    """The kind whose rule says what a query of ``kind`` reads: a sparse layer its top-k, as a
    window of that many (the same count; which tokens they are does not change the cost)."""
    return "sliding" if kind == "sparse" else kind


def _check_kind(kind: str, span: int | None) -> int:
    if kind not in LAYER_ATTENTION_KINDS:
        raise UserInputError(f"layer kind {kind!r} is not one of {', '.join(LAYER_ATTENTION_KINDS)}")
    if kind == "full":
        return 0
    if span is None or span < 1:
        raise UserInputError(f"a {kind} layer needs a span of >= 1 token (got {span})")
    return span


def cached_tokens(kind: str, span: int | None, context_tokens: ArrayLike) -> FloatArray:
    """Tokens one layer of ``kind`` keeps for a sequence of ``context_tokens`` tokens so far.

    >>> cached_tokens("sliding", 1024, [512, 32768]).tolist()
    [512.0, 1024.0]
    >>> cached_tokens("chunked", 8192, [8192, 8193, 20000]).tolist()
    [8192.0, 1.0, 3616.0]
    """
    window = _check_kind(kind, span)
    context = _tokens(context_tokens, "context_tokens")
    kind = _kept(kind)
    if kind == "full":
        return context
    if kind == "sliding":
        return np.minimum(context, float(window))
    # the tokens of the chunk the last token is in: a context of exactly k chunks holds its whole
    # last chunk (C at c = C, 1 at c = C + 1), not 0 as c mod C would say
    completed = np.maximum(np.ceil(context / float(window)) - 1.0, 0.0)
    held: FloatArray = context - completed * float(window)
    return held


def reserved_tokens(kind: str, span: int | None, total_tokens: ArrayLike) -> FloatArray:
    """Most tokens one layer of ``kind`` keeps over the life of a request of ``total_tokens``:
    what a scheduler that never evicts a running request reserves for it.

    >>> reserved_tokens("chunked", 8192, [4096, 33792]).tolist()
    [4096.0, 8192.0]
    """
    window = _check_kind(kind, span)
    total = _tokens(total_tokens, "total_tokens")
    return total if _kept(kind) == "full" else np.minimum(total, float(window))


def _integral(kind: str, window: float, x: FloatArray) -> FloatArray:
    """Integral over ``[0, x]`` of the tokens a layer keeps (its :func:`cached_tokens`)."""
    if kind == "full":
        return x * x / 2.0
    if kind == "sliding":
        return np.where(x <= window, x * x / 2.0, window * window / 2.0 + window * (x - window))
    remainder = np.mod(x, window)
    integral: FloatArray = np.floor(x / window) * window * window / 2.0 + remainder * remainder / 2.0
    return integral


def mean_cached_tokens(
    kind: str, span: int | None, first_tokens: ArrayLike, last_tokens: ArrayLike
) -> FloatArray:
    """Tokens one layer of ``kind`` keeps, averaged over contexts spread evenly from
    ``first_tokens`` to ``last_tokens`` (a decode from ISL to ISL + OSL; ``0`` to ``s``
    is what the queries of a causal prompt of ``s`` tokens attend to).

    >>> float(mean_cached_tokens("sliding", 4096, 0, 32768))  # W - W^2 / 2s
    3840.0
    """
    window = float(_check_kind(kind, span))
    first = _tokens(first_tokens, "first_tokens")
    last = _tokens(last_tokens, "last_tokens")
    low, high = np.minimum(first, last), np.maximum(first, last)
    width = high - low
    kept = _kept(kind)
    spread = (_integral(kept, window, high) - _integral(kept, window, low)) / np.where(width > 0, width, 1.0)
    mean: FloatArray = np.where(width > 0, spread, cached_tokens(kind, span, low))
    return mean


def mean_read_tokens(
    kind: str, span: int | None, first_tokens: ArrayLike, last_tokens: ArrayLike
) -> FloatArray:
    """Tokens a query of one layer of ``kind`` reads, averaged over contexts spread evenly from
    ``first_tokens`` to ``last_tokens``: what the layer keeps (:func:`mean_cached_tokens`),
    except that a sparse layer reads only its ``index_topk``.

    >>> float(mean_read_tokens("sparse", 2048, 0, 65536)), float(mean_cached_tokens("sparse", 2048, 0, 65536))
    (2016.0, 32768.0)
    """
    return mean_cached_tokens(_read(kind), span, first_tokens, last_tokens)


def attended_tokens(kind: str, span: int | None, seq_len: ArrayLike, *, causal: bool) -> FloatArray:
    """Tokens a query of a ``seq_len``-token sequence attends to in one layer of ``kind``, on
    average: causal, over the prompt's positions; without the mask, the full square's row: ``s``,
    ``min(s, W)``, and for chunks the square of each, ``Σ C_k² / s`` (twice the causal mean: a
    partial last chunk counts its own length, not ``C``).

    >>> float(attended_tokens("chunked", 8192, 10000, causal=False))  # (8192² + 1808²) / 10000
    7037.7728
    """
    if causal:
        return mean_read_tokens(kind, span, 0.0, seq_len)
    if kind == "chunked":  # each chunk a full square of its own length
        return 2.0 * mean_read_tokens(kind, span, 0.0, seq_len)
    return reserved_tokens(_read(kind), span, seq_len)


def indexer_tokens(spec: TransformerSpec, seq_len: ArrayLike, *, causal: bool) -> FloatArray:
    """Keys a sparse model's lightning indexer scores per query, averaged over positions and
    layers (0 for a model without one): every key its layers keep, ``s/2`` causal or ``s``
    without the mask (the attention convention of :func:`mean_attended_tokens`).

    >>> from lightspeed.workload import load_models
    >>> float(indexer_tokens(load_models().get("deepseek-v3.2"), 65536, causal=True))
    32768.0
    """
    summed = _per_layer_sum(
        spec,
        lambda kind, span: attended_tokens("full", None, seq_len, causal=causal) * (kind == "sparse"),
    )
    mean: FloatArray = summed / spec.num_layers
    return mean


def _per_layer_sum(spec: TransformerSpec, tokens: Any) -> FloatArray:
    """Sum over the model's layers of ``tokens(kind, span)``."""
    total: FloatArray = sum(
        (group.num_layers * tokens(group.kind, group.span_tokens) for group in layer_groups(spec)),
        start=np.zeros(()),
    )
    return total


def cached_token_layers(spec: TransformerSpec, context_tokens: ArrayLike) -> FloatArray:
    """Tokens cached over all layers (a token counted once per layer that keeps it) for a
    sequence of ``context_tokens`` tokens so far."""
    return _per_layer_sum(spec, lambda kind, span: cached_tokens(kind, span, context_tokens))


def reserved_token_layers(spec: TransformerSpec, total_tokens: ArrayLike) -> FloatArray:
    """Tokens over all layers a never-evicting server reserves for a request of ``total_tokens``."""
    return _per_layer_sum(spec, lambda kind, span: reserved_tokens(kind, span, total_tokens))


def mean_attended_tokens(spec: TransformerSpec, seq_len: ArrayLike, *, causal: bool) -> FloatArray:
    """Tokens a query attends to, averaged over positions and layers (sets attention FLOPs).

    >>> from lightspeed.workload import load_models
    >>> float(mean_attended_tokens(load_models().get("llama-3-8b"), 8192, causal=True))
    4096.0
    """
    summed = _per_layer_sum(spec, lambda kind, span: attended_tokens(kind, span, seq_len, causal=causal))
    mean: FloatArray = summed / spec.num_layers
    return mean


def kv_cache_tokens_per_layer(spec: TransformerSpec, context_tokens: float) -> tuple[float, ...]:
    """Tokens each layer (in order) keeps for a sequence of ``context_tokens`` tokens so far.

    >>> from lightspeed.workload import load_models
    >>> kv_cache_tokens_per_layer(load_models().get("gemma-3-27b"), 32768)[:6]
    (1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 32768.0)
    """
    span = spec.attention.local_span
    return tuple(float(cached_tokens(kind, span, context_tokens)) for kind in layer_attention_kinds(spec))


def kv_cache_bytes(spec: TransformerSpec, precision: str, context_tokens: ArrayLike) -> FloatArray:
    """Bytes of KV cache one sequence of ``context_tokens`` tokens so far holds, all layers,
    in ``precision`` (unsplit: a tensor-parallel group shares it)."""
    per_token_layer = kv_bytes_per_token_per_layer(spec, precision)
    held: FloatArray = cached_token_layers(spec, context_tokens) * per_token_layer
    return held


def kv_cache_reserved_bytes(spec: TransformerSpec, precision: str, total_tokens: ArrayLike) -> FloatArray:
    """Bytes of KV cache a never-evicting server reserves for a request of ``total_tokens``."""
    per_token_layer = kv_bytes_per_token_per_layer(spec, precision)
    reserved: FloatArray = reserved_token_layers(spec, total_tokens) * per_token_layer
    return reserved


def kv_bytes_per_token_past_span(spec: TransformerSpec, precision: str) -> float:
    """KV bytes each token adds once a sequence is past its local layers' span (a sliding window
    keeps no more, a chunked layer starts its next chunk): the layers that keep every token (full
    and sparse) only. Equal to :func:`~lightspeed.workload.kv_cache_bytes_per_token` without local
    layers.

    >>> from lightspeed.workload import load_models
    >>> kv_bytes_per_token_past_span(load_models().get("gemma-3-27b"), "bf16") / 1024  # 10 x 8 KiB
    80.0
    """
    keeping = sum(_kept(kind) == "full" for kind in layer_attention_kinds(spec))
    return keeping * kv_bytes_per_token_per_layer(spec, precision)


def kv_bytes_per_token_at(spec: TransformerSpec, precision: str, context_tokens: ArrayLike) -> FloatArray:
    """KV bytes per token of context a sequence holds at ``context_tokens`` (all layers): the
    full-attention figure of :func:`~lightspeed.workload.kv_cache_bytes_per_token` where every
    layer is full, less where local layers stop at their span.

    >>> from lightspeed.workload import load_models
    >>> float(kv_bytes_per_token_at(load_models().get("mistral-7b-v0.1"), "bf16", 8192))  # half: window 4096
    65536.0
    """
    context = _tokens(context_tokens, "context_tokens")
    held = kv_cache_bytes(spec, precision, context)
    per_token: FloatArray = held / np.where(context > 0, context, 1.0)
    return per_token


__all__ = [
    "LayerGroup",
    "attended_tokens",
    "cached_token_layers",
    "cached_tokens",
    "indexer_tokens",
    "kv_bytes_per_token_at",
    "kv_bytes_per_token_past_span",
    "kv_cache_bytes",
    "kv_cache_reserved_bytes",
    "kv_cache_tokens_per_layer",
    "layer_attention_kinds",
    "layer_groups",
    "mean_attended_tokens",
    "mean_cached_tokens",
    "mean_read_tokens",
    "reserved_token_layers",
    "reserved_tokens",
]

"""FLOPs per token and per training run, under a named, selectable convention.

Peers count "model FLOPs" differently; lightspeed names the convention on
every figure. ``N`` is the model's *active* parameter count (per token, so an
MoE model counts only the experts a token is routed to); ``L`` layers, ``s``
sequence length, ``H`` query heads, ``d`` head size (for MLA the mean of the
Q/K and V head sizes), ``h`` hidden size, ``V`` vocabulary.

================== ============================================ =====================================
convention         training FLOP per token                      used by
================== ============================================ =====================================
``6N``             ``6·N``, N = all active parameters            Transformer Math 101 (EleutherAI),
                   (embeddings and LM head included)             Chinchilla's C = 6ND
``6N-nonembedding`` ``6·N``, N = active parameters of the layers Kaplan et al. 2020
                   (no token/position tables, no LM head)
``6N+attention``   ``6·N + 12·L·s·H·d`` (full attention)         PaLM (Chowdhery et al. 2022, app. B),
                                                                 nanoGPT, llm-foundry, verl
``6N+causal-attention`` ``6·N + 6·L·s·H·d``, N = the layers and   Megatron-Core (causal mask halves it;
                   the LM head (the parameters that multiply)    the embedding lookup is no matmul)
``megatron``       ``72·l·h²·(1 + s/(6h) + V/(12·l·h))``         Narayanan et al. 2021 (GPT shapes);
                   (a hybrid: block by block, see below)         Megatron-LM's hybrid_flops
================== ============================================ =====================================

A hybrid's recurrent blocks (Mamba-2, Gated DeltaNet) count in ``N`` through their projections;
the conventions with an attention term add their chunked scan beside it
(:func:`recurrent_scan_forward_flop`), as
they add the attention scores, and ``L`` is then the attention blocks. ``megatron`` counts a
hybrid block by block, as Megatron-LM's ``num_floating_point_operations`` does (``hybrid_flops``):
``3·(Σ L_b·F_b + F_scores + 2·h·V)``, ``F_b`` one block's GEMMs (attention projections, the MLP,
the routed and shared experts, Mamba-2's ``in_proj``, ``7·d_in·N`` scan and ``out_proj``, the Gated
DeltaNet's projections, convolution and recurrence), not as ``l`` GPT layers.

Training is forward + backward = 3 x forward. ``recompute=True`` (full
activation recomputation) adds one more forward pass of the transformer
layers but not of the LM head: the hardware FLOPs (HFU) rather than the
model FLOPs (MFU). For ``megatron`` that gives the paper's
``96·l·h²·(1 + s/(6h) + V/(16·l·h))``. ``causal=True`` halves the attention
term of any convention that has one.

>>> from lightspeed.workload import load_models
>>> llama = load_models().get("llama-3-8b")
>>> flops_per_token(llama, seq_len=8192, convention="6N").training_flop / 1e9
48.181567488
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from lightspeed.errors import UnknownNameError, UserInputError
from lightspeed.limits import MAX_FLOP, MAX_SEQ_LEN, MAX_TOKENS, check_number, check_whole
from lightspeed.records import Record
from lightspeed.workload.attention import indexer_tokens, layer_groups, mean_attended_tokens
from lightspeed.workload.context import context_note
from lightspeed.workload.counts import ParameterCounts, parameter_counts
from lightspeed.workload.spec import BLOCK_SYMBOLS, TransformerSpec


@dataclass(frozen=True)
class FlopConvention(Record):
    """How a peer counts model FLOPs: which N, which attention term, who uses it."""

    name: str
    parameter_basis: str
    attention: str
    formula: str
    used_by: str


_ALL = "all active parameters (embeddings and LM head included)"
_MULTIPLIED = (
    "active parameters that multiply: the layers and the LM head (the embedding lookup is not a matmul)"
)
_LAYERS = "active parameters of the transformer layers (no embedding tables, no LM head)"

CONVENTIONS: Final[dict[str, FlopConvention]] = {
    "6N": FlopConvention("6N", _ALL, "none", "6·N", "Transformer Math 101 (EleutherAI); Chinchilla"),
    "6N-nonembedding": FlopConvention(
        "6N-nonembedding", _LAYERS, "none", "6·N", "Kaplan et al. 2020 (scaling laws)"
    ),
    "6N+attention": FlopConvention(
        "6N+attention", _ALL, "full", "6·N + 12·L·s·H·d", "PaLM appendix B; nanoGPT; llm-foundry; verl"
    ),
    "6N+causal-attention": FlopConvention(
        "6N+causal-attention",
        _MULTIPLIED,
        "causal",
        "6·N + 6·L·s·H·d",
        "Megatron-Core num_floating_point_operations (layers + LM head, causal attention halved)",
    ),
    "megatron": FlopConvention(
        "megatron",
        "all active parameters, for reference: the formula itself uses l, h and V of a GPT shape",
        "full",
        "72·l·h²·(1 + s/(6h) + V/(12·l·h))",
        "Narayanan et al. 2021 (Megatron-LM, SC21); a hybrid as Megatron-LM's hybrid_flops",
    ),
}

MFU_CONVENTION: Final = "6N+causal-attention"
"""The convention every MFU lightspeed prints defaults to, predicted (``plan train``) and measured
(``goodput report``) alike, so the two compare: the FLOPs a causal model executes (the mask halves
attention), as Megatron-Core counts them. ``--convention`` picks another on both."""


@dataclass(frozen=True)
class FlopsPerToken(Record):
    """Forward and training FLOP per token of one model under one convention.

    ``num_params`` is the N the convention uses (``parameter_basis`` says which);
    ``attention_training_flop`` is the part of ``training_flop`` spent in
    attention scores and values. ``formula`` is symbolic, ``substituted`` the
    same with this model's numbers.
    """

    model: str
    convention: str
    seq_len: int
    causal: bool
    recompute: bool
    num_params: int
    parameter_basis: str
    forward_flop: float
    training_flop: float
    attention_training_flop: float
    formula: str
    substituted: str
    used_by: str
    notes: tuple[str, ...] = ()


def get_convention(name: str) -> FlopConvention:
    """The convention called ``name`` (see :data:`CONVENTIONS`); case-insensitive.

    >>> get_convention("6n+attention").used_by
    'PaLM appendix B; nanoGPT; llm-foundry; verl'
    """
    found = CONVENTIONS.get(name.strip())
    if found is None:
        lowered = {key.lower(): value for key, value in CONVENTIONS.items()}
        found = lowered.get(name.strip().lower())
    if found is None:
        raise UnknownNameError("FLOP convention", name, CONVENTIONS)
    return found


def _number(value: float) -> str:
    """A number for a formula: small integers as written, others as ``8.030e9``."""
    if float(value).is_integer() and abs(value) < 1e6:
        return str(int(value))
    if abs(value) < 1e6:
        return f"{value:.4g}"
    mantissa, exponent = f"{value:.3e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def attention_forward_flop(spec: TransformerSpec, *, seq_len: int, causal: bool) -> float:
    """Forward FLOP per token of attention scores (QKᵀ) and weighted values (AV).

    Per layer ``2·s̄·H·(d_qk + d_v)``, where ``s̄`` is the tokens a query attends to
    (:func:`~lightspeed.workload.mean_attended_tokens`): ``s`` counted as a full
    square, ``s/2`` under the causal mask; local layers stop at their window or
    chunk (a causal sliding layer attends ``W - W²/2s``), sparse layers at their
    top-k, and their lightning indexer adds ``2·s̄_I·H_I·d_I`` over every key it
    scores (:func:`~lightspeed.workload.attention.indexer_tokens`).

    >>> from lightspeed.workload import load_models
    >>> attention_forward_flop(load_models().get("llama-3-8b"), seq_len=8192, causal=False)  # 4·L·s·h
    4294967296.0
    """
    attention = spec.attention
    context = float(mean_attended_tokens(spec, seq_len, causal=causal))
    per_layer = 2.0 * context * attention.num_heads * (attention.qk_head_dim + attention.value_head_dim)
    return spec.num_layers * (per_layer + indexer_forward_flop(spec, seq_len, causal=causal))


def indexer_forward_flop(spec: TransformerSpec, seq_len: int, *, causal: bool) -> float:
    """Forward FLOP per token of a sparse model's lightning indexer in an average layer,
    ``2·s̄_I·H_I·d_I`` over the keys it scores (:func:`~lightspeed.workload.attention.indexer_tokens`);
    0 without one."""
    attention = spec.attention
    if attention.index_n_heads is None or attention.index_head_dim is None:
        return 0.0
    keys = float(indexer_tokens(spec, seq_len, causal=causal))
    return 2.0 * keys * attention.index_n_heads * attention.index_head_dim


def recurrent_scan_forward_flop(spec: TransformerSpec) -> float:
    """Forward FLOP per token of the chunked scans of a hybrid's recurrent blocks (0 without):
    :meth:`~lightspeed.workload.MambaSpec.scan_flop_per_token` (or the Gated DeltaNet's) of each
    block.

    >>> from lightspeed.workload import load_models
    >>> recurrent_scan_forward_flop(load_models().get("nemotron-3-nano-30b-a3b")) / 1e6  # 23 blocks
    78.381056
    """
    mixer = spec.recurrent
    if mixer is None:
        return 0.0
    return float(spec.num_recurrent_layers * mixer.scan_flop_per_token())


@dataclass(frozen=True)
class _Figures:
    """What one convention computes; :func:`flops_per_token` wraps it in a record."""

    num_params: int
    forward: float
    training: float
    attention: float
    formula: str
    substituted: str
    notes: tuple[str, ...] = ()


def flops_per_token(
    spec: TransformerSpec,
    *,
    seq_len: int,
    convention: str = "6N",
    causal: bool = False,
    recompute: bool = False,
) -> FlopsPerToken:
    """FLOP per token of ``spec`` at sequence length ``seq_len`` (tokens).

    >>> from lightspeed.workload import load_models
    >>> gpt3 = load_models().get("gpt-3-175b")
    >>> round(flops_per_token(gpt3, seq_len=2048, convention="megatron").training_flop / 1e12, 4)
    1.0764
    """
    if seq_len < 1:
        raise UserInputError(f"seq_len must be >= 1 token (got {seq_len})")
    chosen = get_convention(convention)
    counts = parameter_counts(spec)
    causal = causal or chosen.attention == "causal"
    if chosen.name == "megatron" and spec.is_hybrid:
        figures = _megatron_hybrid(spec, counts, seq_len=seq_len, causal=causal, recompute=recompute)
    elif chosen.name == "megatron":
        figures = _megatron(spec, counts, seq_len=seq_len, causal=causal, recompute=recompute)
    else:
        figures = _six_n(spec, counts, chosen, seq_len=seq_len, causal=causal, recompute=recompute)
    return FlopsPerToken(
        model=spec.name,
        convention=chosen.name,
        seq_len=seq_len,
        causal=causal,
        recompute=recompute,
        num_params=figures.num_params,
        parameter_basis=chosen.parameter_basis,
        forward_flop=figures.forward,
        training_flop=figures.training,
        attention_training_flop=figures.attention,
        formula=figures.formula,
        substituted=figures.substituted,
        used_by=chosen.used_by,
        notes=(*figures.notes, *_seq_notes(spec, seq_len)),
    )


def _six_n(
    spec: TransformerSpec,
    counts: ParameterCounts,
    chosen: FlopConvention,
    *,
    seq_len: int,
    causal: bool,
    recompute: bool,
) -> _Figures:
    if chosen.parameter_basis == _ALL:
        num_params = counts.active_params
    elif chosen.parameter_basis == _MULTIPLIED:
        tied_head = spec.vocab_size * spec.hidden_size if spec.tied_embeddings else 0
        num_params = counts.active_non_embedding_params + counts.lm_head_params + tied_head
    else:
        num_params = counts.active_non_embedding_params
    layers = counts.active_non_embedding_params
    attention = 0.0
    formula = "6·N + 2·N_layers" if recompute else "6·N"
    terms = [f"6 × {_number(num_params)}", *([f"2 × {_number(layers)}"] if recompute else [])]
    if chosen.attention != "none":
        attention = attention_forward_flop(spec, seq_len=seq_len, causal=causal)
        factor = (8 if recompute else 6) if causal else (16 if recompute else 12)
        head = (spec.attention.qk_head_dim + spec.attention.value_head_dim) / 2
        # the s the formula's factor multiplies: the tokens an attention layer attends to, before
        # the causal halving (a hybrid's average over its blocks spread over its attention blocks)
        spread = spec.num_layers / max(spec.num_attention_layers, 1)  # a hybrid may have none
        context = float(mean_attended_tokens(spec, seq_len, causal=causal)) * (2 if causal else 1) * spread
        formula += f" + {factor}·L·s·H·d"
        terms.append(
            f"{factor} × {spec.num_attention_layers} × {_number(context)} × {spec.attention.num_heads} × "
            f"{_number(head)}"
        )
        scan = recurrent_scan_forward_flop(spec)
        if scan:
            attention += scan
            passes = 4 if recompute else 3
            formula += f" + {passes}·F_scan"
            terms.append(f"{passes} × {_number(scan)}")
        if spec.attention.index_n_heads is not None:  # the lightning indexer's scores, d_I whole
            formula += f" + {factor // 2}·L·s·H_I·d_I"
            keys = float(indexer_tokens(spec, seq_len, causal=causal)) * (2 if causal else 1)
            terms.append(
                f"{factor // 2} × {spec.num_layers} × {_number(keys)} × {spec.attention.index_n_heads} × "
                f"{spec.attention.index_head_dim}"
            )
    forward = 2.0 * num_params + attention
    training = 3.0 * forward + (2.0 * layers + attention if recompute else 0.0)
    return _Figures(
        num_params=num_params,
        forward=forward,
        training=training,
        attention=(4.0 if recompute else 3.0) * attention,
        formula=formula,
        substituted=f"{' + '.join(terms)} = {_number(training)} FLOP/token",
        notes=_local_notes(spec) if chosen.attention != "none" else (),
    )


def _megatron(
    spec: TransformerSpec, counts: ParameterCounts, *, seq_len: int, causal: bool, recompute: bool
) -> _Figures:
    layers, hidden, vocab = spec.num_layers, spec.hidden_size, spec.vocab_size
    attention_denominator = 12 if causal else 6
    logit_denominator = 16 if recompute else 12
    lead = 96 if recompute else 72
    bracket = 1 + seq_len / (attention_denominator * hidden) + vocab / (logit_denominator * layers * hidden)
    training = lead * layers * hidden**2 * bracket
    return _Figures(
        num_params=counts.active_params,
        forward=24.0 * layers * hidden**2 * (1 + seq_len / (attention_denominator * hidden))
        + 2.0 * vocab * hidden,
        training=training,
        attention=lead * layers * hidden * seq_len / attention_denominator,
        formula=f"{lead}·l·h²·(1 + s/({attention_denominator}h) + V/({logit_denominator}·l·h))",
        substituted=(
            f"{lead} × {layers} × {hidden}² × (1 + {seq_len}/({attention_denominator} × {hidden}) + "
            f"{vocab}/({logit_denominator} × {layers} × {hidden})) = {_number(training)} FLOP/token"
        ),
        notes=_megatron_shape_notes(spec),
    )


def _megatron_hybrid(
    spec: TransformerSpec, counts: ParameterCounts, *, seq_len: int, causal: bool, recompute: bool
) -> _Figures:
    """A hybrid counted block by block, as Megatron-LM's ``num_floating_point_operations`` counts
    its hybrid models (``hybrid_flops``): each block kind's GEMMs, the attention scores of the
    attention blocks and the logits, times 3 (forward, and the backward's two GEMMs); a recompute
    pass adds the blocks' forward once more, not the logits'."""
    blocks = [(symbol, spec.block_pattern.count(symbol), flop) for symbol, flop in _block_flop(spec).items()]
    blocks = [(symbol, count, flop) for symbol, count, flop in blocks if count]
    scores = attention_forward_flop(spec, seq_len=seq_len, causal=causal)
    layers = sum(count * flop for _, count, flop in blocks) + scores
    logits = 2.0 * spec.hidden_size * spec.vocab_size
    passes = 4 if recompute else 3
    training = passes * layers + 3.0 * logits
    terms = " + ".join(f"{count} × {_number(flop)}" for _, count, flop in blocks)
    return _Figures(
        num_params=counts.active_params,
        forward=layers + logits,
        training=training,
        attention=passes * scores,
        formula=f"{passes}·(Σ L_b·F_b + F_scores) + 3·2·h·V",
        substituted=(
            f"{passes} × ({terms} + {_number(scores)}) + 3 × 2 × {spec.hidden_size} × {spec.vocab_size} "
            f"= {_number(training)} FLOP/token"
        ),
        notes=(_hybrid_note(spec, blocks),),
    )


def _block_flop(spec: TransformerSpec) -> dict[str, float]:
    """Forward FLOP per token of one block of each kind, as Megatron-LM's ``hybrid_flops`` counts
    it (attention without its scores, which :func:`attention_forward_flop` adds)."""
    hidden, attention = spec.hidden_size, spec.attention
    matrices = 3 if spec.gated_mlp else 2  # gate, up and down (Megatron-LM's 3/2 for SwiGLU)
    q_size = attention.num_heads * attention.qk_head_dim
    kv_size = attention.num_kv_heads * attention.qk_head_dim
    values = attention.num_heads * attention.value_head_dim
    flop = {
        "*": 2.0 * hidden * (q_size + kv_size + attention.num_kv_heads * attention.value_head_dim + values),
        "-": 2.0 * matrices * hidden * spec.ffn_hidden_size,
        "M": _mamba_block_flop(spec),
        "G": _gated_delta_net_block_flop(spec),
        "E": 0.0,
    }
    moe = spec.moe
    if moe is not None:  # top-k routed experts (on the latent where there is one) and the shared ones
        width = moe.latent_size or hidden
        routed = 2.0 * matrices * width * moe.expert_ffn_hidden_size * moe.top_k
        latent = 4.0 * hidden * moe.latent_size if moe.latent_size else 0.0
        shared = 2.0 * matrices * hidden * moe.shared_expert_ffn_hidden_size * moe.num_shared_experts
        flop["E"] = routed + latent + shared
    return flop


def _mamba_block_flop(spec: TransformerSpec) -> float:
    """Megatron-LM's ``mamba_layer_flops``: ``in_proj`` ``2h·(2·d_in + 2·G·N + H)``, the scan
    ``7·d_in·N`` and ``out_proj`` ``2·d_in·h``, with ``d_in`` the heads' channels (Megatron-LM writes
    ``2h``, the same for Nemotron-H)."""
    mamba = spec.mamba
    if mamba is None:
        return 0.0
    inner, hidden = mamba.inner_size, spec.hidden_size
    in_proj = 2.0 * hidden * (2 * inner + 2 * mamba.num_groups * mamba.state_size + mamba.num_heads)
    return in_proj + 7.0 * inner * mamba.state_size + 2.0 * inner * hidden


def _gated_delta_net_block_flop(spec: TransformerSpec) -> float:
    """Megatron-LM's ``gdn_layer_flops``: ``2·(h·(2·qk + 2·v + 2·H_v) + k·(2·qk + v) + 4·H_v·d_v² +
    h·v)``, ``qk`` and ``v`` the key and value channels, ``k`` the convolution's taps."""
    mixer = spec.gated_delta_net
    if mixer is None:
        return 0.0
    hidden, keys, values = spec.hidden_size, mixer.key_size, mixer.inner_size
    projections = hidden * (2 * keys + 2 * values + 2 * mixer.num_value_heads) + hidden * values
    convolution = mixer.conv_kernel * (2 * keys + values)
    return 2.0 * (projections + convolution + 4 * mixer.num_value_heads * mixer.value_head_dim**2)


def _hybrid_note(spec: TransformerSpec, blocks: list[tuple[str, int, float]]) -> str:
    kinds = ", ".join(f"{count} {BLOCK_SYMBOLS[symbol]}" for symbol, count, _ in blocks)
    return (
        f"{spec.name} is a hybrid of {spec.num_layers} blocks ({kinds}): counted block by block as "
        "Megatron-LM's num_floating_point_operations counts hybrids (hybrid_flops), not as "
        f"{spec.num_layers} GPT layers of Narayanan et al.'s 72·l·h² formula"
    )


def _megatron_shape_notes(spec: TransformerSpec) -> tuple[str, ...]:
    """Where ``spec`` is not the GPT shape Narayanan et al.'s formula assumes."""
    differences = []
    if spec.attention.kind != "mha":
        differences.append(f"{spec.attention.kind.upper()} attention")
    if spec.mlp != "gelu" or spec.ffn_hidden_size != 4 * spec.hidden_size:
        differences.append(f"a {spec.mlp} MLP of {spec.ffn_hidden_size} (the formula assumes 4h GELU)")
    if spec.is_moe:
        differences.append("MoE layers")
    if spec.attention.local_span is not None:
        differences.append("local attention layers (counted here as full)")
    if not differences:
        return ()
    return (
        f"the megatron formula assumes a GPT shape; {spec.name} has {', '.join(differences)}, "
        "so the figure is approximate: prefer 6N+attention for this model",
    )


def _local_notes(spec: TransformerSpec) -> tuple[str, ...]:
    """The model's local-attention layers, which the attention term counts at their span."""
    return tuple(
        f"{group.num_layers} of {spec.num_layers} layers attend {group.kind} ({group.span_tokens:,} tokens)"
        for group in layer_groups(spec)
        if group.kind != "full"
    )


def _seq_notes(spec: TransformerSpec, seq_len: int) -> tuple[str, ...]:
    """The context rule every command shares (:func:`~lightspeed.workload.context.context_note`)."""
    note = context_note(spec, seq_len)
    return (note,) if note else ()


@dataclass(frozen=True)
class FlopClaimCheck(Record):
    """A claimed training-FLOP total set against the computed one.

    ``implied_flop_per_param_token`` is ``claimed / (N·D)``: 6 under 6ND.
    ``implied_params`` and ``implied_tokens`` are the N (at the given D) or the
    D (at the given N) that 6ND would need to reach the claim.
    """

    claimed_flop: float
    computed_flop: float
    ratio: float
    agrees: bool
    tolerance: float
    implied_flop_per_param_token: float
    implied_params: float
    implied_tokens: float
    explanation: tuple[str, ...]


@dataclass(frozen=True)
class TrainingFlop(Record):
    """Total training FLOPs of ``num_tokens`` tokens, with the formula and its numbers.

    ``dense_equivalent_flop`` (MoE models only) is what the same convention
    gives when every parameter is active, as in a dense model of the same size:
    FLOPs follow active, not total, parameters.
    """

    model: str
    num_tokens: float
    total_params: int
    active_params: int
    per_token: FlopsPerToken
    total_flop: float
    formula: str
    substituted: str
    dense_equivalent_flop: float | None
    claim: FlopClaimCheck | None


def training_flop(
    spec: TransformerSpec,
    *,
    num_tokens: float,
    seq_len: int | None = None,
    convention: str = "6N",
    causal: bool = False,
    recompute: bool = False,
    claimed_flop: float | None = None,
    tolerance: float = 0.1,
) -> TrainingFlop:
    """Training FLOPs for ``num_tokens`` tokens (``seq_len`` defaults to the
    length the model was pre-trained at, ``spec.pretraining_seq_len``).

    ``claimed_flop`` (optional) is a published total to check against this one;
    it agrees when within ``tolerance`` (a fraction).

    >>> from lightspeed.workload import load_models
    >>> result = training_flop(load_models().get("dense-100t"), num_tokens=29e12)
    >>> f"{result.total_flop:.3g}"
    '1.74e+28'
    """
    # the bounds of the flops command's --tokens, --seq and --claim (docs/limits.md)
    check_number("num_tokens", num_tokens, above=0.0, maximum=MAX_TOKENS)
    if seq_len is not None:
        check_whole("seq_len", seq_len, maximum=MAX_SEQ_LEN)
    if claimed_flop is not None:
        check_number("claimed_flop", claimed_flop, above=0.0, maximum=MAX_FLOP)
    check_number("tolerance", tolerance, minimum=0.0)
    per_token = flops_per_token(
        spec,
        seq_len=seq_len if seq_len is not None else spec.pretraining_seq_len,
        convention=convention,
        causal=causal,
        recompute=recompute,
    )
    counts = parameter_counts(spec)
    total = per_token.training_flop * num_tokens
    formula, substituted = _total_text(per_token, num_tokens, total)
    dense = None
    if spec.is_moe:
        per_param = 8.0 if recompute else 6.0
        dense = total + per_param * (counts.total_params - counts.active_params) * num_tokens
    claim = (
        None if claimed_flop is None else _check_claim(per_token, num_tokens, total, claimed_flop, tolerance)
    )
    return TrainingFlop(
        model=spec.name,
        num_tokens=num_tokens,
        total_params=counts.total_params,
        active_params=counts.active_params,
        per_token=per_token,
        total_flop=total,
        formula=formula,
        substituted=substituted,
        dense_equivalent_flop=dense,
        claim=claim,
    )


def _total_text(per_token: FlopsPerToken, num_tokens: float, total: float) -> tuple[str, str]:
    if per_token.convention.startswith("6N") and per_token.formula == "6·N":
        return (
            "C = 6·N·D",
            f"6 × {_number(per_token.num_params)} × {_number(num_tokens)} = {_number(total)} FLOP",
        )
    return (
        f"C = D·({per_token.formula})",
        f"{_number(num_tokens)} × {_number(per_token.training_flop)} = {_number(total)} FLOP",
    )


def _check_claim(
    per_token: FlopsPerToken, num_tokens: float, computed: float, claimed: float, tolerance: float
) -> FlopClaimCheck:
    if claimed <= 0:
        raise UserInputError(f"a claimed FLOP total must be above 0 (got {claimed:g})")
    ratio = claimed / computed
    num_params = per_token.num_params
    factor = claimed / (num_params * num_tokens)
    implied_params = claimed / (6.0 * num_tokens)
    implied_tokens = claimed / (6.0 * num_params)
    agrees = abs(ratio - 1.0) <= tolerance
    verdict = "agrees with" if agrees else "does not follow from"
    explanation = (
        f"claimed {_number(claimed)} FLOP is {ratio:.3g}x the computed {_number(computed)} FLOP "
        f"({per_token.convention}): it {verdict} the formula",
        f"it implies {factor:.3g} FLOP per parameter per token, where 6ND uses 6",
        f"under 6ND it would take N = {_number(implied_params)} parameters "
        f"at D = {_number(num_tokens)} tokens",
        f"or D = {_number(implied_tokens)} tokens at N = {_number(num_params)} parameters",
    )
    return FlopClaimCheck(
        claimed_flop=claimed,
        computed_flop=computed,
        ratio=ratio,
        agrees=agrees,
        tolerance=tolerance,
        implied_flop_per_param_token=factor,
        implied_params=implied_params,
        implied_tokens=implied_tokens,
        explanation=explanation,
    )

"""Transformer architecture specs: the shapes every count and estimate starts from.

A :class:`TransformerSpec` describes a decoder-only transformer: dense or MoE
(routed + shared experts, top-k, dense first layers, a latent expert width),
attention as MHA, GQA, MQA or MLA, SwiGLU or GELU MLP, tied or untied
embeddings; or a hybrid whose blocks follow a Megatron ``block_pattern`` of
recurrent mixers (Mamba-2, :class:`MambaSpec`, in Nemotron-H and Nemotron 3; Gated DeltaNet,
:class:`GatedDeltaNetSpec`, in Qwen3-Next and Qwen3.5), attention, MLP and MoE blocks. Counts (parameters,
FLOPs, bytes) live in :mod:`lightspeed.workload.counts`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Final

from lightspeed.errors import UserInputError
from lightspeed.limits import MAX_HEADS_OR_HEAD_DIM, MAX_MTP_MODULES
from lightspeed.records import Record
from lightspeed.workload.recurrent import GatedDeltaNetSpec, MambaSpec, RecurrentMixer, check_state_dtype

ATTENTION_KINDS = ("mha", "gqa", "mqa", "mla")
LAYER_ATTENTION_KINDS = ("full", "sliding", "chunked", "sparse")
MLP_KINDS = ("swiglu", "geglu", "gelu", "relu", "relu2")
GATED_MLP_KINDS = ("swiglu", "geglu")
POSITION_EMBEDDINGS = ("rope", "learned", "none")
NORM_KINDS = ("rmsnorm", "layernorm")
# Weight formats a model's publisher releases its checkpoint in (the serving engine's names; a
# test keeps them within lightspeed.sol.infer.plan.INFERENCE_PRECISIONS).
RELEASE_FORMATS = ("bf16", "fp16", "fp32", "fp8", "mxfp4", "nvfp4", "int8", "int4")
# A hybrid model's block kinds, as Megatron-Core's hybrid_layer_pattern writes them
# (megatron/core/models/hybrid/hybrid_layer_allocation.py Symbols): each block is one of these.
BLOCK_SYMBOLS: Final = {"M": "mamba", "G": "gated_delta_net", "*": "attention", "-": "mlp", "E": "moe"}
# the letters of the recurrent mixers (a fixed-size state per sequence instead of a KV cache)
RECURRENT_SYMBOLS: Final = ("M", "G")


def grouped_attention_kind(num_heads: int, num_kv_heads: int) -> str:
    """The kind of attention ``num_kv_heads`` shared by ``num_heads`` query heads is: ``mha`` (one
    KV head per head), ``mqa`` (one for all, more than one head) or ``gqa`` (in between).

    >>> grouped_attention_kind(32, 32), grouped_attention_kind(8, 1), grouped_attention_kind(32, 8)
    ('mha', 'mqa', 'gqa')
    >>> grouped_attention_kind(1, 1)  # one head: its own KV head
    'mha'
    """
    if num_kv_heads == num_heads:
        return "mha"
    return "mqa" if num_kv_heads == 1 else "gqa"


@dataclass(frozen=True)
class AttentionSpec(Record):
    """Self-attention shapes.

    For MHA/GQA/MQA, Q has ``num_heads * head_dim`` outputs and K and V each
    ``num_kv_heads * head_dim``. For MLA (DeepSeek-V2/V3) queries go through a
    ``q_lora_rank`` bottleneck (``None`` = no bottleneck), keys and values
    through a shared ``kv_lora_rank`` latent plus a decoupled RoPE key of
    ``qk_rope_head_dim``; per-head dims are ``qk_nope_head_dim`` +
    ``qk_rope_head_dim`` for Q/K and ``v_head_dim`` for V (``head_dim`` is then
    the Q/K head size, ``qk_nope_head_dim + qk_rope_head_dim``).
    ``qkv_bias`` adds biases to the Q, K and V projections (Qwen2, GPT-3),
    ``out_bias`` to the output projection (GPT-3, MPT).

    Local attention (:mod:`lightspeed.workload.attention`): ``sliding_window``
    limits each token to the last ``sliding_window`` tokens (Mistral 7B v0.1);
    ``attention_chunk_size`` to the tokens of its own chunk (Llama 4). With
    ``full_attention_interval`` N, layer ``i`` (0-based) attends to the whole
    sequence when ``(i + 1) % N == 0`` and locally otherwise (Gemma 2 and gpt-oss:
    2, Gemma 3: 6, Llama 4: 4); without it every layer is local. ``layer_types``
    names each layer's kind (``full``, ``sliding``, ``chunked``) where the
    pattern is not periodic.

    DeepSeek Sparse Attention (DSA: DeepSeek-V3.2, GLM-5) is MLA with a lightning
    indexer on every layer: ``index_n_heads`` heads of ``index_head_dim`` (projected
    from the query latent, so it needs ``q_lora_rank``, and one key of
    ``index_head_dim`` per token) score every earlier token, and each query attends
    to the ``index_topk`` best. Every layer is then ``sparse``: it caches every
    token (plus the indexer's key) but attends to at most ``index_topk``.

    ``output_gate`` (Qwen3-Next's and Qwen3.5's gated attention) makes the query projection
    twice as wide: half queries, half a sigmoid gate on the attention output of each channel.

    ``qk_norm`` normalizes each query and key head with an RMSNorm of ``head_dim`` weights
    shared by the heads (transformers' ``q_norm`` and ``k_norm`` in Qwen3, Qwen3-MoE, Qwen3-Next,
    Qwen3.5, Gemma 3 and GLM-4.5's ``use_qk_norm``): ``2 * head_dim`` weights per attention layer,
    :attr:`qk_norm_params`. Llama 4's QK norm has no weights and is not one.
    """

    kind: str
    num_heads: int
    num_kv_heads: int
    head_dim: int
    qkv_bias: bool = False
    out_bias: bool = False
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    sliding_window: int | None = None
    full_attention_interval: int | None = None
    attention_chunk_size: int | None = None
    layer_types: tuple[str, ...] = ()
    index_topk: int | None = None
    index_n_heads: int | None = None
    index_head_dim: int | None = None
    output_gate: bool = False
    qk_norm: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ATTENTION_KINDS:
            raise UserInputError(f"attention kind {self.kind!r} is not one of {', '.join(ATTENTION_KINDS)}")
        if self.num_heads < 1 or self.num_kv_heads < 1 or self.head_dim < 1:
            raise UserInputError("attention needs num_heads, num_kv_heads and head_dim >= 1")
        if max(self.num_heads, self.num_kv_heads, self.head_dim) > MAX_HEADS_OR_HEAD_DIM:
            raise UserInputError(
                f"attention with {self.num_heads:,} heads, {self.num_kv_heads:,} KV heads and head_dim "
                f"{self.head_dim:,}: each is at most {MAX_HEADS_OR_HEAD_DIM:,} (models use up to 128 heads "
                "and head_dim 256)"
            )
        if self.kind != "mla" and self.num_heads % self.num_kv_heads:
            raise UserInputError(
                f"num_heads ({self.num_heads}) must be a multiple of num_kv_heads ({self.num_kv_heads})"
            )
        self._check_kv_heads_match_kind()
        if self.kind == "mla" and None in (
            self.kv_lora_rank,
            self.qk_nope_head_dim,
            self.qk_rope_head_dim,
            self.v_head_dim,
        ):
            raise UserInputError(
                "MLA attention needs kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim"
            )
        if self.kind == "mla" and self.head_dim != self.qk_head_dim:
            raise UserInputError(
                f"MLA head_dim ({self.head_dim}) must equal qk_nope_head_dim + qk_rope_head_dim "
                f"({self.qk_head_dim})"
            )
        if self.output_gate and self.kind == "mla":
            raise UserInputError(
                "output_gate (a sigmoid gate per query channel, Qwen3-Next's gated attention) is "
                "modelled for MHA, GQA and MQA, not MLA"
            )
        if self.qk_norm and self.kind == "mla":
            raise UserInputError(
                "qk_norm (an RMSNorm of head_dim weights on each query and key head) is modelled for "
                "MHA, GQA and MQA; MLA's latent norms are counted with it already: drop qk_norm"
            )
        self._check_local_attention()
        self._check_sparse_attention()

    def _check_kv_heads_match_kind(self) -> None:
        """MHA has as many KV heads as heads, MQA one, GQA a divisor strictly in between: a kind
        whose KV heads are another kind's is refused, naming the kind they are (a KV cache per
        token follows the KV heads, so a mislabelled kind would mislead, not miscount)."""
        implied = grouped_attention_kind(self.num_heads, self.num_kv_heads)
        if self.kind in ("mla", implied) or (self.kind == "mqa" and self.num_kv_heads == 1):
            return  # (one head with one KV head is MHA and MQA alike)
        expected = {"mha": self.num_heads, "mqa": 1}.get(self.kind)
        also = f" or num_kv_heads = {expected}" if expected is not None else ""
        raise UserInputError(
            f"{self.kind} attention with {self.num_heads} heads and {self.num_kv_heads} KV heads is "
            f"{implied.upper()}: MHA has as many KV heads as heads, MQA one, GQA a divisor strictly in "
            f'between; set kind = "{implied}"{also}'
        )

    def _check_sparse_attention(self) -> None:
        given = {
            "index_topk": self.index_topk,
            "index_n_heads": self.index_n_heads,
            "index_head_dim": self.index_head_dim,
        }
        if all(value is None for value in given.values()):
            return
        missing = [label for label, value in given.items() if value is None]
        if missing:
            raise UserInputError(
                f"sparse attention (a lightning indexer) needs index_topk, index_n_heads and "
                f"index_head_dim; {', '.join(missing)} missing"
            )
        for label, value in given.items():
            if not 1 <= int(value or 0) <= MAX_HEADS_OR_HEAD_DIM * 64:
                raise UserInputError(f"{label} must be 1 to {MAX_HEADS_OR_HEAD_DIM * 64:,} (got {value})")
        if self.kind != "mla" or not self.q_lora_rank:
            raise UserInputError(
                "sparse attention's indexer projects its queries from MLA's query latent: it needs "
                "kind 'mla' with a q_lora_rank (DeepSeek-V3.2, GLM-5)"
            )
        windowed = (self.sliding_window, self.attention_chunk_size, self.full_attention_interval)
        if any(value is not None for value in windowed) or self.layer_types:
            raise UserInputError(
                "sparse attention (index_topk) is on every layer; drop sliding_window, "
                "attention_chunk_size, full_attention_interval and layer_types"
            )

    def _check_local_attention(self) -> None:
        for label, value in (
            ("sliding_window", self.sliding_window),
            ("attention_chunk_size", self.attention_chunk_size),
            ("full_attention_interval", self.full_attention_interval),
        ):
            if value is not None and value < 1:
                raise UserInputError(f"{label} must be >= 1 or absent (got {value})")
        if self.sliding_window is not None and self.attention_chunk_size is not None:
            raise UserInputError(
                "attention has both sliding_window and attention_chunk_size; a model's local layers use "
                "one of them (Mistral/Gemma/gpt-oss: sliding_window, Llama 4: attention_chunk_size)"
            )
        local = self.sliding_window or self.attention_chunk_size
        if self.full_attention_interval is not None and local is None:
            raise UserInputError(
                "full_attention_interval says which layers attend globally, but no sliding_window or "
                "attention_chunk_size says how the others attend; add one or drop the interval"
            )
        unknown = sorted(set(self.layer_types) - set(LAYER_ATTENTION_KINDS))
        if unknown:
            raise UserInputError(
                f"layer_types {', '.join(unknown)} not one of {', '.join(LAYER_ATTENTION_KINDS)}"
            )
        if self.layer_types and self.full_attention_interval is not None:
            raise UserInputError("give layer_types or full_attention_interval, not both")
        for kind, span, key in (
            ("sliding", self.sliding_window, "sliding_window"),
            ("chunked", self.attention_chunk_size, "attention_chunk_size"),
            ("sparse", self.index_topk, "index_topk"),
        ):
            if kind in self.layer_types and span is None:
                raise UserInputError(f"layer_types has {kind} layers but no {key}")

    @property
    def local_span(self) -> int | None:
        """Tokens a local layer reaches: the sliding window, the chunk size or a sparse layer's
        ``index_topk`` (``None``: none)."""
        return self.sliding_window or self.attention_chunk_size or self.index_topk

    @property
    def local_kind(self) -> str:
        """How the layers that do not attend to everything attend: ``sliding``, ``chunked`` or
        ``sparse`` (``full`` when there are none)."""
        if self.attention_chunk_size is not None:
            return "chunked"
        if self.sliding_window is not None:
            return "sliding"
        return "sparse" if self.index_topk is not None else "full"

    @property
    def index_key_bytes(self) -> int:
        """Bytes of the indexer's key cache per token per layer (0 without an indexer): FP8
        values with one FP32 scale per 128 (DeepSeek-V3.2-Exp ``inference/model.py``: ``k_cache``
        float8_e4m3fn of ``index_head_dim``, ``k_scale_cache`` float32 of ``index_head_dim //
        128``; vLLM's and SGLang's indexer caches keep the same 132 bytes for 128)."""
        if self.index_head_dim is None:
            return 0
        return self.index_head_dim + 4 * -(-self.index_head_dim // 128)

    @property
    def qk_norm_params(self) -> int:
        """Weights of the query and key norms of one attention layer: ``head_dim`` each with
        :attr:`qk_norm`, else 0.

        >>> AttentionSpec("gqa", 16, 8, 128, qk_norm=True).qk_norm_params  # Qwen3-0.6B
        256
        """
        return 2 * self.head_dim if self.qk_norm else 0

    @property
    def qk_head_dim(self) -> int:
        """Size of one query/key head (MLA: the no-RoPE part plus the RoPE part)."""
        if self.kind == "mla":
            assert self.qk_nope_head_dim is not None
            assert self.qk_rope_head_dim is not None
            return self.qk_nope_head_dim + self.qk_rope_head_dim
        return self.head_dim

    @property
    def value_head_dim(self) -> int:
        """Size of one value head."""
        if self.kind == "mla":
            assert self.v_head_dim is not None
            return self.v_head_dim
        return self.head_dim


@dataclass(frozen=True)
class MoESpec(Record):
    """Mixture-of-experts feed-forward layers.

    Layers ``0 .. num_dense_layers - 1`` use the dense MLP of
    ``TransformerSpec.ffn_hidden_size``; of the later layers every
    ``layer_frequency``-th one, the last of each run of ``layer_frequency`` (layers
    ``num_dense_layers + k·layer_frequency - 1``: Llama 4 Maverick's 1, 3, 5, ..., 47, as
    transformers' ``moe_layers = range(step - 1, L, step)``), routes each token to ``top_k`` of
    ``num_routed_experts`` experts of ``expert_ffn_hidden_size`` and always
    through ``num_shared_experts`` shared experts of
    ``shared_expert_ffn_hidden_size``. With group-limited routing (DeepSeek-V3:
    ``n_group = 8``, ``topk_group = 4``) experts form ``num_expert_groups`` equal groups
    and a token may only reach experts in ``top_k_groups`` of them; when each
    group lives on one node, a token crosses the network to at most that many nodes.
    With ``latent_size`` (Nemotron 3 Super's LatentMoE) a token is projected from the
    hidden size down to ``latent_size`` before it is dispatched, the routed experts run
    ``latent_size -> expert_ffn_hidden_size -> latent_size``, and their sum is projected
    back up; the router and the shared experts see the hidden size. ``shared_expert_gate``
    (Qwen2-MoE, Qwen3-Next, Qwen3.5) scales the shared experts' output by a sigmoid of one
    ``hidden -> 1`` projection.
    """

    num_routed_experts: int
    top_k: int
    expert_ffn_hidden_size: int
    num_shared_experts: int = 0
    shared_expert_ffn_hidden_size: int = 0
    num_dense_layers: int = 0
    layer_frequency: int = 1
    router_bias: bool = False
    num_expert_groups: int | None = None
    top_k_groups: int | None = None
    latent_size: int | None = None
    shared_expert_gate: bool = False

    def __post_init__(self) -> None:
        if self.latent_size is not None and not 1 <= self.latent_size <= MAX_DIMENSION["hidden_size"]:
            raise UserInputError(
                f"MoE latent_size must be 1 to {MAX_DIMENSION['hidden_size']:,} (got {self.latent_size})"
            )
        if self.expert_ffn_hidden_size < 1 or self.layer_frequency < 1 or self.num_shared_experts < 0:
            raise UserInputError(
                "MoE needs expert_ffn_hidden_size >= 1, layer_frequency >= 1 and num_shared_experts >= 0"
            )
        if not 1 <= self.top_k <= self.num_routed_experts:
            raise UserInputError(
                f"MoE top_k ({self.top_k}) must be between 1 and "
                f"num_routed_experts ({self.num_routed_experts})"
            )
        if self.num_shared_experts and self.shared_expert_ffn_hidden_size < 1:
            raise UserInputError("shared experts need shared_expert_ffn_hidden_size >= 1")
        self._check_groups()

    def _check_groups(self) -> None:
        """Group-limited routing: the groups split the experts evenly (DeepSeek-V3's 256 into 8 of
        32, as its router's ``view(n_group, -1)`` needs) and a token reaches at most all of them."""
        groups, reached = self.num_expert_groups, self.top_k_groups
        if reached is not None and groups is None:
            raise UserInputError(
                f"MoE top_k_groups ({reached}) says how many expert groups a token reaches, but no "
                "num_expert_groups says how many there are; add num_expert_groups or drop top_k_groups"
            )
        if groups is None:
            return
        if groups < 1 or self.num_routed_experts % groups:
            raise UserInputError(
                f"MoE num_expert_groups ({groups}) must divide num_routed_experts "
                f"({self.num_routed_experts}) into equal groups (DeepSeek-V3: 256 experts in 8 groups)"
            )
        if reached is not None and not 1 <= reached <= groups:
            raise UserInputError(
                f"MoE top_k_groups ({reached}) must be between 1 and num_expert_groups ({groups})"
            )


# Bounds on a model's dimensions: 64x the largest published (GPT-4-class and Llama 3.1 405B have
# 126 layers and a hidden size of 16,384; vocabularies reach 262,144; contexts 10M tokens).
MAX_DIMENSION: Final[dict[str, int]] = {
    "num_layers": 2**14,
    "hidden_size": 2**20,
    "ffn_hidden_size": 2**22,
    "vocab_size": 2**24,
    "max_seq_len": 2**30,
}
DIMENSION_REASON: Final = "64x the largest published"
# norms in one layer: 1 (Falcon-7B, GPT-J) to 4 (Gemma 2 and 3, Grok-1); twice the most published
MAX_NORMS_PER_LAYER: Final = 8


@dataclass(frozen=True)
class TransformerSpec(Record):
    """A decoder-only transformer.

    ``ffn_hidden_size`` is the dense MLP's inner size (for gated MLPs, SwiGLU and
    GeGLU, the size of each of the gate and up projections; ``gelu``, ``relu`` (OPT) and
    ``relu2``, Nemotron's squared ReLU, have one up projection). ``mlp_bias``/``qkv_bias`` add biases;
    ``tied_embeddings`` shares the input embedding with the LM head.
    ``num_mtp_modules`` counts DeepSeek-style multi-token-prediction modules,
    which are *not* part of the main model's parameter totals.
    ``max_seq_len`` is the context the model accepts (config.json's ``max_position_embeddings``);
    ``original_max_seq_len`` the one it was pre-trained at before RoPE scaling extended it
    (Llama 3.1: 8,192 of 131,072), ``None`` where nothing extended it: :attr:`pretraining_seq_len`.
    ``release_format`` is the weight format the publisher's checkpoint ships its linear layers in
    (``fp8`` for DeepSeek-V3, ``mxfp4`` for gpt-oss' experts; ``bf16`` for most models), what a
    serving prediction assumes when the user names no precision; ``release_source`` says where
    that comes from. ``release_attention_format`` is the format that checkpoint keeps its attention
    projections in where it is not ``release_format`` (gpt-oss' config.json leaves them bf16 beside
    MXFP4 experts); ``None``: the same (catalog models name theirs in ``sol/data/checkpoints.toml``).

    A hybrid (``block_pattern`` not empty) has ``num_layers`` blocks, block ``i`` of the
    kind ``block_pattern[i]`` names (:data:`BLOCK_SYMBOLS`, Megatron-Core's letters): ``M`` a
    Mamba-2 mixer (``mamba``), ``G`` a Gated DeltaNet mixer (``gated_delta_net``), ``*``
    self-attention, ``-`` the dense MLP, ``E`` the MoE layer. Each block has its own norm and
    residual (a transformer layer of mixer and FFN is two blocks: Qwen3-Next's 48 layers are 96).
    Its attention layers attend to the whole context. One model has one recurrent mixer kind.

    ``norms_per_layer`` is how many norms of ``hidden_size`` each layer holds where that is not
    the usual count (``None``: two, one before attention and one before the MLP; one per block of a
    hybrid): Gemma 2, Gemma 3 and Grok-1 have 4 (before and after attention and the FFN), Falcon-7B
    and GPT-J 1 (attention and MLP side by side from one LayerNorm). :attr:`num_norms_per_layer`
    resolves it; :attr:`layer_norm_params` counts their weights.
    """

    name: str
    display_name: str
    num_layers: int
    hidden_size: int
    ffn_hidden_size: int
    vocab_size: int
    attention: AttentionSpec
    mlp: str = "swiglu"
    moe: MoESpec | None = None
    tied_embeddings: bool = False
    position_embedding: str = "rope"
    max_seq_len: int = 4096
    norm: str = "rmsnorm"
    mlp_bias: bool = False
    num_mtp_modules: int = 0
    aliases: tuple[str, ...] = ()
    source: str = ""
    note: str = ""
    release_format: str = "bf16"
    release_source: str = ""
    mamba: MambaSpec | None = None
    block_pattern: str = ""
    gated_delta_net: GatedDeltaNetSpec | None = None
    original_max_seq_len: int | None = None
    release_attention_format: str | None = None
    norms_per_layer: int | None = None

    def __post_init__(self) -> None:
        if self.norms_per_layer is not None and not 1 <= self.norms_per_layer <= MAX_NORMS_PER_LAYER:
            raise UserInputError(
                f"norms_per_layer must be 1 to {MAX_NORMS_PER_LAYER} (got {self.norms_per_layer}): Falcon-7B "
                "has 1, most models 2, Gemma 2 and 3 4; leave it out for 2 (1 per block of a hybrid)"
            )
        if self.original_max_seq_len is not None and not 1 <= self.original_max_seq_len <= self.max_seq_len:
            raise UserInputError(
                f"original_max_seq_len {self.original_max_seq_len:,} must be in [1, max_seq_len "
                f"{self.max_seq_len:,}] (the context before RoPE scaling extended it)"
            )
        for label, value in (
            ("num_layers", self.num_layers),
            ("hidden_size", self.hidden_size),
            ("ffn_hidden_size", self.ffn_hidden_size),
            ("vocab_size", self.vocab_size),
            ("max_seq_len", self.max_seq_len),
        ):
            if value < 1:
                raise UserInputError(f"{label} must be >= 1 (got {value})")
            if value > MAX_DIMENSION[label]:
                raise UserInputError(
                    f"{label} = {value:,} is above {MAX_DIMENSION[label]:,}, far past any model built "
                    f"({DIMENSION_REASON}); check the number"
                )
        if self.mlp not in MLP_KINDS:
            raise UserInputError(f"mlp {self.mlp!r} is not one of {', '.join(MLP_KINDS)}")
        if self.position_embedding not in POSITION_EMBEDDINGS:
            raise UserInputError(
                f"position_embedding {self.position_embedding!r} is not one of "
                f"{', '.join(POSITION_EMBEDDINGS)}"
            )
        if self.norm not in NORM_KINDS:
            raise UserInputError(f"norm {self.norm!r} is not one of {', '.join(NORM_KINDS)}")
        for label, release in (
            ("release format", self.release_format),
            ("release attention format", self.release_attention_format or self.release_format),
        ):
            if release not in RELEASE_FORMATS:
                raise UserInputError(f"{label} {release!r} is not one of {', '.join(RELEASE_FORMATS)}")
        if self.moe is not None and self.moe.num_dense_layers > self.num_layers:
            raise UserInputError("MoE num_dense_layers cannot exceed num_layers")
        if not 0 <= self.num_mtp_modules <= MAX_MTP_MODULES:
            raise UserInputError(
                f"num_mtp_modules = {self.num_mtp_modules:,} must be 0 to {MAX_MTP_MODULES} (DeepSeek-V3 "
                "has 1 multi-token-prediction module, MiniMax-M2 3)"
            )
        self._check_moe_against_layers()
        if self.attention.layer_types and len(self.attention.layer_types) != self.num_layers:
            raise UserInputError(
                f"attention layer_types names {len(self.attention.layer_types)} layers, "
                f"the model has {self.num_layers}"
            )
        self._check_blocks()
        self._full_where_window_spans_context()

    def _check_moe_against_layers(self) -> None:
        """An MoE model has at least one MoE layer (a ``layer_frequency`` or ``num_dense_layers``
        that leaves none describes a dense model with an [moe] table no layer uses), and a
        LatentMoE's latent is narrower than the hidden size it is projected down from (Nemotron 3
        Super: 1,024 of 4,096)."""
        moe = self.moe
        if moe is None:
            return
        if moe.latent_size is not None and moe.latent_size >= self.hidden_size:
            raise UserInputError(
                f"MoE latent_size {moe.latent_size:,} must be below hidden_size {self.hidden_size:,}: "
                "LatentMoE projects each token down to it before dispatch (Nemotron 3 Super: 1,024 of 4,096)"
            )
        if self.block_pattern:  # its E blocks are checked with the pattern
            return
        after_dense = self.num_layers - moe.num_dense_layers
        if after_dense // moe.layer_frequency == 0:  # layers d + k*f - 1 for k >= 1 (is_moe_layer)
            raise UserInputError(
                f"MoE num_dense_layers {moe.num_dense_layers:,} and layer_frequency "
                f"{moe.layer_frequency:,} leave no MoE layer among the {self.num_layers:,} layers; lower "
                "them (every layer after the dense ones is MoE at layer_frequency 1), or drop the MoE "
                "table for a dense model"
            )

    def _full_where_window_spans_context(self) -> None:
        """Local layers whose window or chunk is not below ``max_seq_len`` attend to every token of
        any sequence the model takes: they are recorded as full attention, with a note saying so.

        Published configs state such windows (Ministral 8B: ``sliding_window`` 32768 of 32,768
        positions), so they are read, not refused; the KV cache and attention FLOPs are those of
        full layers either way, but a window of 100,000 tokens on an 8K model is not shown as if
        it bounded anything."""
        attention = self.attention
        span = attention.sliding_window or attention.attention_chunk_size
        if span is None or span < self.max_seq_len:
            return
        local = attention.local_kind
        key = "sliding_window" if local == "sliding" else "attention_chunk_size"
        kinds = tuple("full" if kind == local else kind for kind in attention.layer_types)
        full = replace(
            attention,
            sliding_window=None,
            attention_chunk_size=None,
            full_attention_interval=None,
            layer_types=kinds if set(kinds) - {"full"} else (),
        )
        note = (
            f"{key} {span:,} is not below max_seq_len {self.max_seq_len:,}: no token is ever outside it, "
            "so every layer is full attention"
        )
        # a frozen dataclass normalized in place, as sol.config does (the record stays one value)
        object.__setattr__(self, "attention", full)
        object.__setattr__(self, "note", f"{self.note} {note}".strip())

    def _check_blocks(self) -> None:
        pattern = self.block_pattern
        if not pattern:
            if self.recurrent is not None:
                raise UserInputError(
                    "a model with a [mamba] or [gated_delta_net] mixer needs a block_pattern saying "
                    "which blocks are Mamba-2 (M), Gated DeltaNet (G), attention (*), MLP (-) and MoE "
                    "(E), e.g. Nemotron-H's 'M-M-M-M*-...'"
                )
            return
        unknown = sorted(set(pattern) - set(BLOCK_SYMBOLS))
        if unknown:
            raise UserInputError(
                f"block_pattern has {', '.join(map(repr, unknown))}; its letters are M (Mamba-2), "
                "G (Gated DeltaNet), * (attention), - (MLP) and E (MoE)"
            )
        if len(pattern) != self.num_layers:
            raise UserInputError(
                f"block_pattern names {len(pattern)} blocks, the model has num_layers = {self.num_layers}"
            )
        for letter, table, given in (
            ("M", "mamba", self.mamba),
            ("G", "gated_delta_net", self.gated_delta_net),
            ("E", "moe", self.moe),
        ):
            if (letter in pattern) != (given is not None):
                raise UserInputError(
                    f"block_pattern's {letter} blocks need a [{table}] table, and a [{table}] table "
                    f"needs {letter} blocks"
                )
        if self.mamba is not None and self.gated_delta_net is not None:
            raise UserInputError(
                "block_pattern mixes Mamba-2 (M) and Gated DeltaNet (G) blocks; lightspeed models "
                "one recurrent mixer kind per model (as Megatron-Core's inference does)"
            )
        if self.moe is not None and (self.moe.num_dense_layers or self.moe.layer_frequency != 1):
            raise UserInputError(
                "with a block_pattern the pattern places the MoE blocks: drop num_dense_layers and "
                "layer_frequency"
            )
        attention = self.attention
        if attention.layer_types or attention.full_attention_interval is not None or attention.local_span:
            raise UserInputError(
                "a block_pattern's attention blocks attend to the whole context: drop layer_types, "
                "full_attention_interval, sliding_window, attention_chunk_size and index_topk"
            )

    @property
    def num_norms_per_layer(self) -> int:
        """Norms of ``hidden_size`` in one layer: :attr:`norms_per_layer` where the model states it,
        else 1 per block of a hybrid and 2 per transformer layer (before attention and the MLP)."""
        if self.norms_per_layer is not None:
            return self.norms_per_layer
        return 1 if self.is_hybrid else 2

    @property
    def norm_params(self) -> int:
        """Parameters of one norm of ``hidden_size``: RMSNorm has a weight, LayerNorm a weight and
        a bias."""
        return self.hidden_size if self.norm == "rmsnorm" else 2 * self.hidden_size

    @property
    def layer_norm_params(self) -> int:
        """Parameters of the norms of ``hidden_size`` in one layer (a QK norm or an MLA latent norm
        is counted with its attention).

        >>> from lightspeed.workload import load_models
        >>> load_models().get("gemma-2-2b").layer_norm_params  # 4 RMSNorms of 2,304
        9216
        """
        return self.num_norms_per_layer * self.norm_params

    @property
    def gated_mlp(self) -> bool:
        """Whether the MLP has a gate projection beside its up projection (SwiGLU, GeGLU)."""
        return self.mlp in GATED_MLP_KINDS

    @property
    def is_moe(self) -> bool:
        """Whether any layer routes tokens to experts."""
        return self.moe is not None

    @property
    def is_hybrid(self) -> bool:
        """Whether the blocks follow a :attr:`block_pattern` (one mixer or one FFN each)."""
        return bool(self.block_pattern)

    @property
    def num_attention_layers(self) -> int:
        """How many layers (blocks) attend: every layer, or a hybrid's ``*`` blocks."""
        return self.block_pattern.count("*") if self.block_pattern else self.num_layers

    @property
    def num_mamba_layers(self) -> int:
        """How many blocks are Mamba-2 mixers (0 without a block pattern)."""
        return self.block_pattern.count("M")

    @property
    def recurrent(self) -> RecurrentMixer | None:
        """The hybrid's recurrent mixer (Mamba-2 or Gated DeltaNet; ``None`` without one)."""
        return self.mamba if self.mamba is not None else self.gated_delta_net

    def with_state_dtype(self, dtype: str) -> TransformerSpec:
        """This model with its recurrent mixer's state held in ``dtype`` (:data:`STATE_DTYPES`), as a
        server's ``--mamba-ssm-cache-dtype`` (vLLM) or ``--mamba-ssm-dtype`` (SGLang) sets it; a
        model without recurrent blocks has no such state and is refused.

        >>> from lightspeed.workload import load_models
        >>> qwen = load_models().get("qwen3.5-35b-a3b")
        >>> qwen.recurrent.state_dtype, qwen.with_state_dtype("bfloat16").recurrent.state_dtype
        ('float32', 'bfloat16')
        """
        mixer = self.recurrent
        if mixer is None:
            raise UserInputError(
                f"{self.name} has no recurrent (Mamba-2 or Gated DeltaNet) blocks, so no recurrent "
                "state to store: leave the state precision out"
            )
        check_state_dtype(mixer.label, dtype)
        if isinstance(mixer, MambaSpec):
            return replace(self, mamba=replace(mixer, state_dtype=dtype))
        return replace(self, gated_delta_net=replace(mixer, state_dtype=dtype))

    @property
    def num_recurrent_layers(self) -> int:
        """How many blocks are recurrent mixers (:data:`RECURRENT_SYMBOLS`; 0 without)."""
        return sum(self.block_pattern.count(letter) for letter in RECURRENT_SYMBOLS)

    @property
    def num_mlp_layers(self) -> int:
        """How many layers (blocks) run the dense MLP: the dense layers, or a hybrid's ``-``
        blocks."""
        return self.block_pattern.count("-") if self.block_pattern else self.num_dense_layers

    @property
    def pretraining_seq_len(self) -> int:
        """The sequence length the model was pre-trained at: the default of FLOP figures and of
        training rows that state none (``original_max_seq_len``, else ``max_seq_len``)."""
        return self.original_max_seq_len or self.max_seq_len

    def is_moe_layer(self, layer_index: int) -> bool:
        """Whether layer ``layer_index`` (0-based) is an MoE layer (a hybrid's ``E`` block)."""
        if self.block_pattern:
            return self.block_pattern[layer_index] == "E"
        if self.moe is None or layer_index < self.moe.num_dense_layers:
            return False
        return (layer_index - self.moe.num_dense_layers + 1) % self.moe.layer_frequency == 0

    @property
    def moe_interleaved(self) -> bool:
        """Whether MoE and dense layers alternate after the dense ones (``layer_frequency`` > 1:
        Llama 4 Maverick) rather than every later layer being MoE."""
        return self.moe is not None and not self.block_pattern and self.moe.layer_frequency > 1

    @property
    def layers_of_two_blocks(self) -> bool:
        """Whether a hybrid's blocks pair up into transformer layers of one mixer and one FFN
        (Qwen3-Next's and Qwen3.5's Gated DeltaNet hybrids: their config.json's
        ``num_hidden_layers`` counts the pairs); a Nemotron-H block is a layer of its own."""
        pattern = self.block_pattern
        if self.gated_delta_net is None or len(pattern) % 2:
            return False
        return all(
            mixer in "MG*" and ffn in "E-" for mixer, ffn in zip(pattern[::2], pattern[1::2], strict=True)
        )

    @property
    def num_decoder_layers(self) -> int:
        """The layer count the model's config.json states (``num_hidden_layers``): :attr:`num_layers`,
        or half of it where the blocks pair into layers (:attr:`layers_of_two_blocks`: Qwen3-Next's
        48 layers of 96 blocks). Counts and the engines use :attr:`num_layers`."""
        return self.num_layers // 2 if self.layers_of_two_blocks else self.num_layers

    @cached_property
    def num_moe_layers(self) -> int:
        """How many layers are MoE layers (counted once per spec: the serving cost model asks on
        every evaluation)."""
        return sum(self.is_moe_layer(index) for index in range(self.num_layers))

    @property
    def num_dense_layers(self) -> int:
        """How many layers are not MoE layers (a hybrid's M, * and - blocks)."""
        return self.num_layers - self.num_moe_layers

    @property
    def block_shares(self) -> tuple[float, float, float]:
        """(attention, recurrent mixer, dense MLP) per layer of the engine's average layer: how many of
        each one layer holds when the model's are spread evenly over its layers, the MLP over
        its non-MoE layers. A plain transformer's layer holds one attention and, in a dense
        layer, one MLP: ``(1, 0, 1)``."""
        if not self.block_pattern:
            return 1.0, 0.0, 1.0
        dense = self.num_dense_layers
        return (
            self.num_attention_layers / self.num_layers,
            self.num_recurrent_layers / self.num_layers,
            self.num_mlp_layers / dense if dense else 0.0,
        )

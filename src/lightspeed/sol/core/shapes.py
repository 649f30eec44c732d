"""The linear layers of one transformer layer, as the roofline sees them.

Every weight matrix is a :class:`Linear` with its input and output features
and how tensor parallelism splits it: ``column`` (outputs split, Q/K/V, MLP
up), ``row`` (inputs split, attention out, MLP down), ``replicated`` (MLA
down-projections, router) or ``expert`` (routed experts, split by expert
parallelism instead). The engine turns them into GEMM shapes for any plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from lightspeed.records import Record
from lightspeed.workload import TransformerSpec


@dataclass(frozen=True)
class Linear(Record):
    """One weight matrix ``in_features x out_features`` (plus optional bias)."""

    name: str
    in_features: int
    out_features: int
    split: str
    bias: bool = False

    @property
    def num_params(self) -> int:
        """Weights (and bias) of the full, unsplit matrix."""
        return self.in_features * self.out_features + (self.out_features if self.bias else 0)


@dataclass(frozen=True)
class LayerShapes(Record):
    """Linear layers and sizes of one transformer layer of a model (a hybrid's blocks: its
    recurrent mixer's ``in_proj`` and ``out_proj`` in ``recurrent``; a LatentMoE's projections to
    and from the latent in ``latent``)."""

    attention: tuple[Linear, ...]
    mlp: tuple[Linear, ...]
    experts: tuple[Linear, ...]
    shared_experts: tuple[Linear, ...]
    router: tuple[Linear, ...]
    num_norm_params: int
    q_head_dim: int
    k_head_dim: int
    v_head_dim: int
    num_heads: int
    num_kv_heads: int
    kv_cache_elements_per_token: int
    recurrent: tuple[Linear, ...] = ()
    latent: tuple[Linear, ...] = ()

    def params(self, group: tuple[Linear, ...]) -> int:
        """Total parameters of a group of linears."""
        return sum(linear.num_params for linear in group)


def _mlp(
    prefix: str, hidden: int, ffn: int, *, gated: bool, bias: bool, split_in: str, split_out: str
) -> tuple[Linear, ...]:
    up_width = 2 * ffn if gated else ffn
    return (
        Linear(f"{prefix}up", hidden, up_width, split_in, bias),
        Linear(f"{prefix}down", ffn, hidden, split_out, bias),
    )


def _indexer(model: TransformerSpec) -> tuple[Linear, ...]:
    """A sparse-attention layer's lightning indexer (none without one): its query, key and
    head-weight projections, whole on every rank (DeepSeek's reference code keeps them whole
    beside its column-parallel MLA; TensorRT-LLM's DeepSeek-V3.2 blog: "TP not applied to
    indexer layers")."""
    spec = model.attention
    if spec.index_n_heads is None or spec.index_head_dim is None or not spec.q_lora_rank:
        return ()
    heads, dim, hidden = spec.index_n_heads, spec.index_head_dim, model.hidden_size
    return (
        Linear("index_q", spec.q_lora_rank, heads * dim, "replicated"),
        Linear("index_k", hidden, dim, "replicated"),
        Linear("index_weights", hidden, heads, "replicated"),
    )


def _attention(model: TransformerSpec) -> tuple[tuple[Linear, ...], int, int, int, int]:
    """(linears, q head dim, k head dim, v head dim, KV-cache elements per token)."""
    spec = model.attention
    hidden = model.hidden_size
    heads = spec.num_heads
    if spec.kind == "mla":
        assert spec.kv_lora_rank is not None
        assert spec.qk_rope_head_dim is not None
        assert spec.qk_nope_head_dim is not None
        assert spec.v_head_dim is not None
        qk_dim = spec.qk_nope_head_dim + spec.qk_rope_head_dim
        linears: list[Linear] = []
        if spec.q_lora_rank:
            linears.append(Linear("q_down", hidden, spec.q_lora_rank, "replicated"))
            linears.append(Linear("q_up", spec.q_lora_rank, heads * qk_dim, "column"))
        else:
            linears.append(Linear("q", hidden, heads * qk_dim, "column"))
        linears.append(Linear("kv_down", hidden, spec.kv_lora_rank + spec.qk_rope_head_dim, "replicated"))
        linears.append(
            Linear("kv_up", spec.kv_lora_rank, heads * (spec.qk_nope_head_dim + spec.v_head_dim), "column")
        )
        linears.append(Linear("out", heads * spec.v_head_dim, hidden, "row"))
        linears.extend(_indexer(model))
        cache = spec.kv_lora_rank + spec.qk_rope_head_dim
        return tuple(linears), qk_dim, qk_dim, spec.v_head_dim, cache
    gate = heads if spec.output_gate else 0  # the gated attention's second query half
    width = (heads + gate + 2 * spec.num_kv_heads) * spec.head_dim
    linears = [
        Linear("qkv", hidden, width, "column", spec.qkv_bias),
        Linear("out", heads * spec.head_dim, hidden, "row", model.mlp_bias),
    ]
    cache = 2 * spec.num_kv_heads * spec.head_dim
    return tuple(linears), spec.head_dim, spec.head_dim, spec.head_dim, cache


def layer_shapes(model: TransformerSpec) -> LayerShapes:
    """The linear layers of ``model``'s dense and MoE layers.

    >>> from lightspeed.workload import AttentionSpec, TransformerSpec
    >>> tiny = TransformerSpec(name="t", display_name="t", num_layers=2, hidden_size=64,
    ...     ffn_hidden_size=256, vocab_size=100, attention=AttentionSpec("mha", 4, 4, 16))
    >>> layer_shapes(tiny).params(layer_shapes(tiny).attention)
    16384
    """
    attention, q_dim, k_dim, v_dim, cache = _attention(model)
    hidden = model.hidden_size
    mlp = _mlp(
        "",
        hidden,
        model.ffn_hidden_size,
        gated=model.gated_mlp,
        bias=model.mlp_bias,
        split_in="column",
        split_out="row",
    )
    experts: tuple[Linear, ...] = ()
    shared: tuple[Linear, ...] = ()
    router: tuple[Linear, ...] = ()
    latent: tuple[Linear, ...] = ()
    if model.moe is not None:
        moe = model.moe
        if moe.latent_size:
            latent = (
                Linear("latent_down", hidden, moe.latent_size, "replicated"),
                Linear("latent_up", moe.latent_size, hidden, "replicated"),
            )
        experts = _mlp(
            "expert_",
            moe.latent_size or hidden,
            moe.expert_ffn_hidden_size,
            gated=model.gated_mlp,
            bias=model.mlp_bias,
            split_in="expert",
            split_out="expert",
        )
        if moe.num_shared_experts:
            width = moe.num_shared_experts * moe.shared_expert_ffn_hidden_size
            shared = _mlp(
                "shared_",
                hidden,
                width,
                gated=model.gated_mlp,
                bias=model.mlp_bias,
                split_in="column",
                split_out="row",
            )
        router = (Linear("router", hidden, moe.num_routed_experts, "replicated", moe.router_bias),)
        if moe.shared_expert_gate:
            router += (Linear("shared_expert_gate", hidden, 1, "replicated"),)
    # the layer's norms, and its attention's QK norms spread over the layers as its attention is
    # (a hybrid's attention blocks are a share of its blocks: Qwen3-Next's 12 of 96)
    qk_norms = model.num_attention_layers * model.attention.qk_norm_params // model.num_layers
    num_norm = model.layer_norm_params + qk_norms
    if model.attention.kind == "mla":
        num_norm += (model.attention.kv_lora_rank or 0) + (model.attention.q_lora_rank or 0)
        num_norm += 2 * (model.attention.index_head_dim or 0)  # the indexer key's LayerNorm
    return LayerShapes(
        attention=attention,
        mlp=mlp,
        experts=experts,
        shared_experts=shared,
        router=router,
        num_norm_params=num_norm,
        q_head_dim=q_dim,
        k_head_dim=k_dim,
        v_head_dim=v_dim,
        num_heads=model.attention.num_heads,
        num_kv_heads=model.attention.num_kv_heads,
        kv_cache_elements_per_token=cache,
        recurrent=_recurrent(model),
        latent=latent,
    )


def _recurrent(model: TransformerSpec) -> tuple[Linear, ...]:
    """A recurrent mixer's projections (none without one): ``in_proj`` split by its outputs over
    tensor parallelism (each rank holds whole heads: a Mamba-2 block's with their groups, a Gated
    DeltaNet's value heads with their query/key head), ``out_proj`` by its inputs, as
    Megatron-Core's ``MambaMixer`` and ``GatedDeltaNet`` split them."""
    mixer = model.recurrent
    if mixer is None:
        return ()
    return (
        Linear("in_proj", model.hidden_size, mixer.in_proj_width, "column"),
        Linear("out_proj", mixer.inner_size, model.hidden_size, "row"),
    )

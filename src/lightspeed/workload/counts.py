"""Parameter counts and the bytes they take: weights, optimizer state, KV cache.

Counts follow the shapes of the Hugging Face / Megatron implementations of
each architecture, weight matrix by weight matrix:

- attention (MHA/GQA/MQA): ``Q = h·H·d``, ``K = V = h·G·d``, ``O = H·d·h``
  (``H`` heads, ``G`` KV heads, ``d`` head size), plus biases where the model
  has them; MLA (DeepSeek-V2/V3): ``Q`` through the ``q_lora_rank`` bottleneck
  (with its RMSNorm), the shared KV latent plus the RoPE key, the KV up
  projection (with the latent's RMSNorm) and ``O = H·d_v·h``;
- MLP: SwiGLU ``3·h·f`` (gate, up, down), GELU ``2·h·f``;
- MoE layers: every routed expert, every shared expert and the router
  (``h·E``, plus the expert-bias vector of DeepSeek-V3's aux-loss-free router);
- MoE with a latent width (Nemotron 3 Super): experts of ``latent -> f -> latent`` plus
  the ``h -> latent`` and ``latent -> h`` projections around them (counted with the router);
- Mamba-2 blocks (hybrids): ``in_proj`` ``h·(2·d_inner + 2·G·N + H)``, the depthwise
  convolution ``(d_inner + 2·G·N)·(K + 1)`` (taps and bias), ``A``, ``D`` and the
  ``dt`` bias (``H`` each), the gated RMSNorm ``d_inner`` and ``out_proj``
  ``d_inner·h`` (Megatron-Core's ``MambaMixer``, no projection biases);
- norms: RMSNorm ``h`` weights, LayerNorm ``2h`` (weight and bias), two per
  layer (one per block of a hybrid; a model's ``norms_per_layer`` where it states
  another count: Gemma 2's 4, Falcon-7B's 1) plus the final one; QK norms
  (``qk_norm``: ``head_dim`` weights each for Q and K) with their attention;
- embeddings: the token table ``V·h`` (plus ``max_seq_len·h`` for learned
  positions), and an LM head of ``V·h`` unless tied to the token table.

*Active* parameters are those a token passes through: everything except the
routed experts it is not sent to (the whole embedding table and LM head count,
as in Mistral's "12.9B active" and DeepSeek's "37B activated").
Multi-token-prediction modules (DeepSeek-V3) are counted apart and excluded
from the totals, as DeepSeek reports the main model.

>>> from lightspeed.workload import load_models, parameter_counts
>>> counts = parameter_counts(load_models().get("llama-3-8b"))
>>> counts.total_params
8030261248
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Final

from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import UnknownNameError
from lightspeed.paths import package_data
from lightspeed.records import Record
from lightspeed.units import bytes_per_element
from lightspeed.workload.model_file import parse_references
from lightspeed.workload.spec import TransformerSpec


@dataclass(frozen=True)
class ParameterCounts(Record):
    """Parameters of a transformer by component (counts of weights, not bytes).

    ``*_per_layer`` figures are for one layer of that kind; the others sum over
    the whole model. ``non_embedding_params`` excludes the token/position
    tables and the LM head (Kaplan et al. 2020's N). ``mtp_params`` are the
    multi-token-prediction modules, *not* included in any other figure.
    """

    model: str
    total_params: int
    active_params: int
    non_embedding_params: int
    active_non_embedding_params: int
    embedding_params: int
    lm_head_params: int
    attention_params_per_layer: int
    attention_params: int
    dense_mlp_params_per_layer: int
    dense_mlp_params: int
    expert_params: int
    routed_expert_params: int
    active_routed_expert_params: int
    shared_expert_params: int
    router_params: int
    norm_params: int
    num_dense_layers: int
    num_moe_layers: int
    mtp_params: int
    recurrent_block_params: int = 0
    recurrent_params: int = 0


def mlp_params(spec: TransformerSpec, ffn_hidden_size: int, width: int | None = None) -> int:
    """Parameters of one MLP (dense layer or one expert) of inner size ``ffn_hidden_size`` on
    ``width`` features (the hidden size unless given: a latent expert's is its latent size).

    >>> from lightspeed.workload import load_models
    >>> mlp_params(load_models().get("llama-3-8b"), 14336)  # SwiGLU: 3·h·f
    176160768
    """
    hidden = spec.hidden_size if width is None else width
    if spec.gated_mlp:
        weights = 3 * hidden * ffn_hidden_size
        biases = 2 * ffn_hidden_size + hidden
    else:
        weights = 2 * hidden * ffn_hidden_size
        biases = ffn_hidden_size + hidden
    return weights + (biases if spec.mlp_bias else 0)


def attention_params(spec: TransformerSpec) -> int:
    """Parameters of one attention block (projections, biases, QK norms, MLA's latent norms).

    >>> from lightspeed.workload import load_models
    >>> attention_params(load_models().get("llama-3-8b"))  # 2·h² + 2·h·(8·128)
    41943040
    """
    attention = spec.attention
    hidden = spec.hidden_size
    if attention.kind == "mla":
        return _mla_params(spec)
    q_width = attention.num_heads * attention.head_dim
    kv_width = attention.num_kv_heads * attention.head_dim
    gate = q_width if attention.output_gate else 0  # the gated attention's second query half
    weights = hidden * (q_width + gate) + 2 * hidden * kv_width + q_width * hidden
    biases = (q_width + 2 * kv_width if attention.qkv_bias else 0) + (hidden if attention.out_bias else 0)
    return weights + biases + attention.qk_norm_params


def _mla_params(spec: TransformerSpec) -> int:
    attention = spec.attention
    hidden = spec.hidden_size
    assert attention.kv_lora_rank is not None
    assert attention.qk_rope_head_dim is not None
    heads = attention.num_heads
    q_width = heads * attention.qk_head_dim
    if attention.q_lora_rank:
        rank = attention.q_lora_rank
        query = hidden * rank + rank + rank * q_width  # down, RMSNorm of the latent, up
        query_bias = rank
    else:
        query = hidden * q_width
        query_bias = q_width
    latent = attention.kv_lora_rank + attention.qk_rope_head_dim
    key_value = hidden * latent + attention.kv_lora_rank  # down (latent + RoPE key), latent RMSNorm
    key_value += attention.kv_lora_rank * heads * (attention.qk_head_dim - attention.qk_rope_head_dim)
    key_value += attention.kv_lora_rank * heads * attention.value_head_dim
    output = heads * attention.value_head_dim * hidden
    biases = (query_bias + latent if attention.qkv_bias else 0) + (hidden if attention.out_bias else 0)
    return query + key_value + output + biases + _indexer_params(spec)


def _indexer_params(spec: TransformerSpec) -> int:
    """A sparse-attention layer's lightning indexer: queries from the query latent, one key from
    the hidden state with its LayerNorm (scale and bias), and a weight per head from the hidden
    state (DeepSeek-V3.2-Exp ``inference/model.py``: ``wq_b``, ``wk``, ``k_norm``,
    ``weights_proj``); 0 without one."""
    attention = spec.attention
    if attention.index_head_dim is None or attention.index_n_heads is None:
        return 0
    rank = attention.q_lora_rank or 0
    heads, dim, hidden = attention.index_n_heads, attention.index_head_dim, spec.hidden_size
    return rank * heads * dim + hidden * dim + 2 * dim + hidden * heads


def recurrent_mixer_params(spec: TransformerSpec) -> int:
    """Parameters of one recurrent mixer block (Mamba-2 or Gated DeltaNet; 0 for a model without
    one): ``in_proj``, ``out_proj`` and the per-head rest.

    >>> from lightspeed.workload import load_models
    >>> recurrent_mixer_params(load_models().get("nemotron-3-nano-30b-a3b"))
    38742208
    """
    mixer = spec.recurrent
    if mixer is None:
        return 0
    hidden = spec.hidden_size
    return hidden * mixer.in_proj_width + mixer.head_params + mixer.inner_size * hidden


@dataclass(frozen=True)
class _MoELayer:
    routed: int
    active_routed: int
    shared: int
    router: int
    expert: int


def _moe_layer(spec: TransformerSpec) -> _MoELayer:
    moe = spec.moe
    assert moe is not None
    expert = mlp_params(spec, moe.expert_ffn_hidden_size, moe.latent_size)
    shared = moe.num_shared_experts * mlp_params(spec, moe.shared_expert_ffn_hidden_size)
    router = spec.hidden_size * moe.num_routed_experts + (moe.num_routed_experts if moe.router_bias else 0)
    router += 2 * spec.hidden_size * moe.latent_size if moe.latent_size else 0  # down and up to the latent
    router += spec.hidden_size if moe.shared_expert_gate else 0
    return _MoELayer(
        routed=moe.num_routed_experts * expert,
        active_routed=moe.top_k * expert,
        shared=shared,
        router=router,
        expert=expert,
    )


def _embedding_params(spec: TransformerSpec) -> int:
    positions = spec.max_seq_len * spec.hidden_size if spec.position_embedding == "learned" else 0
    return spec.vocab_size * spec.hidden_size + positions


def parameter_counts(spec: TransformerSpec) -> ParameterCounts:
    """Total and active parameters of ``spec`` by component (MTP modules excluded).

    >>> from lightspeed.workload import load_models
    >>> parameter_counts(load_models().get("mixtral-8x7b")).active_params
    12879925248
    """
    attention = attention_params(spec)
    dense_mlp = mlp_params(spec, spec.ffn_hidden_size)
    recurrent = recurrent_mixer_params(spec)
    num_moe, num_dense, num_mlp = spec.num_moe_layers, spec.num_dense_layers, spec.num_mlp_layers
    num_attention, num_recurrent = spec.num_attention_layers, spec.num_recurrent_layers
    moe = _moe_layer(spec) if spec.moe is not None else _MoELayer(0, 0, 0, 0, 0)
    embedding = _embedding_params(spec)
    lm_head = 0 if spec.tied_embeddings else spec.vocab_size * spec.hidden_size
    norms = spec.num_layers * spec.layer_norm_params + spec.norm_params
    shared_layers = num_attention * attention + num_recurrent * recurrent + num_mlp * dense_mlp + norms
    moe_fixed = num_moe * (moe.shared + moe.router)
    total = embedding + lm_head + shared_layers + moe_fixed + num_moe * moe.routed
    active = embedding + lm_head + shared_layers + moe_fixed + num_moe * moe.active_routed
    return ParameterCounts(
        model=spec.name,
        total_params=total,
        active_params=active,
        non_embedding_params=total - embedding - lm_head,
        active_non_embedding_params=active - embedding - lm_head,
        embedding_params=embedding,
        lm_head_params=lm_head,
        attention_params_per_layer=attention,
        attention_params=num_attention * attention,
        dense_mlp_params_per_layer=dense_mlp if num_mlp else 0,
        dense_mlp_params=num_mlp * dense_mlp,
        expert_params=moe.expert,
        routed_expert_params=num_moe * moe.routed,
        active_routed_expert_params=num_moe * moe.active_routed,
        shared_expert_params=num_moe * moe.shared,
        router_params=num_moe * moe.router,
        norm_params=norms,
        num_dense_layers=num_dense,
        num_moe_layers=num_moe,
        mtp_params=spec.num_mtp_modules * _mtp_module_params(spec, attention, dense_mlp, moe),
        recurrent_block_params=recurrent,
        recurrent_params=num_recurrent * recurrent,
    )


def _mtp_module_params(spec: TransformerSpec, attention: int, dense_mlp: int, moe: _MoELayer) -> int:
    """One DeepSeek-V3 MTP module: a transformer layer (MoE when the model is), the
    ``2h -> h`` projection of the concatenated hidden state and embedding, and three
    RMSNorms (embedding, hidden, shared head); embedding and LM head are shared."""
    ffn = moe.shared + moe.router + moe.routed if spec.moe is not None else dense_mlp
    hidden = spec.hidden_size
    return attention + ffn + 2 * spec.norm_params + 2 * hidden * hidden + 3 * spec.norm_params


def weight_bytes(spec: TransformerSpec, precision: str) -> float:
    """Bytes of all weights of ``spec`` stored in ``precision`` (block scales included).

    Every parameter is assumed stored in ``precision``; real FP8/FP4 checkpoints
    often keep embeddings, norms and the router in BF16.

    >>> from lightspeed.workload import load_models
    >>> weight_bytes(load_models().get("dense-100t"), "bf16") / 1e12  # TB
    200.041174925312
    """
    return parameter_counts(spec).total_params * bytes_per_element(precision)


def kv_values_per_token_per_layer(spec: TransformerSpec) -> int:
    """Values of KV cache one token adds in one layer.

    MHA/GQA/MQA cache ``2·G·d`` values per layer (K and V of every KV head);
    MLA caches the compressed latent and the decoupled RoPE key,
    ``kv_lora_rank + qk_rope_head_dim`` values per layer.

    >>> from lightspeed.workload import load_models
    >>> kv_values_per_token_per_layer(load_models().get("llama-3-8b"))  # 2 x 8 KV heads x 128
    2048
    """
    attention = spec.attention
    if attention.kind == "mla":
        assert attention.kv_lora_rank is not None
        assert attention.qk_rope_head_dim is not None
        return attention.kv_lora_rank + attention.qk_rope_head_dim
    return 2 * attention.num_kv_heads * attention.head_dim


def kv_bytes_per_token_per_layer(spec: TransformerSpec, precision: str) -> float:
    """Bytes of cache one token adds in one layer that keeps it: its KV values in ``precision``
    and, for sparse attention, the lightning indexer's key (FP8 whatever ``precision`` is:
    :attr:`AttentionSpec.index_key_bytes`).

    >>> from lightspeed.workload import load_models
    >>> kv_bytes_per_token_per_layer(load_models().get("deepseek-v3.2"), "bf16")  # 2 x 576 + 132
    1284.0
    """
    values = kv_values_per_token_per_layer(spec) * bytes_per_element(precision)
    return float(values + spec.attention.index_key_bytes)


def kv_cache_bytes_per_token(spec: TransformerSpec, precision: str) -> float:
    """Bytes of KV cache one token adds, over all (attention) layers, in ``precision``.

    A sliding window or a chunk bounds how many tokens a local layer keeps,
    not what one token costs: :func:`lightspeed.workload.kv_cache_bytes` gives
    what a sequence holds at a given context.

    >>> from lightspeed.workload import load_models
    >>> kv_cache_bytes_per_token(load_models().get("llama-3-8b"), "bf16")  # 128 KiB
    131072.0
    """
    return spec.num_attention_layers * kv_bytes_per_token_per_layer(spec, precision)


@dataclass(frozen=True)
class OptimizerState(Record):
    """Bytes an optimizer keeps besides the working weights and gradients.

    ``state_bytes`` holds the optimizer's moments (Adam: momentum and variance
    in FP32), ``master_weights_bytes`` the FP32 copy of the weights that mixed
    precision updates. ``bytes_per_param`` is their sum per parameter.
    """

    optimizer: str
    state_bytes_per_param: float
    master_weights_bytes_per_param: float
    state_bytes: float
    master_weights_bytes: float
    total_bytes: float
    bytes_per_param: float
    source: str


@dataclass(frozen=True)
class OptimizerKind(Record):
    """One optimizer of ``workload/data/optimizers.toml``."""

    name: str
    state_bytes_per_param: float
    source: str
    note: str = ""


MASTER_WEIGHT_PRECISION: Final = "fp32"


@functools.cache
def optimizer_kinds() -> dict[str, OptimizerKind]:
    """The optimizers lightspeed knows, read from the shipped data file on first use."""
    path = package_data("workload", "data", "optimizers.toml")
    fields = Fields(str(path), load_toml(path))
    sources = parse_references(fields)
    return {
        name: OptimizerKind(
            name=name,
            state_bytes_per_param=table.number("state_bytes_per_param", positive=False),
            source=sources[table.check_source("source", sources)].citation,
            note=table.string("note", ""),
        )
        for name, table in fields.tables("optimizers").items()
    }


def optimizer_state_bytes(
    spec: TransformerSpec, optimizer: str = "adam", master_weights: bool = True
) -> OptimizerState:
    """Optimizer state of ``spec`` (all parameters, unsharded).

    Mixed-precision Adam keeps FP32 momentum and variance (8 bytes/param) and an
    FP32 master copy (4 bytes/param): 12 bytes/param, which with BF16 weights and
    gradients gives the ZeRO paper's 16 bytes/param.

    >>> from lightspeed.workload import load_models
    >>> optimizer_state_bytes(load_models().get("llama-3-8b")).bytes_per_param
    12.0
    """
    kinds = optimizer_kinds()
    kind = kinds.get(optimizer.strip().lower())
    if kind is None:
        raise UnknownNameError("optimizer", optimizer, kinds)
    num_params = parameter_counts(spec).total_params
    master = bytes_per_element(MASTER_WEIGHT_PRECISION) if master_weights else 0.0
    return OptimizerState(
        optimizer=kind.name,
        state_bytes_per_param=kind.state_bytes_per_param,
        master_weights_bytes_per_param=master,
        state_bytes=num_params * kind.state_bytes_per_param,
        master_weights_bytes=num_params * master,
        total_bytes=num_params * (kind.state_bytes_per_param + master),
        bytes_per_param=kind.state_bytes_per_param + master,
        source=kind.source,
    )

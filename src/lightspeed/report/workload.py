"""Terminal rendering of workload models, capacity plans and training FLOPs.

``lightspeed model list``, ``model show``, ``memory`` and ``flops`` print
through these functions. Names and notes may come from user files: they are
printed without markup.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape

from lightspeed.report.console import make_console, render_table
from lightspeed.sol import MemoryPlan
from lightspeed.units import bytes_per_element, format_bytes, format_count, format_memory, ordinal
from lightspeed.workload import (
    MambaSpec,
    ModelRow,
    ModelSummary,
    RecurrentMixer,
    TrainingFlop,
    TransformerSpec,
    layer_groups,
)

_LOCAL_WORDS = {
    "sliding": "within a sliding window",
    "chunked": "within chunks",
    "sparse": "to an indexer's pick",
}

_COMPONENT_LABELS = {
    "weights": "weights",
    "gradients": "gradients",
    "optimizer": "optimizer state",
    "master_weights": "fp32 master weights",
}


def _params(count: float) -> str:
    """``8.030 B (8,030,261,248)``: readable and exact."""
    return f"{format_count(count)} ({int(count):,})"


def _flop(value: float) -> str:
    return f"{value:.4g}"


def _bytes(num_bytes: float) -> str:
    return f"{format_bytes(num_bytes)} ({format_bytes(num_bytes, binary=True)})"


# a hybrid's recurrent mixer beside its attention in ``model list``
_MIXER_WORDS = {"mamba": " + Mamba-2", "gated_delta_net": " + Gated DeltaNet"}


def render_model_list(rows: Sequence[ModelRow], console: Console | None = None) -> None:
    """One line per known model: shape, total and active parameters."""
    render_table(
        "Known models",
        ["name", "model", "type", "attention", "layers", "hidden", "total params", "active params"],
        [
            [
                escape(row.name),
                escape(row.display_name),
                row.kind,
                row.attention.upper() + _MIXER_WORDS.get(row.mixer, ""),
                _layer_count(row.num_layers, row.num_blocks),
                str(row.hidden_size),
                format_count(row.total_params),
                format_count(row.active_params),
            ]
            for row in rows
        ],
        right_align_from=4,
        caption="'lightspeed model show NAME' for counts, FLOPs and bytes; aliases are accepted everywhere",
        console=console,
    )


def _layer_count(num_layers: int, num_blocks: int) -> str:
    """``48 (96 blocks)`` where a hybrid's layers are two blocks each, else ``48``."""
    return (
        f"{num_layers} ({num_blocks} blocks)" if num_blocks and num_blocks != num_layers else str(num_layers)
    )


def _moe_placement(spec: TransformerSpec) -> str:
    """Where a model's MoE layers are: ``3 dense layers first, 58 MoE layers``, or where dense and
    MoE layers alternate, ``every 2nd layer MoE (layers 1, 3, ..., 47): 24 MoE, 24 dense layers``."""
    if spec.is_hybrid:
        return f"{spec.num_moe_layers} MoE blocks"
    moe = spec.moe
    if moe is None or not spec.moe_interleaved:
        return f"{spec.num_dense_layers} dense layers first, {spec.num_moe_layers} MoE layers"
    layers = [index for index in range(spec.num_layers) if spec.is_moe_layer(index)]
    shown = ", ".join(map(str, layers[:2])) + (f", ..., {layers[-1]}" if len(layers) > 2 else "")
    first = f"{moe.num_dense_layers} dense layers first, then " if moe.num_dense_layers else ""
    return (
        f"{first}every {ordinal(moe.layer_frequency)} layer MoE (layers {shown}): "
        f"{spec.num_moe_layers} MoE, {spec.num_dense_layers} dense layers"
    )


def _shape_lines(spec: TransformerSpec) -> list[str]:
    attention = spec.attention
    positions = {"rope": "RoPE", "learned": "learned positions", "none": "no positions"}[
        spec.position_embedding
    ]
    lines = [
        f"layers {_layer_count(spec.num_decoder_layers, spec.num_layers)} · hidden {spec.hidden_size} · "
        f"FFN {spec.ffn_hidden_size} ({spec.mlp}) · "
        f"vocab {spec.vocab_size} · context {spec.max_seq_len} · {spec.norm} · {positions} · "
        f"{'tied' if spec.tied_embeddings else 'untied'} embeddings",
        f"attention {attention.kind.upper()}: {attention.num_heads} heads, "
        f"{attention.num_kv_heads} KV heads, Q/K head {attention.qk_head_dim}, "
        f"V head {attention.value_head_dim}",
    ]
    if attention.kind == "mla":
        lines.append(
            f"MLA: q_lora_rank {attention.q_lora_rank}, kv_lora_rank {attention.kv_lora_rank}, "
            f"RoPE key {attention.qk_rope_head_dim}"
        )
    if attention.index_topk is not None:
        lines.append(
            f"DeepSeek Sparse Attention: a lightning indexer of {attention.index_n_heads} heads x "
            f"{attention.index_head_dim} (FP8) scores every earlier token for the top "
            f"{attention.index_topk:,}; its key adds {attention.index_key_bytes} B per token per layer "
            "to the KV cache"
        )
    lines.extend(
        f"{group.num_layers} of {spec.num_layers} layers attend {_LOCAL_WORDS[group.kind]} "
        f"of {group.span_tokens:,} tokens"
        for group in layer_groups(spec)
        if group.kind != "full"
    )
    mixer = spec.recurrent
    if mixer is not None:
        lines.append(
            f"hybrid blocks: {spec.num_recurrent_layers} {mixer.label}, {spec.num_attention_layers} "
            f"attention, {spec.num_mlp_layers} MLP, {spec.num_moe_layers} MoE ({spec.block_pattern})"
        )
        lines.append(f"{mixer.label}: {_mixer_shape(mixer)}")
    if spec.attention.output_gate:
        lines.append("gated attention: a sigmoid gate on each query channel's output (q projection 2x wide)")
    if spec.moe is not None:
        moe = spec.moe
        placement = _moe_placement(spec)
        latent = f" on a latent of {moe.latent_size}" if moe.latent_size else ""
        lines.append(
            f"MoE: {moe.num_routed_experts} routed experts (top-{moe.top_k}) "
            f"of FFN {moe.expert_ffn_hidden_size}{latent}, {moe.num_shared_experts} shared, {placement}"
        )
    if spec.release_source:
        lines.append(
            f"released in {spec.release_format} (what serving predictions assume without --precision): "
            f"{spec.release_source}"
        )
    return lines


def _mixer_shape(mixer: RecurrentMixer) -> str:
    """A recurrent mixer's shapes in one line of ``model show``."""
    state = f"no KV cache: a recurrent state of {mixer.state_values:,} values per sequence per block"
    if isinstance(mixer, MambaSpec):
        return (
            f"{mixer.num_heads} heads x {mixer.head_dim} (d_inner {mixer.inner_size}), {mixer.num_groups} "
            f"groups of state {mixer.state_size}, conv {mixer.conv_kernel}, chunk {mixer.chunk_size}; {state}"
        )
    return (
        f"{mixer.num_value_heads} value heads x {mixer.value_head_dim}, {mixer.num_key_heads} "
        f"query/key heads x {mixer.key_head_dim}, conv {mixer.conv_kernel}, chunk {mixer.chunk_size}; {state}"
    )


def _count_rows(summary: ModelSummary) -> list[list[str]]:
    counts = summary.parameter_counts
    rows = [
        ["total", _params(counts.total_params)],
        ["active per token", _params(counts.active_params)],
        ["non-embedding (Kaplan N)", _params(counts.non_embedding_params)],
        ["embedding tables", _params(counts.embedding_params)],
        ["LM head", _params(counts.lm_head_params) if counts.lm_head_params else "tied to the embedding"],
        ["attention, per layer", _params(counts.attention_params_per_layer)],
        ["attention, all layers", _params(counts.attention_params)],
        ["norms", _params(counts.norm_params)],
    ]
    if counts.dense_mlp_params:
        rows.insert(-1, ["dense MLP, all dense layers", _params(counts.dense_mlp_params)])
    mixer = summary.spec.recurrent
    if mixer is not None:
        label = mixer.label
        rows.insert(-1, [f"{label}, per block", _params(counts.recurrent_block_params)])
        rows.insert(-1, [f"{label}, all blocks", _params(counts.recurrent_params)])
    if counts.num_moe_layers:
        rows += [
            ["one routed expert", _params(counts.expert_params)],
            ["routed experts, all", _params(counts.routed_expert_params)],
            ["routed experts, active", _params(counts.active_routed_expert_params)],
            [
                "routers and latent projections"
                if summary.spec.moe and summary.spec.moe.latent_size
                else "routers",
                _params(counts.router_params),
            ],
        ]
        if counts.shared_expert_params:
            rows.insert(-1, ["shared experts", _params(counts.shared_expert_params)])
    if counts.mtp_params:
        rows.append(["MTP modules (excluded above)", _params(counts.mtp_params)])
    return rows


# how ``model show`` says which parts a published active figure leaves out
_ACTIVE_BASIS = {"no-input-embedding": " without the input embedding", "no-embeddings": " without embeddings"}


def _published_lines(summary: ModelSummary) -> list[str]:
    published = summary.published
    if published is None:
        return []
    basis = _ACTIVE_BASIS.get(published.active_counts, "")
    active = summary.active_params_as_published or summary.active_params
    figures = [
        f"{label} {format_count(printed)} "
        f"(computed {format_count(computed)}{words}, {computed / printed - 1:+.2%})"
        for label, printed, computed, words in (
            ("total", published.total_params, summary.total_params, ""),
            ("active", published.active_params, active, basis),
        )
        if printed
    ]
    lines = [f"published: {', '.join(figures)}; {published.source}"]
    if published.note:
        lines.append(f"  {published.note}")
    return lines


def render_model_summary(summary: ModelSummary, console: Console | None = None) -> None:
    """``model show``: shape, parameters by component, FLOPs per token, bytes."""
    console = console or make_console()
    console.print(f"{summary.display_name} ({summary.name})", markup=False, style="bold")
    if summary.aliases:
        console.print(f"aliases: {', '.join(summary.aliases)}", markup=False)
    for line in _shape_lines(summary.spec):
        console.print(f"  {line}", markup=False)
    render_table("Parameters", ["component", "parameters"], _count_rows(summary), console=console)
    for line in _published_lines(summary):
        console.print(line, markup=False)
    render_table(
        f"FLOP per token at seq_len {summary.seq_len} (training = forward + backward)",
        ["convention", "training FLOP per token, with numbers", "N", "forward", "training"],
        [
            [
                item.convention,
                escape(item.substituted),
                format_count(item.num_params),
                _flop(item.forward_flop),
                _flop(item.training_flop),
            ]
            for item in summary.flops_per_token
        ],
        right_align_from=2,
        caption="N: 6N, 6N+attention: all active parameters; 6N-nonembedding: the layers' only "
        "(see docs/workload.md for who uses which)",
        console=console,
    )
    for item in summary.flops_per_token:
        for note in item.notes:
            console.print(f"note ({item.convention}): {note}", markup=False)
    _render_bytes(summary, console)
    for source in summary.sources.values():
        console.print(f"source [{source.key}]: {source.citation}", markup=False)
    if summary.spec.note:
        console.print(f"note: {summary.spec.note}", markup=False)


def _render_bytes(summary: ModelSummary, console: Console) -> None:
    console.print("Weights (every parameter in that precision; block or group scales included)", markup=False)
    render_table(
        None,
        ["precision", "bytes/param", "weights"],
        [
            [precision, f"{bytes_per_element(precision):g}", _bytes(total)]
            for precision, total in summary.weight_bytes.items()
        ],
        console=console,
    )
    cache = ", ".join(
        f"{precision} {format_bytes(value, binary=True)} ({value:,.0f} bytes)"
        for precision, value in summary.kv_cache_bytes_per_token.items()
    )
    layers = "the attention blocks" if summary.spec.is_hybrid else "all layers"
    span = summary.kv_cache_local_span_tokens
    if span is None:
        console.print(f"KV cache per token ({layers}): {cache}", markup=False)
    else:
        past = ", ".join(
            f"{precision} {format_bytes(value, binary=True)} ({value:,.0f} bytes)"
            for precision, value in summary.kv_cache_bytes_per_token_past_span.items()
        )
        console.print(f"KV cache per token ({layers}), for the first {span:,} tokens: {cache}", markup=False)
        console.print(
            f"KV cache per token past the first {span:,} (the layers that keep every token): {past}",
            markup=False,
        )
    held = ", ".join(
        f"{precision} {format_bytes(value, binary=True)}"
        for precision, value in summary.kv_cache_bytes_per_sequence.items()
    )
    console.print(f"KV cache of one {summary.seq_len:,}-token sequence: {held}", markup=False)
    mixer = summary.spec.recurrent
    if mixer is not None and summary.recurrent_state_bytes_per_sequence:
        state = "FP32 SSM state" if isinstance(mixer, MambaSpec) else f"{mixer.state_dtype} delta-rule state"
        console.print(
            f"{mixer.label} state of one sequence, whatever its length: {summary.spec.num_recurrent_layers} "
            f"blocks, {format_bytes(summary.recurrent_state_bytes_per_sequence, binary=True)} ({state}, "
            "16-bit conv window)",
            markup=False,
        )


def render_memory_plan(plan: MemoryPlan, console: Console | None = None) -> None:
    """``lightspeed memory``: bytes by component, GPUs and nodes, assumptions."""
    console = console or make_console()
    mode = (
        f"training ({plan.optimizer}, ZeRO-{plan.zero_stage}, dp={plan.dp})" if plan.training else "inference"
    )
    whole = f", over the whole job (all {plan.dp} replicas)" if plan.dp > 1 else ""
    console.print(
        f"Memory to hold {plan.model} at {plan.precision}, {mode}{whole}", markup=False, style="bold"
    )
    rows = [
        [_COMPONENT_LABELS[name], format_bytes(value), format_bytes(value, binary=True), f"{value:,.0f}"]
        for name, value in plan.components.items()
        if value
    ]
    total = plan.total_bytes
    rows.append(["total", format_bytes(total), format_bytes(total, binary=True), f"{total:,.0f}"])
    per_gpu = (
        plan.bytes_per_param * plan.num_params
    )  # one replica's share on one GPU, before model parallelism
    if plan.dp > 1:
        rows.append(
            [
                "per data-parallel rank",
                format_bytes(per_gpu),
                format_bytes(per_gpu, binary=True),
                f"{per_gpu:,.0f}",
            ]
        )
    render_table(None, ["component", "decimal", "binary", "bytes"], rows, console=console)
    if plan.gpus_needed is not None and plan.memory_usable_bytes and plan.memory_nominal_bytes:
        nodes = f"{plan.device} nodes" if plan.device != plan.accelerator else "nodes"
        console.print(
            f"{plan.gpus_needed:,} x {plan.accelerator} at {format_bytes(plan.memory_usable_bytes)} usable "
            f"= {plan.nodes_needed:,} {nodes} of {plan.gpus_per_node}{_at_listed(plan)}; "
            f"{plan.gpus_needed_at_nominal:,} at {format_memory(plan.memory_nominal_bytes)} nominal "
            f"= {plan.nodes_needed_at_nominal:,} nodes",
            markup=False,
            style="bold",
        )
    console.print("assumptions:", markup=False)
    for line in plan.assumptions:
        console.print(f"  - {line}", markup=False)


def _at_listed(plan: MemoryPlan) -> str:
    """The count at the datasheet's listed figure, where that differs from usable memory (the
    driver's)."""
    if plan.memory_listed_bytes is None or plan.memory_listed_bytes == plan.memory_usable_bytes:
        return ""
    return (
        f"; {plan.gpus_needed_at_listed:,} at the {format_bytes(plan.memory_listed_bytes)} listed "
        f"= {plan.nodes_needed_at_listed:,} nodes"
    )


def render_training_flop(result: TrainingFlop, console: Console | None = None) -> None:
    """``lightspeed flops``: the formula with numbers, MoE's active-vs-total point, a claim check."""
    console = console or make_console()
    per_token = result.per_token
    console.print(
        f"Training FLOPs of {result.model} on {format_count(result.num_tokens)} tokens "
        f"({per_token.convention}, seq_len {per_token.seq_len})",
        markup=False,
        style="bold",
    )
    console.print(f"  {result.formula}", markup=False)
    if result.substituted != per_token.substituted and per_token.formula != "6·N":
        console.print(f"  per token: {per_token.substituted}", markup=False)
    console.print(f"  = {result.substituted}", markup=False)
    console.print(f"  N = {per_token.num_params:,}: {per_token.parameter_basis}", markup=False)
    console.print(
        f"  per token: {_flop(per_token.training_flop)} FLOP training, "
        f"{_flop(per_token.forward_flop)} forward "
        f"({per_token.formula}; used by {per_token.used_by})",
        markup=False,
    )
    for note in per_token.notes:
        console.print(f"  note: {note}", markup=False)
    if result.dense_equivalent_flop is not None:
        console.print(
            f"MoE: FLOPs follow the {format_count(result.active_params)} active parameters, not the "
            f"{format_count(result.total_params)} total; "
            f"a dense model of {format_count(result.total_params)} "
            f"would need {_flop(result.dense_equivalent_flop)} FLOP "
            f"({result.dense_equivalent_flop / result.total_flop:.3g}x)",
            markup=False,
        )
    if result.claim is not None:
        style = "green" if result.claim.agrees else "bold yellow"
        console.print(f"claim {_flop(result.claim.claimed_flop)} FLOP:", markup=False, style=style)
        for line in result.claim.explanation:
            console.print(f"  - {line}", markup=False)

"""The sentences an inference estimate carries: what bounds its iteration
(:func:`bound_sentence`, each part's name in :func:`part_text`) and the assumptions it rests on
(:func:`assumption_lines`: formats, efficiency, serving stack, latency floors, batching, KV share,
speculation; :func:`routing_note` for expert parallelism, :func:`state_note` for recurrent state).

:mod:`lightspeed.sol.infer.estimate` puts them in its :class:`InferenceEstimate`.
"""

from __future__ import annotations

from lightspeed.sol.core import collectives
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.routing import balanced_placement, busiest_rank_factor, load_routing_skew
from lightspeed.sol.infer.inference_hardware import InferenceHardware
from lightspeed.sol.infer.iteration import ITERATION_PARTS
from lightspeed.sol.infer.plan import InferencePlan, SpeculativeDecoding, kept_layers_text
from lightspeed.units import element_bits, format_bytes_per_s, format_duration, format_memory, format_percent
from lightspeed.workload import TransformerSpec

PART_LABELS = {
    "gemm_compute": "GEMMs on the tensor cores",
    "weight_reads": "weight reads from HBM",
    "attention_compute": "attention math",
    "kv_cache": "KV-cache reads and writes",
    "elementwise": "norms, activations, residuals (MoE: token copies)",
    "tp_comm": "TP all-reduce",
    "ep_comm": "EP all-to-all",
    "pp_comm": "pipeline send",
    "attention_dp_pace": "attention-DP slowdown (fitted, not kernel time)",
    "launch": "kernel launch and teardown",
    "host": "host overhead",
    "draft": "draft steps (speculative decoding)",
}
# The part of a speculative iteration's drafting (beside the engine's ITERATION_PARTS)
DRAFT_PART = "draft"


def bound_sentence(
    parts: dict[str, float], inference_hardware: InferenceHardware, plan: InferencePlan
) -> tuple[str, str]:
    """(sentence, part) naming what bounds the steady iteration: the largest group of the parts
    the engine prices from the hardware, and the two largest parts, the draft steps of speculative
    decoding (``draft``) among them; the fitted attention-DP slowdown is said after it.

    A draft step is a plain decode step of the same deployment (at the draft's cost), bound as the
    rest of the iteration is: the group is judged on the other parts, and the draft steps stream
    from HBM as those do."""
    total = sum(parts.values())
    groups = {
        "memory-bound": ("weight_reads", "kv_cache", "elementwise"),
        "compute-bound": ("gemm_compute", "attention_compute"),
        "communication-bound": ("tp_comm", "ep_comm", "pp_comm"),
        "overhead-bound": ("launch", "host"),
    }
    shares = {name: sum(parts.get(p, 0.0) for p in members) for name, members in groups.items()}
    kind = max(shares, key=lambda name: shares[name])
    priced = [name for name in (*ITERATION_PARTS, DRAFT_PART) if name != "attention_dp_pace"]
    ranked = sorted(priced, key=lambda name: parts.get(name, 0.0), reverse=True)
    top = [name for name in ranked if parts.get(name, 0.0) > 0][:2]
    details = ", ".join(
        f"{part_text(name, inference_hardware, plan)} {format_percent(parts[name] / total, 0)}"
        for name in top
    )
    sentence = f"{kind}: {details} of each iteration"
    if kind == "memory-bound":
        # the memory parts are bytes at the streaming ceiling: those bytes over the step (its draft
        # steps streaming as the rest of it does)
        ceiling = inference_hardware.stream_bytes_per_s
        streamed_s = sum(parts.get(name, 0.0) for name in groups["memory-bound"])
        drafted_s = parts.get(DRAFT_PART, 0.0)
        sentence += (
            f" (HBM streaming ceiling {format_bytes_per_s(ceiling)}, "
            f"{format_bytes_per_s(ceiling * streamed_s / (total - drafted_s))} sustained over the step)"
        )
    pace = parts.get("attention_dp_pace", 0.0)
    if pace > 0:
        sentence += (
            f"; a fitted attention-DP slowdown adds {format_percent(pace / total, 0)} "
            "that no kernel, link or host time explains"
        )
    return sentence, top[0]


def part_text(part: str, inference_hardware: InferenceHardware, plan: InferencePlan) -> str:
    """A readable name for an iteration part, with the fabric level a collective uses."""
    label = PART_LABELS[part]
    fabric = inference_hardware.hardware.fabric
    groups = {"tp_comm": (plan.tp, 1), "ep_comm": (plan.stage_gpus, 1), "pp_comm": (plan.pp, plan.stage_gpus)}
    if part in groups:
        group, stride = groups[part]
        crosses = bool(collectives.crosses_domains(fabric, group, stride))
        label += f" over {fabric.level_name(crosses)}"
    return label


def _attention_weights_text(inference_hardware: InferenceHardware) -> str:
    """``attention projections bf16 (989 TFLOP/s), `` when they differ from the other weights
    (``attention projections, shared experts and dense-layer MLPs bf16 ...`` where a published
    checkpoint keeps those as it keeps attention)."""
    precisions = inference_hardware.precisions
    if precisions.attention_weights == precisions.weights:
        return ""
    peak = inference_hardware.attention_hardware.peak_flop_per_s
    return (
        f"{kept_layers_text(precisions.kept_layers)} {precisions.attention_weights} "
        f"({precisions.attention_weight_bytes_per_element:g} B/param, "
        f"GEMMs on {precisions.attention_compute} {peak / 1e12:,.0f} TFLOP/s), "
    )


def _mixed_weights_text(inference_hardware: InferenceHardware, plan: InferencePlan) -> str:
    """``; a mixed checkpoint of 7.25 effective bits: 81% of those layers fp8 (...)`` for a plan
    with ``effective_bits``, else ``''``."""
    precisions = inference_hardware.precisions
    wider = inference_hardware.wider_hardware
    if plan.effective_bits is None or wider is None:
        return ""
    return (
        f"; a per-layer mixed checkpoint of {plan.effective_bits:g} effective bits: "
        f"{format_percent(precisions.wider_share, 0)} of those layers (by parameters) kept in "
        f"{precisions.wider} "
        f"({precisions.wider_weight_bytes_per_element:g} B/param, GEMMs on {precisions.wider_compute} "
        f"{wider.peak_flop_per_s / 1e12:,.0f} TFLOP/s), the rest in {precisions.weights}"
    )


def _overlap_text(efficiency: EfficiencyModel) -> str:
    """How a GEMM's math and traffic combine near the ridge point, when not at the hard roofline."""
    power = efficiency.roofline_overlap_power
    if power is None:
        return ""
    return f"; a GEMM's math and traffic combine as (math^{power:g} + traffic^{power:g})^(1/{power:g})"


def _serving_line(inference_hardware: InferenceHardware, plan: InferencePlan) -> str:
    serving = inference_hardware.serving
    line = (
        f"serving stack '{serving.name}' ({serving.display_name}): math kernels (GEMMs, attention) at "
        f"{format_percent(serving.kernel_efficiency, 0)} of those ceilings"
    )
    if plan.dp_attention > 1 and serving.attention_dp_efficiency < 1.0:
        line += (
            f"; with attention data parallelism each layer's compute and memory at "
            f"{format_percent(serving.attention_dp_efficiency, 0)} of that pace (a fitted factor: what "
            "published wide expert-parallel runs lose beyond the modelled kernels, placement and "
            "routing skew)"
        )
    hidden = " behind the GPU step (overlap scheduler)" if serving.overlap_scheduler else ""
    if plan.pp > 1 and not serving.overlap_with_pipeline:
        line += "; no overlap scheduler: the server turns it off under pipeline parallelism"
    if serving.iteration_overhead_s > 0:
        line += f", {serving.iteration_overhead_s * 1e3:g} ms host time per iteration{hidden}"
        if serving.host_fit_group:
            line += f" ({serving.host_fit_group}'s fitted value: a step loop as serial on the host)"
    if serving.host_per_sequence_s > 0:
        line += f", {serving.host_per_sequence_s * 1e6:.3g} us of host work per sequence per step{hidden}"
    host_priced = serving.iteration_overhead_s > 0 or serving.host_per_sequence_s > 0
    if not serving.overlap_scheduler and not host_priced:
        line += ", the host's scheduling between steps not costed (no published figure for this server)"
    if serving.decode_kv_reads == "per_query_head":
        line += (
            ", decode attention reads a grouped-query KV head once per query head "
            "(one thread block per head: the masked MHA kernel)"
        )
    return f"{line}; {serving.fit_note()}"


def _sequence_cap_note(inference_hardware: InferenceHardware, plan: InferencePlan) -> str:
    """The server's default cap on sequences per scheduler, where it has one and --max-batch is unset."""
    cap = inference_hardware.serving.sequence_cap
    if cap is None or plan.max_batch is not None:
        return ""
    scheduler = "attention-DP rank" if plan.dp_attention > 1 else "replica"
    return f"; the server's default cap on sequences per {scheduler}: {cap.describe()} (--max-batch sets it)"


def _kv_share_text(inference_hardware: InferenceHardware, raised: bool) -> str:
    """The KV cache's share of memory as the server's fraction reads (``ServingStack.kv_memory_of``),
    and whether the deployment needed it raised."""
    serving = inference_hardware.serving
    share = format_percent(inference_hardware.parameters.kv_cache_memory_fraction, 0)
    if serving.kv_memory_of != "total":
        return f"{share} of the free memory"
    if serving.kv_memory_share_by_tp and not raised:
        shares = ", ".join(
            f"{format_percent(value, 0)} from {size}" for size, value in serving.kv_memory_share_by_tp
        )
        return (
            f"what is left of the server's share of the GPU's memory after the weights, workspace and "
            f"runtime (by the GPUs of a stage: {shares})"
        )
    if raised:
        return (
            f"{share} of the free memory (the server's default gpu_memory_utilization, {share} of the "
            "GPU's memory, leaves no request's cache after the weights here: it has to be raised, "
            "as a run that served did)"
        )
    return f"what is left of {share} of the GPU's memory after the weights, workspace and runtime"


def _floors_line(inference_hardware: InferenceHardware) -> str:
    floors, serving = inference_hardware.floors, inference_hardware.serving
    prompt_steps = (
        f"steps with over {serving.prefill_graph_tokens} tokens of which some are prompt tokens"
        if serving.prefill_graph_tokens
        else "steps with prompt tokens"
    )
    launcher = (
        f"decode replays CUDA graphs; {prompt_steps} run eagerly, the host issuing each kernel in "
        f"{inference_hardware.hardware.efficiency.kernel_launch_s * 1e6:g} us"
        if serving.cuda_graphs
        else f"no CUDA graphs: the host issues each kernel in "
        f"{inference_hardware.hardware.efficiency.kernel_launch_s * 1e6:g} us"
    )
    protocols = inference_hardware.hardware.fabric.ring_protocols
    rings = ""
    if protocols is not None:
        named = ", ".join(
            f"{protocol.name} {protocol.base_latency_s * 1e6:g} us + "
            f"{protocol.step_latency_s * 1e6:g} us a step"
            for protocol in protocols.protocols
        )
        rings = (
            f" (inside the NVLink domain the fastest of NCCL's ring protocols: that one at half the "
            f"bandwidth, {named}; an in-switch all-reduce {protocols.in_switch_latency_s * 1e6:g} us)"
        )
    return (
        f"latency floors: each kernel {floors.gpu_kernel_s * 1e6:g} us of GPU time beyond its roofline, "
        f"each collective {floors.collective_base_latency_s * 1e6:g} us plus the link latency per step"
        f"{rings}; {launcher}"
    )


def state_note(model: TransformerSpec) -> tuple[str, ...]:
    """The line saying what recurrent state a hybrid's requests hold, and in which format (none
    for a model without recurrent blocks)."""
    mixer = model.recurrent
    if mixer is None:
        return ()
    per_sequence = model.num_recurrent_layers * mixer.sequence_state_bytes
    return (
        f"recurrent state: {format_memory(per_sequence)} a sequence over {model.num_recurrent_layers} "
        f"{mixer.label} blocks ({mixer.state_dtype} state, 16-bit convolution window), held for each "
        "request in flight (--state-precision sets its format)",
    )


def attention_note(parts: dict[str, float]) -> tuple[str, ...]:
    """Where the KV-cache reads sit in the breakdown, said where the attention math outweighs the
    KV-cache part (none otherwise): an attention kernel's time goes to the side of its roofline
    that binds (:mod:`~lightspeed.sol.infer.iteration`), so a compute-bound kernel's reads are inside
    the math and the KV-cache part holds the memory-bound kernels' reads and the cache writes."""
    math_s, cache_s = parts.get("attention_compute", 0.0), parts.get("kv_cache", 0.0)
    if math_s <= cache_s:
        return ()
    return (
        f"attention kernels priced at their roofline: attention math ({format_duration(math_s)}) holds "
        "the KV-cache reads of the kernels whose math binds; the KV-cache reads/writes part "
        f"({format_duration(cache_s)}) holds only the reads of memory-bound ones and the cache writes",
    )


def routing_note(
    model: TransformerSpec, inference_hardware: InferenceHardware, plan: InferencePlan
) -> tuple[str, ...]:
    """The line saying how unevenly the routed tokens land on the EP ranks (none without
    expert parallelism)."""
    if model.moe is None or plan.ep <= 1:
        return ()
    if plan.expert_imbalance is not None:
        given = plan.expert_imbalance
        return (f"expert parallelism: the busiest of {plan.ep} EP ranks gets {given:.2f}x the mean tokens",)
    serving = inference_hardware.serving
    physical, routed = plan.num_physical_experts or 0, model.moe.num_routed_experts
    replicas = physical > routed  # which reason the line gives
    balanced = bool(balanced_placement(physical, routed, serving.expert_load_balancer))
    skew = load_routing_skew()
    factor = busiest_rank_factor(model.moe.num_routed_experts, plan.ep, skew=skew, balanced=balanced)
    if balanced:
        why = "redundant experts placed by load" if replicas else f"{serving.name}'s recipes run EPLB"
        how = f"the load balancer's measured residual ({why})"
    else:
        how = f"routing skew of a contiguous placement (per-expert load CV {skew.per_expert_cv:g})"
    return (
        f"expert parallelism: the busiest of {plan.ep} EP ranks gets {factor:.2f}x the mean routed tokens, "
        f"the {how}, measured on DeepSeek-R1 by TensorRT-LLM (sol/data/routing.toml); "
        "--expert-imbalance or --expert-load sets it",
    )


def _weight_only_text(weights: str, compute: str) -> str:
    """`` (weight-only: ...)`` where the GEMMs compute in a wider format than the weights are
    stored in (W8A16, W4A16, FP4 weights on a GPU without FP4 tensor cores); else empty."""
    if element_bits(weights) >= element_bits(compute):
        return ""
    return f" (weight-only: the {weights} weights dequantized into each {compute} GEMM)"


def _fp4_tiles_text(inference_hardware: InferenceHardware) -> str:
    """How FP4 GEMMs fill the GPU
    (:meth:`~lightspeed.sol.core.efficiency.EfficiencyModel.fp4_tile_occupancy`), or that they are
    priced without that loss where the catalog has no SM count."""
    hardware = inference_hardware.hardware
    gemm = hardware.efficiency
    if hardware.compute_row != "fp4" or not (gemm.fp4_tile_rows and gemm.fp4_tile_columns):
        return ""
    sms = hardware.accelerator.num_compute_units
    if sms:
        return (
            f"; an FP4 GEMM keeps its ceil(M/{gemm.fp4_tile_rows:g}) x ceil(N/{gemm.fp4_tile_columns:g}) "
            f"output tiles on the {sms} SMs, one each, so a small batch streams its weights on a "
            "share of them"
        )
    return (
        f"; FP4 GEMMs priced without the loss of tiles too few for the SMs (the catalog gives no SM "
        f"count for {hardware.accelerator.name}: a GPU with one, the B200, decodes small FP4 batches "
        "up to 3x slower)"
    )


def assumption_lines(
    inference_hardware: InferenceHardware, plan: InferencePlan, batching: str, raised: bool = False
) -> tuple[str, ...]:
    """The assumption lines of an estimate of ``plan`` under ``batching`` (``raised``: the
    deployment needed the server's KV-cache share raised to hold one request)."""
    hardware, precisions, parameters = (
        inference_hardware.hardware,
        inference_hardware.precisions,
        inference_hardware.parameters,
    )
    efficiency = hardware.efficiency
    lines = [
        f"weights {precisions.weights} ({precisions.weight_bytes_per_element:g} B/param, "
        f"{_attention_weights_text(inference_hardware)}embeddings and "
        f"LM head 16-bit), GEMMs on dense {hardware.compute_text(precisions.compute)} "
        f"{hardware.peak_flop_per_s / 1e12:,.0f} TFLOP/s "
        f"per GPU{_weight_only_text(precisions.weights, precisions.compute)}, KV cache "
        f"{precisions.kv_cache}{_mixed_weights_text(inference_hardware, plan)}",
        f"efficiency {efficiency.label}: GEMMs up to "
        f"{format_percent(efficiency.gemm_ceiling(precisions.compute), 0)} of peak, attention up to "
        f"{format_percent(efficiency.attention_flash_forward_efficiency, 0)}, weight/KV streaming at "
        f"{format_percent(parameters.stream_memory_efficiency, 0)} of "
        f"{format_bytes_per_s(hardware.memory_bandwidth_bytes_per_s)}, links "
        f"{format_percent(efficiency.collective_bandwidth_efficiency, 0)}{_overlap_text(efficiency)}"
        f"{_fp4_tiles_text(inference_hardware)}",
        _serving_line(inference_hardware, plan),
        _floors_line(inference_hardware),
        f"{batching} batching; KV cache gets {_kv_share_text(inference_hardware, raised)} and reserves "
        "input + output tokens per request; prefill chunks of "
        f"{parameters.prefill_chunk_tokens} tokens"
        f"{' (the server default for this GPU)' if inference_hardware.serving.token_budget else ''}"
        f"{_sequence_cap_note(inference_hardware, plan)}",
        f"scale-up domain of {hardware.domain_size} GPUs; ranks ordered tp-dp_attention-pp-replica",
        *(
            note
            for note in (
                collectives.straddle_note(hardware.fabric, "TP", plan.tp, lockstep=plan.num_replicas <= 1),
                collectives.straddle_note(hardware.fabric, "attention-DP/EP stage", plan.stage_gpus)
                if plan.stage_gpus != plan.tp
                else "",
            )
            if note
        ),
        *precisions.notes,
    ]
    if batching == "continuous" and inference_hardware.serving.prefill_steps == "separate":
        name = inference_hardware.serving.name
        lines.append(
            f"this steady state mixes prompt chunks into decode steps; {name}'s scheduler runs prompts "
            "in steps of their own that pause the decodes (simulated by 'lightspeed simulate', and by "
            "'plan infer' at a --concurrency or an --arrival-rate)"
        )
    if hardware.calibration_note:
        lines.append(hardware.calibration_note)
    if plan.speculative is not None:
        spec = plan.speculative
        lines.append(
            f"speculative decoding: {spec.num_draft_tokens} drafts accepted at {_acceptance_text(spec)} "
            f"({spec.tokens_per_iteration:.2f} tokens per verify pass), a draft step costs "
            f"{format_percent(spec.draft_cost_fraction, 0)} of a decode step"
        )
    return tuple(lines)


def _acceptance_text(spec: SpeculativeDecoding) -> str:
    """``0.8 each``, or ``0.8, 0.6, 0.4 by position (each given the ones before it kept)``."""
    rates = spec.position_rates
    if len(set(rates)) <= 1:
        return f"{spec.acceptance_rate:g} each"
    return f"{', '.join(f'{rate:g}' for rate in rates)} by position (each given the ones before it kept)"


__all__ = [
    "PART_LABELS",
    "assumption_lines",
    "attention_note",
    "bound_sentence",
    "part_text",
    "routing_note",
    "state_note",
]

"""The seed's headline scenarios, predicted through the public APIs for ``lightspeed tour``.

Each scenario returns a :class:`Scenario`: lines for the terminal, records
for the results store, and the step-time breakdowns the HTML report draws.
The claims quoted beside each prediction are the seed's (see the project's
SEED.md); the numbers next to them come from the catalog and the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from lightspeed.catalog import Catalog, compare_hardware
from lightspeed.sol import MemoryPlan, TrainingEstimate, fabric_comparison, plan_memory
from lightspeed.sol.validation.structured import METRIC_UNITS
from lightspeed.store import NewRecord
from lightspeed.tour.scenarios import (
    DEEPSEEK_PRETRAIN_GPU_HOURS,
    DEEPSEEK_SYSTEM,
    GPT_MOE_SYSTEMS,
    NVIDIA_GPT_MOE_HEADLINE_RATIO,
    NVIDIA_GPT_MOE_TOKENS_PER_S_PER_GPU,
    NVL72_VS_INFINIBAND,
    SEED_FABRIC_BANDWIDTH_BYTES_PER_S,
    SEED_FABRIC_LATENCY_S,
    SeedFigure,
    deepseek_v3_training,
    gpt_moe_comparison,
    nvl72_vs_infiniband_training,
)
from lightspeed.units import (
    format_bytes,
    format_bytes_per_s,
    format_duration,
    format_flop,
    format_memory,
    format_percent,
    format_significant,
    quotient_of_shown,
)
from lightspeed.workload import ModelRegistry, training_flop

# within this share of the seed's figure the tool's is said to agree with it
AGREES_WITHIN: Final = 0.15
# seed claim 4's training FLOPs for 100T dense parameters on 29T tokens
SEED_100T_FLOP: Final = 1.2e29
# a figure on the end of a range in floating point (5 us as 4.999... us) is inside it
RANGE_ROUNDING: Final = 1e-9
# an exposed-communication share below this is "a few %", at or above it "tens of %"
TENS_OF_PERCENT: Final = 0.10
# GPU-hours (hours of wall time x GPUs), as the published rows write them: a bare "h" would read as
# 2.5 million hours of wall time
GPU_HOURS_UNIT: Final = METRIC_UNITS["gpu_hours"]


def verdict(value: float, claimed: SeedFigure) -> str:
    """How a figure the tool computes stands against the seed's figure or range: ``agrees (+4%)``
    within :data:`AGREES_WITHIN` of a figure, ``within its range``, or by how much it does not hold."""
    if isinstance(claimed, tuple):
        low, high = claimed
        if low * (1.0 - RANGE_ROUNDING) <= value <= high * (1.0 + RANGE_ROUNDING):
            return "within its range"
        if value < low:
            return f"does not hold: {value / low:.2g}x its low end"
        return f"does not hold: {value / high:.2g}x its high end"
    ratio = value / claimed
    if abs(ratio - 1.0) <= AGREES_WITHIN:
        return f"agrees ({ratio - 1.0:+.0%})"
    if ratio < 1.0:
        return f"does not hold: the seed's figure is {1.0 / ratio:.2g}x this"
    return f"does not hold: this is {ratio:.2g}x the seed's"


def _share_verdict(share: float, *, few: bool) -> str:
    """The seed's "a few %" (``few``) or "tens of %" against an exposed-communication share."""
    holds = share < TENS_OF_PERCENT if few else share >= TENS_OF_PERCENT
    return "holds" if holds else f"does not hold for the best plan ({format_percent(share)})"


@dataclass(frozen=True)
class Scenario:
    """What one scenario found: terminal lines, store records, report breakdowns."""

    title: str
    lines: tuple[str, ...]
    records: tuple[NewRecord, ...] = ()
    estimates: tuple[TrainingEstimate, ...] = field(default_factory=tuple)


ScenarioFunction = Callable[[Catalog, ModelRegistry], Scenario]


def memory_100t(catalog: Catalog, models: ModelRegistry) -> Scenario:
    """Seed claim 4: 100T dense parameters, 29T tokens; weights on B200 and B300."""
    model = models.get("dense-100t")
    flop = training_flop(model, num_tokens=29e12).total_flop
    lines = [
        f"training FLOPs for 29T tokens: {format_flop(flop)} "
        f"(6ND; the seed's ~1.2e29: {verdict(flop, SEED_100T_FLOP)})"
    ]
    # every record says which way is better: the gate must not guess it from units like FLOP or GPU
    records = [
        NewRecord(
            name="100T training FLOP",
            metric="flop",
            value=flop,
            unit="FLOP",
            payload={"lower_is_better": True},
        )
    ]
    for device, (gpus, nodes) in (("b200-sxm", (1000, 125)), ("b300-sxm", (700, 86))):
        plan = plan_memory(model=model, precision="bf16", accelerator=catalog.accelerator(device))
        lines.append(_weights_line(plan, device, gpus, nodes))
        records.append(
            NewRecord(
                name=f"100T weights on {device}",
                metric="gpus_needed",
                value=float(plan.gpus_needed or 0),
                unit="GPU",
                payload={**plan.to_dict(), "lower_is_better": True},
            )
        )
    return Scenario("100T-parameter memory plan", tuple(lines), tuple(records))


def _listed_bytes(plan: MemoryPlan) -> float:
    """The per-GPU memory the datasheet lists (the usable figure where none is listed apart)."""
    return plan.memory_listed_bytes or plan.memory_usable_bytes or 0.0


def _seed_arithmetic(plan: MemoryPlan, device: str) -> str:
    """How the seed reached its GPU count for ``device``, with the numbers: on B200 (its stated
    basis: 180 GB per GPU) it divided the weights in TiB by the GB (181.9 TiB / 180 GB ~ 1,011,
    where TB / GB give 1,112); on B300 it read the nominal 288 GiB as 288 GB (200 TB / 288 GB)."""
    weights, listed = plan.total_bytes, _listed_bytes(plan)
    if device.startswith("b200"):
        mixed = (weights / 2**40) / (listed / 1e12)  # TiB over TB-scaled GB: the seed's mix
        tib = format_bytes(weights, binary=True)
        return f"its ~1,000 is {tib} / {format_bytes(listed)} = {mixed:,.0f}, TiB divided by GB"
    nominal_gib = (plan.memory_nominal_bytes or 0.0) / 2**30
    as_gb = weights / (nominal_gib * 1e9)
    return (
        f"its ~700 is {format_bytes(weights)} / {nominal_gib:g} GB = {as_gb:,.0f}, "
        f"the nominal {nominal_gib:g} GiB read as GB"
    )


def _weights_line(plan: MemoryPlan, device: str, gpus: int, nodes: int) -> str:
    """One device's GPUs and nodes for the 100T weights at its listed memory (the seed's basis on
    B200: 180 GB), and at the driver's figure where that differs, beside the seed's ~GPUs and
    ~nodes and the arithmetic behind them (:func:`_seed_arithmetic`)."""
    listed = _listed_bytes(plan)
    at_listed = plan.gpus_needed_at_listed or plan.gpus_needed or 0
    nodes_listed = plan.nodes_needed_at_listed or plan.nodes_needed or 0
    per_node = plan.gpus_per_node
    device_count = ""
    if plan.memory_device_bytes is not None and plan.memory_device_bytes != listed:
        device_count = (
            f"{plan.gpus_needed_at_device or 0:,} GPUs, {plan.nodes_needed_at_device} nodes of {per_node} "
            f"at the {format_bytes(plan.memory_device_bytes)} the driver reports; "
        )
    gpu_verdict, node_verdict = verdict(float(at_listed), gpus), verdict(float(nodes_listed), nodes)
    weights = f"{format_bytes(plan.total_bytes)} ({format_bytes(plan.total_bytes, binary=True)})"
    return (
        f"bf16 weights {weights} on {device}: {device_count}{at_listed:,} GPUs, {nodes_listed} nodes of "
        f"{per_node} at the {format_bytes(listed)} listed (seed: ~{gpus:,} GPUs: {gpu_verdict}, ~{nodes} "
        f"nodes: {node_verdict}; {_seed_arithmetic(plan, device)}; weights only)"
    )


def h100_vs_h800(catalog: Catalog, models: ModelRegistry) -> Scenario:
    """Seed claim 1: only NVLink and FP64 differ between H100 and H800."""
    lines = []
    records: list[NewRecord] = []
    for pair in (("h100-pcie", "h800-pcie"), ("h100-sxm", "h800-sxm")):
        comparison = compare_hardware(catalog=catalog, names=pair)
        differing = [row for row in comparison.rows if row.differs]
        same = [row.label for row in comparison.rows if not row.differs and row.field in ("bf16", "fp8")]
        cuts = ", ".join(
            f"{row.label} x{row.ratios[1]:.3g}" for row in differing if row.ratios[1] is not None
        )
        lines.append(f"{pair[1]} vs {pair[0]}: {cuts or 'no difference'}; same: {', '.join(same) or '-'}")
        records.extend(
            NewRecord(
                name=f"{pair[1]} vs {pair[0]} {row.field}",
                metric="ratio",
                value=row.ratios[1],
                unit="1",
                payload={"lower_is_better": False},  # the H800's figure over the H100's: more is more
            )
            for row in differing
            if row.ratios[1] is not None
        )
    return Scenario("H100 vs H800", tuple(lines), tuple(records))


def _estimate_record(name: str, estimate: TrainingEstimate, system: str) -> NewRecord:
    """A training estimate as a stored record: its payload's ``system`` is the catalog system
    (``dgx-h100``, what ``results list --where system=...`` matches), ``cluster`` the estimate's
    description of the whole cluster (``9 x dgx-h100 over ib-ndr``)."""
    return NewRecord(
        name=name,
        metric="step_time_s",
        value=estimate.step_time_s,
        unit="s",
        payload={**estimate.to_dict(), "system": system, "cluster": estimate.system, "lower_is_better": True},
    )


def _catalog_systems(catalog: Catalog, clusters: Sequence[str]) -> tuple[str, ...]:
    """The catalog system of each cluster name (``9xdgx-h100@ib-ndr`` -> ``dgx-h100``)."""
    return tuple(catalog.resolve_cluster(name).system.name for name in clusters)


def _comm_share(estimate: TrainingEstimate) -> float:
    return (
        sum(value for part, value in estimate.breakdown_s.items() if part.endswith("_comm"))
        / estimate.step_time_s
    )


def _deepseek_memory(estimate: TrainingEstimate) -> str:
    """The memory of DeepSeek-V3's plan, which ran: the engine's figure beside the usable, and how
    far over it is where the engine does not fit what did run (its error, said plainly)."""
    needed, usable = estimate.memory_per_gpu_bytes, estimate.usable_memory_bytes
    figures = f"{format_memory(needed)} a GPU of {format_memory(usable)} usable"
    if estimate.fits:
        return f"fits ({figures})"
    return (
        f"{figures}: {format_percent(needed / usable - 1.0)} over, for a plan that ran (the engine's "
        "memory model overstates it; each loss's logits are counted at 8 bytes, DeepSeek's loss code "
        "being unpublished)"
    )


def deepseek_v3_on_h800(catalog: Catalog, models: ModelRegistry) -> Scenario:
    """Seed claim 2: DeepSeek-V3 pre-training on 2,048 H800 with DualPipe and EP."""
    estimate = deepseek_v3_training(catalog, models)
    hours = estimate.gpu_hours or 0.0
    lines = (
        f"{estimate.system}, PP16 DualPipe, EP64, FP8: step {format_duration(estimate.step_time_s)}, "
        f"MFU {format_percent(estimate.mfu)}, exposed communication {format_percent(_comm_share(estimate))}",
        f"14.8T tokens: {hours / 1e6:.2f}M GPU-hours predicted vs 2.664M published "
        f"({verdict(hours, DEEPSEEK_PRETRAIN_GPU_HOURS)}); memory {_deepseek_memory(estimate)}",
        f"bound: {estimate.bound}",
    )
    record = NewRecord(
        name="deepseek-v3 on 2048 h800",
        metric="gpu_hours",
        value=hours,
        unit=GPU_HOURS_UNIT,
        payload={"published_gpu_hours": DEEPSEEK_PRETRAIN_GPU_HOURS, "lower_is_better": True},
    )
    step = _estimate_record("deepseek-v3 on 2048 h800 step", estimate, DEEPSEEK_SYSTEM)
    return Scenario("DeepSeek-V3 on H800", lines, (record, step), (estimate,))


def nvl72_vs_infiniband(catalog: Catalog, models: ModelRegistry) -> Scenario:
    """Seed claim 12: one NVL72 rack vs 9 x 8 H100 over InfiniBand (72 GPUs each): fabric
    figures, then the best Llama-3-70B training plan on each and its exposed communication."""
    clusters = [catalog.resolve_cluster(name) for name in NVL72_VS_INFINIBAND]
    bandwidths, latencies = SEED_FABRIC_BANDWIDTH_BYTES_PER_S, SEED_FABRIC_LATENCY_S
    lines = []
    # NVL72_VS_INFINIBAND names the rack first, the InfiniBand servers second. The seed's 1.8 TB/s
    # is NVLink's bidirectional figure (its claim 11: 18 ports x 100 GB/s bidirectional); its
    # 20-80 GB/s matches a 400 Gb/s NIC per GPU each way (50 GB/s), so it is read per direction.
    for fabric, side in zip(fabric_comparison(clusters), ("nvl72", "infiniband"), strict=True):
        bandwidth, latency = fabric.slowest_bidirectional_bytes_per_s, fabric.small_message_latency_s
        # both clusters span 72 GPUs: each has a fabric (a one-GPU system's figures are None)
        if bandwidth is None or latency is None:
            continue
        compared, reading = (bandwidth, "") if side == "nvl72" else (bandwidth / 2, " read per direction")
        lines.append(
            f"{fabric.system}: slowest link {format_bytes_per_s(bandwidth)} bidirectional per GPU, "
            f"{format_bytes_per_s(bandwidth / 2)} each way (seed{reading}: "
            f"{verdict(compared, bandwidths[side])}), small-message latency {format_duration(latency)} "
            f"(seed: {verdict(latency, latencies[side])})"
        )
    lines.append("  (seed: 1.8 TB/s vs 20-80 GB/s per GPU, 1-2 us vs 5-10 us)")
    training = nvl72_vs_infiniband_training(catalog, models)
    verdicts = []
    for result, side in zip(training.results, ("nvl72", "infiniband"), strict=True):
        lines.append(
            f"llama-3-70b best plan on {result.system} ({result.plan}): "
            f"{result.throughput_tokens_per_s_per_gpu:,.0f} tokens/s per GPU, "
            f"exposed communication {format_percent(result.communication_share)} of the step"
        )
        verdicts.append(_share_verdict(result.communication_share, few=side == "nvl72"))
    lines.append(
        f"  (seed: collective overhead a few % on NVL72: {verdicts[0]}; tens of % over InfiniBand: "
        f"{verdicts[1]})"
    )
    systems = _catalog_systems(catalog, NVL72_VS_INFINIBAND)
    pairs = [
        (result.train, system)
        for result, system in zip(training.results, systems, strict=True)
        if result.train is not None
    ]
    estimates = tuple(estimate for estimate, _ in pairs)
    records = tuple(_estimate_record(f"llama-3-70b on {e.system}", e, system) for e, system in pairs)
    return Scenario("NVL72 vs InfiniBand servers", tuple(lines), records, estimates)


def gpt_moe_inference(catalog: Catalog, models: ModelRegistry) -> Scenario:
    """Seed claim 10: GPT-MoE-1.8T served on 8 x HGX H100 (FP8) vs one GB200 NVL72 (NVFP4)
    under NVIDIA's bounds (32,768 in / 1,024 out tokens, TTFT <= 5 s, 50 ms between tokens)."""
    comparison = gpt_moe_comparison(catalog, models.get("gpt-moe-1.8t"))
    lines = []
    records = []
    shown = [format_significant(result.throughput_tokens_per_s_per_gpu) for result in comparison.results]
    systems = _catalog_systems(catalog, GPT_MOE_SYSTEMS)
    for result, per_gpu, system in zip(comparison.results, shown, systems, strict=True):
        ttft = format_duration(result.ttft_s) if result.ttft_s is not None else "-"
        tpot = format_duration(result.tpot_s) if result.tpot_s is not None else "-"
        lines.append(
            f"{result.system} {result.precision} ({result.plan}): {per_gpu} tokens/s per GPU, "
            f"TTFT {ttft}, between tokens {tpot}"
        )
        records.append(
            NewRecord(
                name=f"gpt-moe-1.8t serving on {result.system}",
                metric="tokens_per_s_per_gpu",
                value=result.throughput_tokens_per_s_per_gpu,
                unit="tokens/s",
                payload={
                    "model": comparison.model,
                    "system": system,
                    "cluster": result.system,
                    "plan": result.infer.plan.to_dict() if result.infer is not None else result.plan,
                    "plan_text": result.plan,
                    "precision": result.precision,
                    "lower_is_better": False,
                },
            )
        )
    h100, gb200 = (f"{NVIDIA_GPT_MOE_TOKENS_PER_S_PER_GPU[key]:g}" for key in ("h100", "gb200"))
    ratio = quotient_of_shown(shown[-1], shown[0])
    claimed = quotient_of_shown(gb200, h100)
    lines.append(
        f"GB200 NVL72 / H100 per GPU: {shown[-1]} / {shown[0]} = {ratio:.1f}x "
        f"(seed: {h100} vs {gb200} tokens/s per GPU = {claimed:.0f}x: {verdict(ratio, claimed)} under "
        f"NVIDIA's bounds; NVIDIA's headline: {NVIDIA_GPT_MOE_HEADLINE_RATIO:g}x, not the quotient of "
        "those figures)"
    )
    return Scenario("GPT-MoE-1.8T inference: GB200 NVL72 vs H100", tuple(lines), tuple(records))


SCENARIOS: Sequence[tuple[str, ScenarioFunction]] = (
    ("100T memory plan", memory_100t),
    ("H100 vs H800", h100_vs_h800),
    ("DeepSeek-V3 on H800", deepseek_v3_on_h800),
    ("NVL72 vs InfiniBand servers", nvl72_vs_infiniband),
    ("GPT-MoE-1.8T inference on GB200 NVL72 vs H100", gpt_moe_inference),
)


def run_scenarios(catalog: Catalog, models: ModelRegistry) -> list[Scenario]:
    """Every available scenario, in the seed's order."""
    return [function(catalog, models) for _, function in SCENARIOS]

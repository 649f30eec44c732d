"""Side-by-side systems: the best plan of one workload on each, and what the topology costs.

``compare_systems`` searches the same model and plan family on every system
(training: :func:`~lightspeed.sol.train.search.search_training`; inference:
:func:`~lightspeed.sol.infer.search.search_inference`) and reports, for each,
the best plan, its throughput, which collectives cross the slow fabric level
and their share of the step, and the limits the topology puts on TP/EP/PP.

``fabric_comparison`` answers the seed's NVL72-vs-InfiniBand question from the
catalog and the collective model alone (per-GPU bandwidth, small-message
latency, one all-reduce over every GPU).
:func:`~lightspeed.sol.decomposition.decompose_ratio` splits a throughput ratio
between two systems into order-independent factors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from lightspeed.catalog import Cluster
from lightspeed.errors import UserInputError
from lightspeed.limits import check_kind
from lightspeed.records import JsonDict, Record
from lightspeed.sol.core import collectives
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.hardware import hardware_for
from lightspeed.sol.infer.estimate import InferenceEstimate
from lightspeed.sol.infer.estimate_notes import part_text
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.infer.plan import PLAN_FAMILIES
from lightspeed.sol.infer.search import auto_precision, search_inference, serving_precision
from lightspeed.sol.train.result import TrainingEstimate, part_label
from lightspeed.sol.train.search import search_training
from lightspeed.units import format_bytes_per_s
from lightspeed.workload import TransformerSpec

WORKLOADS = ("train", "infer")
SMALL_MESSAGE_BYTES = 8.0
LARGE_MESSAGE_BYTES = 2.0**30
_TRAIN_COMM = ("tp_comm", "cp_comm", "ep_comm", "pp_comm", "dp_comm")
_INFER_COMM = ("tp_comm", "ep_comm", "pp_comm")


class LoadEffects(Protocol):
    """What a measured expert load costs one best plan (:class:`lightspeed.moe.ExpertLoadBalance`
    answers it; the engines ask :class:`~lightspeed.sol.core.experts.ExpertBalance` for the factor)."""

    def training_effect(
        self,
        *,
        estimate: TrainingEstimate,
        model: TransformerSpec,
        cluster: Cluster,
        efficiency: EfficiencyModel | None,
    ) -> Record:
        """The effect on a training plan's step."""

    def inference_effect(
        self,
        *,
        estimate: InferenceEstimate,
        model: TransformerSpec,
        cluster: Cluster,
        efficiency: EfficiencyModel | None,
    ) -> Record:
        """The effect on a serving plan's iteration."""


@dataclass(frozen=True)
class TopologyLimits(Record):
    """How a system's fabric constrains parallel group sizes (one GPU: no link, bandwidth ``None``)."""

    scale_up: str
    domain_size: int
    scale_up_bytes_per_s: float | None
    scale_out: str | None
    scale_out_bytes_per_s: float | None
    rules: tuple[str, ...]


@dataclass(frozen=True)
class CollectiveShare(Record):
    """One kind of communication of the best plan: the level it uses and its share of ``per``
    (``step``: the training step or decode iteration; ``ttft``: the time to first token)."""

    name: str
    level: str
    crosses_slow_level: bool
    seconds: float
    share: float
    per: str = "step"


@dataclass(frozen=True)
class SystemResult(Record):
    """The best plan of the workload on one system.

    ``throughput_tokens_per_s`` is training tokens/s or output tokens/s;
    ``step_s`` the training step or the decode iteration it divides. ``expert_load`` is what
    a measured expert load costs the best plan (``None`` without one).
    """

    system: str
    num_gpus: int
    precision: str
    plan: str
    throughput_tokens_per_s: float
    throughput_tokens_per_s_per_gpu: float
    step_s: float
    ttft_s: float | None
    tpot_s: float | None
    bound: str
    collectives: tuple[CollectiveShare, ...]
    communication_share: float
    slow_level_share: float
    limits: TopologyLimits
    train: TrainingEstimate | None
    infer: InferenceEstimate | None
    expert_load: Record | None = None


@dataclass(frozen=True)
class SystemComparison(Record):
    """Every system's best plan, with per-GPU throughput relative to the first system."""

    workload: str
    model: str
    plan_family: str
    results: tuple[SystemResult, ...]
    per_gpu_ratio: tuple[float, ...]


def topology_limits(cluster: Cluster, efficiency: EfficiencyModel | None = None) -> TopologyLimits:
    """The fabric levels of ``cluster`` and the rules they put on TP/EP/PP sizes."""
    fabric = hardware_for(
        cluster, "bf16" if "bf16" in cluster.system.accelerator.compute else "fp32", efficiency
    ).fabric
    up, out = fabric.scale_up, fabric.scale_out
    domain = up.domain_size
    if cluster.num_accelerators < 2:
        return TopologyLimits(
            scale_up=up.name,
            domain_size=domain,
            scale_up_bytes_per_s=None,
            scale_out=None,
            scale_out_bytes_per_s=None,
            rules=("one GPU: no TP, EP or PP group spans GPUs and nothing crosses a fabric",),
        )
    rules = [
        f"TP and EP groups whose size divides {domain} (or is a multiple of it, whole domains each) stay "
        f"on {up.name}; other sizes leave some copies straddling two domains"
    ]
    if out is not None:
        rules.append(
            f"groups larger than {domain} GPUs (TP, EP, attention-DP stages) and PP stages beyond one "
            f"domain cross "
            f"{out.name} at {format_bytes_per_s(out.bandwidth_per_gpu_bytes_per_s)} per GPU instead of "
            f"{format_bytes_per_s(up.bandwidth_per_gpu_bytes_per_s)}"
        )
    else:
        rules.append(f"all {cluster.num_accelerators} GPUs share one scale-up domain: no slow level")
    return TopologyLimits(
        scale_up=up.name,
        domain_size=domain,
        scale_up_bytes_per_s=up.bandwidth_per_gpu_bytes_per_s,
        scale_out=out.name if out is not None else None,
        scale_out_bytes_per_s=out.bandwidth_per_gpu_bytes_per_s if out is not None else None,
        rules=tuple(rules),
    )


def _shares(
    names: Sequence[str], parts: dict[str, float], label: Any, slow: str | None
) -> tuple[CollectiveShare, ...]:
    total = sum(parts.values())
    shares = []
    for name in names:
        seconds = parts.get(name, 0.0)
        if seconds <= 0:
            continue
        text = label(name)
        crosses = slow is not None and slow in text
        level = text.split(" over ", 1)[1] if " over " in text else ""
        shares.append(CollectiveShare(text.split(" over ", 1)[0], level, crosses, seconds, seconds / total))
    return tuple(shares)


def _result(
    *,
    cluster: Cluster,
    precision: str,
    plan: str,
    rate: float,
    step: float,
    bound: str,
    shares: tuple[CollectiveShare, ...],
    limits: TopologyLimits,
    train: TrainingEstimate | None = None,
    infer: InferenceEstimate | None = None,
    num_gpus: int | None = None,
    expert_load: Record | None = None,
) -> SystemResult:
    gpus = num_gpus or cluster.num_accelerators
    return SystemResult(
        system=cluster.name,
        num_gpus=gpus,
        precision=precision,
        plan=plan,
        throughput_tokens_per_s=rate,
        throughput_tokens_per_s_per_gpu=rate / gpus,
        step_s=step,
        ttft_s=infer.ttft_s if infer is not None else None,
        tpot_s=infer.tpot_s if infer is not None else None,
        bound=bound,
        collectives=shares,
        communication_share=sum(share.share for share in shares if share.per == "step"),
        slow_level_share=sum(
            share.share for share in shares if share.crosses_slow_level and share.per == "step"
        ),
        limits=limits,
        train=train,
        infer=infer,
        expert_load=expert_load,
    )


def _train_result(
    model: TransformerSpec,
    cluster: Cluster,
    precision: str,
    options: JsonDict,
    efficiency: EfficiencyModel | None,
) -> SystemResult:
    domain = cluster.system.scale_up_domain_size
    search = search_training(
        model=model,
        cluster=cluster,
        global_batch_size=options["global_batch"],
        seq_len=options["seq_len"],
        precision=precision,
        top=1,
        efficiency=efficiency,
        max_tp=domain,
        num_gpus=_part_of_node(cluster, options.get("num_gpus")),
        require_fit=True,  # a best plan that cannot run is no comparison
        expert_balance=options.get("expert_balance"),
    )
    best = search.plans[0]
    hardware = hardware_for(cluster, precision, efficiency)
    slow = hardware.fabric.scale_out.name if hardware.fabric.scale_out is not None else None
    shares = _shares(_TRAIN_COMM, best.breakdown_s, lambda name: part_label(name, best.plan, hardware), slow)
    describe = " ".join(
        f"{key}={value}"
        for key, value in best.plan_summary().items()
        if key in ("tp", "pp", "dp", "ep", "cp", "zero_stage")
    )
    return _result(
        cluster=cluster,
        precision=precision,
        plan=describe + f" mb={best.plan.micro_batch_size} {best.plan.recompute}",
        rate=best.tokens_per_s,
        step=best.step_time_s,
        bound=best.bound,
        shares=shares,
        limits=topology_limits(cluster, efficiency),
        train=best,
        expert_load=_train_load(best, model, cluster, options, efficiency),
    )


def _train_load(
    best: TrainingEstimate, model: TransformerSpec, cluster: Cluster, options: JsonDict, efficiency: Any
) -> Record | None:
    balance: LoadEffects | None = options.get("expert_balance")
    if balance is None:
        return None
    return balance.training_effect(estimate=best, model=model, cluster=cluster, efficiency=efficiency)


def _kv_transfer_share(best: InferenceEstimate, fabric: Any, slow: str | None) -> CollectiveShare:
    """The prefill-to-decode KV-cache transfer of a disaggregated plan, as a share of TTFT."""
    assert best.kv_transfer_s is not None
    crosses = best.plan.num_gpus > fabric.scale_up.domain_size and slow is not None
    return CollectiveShare(
        name="KV-cache transfer prefill -> decode",
        level=fabric.level_name(crosses),
        crosses_slow_level=crosses,
        seconds=best.kv_transfer_s,
        share=best.kv_transfer_s / best.ttft_s,
        per="ttft",
    )


def _part_of_node(cluster: Cluster, num_gpus: int | None) -> int | None:
    """``num_gpus`` when it asks for part of a single-node cluster, else ``None`` (all of it)."""
    if num_gpus is not None and cluster.num_nodes == 1 and num_gpus < cluster.num_accelerators:
        return num_gpus
    return None


def batch_text(batch_per_replica: float) -> str:
    """``batch 16``; ``mean batch 39.9`` when sequences in flight average a fraction (a
    disaggregated plan's decode batch, a pipeline's batch over its stages).

    >>> batch_text(16.0), batch_text(39.9252)
    ('batch 16', 'mean batch 39.9')
    """
    if batch_per_replica == round(batch_per_replica):
        return f"batch {batch_per_replica:g}"
    return f"mean batch {batch_per_replica:.1f}"


def best_infer_result(
    model: TransformerSpec,
    cluster: Cluster,
    precision: str,
    options: JsonDict,
    efficiency: EfficiencyModel | None,
) -> SystemResult:
    """The best serving deployment of ``model`` on ``cluster`` in ``precision`` under ``options``
    (as for :func:`compare_systems`); raises :class:`UserInputError` when none meets the bounds."""
    search = search_inference(
        model=model,
        cluster=cluster,
        load=options["load"],
        precision=precision,
        max_ttft_s=options.get("max_ttft_s"),
        max_tpot_s=options.get("max_tpot_s"),
        efficiency=efficiency,
        disaggregated=options.get("disaggregated", False),
        attention_dp=options.get("plan_family", "wide-ep") == "wide-ep",
        num_gpus=_part_of_node(cluster, options.get("num_gpus")),
        expert_balance=options.get("expert_balance"),
    )
    best = search.best
    balance: LoadEffects | None = options.get("expert_balance")
    effect = (
        None
        if balance is None
        else balance.inference_effect(estimate=best, model=model, cluster=cluster, efficiency=efficiency)
    )
    inference_hardware = inference_hardware_for(cluster, best.plan, efficiency, model=model)
    slow = (
        inference_hardware.hardware.fabric.scale_out.name
        if inference_hardware.hardware.fabric.scale_out is not None
        else None
    )
    shares = _shares(
        _INFER_COMM,
        best.iteration_breakdown_s,
        lambda name: part_text(name, inference_hardware, best.plan),
        slow,
    )
    if best.kv_transfer_s is not None:
        shares = (*shares, _kv_transfer_share(best, inference_hardware.hardware.fabric, slow))
    return _result(
        cluster=cluster,
        precision=precision,
        plan=f"{best.plan.describe()} {batch_text(best.batch_per_replica)}",
        rate=best.output_tokens_per_s,
        step=best.iteration_s,
        bound=best.bound,
        shares=shares,
        limits=topology_limits(cluster, efficiency),
        infer=best,
        num_gpus=search.num_gpus,
        expert_load=effect,
    )


def compare_systems(
    *,
    model: TransformerSpec,
    clusters: Sequence[Cluster],
    workload: str,
    precisions: Sequence[str] = (),
    options: JsonDict | None = None,
    efficiency: EfficiencyModel | None = None,
) -> SystemComparison:
    """The best plan of ``workload`` for ``model`` on each cluster (see the module docstring).

    ``precisions`` gives one format per cluster, or one for all, or ``auto``
    (the narrowest the GPU computes in), or for inference ``released`` (the format the
    model is published in); empty means bf16 for training and auto for inference.
    ``options``: training ``global_batch`` and ``seq_len`` (both required);
    inference ``load`` (a :class:`ServingLoad`, required), ``max_ttft_s``, ``max_tpot_s``,
    ``disaggregated``, ``plan_family`` (``tp-ep-pp`` or ``wide-ep``) and
    ``num_gpus`` (part of a single-node system); either workload ``expert_balance`` (an
    :class:`~lightspeed.moe.effect.ExpertLoadBalance` of a measured expert load).

    >>> from lightspeed.catalog import load_catalog
    >>> from lightspeed.sol import ServingLoad
    >>> from lightspeed.workload import load_models
    >>> catalog = load_catalog()
    >>> comparison = compare_systems(model=load_models().get("llama-3-8b"),
    ...     clusters=[catalog.cluster("dgx-h100"), catalog.cluster("dgx-b200")], workload="infer",
    ...     options={"load": ServingLoad(1024, 256)})
    >>> [result.precision for result in comparison.results], comparison.per_gpu_ratio[1] > 1
    (['fp8', 'nvfp4'], True)
    """
    _check_arguments(model, clusters, workload)
    chosen = _precisions(precisions, clusters, workload, model)
    settings = _checked_options(workload, options)
    family = settings.get("plan_family", "wide-ep")
    results = []
    for cluster, precision in zip(clusters, chosen, strict=True):
        build = _train_result if workload == "train" else best_infer_result
        results.append(build(model, cluster, precision, settings, efficiency))
    first = results[0].throughput_tokens_per_s_per_gpu
    return SystemComparison(
        workload=workload,
        model=model.name,
        plan_family=family if workload == "infer" else "tp-pp-dp-ep-cp",
        results=tuple(results),
        per_gpu_ratio=tuple(result.throughput_tokens_per_s_per_gpu / first for result in results),
    )


# what each workload's options must hold, with an example of each (compare_systems' docstring)
_REQUIRED_OPTIONS: dict[str, dict[str, str]] = {
    "train": {"global_batch": "256 (sequences per step)", "seq_len": "4096 (tokens)"},
    "infer": {"load": "ServingLoad(input_tokens=1024, output_tokens=128)"},
}
_OTHER_OPTIONS = ("max_ttft_s", "max_tpot_s", "disaggregated", "plan_family", "num_gpus", "expert_balance")
_CLUSTERS_EXAMPLE = "[lightspeed.cluster('dgx-h100'), lightspeed.cluster('dgx-b200')]"


def _check_arguments(model: object, clusters: object, workload: object) -> None:
    """Refuse arguments :func:`compare_systems` does not take with :class:`UserInputError` naming
    the argument and what to pass (a system's name where its cluster belongs, say)."""
    check_kind("model", model, TransformerSpec, "lightspeed.model('llama-3-70b')")
    if isinstance(clusters, (str, Cluster)) or not isinstance(clusters, Sequence):
        raise UserInputError(
            f"clusters must be a list of clusters ({_CLUSTERS_EXAMPLE}), not the {type(clusters).__name__} "
            f"{clusters!r:.60}"
        )
    for cluster in clusters:
        check_kind("each of clusters", cluster, Cluster, _CLUSTERS_EXAMPLE, what="a cluster")
    if not clusters:
        raise UserInputError("name at least one system to compare")
    if workload not in WORKLOADS:
        raise UserInputError(f"workload {workload!r} is not one of {', '.join(WORKLOADS)}")


def _checked_options(workload: str, options: object) -> JsonDict:
    """``options`` (a dict or ``None``) when they hold what ``workload`` needs and no key either
    workload does not read (a typo such as ``lod`` is named, not dropped)."""
    if options is not None and not isinstance(options, dict):
        raise UserInputError(
            f"options must be a dict (e.g. {{'seq_len': 4096}}), not the {type(options).__name__}"
        )
    settings = dict(options or {})
    required = _REQUIRED_OPTIONS[workload]
    every = {*_REQUIRED_OPTIONS["train"], *_REQUIRED_OPTIONS["infer"], *_OTHER_OPTIONS}
    unknown = sorted(key for key in settings if key not in every)
    if unknown:
        listed = ", ".join((*required, *_OTHER_OPTIONS))
        raise UserInputError(
            f"compare_systems has no option {unknown[0]!r}; the {workload} options: {listed}"
        )
    for key, example in required.items():
        if settings.get(key) is None:
            raise UserInputError(f"workload {workload!r} needs options[{key!r}], e.g. {example}")
    family = settings.get("plan_family", "wide-ep")
    if family not in PLAN_FAMILIES:
        raise UserInputError(f"plan family {family!r} is not one of {', '.join(PLAN_FAMILIES)}")
    return settings


def _precisions(
    precisions: Sequence[str], clusters: Sequence[Cluster], workload: str, model: TransformerSpec
) -> list[str]:
    values = list(precisions) or ["bf16" if workload == "train" else "auto"]
    if len(values) == 1:
        values = values * len(clusters)
    if len(values) != len(clusters):
        raise UserInputError(
            f"{len(values)} precisions for {len(clusters)} systems; give one for all or one per system"
        )
    if workload == "infer":  # released or auto, as --precision reads them
        return [
            serving_precision(value, model=model, cluster=cluster)
            for value, cluster in zip(values, clusters, strict=True)
        ]
    return [
        auto_precision(cluster) if value == "auto" else value
        for value, cluster in zip(values, clusters, strict=True)
    ]


@dataclass(frozen=True)
class FabricFigures(Record):
    """One system's fabric as one GPU sees it (seed claim 12). A system of one GPU has no fabric:
    its bandwidth, latency and all-reduce figures are ``None`` and ``note`` says why."""

    system: str
    num_gpus: int
    scale_up: str
    domain_size: int
    scale_up_bytes_per_s: float | None
    scale_out: str | None
    scale_out_bytes_per_s: float | None
    slowest_bytes_per_s: float | None
    slowest_bidirectional_bytes_per_s: float | None
    small_message_latency_s: float | None
    small_all_reduce_s: float | None
    large_all_reduce_s: float | None
    large_all_reduce_bus_bytes_per_s: float | None
    note: str = ""


ONE_GPU_NOTE = "one GPU: no other GPU to reach, so no fabric and no all-reduce"


def fabric_figures(cluster: Cluster, efficiency: EfficiencyModel | None = None) -> FabricFigures:
    """Per-GPU bandwidth of the slowest level a job over every GPU crosses, its one-hop latency,
    and an 8-byte and a 1 GiB all-reduce over all GPUs on the collective model. A system of one
    GPU (an accelerator or a MIG slice named as a system) has none of these: they are ``None``.

    >>> from lightspeed.catalog import load_catalog
    >>> figures = fabric_figures(load_catalog().resolve_cluster("9xdgx-h100@ib-ndr"))
    >>> figures.slowest_bytes_per_s / 1e9, figures.small_message_latency_s * 1e6  # GB/s, us
    (50.0, 5.0)
    >>> single = fabric_figures(load_catalog().resolve_cluster("h100-sxm"))
    >>> single.num_gpus, single.large_all_reduce_s, single.note
    (1, None, 'one GPU: no other GPU to reach, so no fabric and no all-reduce')
    """
    fabric = hardware_for(cluster, "bf16", efficiency).fabric
    up, out = fabric.scale_up, fabric.scale_out
    gpus = cluster.num_accelerators
    if gpus < 2:
        return FabricFigures(
            system=cluster.name,
            num_gpus=gpus,
            scale_up=up.name,
            domain_size=up.domain_size,
            scale_up_bytes_per_s=None,
            scale_out=None,
            scale_out_bytes_per_s=None,
            slowest_bytes_per_s=None,
            slowest_bidirectional_bytes_per_s=None,
            small_message_latency_s=None,
            small_all_reduce_s=None,
            large_all_reduce_s=None,
            large_all_reduce_bus_bytes_per_s=None,
            note=ONE_GPU_NOTE,
        )
    slowest = out if out is not None else up
    small = float(collectives.all_reduce_s(fabric, SMALL_MESSAGE_BYTES, gpus))
    large = float(collectives.all_reduce_s(fabric, LARGE_MESSAGE_BYTES, gpus))
    return FabricFigures(
        system=cluster.name,
        num_gpus=gpus,
        scale_up=up.name,
        domain_size=up.domain_size,
        scale_up_bytes_per_s=up.bandwidth_per_gpu_bytes_per_s,
        scale_out=out.name if out is not None else None,
        scale_out_bytes_per_s=out.bandwidth_per_gpu_bytes_per_s if out is not None else None,
        slowest_bytes_per_s=slowest.bandwidth_per_gpu_bytes_per_s,
        slowest_bidirectional_bytes_per_s=2.0 * slowest.bandwidth_per_gpu_bytes_per_s,
        small_message_latency_s=slowest.latency_s,
        small_all_reduce_s=small,
        large_all_reduce_s=large,
        large_all_reduce_bus_bytes_per_s=2.0 * (gpus - 1) / gpus * LARGE_MESSAGE_BYTES / large,
    )


def fabric_comparison(
    clusters: Sequence[Cluster], efficiency: EfficiencyModel | None = None
) -> tuple[FabricFigures, ...]:
    """:func:`fabric_figures` of each cluster."""
    return tuple(fabric_figures(cluster, efficiency) for cluster in clusters)


__all__ = [
    "PLAN_FAMILIES",
    "WORKLOADS",
    "CollectiveShare",
    "FabricFigures",
    "SystemComparison",
    "SystemResult",
    "TopologyLimits",
    "auto_precision",
    "best_infer_result",
    "compare_systems",
    "fabric_comparison",
    "fabric_figures",
    "topology_limits",
]

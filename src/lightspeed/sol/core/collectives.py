"""Collectives on a two-level fabric, alpha-beta cost, vectorized over plans.

Level 0 is the scale-up domain (NVLink/NVSwitch inside an HGX node or an NVL72
rack, xGMI, ICI); level 1 the scale-out network (InfiniBand, RoCE). A
parallel group of ``group_size`` ranks with ``local_size`` of them per domain
spans ``group_size / local_size`` domains. Costs follow nccl-tests' bus
bandwidth conventions (REFERENCE.md section 4):

* all-reduce, ring inside a domain: ``2(g-1)/g x S / B0``; with in-network
  reduction (NVLS/SHARP) ``S / B0``; across domains, hierarchical and pipelined
  (reduce-scatter inside, all-reduce of ``S/l`` across on ``l`` NICs in
  parallel, all-gather inside): ``max(2(l-1)/l x S / B0, 2(n-1)/n x S / (l x B1))``;
* all-gather / reduce-scatter: half of that (``(g-1)/g`` instead of ``2(g-1)/g``);
* all-to-all: each rank sends ``(l-1)/g`` of its buffer inside and ``(g-l)/g``
  across, both at once: ``max((l-1)/g x S / B0, (g-l)/g x S / B1)``;
* send/recv: ``S / B``.

A TPU slice's scale-up level is a torus, not a switch (``torus_dimensions``):
a chip has a port to each side of each axis, ``B_port = B0 / (2 x axes)`` one
way. A ring collective over a group uses only the axes the group spans, each
at ``2 B_port`` where the group closes the axis's wraparound ring and ``B_port``
where it is a line (no wraparound; the JAX scaling book, "Sharded matrices":
an all-gather over one axis takes ``V / W_bidirectional``, over ``n`` axes
``V / (n W_bidirectional)``, and twice as long without the wraparound). So
``B0`` above becomes ``B_port x sum over spanned axes (2 if ring else 1)``,
which is the whole ``B0`` for a group spanning every axis of a full torus (as
Google's all-reduce bandwidth per pod, chips x one-way ICI per chip, assumes).
An all-to-all on a ring of ``X`` chips moves each byte ``X/4`` hops on average
(``X/8`` per direction with the wraparound): ``(l/g) x S x max_axis(X / c) /
B_port`` with ``c = 8`` on a ring and ``4`` on a line. A point-to-point
transfer uses two ports (``2 B_port``).

``B0``/``B1`` are per-GPU one-way bandwidths times the collective bandwidth
efficiency; the latency term is the fabric's ``base_latency_s`` (what NCCL's
tuner charges every collective before its first hop: 6.6 us for the LL
protocol of small messages, ``sol/data/runtime.toml``) plus ``min(ring,
tree)`` steps times the slowest level's alpha (the link's small-message
latency): a decode step's all-reduce of a few KiB is all latency. Inside one
NVLink domain a ring collective runs the fastest of NCCL's ring protocols
(:class:`RingProtocols`, NCCL's own tuner constants in ``sol/data/runtime.toml``):
the small-message protocol above at half the ring's bandwidth (LL), LL128 and
Simple with their larger fixed latencies and a latency per ring step; a
message of a few MiB (a prefill chunk's activations, a large decode batch's)
pays tens of microseconds there, as nccl-tests measure, not the few a pure
alpha-beta model gives it; an all-reduce the switches reduce in the network
(NVLS) pays its own measured latency (``in_switch_latency_s``) before its
bandwidth, so it wins over the rings only from some tens of MiB. Every
function accepts numpy arrays and broadcasts.

The same concept one layer up, measured: :mod:`lightspeed.bench.collectives` times them on this
machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lightspeed.catalog import Cluster
from lightspeed.records import Record

Array = Any  # numpy array or scalar, broadcastable


@dataclass(frozen=True)
class FabricLevel(Record):
    """One level of the fabric as seen by one GPU."""

    name: str
    domain_size: int
    bandwidth_per_gpu_bytes_per_s: float
    latency_s: float
    in_network_reduction: bool
    torus_dimensions: tuple[int, ...] = ()
    torus_wraparound: tuple[bool, ...] = ()

    @property
    def port_bytes_per_s(self) -> float:
        """One-way bandwidth of one torus port (``B0 / (2 x axes)``); ``B0`` for a switch."""
        return self.bandwidth_per_gpu_bytes_per_s / max(1, 2 * len(self.torus_dimensions))


@dataclass(frozen=True)
class RingProtocol(Record):
    """One of NCCL's ring protocols as its tuner costs it (``src/graph/tuning.cc``): a fixed
    latency, a latency per ring step on the link, and the share of the ring's bandwidth its
    transfers carry (LL128 sends 120 of every 128 bytes as data: 0.92)."""

    name: str
    base_latency_s: float
    step_latency_s: float
    bandwidth_share: float


@dataclass(frozen=True)
class RingProtocols(Record):
    """How NCCL runs a ring collective inside one scale-up domain whose link is one of
    ``link_families``: the fastest of the small-message protocol (LL: the fabric's base
    latency and link alpha, at ``ll_bandwidth_share`` of the ring's bandwidth, since half of
    every LL word is a flag) and ``protocols`` (LL128, Simple). An all-reduce the switches
    reduce in the network (NVLS) costs ``in_switch_latency_s`` plus its bytes at the in-switch
    bandwidth (``sol/data/runtime.toml`` [collectives.protocols] cites each)."""

    link_families: tuple[str, ...]
    ll_bandwidth_share: float
    protocols: tuple[RingProtocol, ...]
    in_switch_latency_s: float


@dataclass(frozen=True)
class Fabric(Record):
    """The two levels a cluster's GPUs talk over, the efficiency reached on them, and the
    fixed latency of one collective before its first hop (``base_latency_s``).
    ``reduction_efficiency``: the algorithm bandwidth an all-reduce reduced in the scale-up switches
    is measured at, over the per-direction link (0: none measured; each byte crosses the link once
    at ``bandwidth_efficiency``). ``ring_protocols``: NCCL's ring protocols on the scale-up link
    (None: one alpha-beta cost at every size, as on links NCCL's constants do not describe)."""

    scale_up: FabricLevel
    scale_out: FabricLevel | None
    bandwidth_efficiency: float
    base_latency_s: float = 0.0
    reduction_efficiency: float = 0.0
    ring_protocols: RingProtocols | None = None

    def level_name(self, crosses_domains: bool) -> str:
        """Human name of the level a group uses (for 'bound by' sentences)."""
        if crosses_domains and self.scale_out is not None:
            return self.scale_out.name
        return self.scale_up.name


def fabric_of(
    cluster: Cluster,
    bandwidth_efficiency: float,
    scale_out_reduction: bool = False,
    *,
    base_latency_s: float = 0.0,
    reduction_efficiency: float = 0.0,
    ring_protocols: RingProtocols | None = None,
) -> Fabric:
    """The fabric levels of ``cluster`` from its catalog records.

    ``scale_out_reduction`` says the scale-out switches reduce in the network
    (InfiniBand SHARP): the cross-node part of an all-reduce then moves each byte
    once instead of ``2(n-1)/n`` times. ``base_latency_s`` is charged once per
    collective (NCCL's base latency; the engines pass ``runtime.toml``'s);
    ``reduction_efficiency`` the in-switch all-reduce's measured algorithm bandwidth over the link
    (the family's ``nvls_all_reduce_efficiency``); ``ring_protocols`` apply where the scale-up
    link's family is one of theirs.
    """
    system = cluster.system
    accelerator = system.accelerator
    scale_up = accelerator.scale_up
    protocols = None
    if (
        scale_up is not None
        and ring_protocols is not None
        and scale_up.link.family in ring_protocols.link_families
    ):
        protocols = ring_protocols
    if scale_up is not None and system.scale_up_domain_size > 1:
        up = FabricLevel(
            name=f"{scale_up.link.display_name.split(' (')[0]} ({system.scale_up_domain_size}-GPU domain)",
            domain_size=system.scale_up_domain_size,
            bandwidth_per_gpu_bytes_per_s=scale_up.per_direction_bytes_per_s,
            latency_s=scale_up.link.latency_s,
            in_network_reduction=system.in_network_reduction,
            torus_dimensions=system.torus_dimensions,
            torus_wraparound=system.torus_wraparound,
        )
    else:
        # One device per domain: nothing travels at this level.
        up = FabricLevel("no scale-up link", 1, accelerator.memory_bandwidth_bytes_per_s, 0.0, False)
    out = None
    fabric = cluster.fabric
    if fabric is not None and cluster.num_nodes > 1:
        out = FabricLevel(
            name=f"{fabric.link.display_name.split(' (')[0]} (scale-out)",
            domain_size=cluster.num_accelerators,
            bandwidth_per_gpu_bytes_per_s=cluster.scale_out_per_accelerator_bytes_per_s(),
            latency_s=fabric.link.latency_s,
            in_network_reduction=scale_out_reduction,
        )
    return Fabric(
        scale_up=up,
        scale_out=out,
        bandwidth_efficiency=bandwidth_efficiency,
        base_latency_s=base_latency_s,
        reduction_efficiency=reduction_efficiency,
        ring_protocols=protocols,
    )


def local_size(group_size: Array, stride: Array, domain_size: int) -> Array:
    """Members of a group per scale-up domain, for a group of ``group_size`` ranks
    ``stride`` apart in rank order (ranks fill domains consecutively)."""
    group = np.asarray(group_size, dtype=np.float64)
    step = np.asarray(stride, dtype=np.float64)
    per_domain = np.maximum(np.floor(domain_size / step), 1.0)
    return np.where(step >= domain_size, 1.0, np.minimum(group, per_domain))


def _torus_axes(level: FabricLevel, group: Array, stride: Array) -> list[tuple[Array, Array]]:
    """Per torus axis: (whether the group spans it, its ring factor: 2 where the group closes the
    axis's wraparound ring, 1 on a line). Ranks fill the axes in order, the shortest first."""
    g = np.asarray(group, dtype=np.float64)
    step = np.asarray(stride, dtype=np.float64)
    axes = []
    block = 1.0
    for size, wraps in zip(level.torus_dimensions, level.torus_wraparound, strict=True):
        period = block * size
        spans = (g > 1) & ((g - 1.0) * step >= block) & (np.mod(step, period) != 0)
        whole = spans & (g * step >= period) & (step <= block)
        axes.append((spans, np.where(whole & wraps, 2.0, 1.0)))
        block = period
    return axes


def torus_bandwidth_bytes_per_s(level: FabricLevel, group: Array, stride: Array = 1) -> Array:
    """One-way bandwidth a group of ``group`` ranks ``stride`` apart drives per chip inside the
    level: ``B_port x sum over spanned axes of the ring factor`` on a torus, ``B0`` on a switch.

    >>> pod = FabricLevel("ici", 256, 200e9, 1e-6, False, (16, 16), (True, True))
    >>> float(torus_bandwidth_bytes_per_s(pod, 256)) / 1e9, float(torus_bandwidth_bytes_per_s(pod, 16)) / 1e9
    (200.0, 100.0)
    """
    if not level.torus_dimensions:
        return np.broadcast_to(level.bandwidth_per_gpu_bytes_per_s, np.shape(np.asarray(group))) * 1.0
    total = sum((np.where(spans, factor, 0.0) for spans, factor in _torus_axes(level, group, stride)), 0.0)
    return level.port_bytes_per_s * np.maximum(total, 1.0)


def _torus_all_to_all_hops(level: FabricLevel, group: Array, stride: Array) -> Array:
    """``max over spanned axes of X / c`` (``X`` the group's extent on the axis, ``c`` 8 on a ring
    and 4 on a line), the all-to-all's bytes per port relative to ``S``; 0 on a switch."""
    if not level.torus_dimensions:
        return np.zeros(np.shape(np.asarray(group)))
    g = np.asarray(group, dtype=np.float64)
    step = np.asarray(stride, dtype=np.float64)
    worst = np.zeros(np.broadcast(g, step).shape)
    block = 1.0
    for size, (spans, factor) in zip(level.torus_dimensions, _torus_axes(level, group, stride), strict=True):
        contiguous = np.minimum(size, np.ceil(g * step / block))
        extent = np.where(step <= block, contiguous, np.minimum(size, g))
        worst = np.maximum(worst, np.where(spans, extent / (4.0 * factor), 0.0))
        block *= size
    return worst


def _levels(
    fabric: Fabric, group: Array, local: Array, stride: Array = 1
) -> tuple[Array, Array, Array, Array]:
    """(domains, B0, B1, alpha) with efficiencies applied (``B0`` for this group on a torus)."""
    efficiency = fabric.bandwidth_efficiency
    b0 = torus_bandwidth_bytes_per_s(fabric.scale_up, local, stride) * efficiency
    out = fabric.scale_out
    b1 = (out.bandwidth_per_gpu_bytes_per_s if out is not None else b0 / efficiency) * efficiency
    domains = np.maximum(np.asarray(group, dtype=np.float64) / local, 1.0)
    crosses = domains > 1.0
    alpha = np.where(crosses, out.latency_s if out is not None else 0.0, fabric.scale_up.latency_s)
    return domains, b0, b1, alpha


def _latency(fabric: Fabric, steps_ring: Array, group: Array, alpha: Array) -> Array:
    """The collective's base latency plus ``min(ring, tree)`` steps of ``alpha`` each."""
    tree_steps = 2.0 * np.ceil(np.log2(np.maximum(group, 1.0)))
    return fabric.base_latency_s + np.minimum(steps_ring, tree_steps) * alpha


def _nics(local: Array, flat: Array) -> Array:
    """NICs a group's cross-domain traffic spreads over: all ``local`` members' (hierarchical
    or multi-channel rings) or one per rank (``flat``: one flat ring per rank, as ZeRO-3
    parameter gathers run in practice)."""
    return np.where(np.asarray(flat, dtype=bool), 1.0, local)


def _in_switch_s(fabric: Fabric, size: Array, b0: Array) -> Array:
    """Seconds an all-reduce of a ``size``-byte buffer reduced in the scale-up switches (NVLS)
    takes: each byte crosses the link once each way, at the measured share of the link such
    all-reduces reach (``reduction_efficiency``), else at the fabric's efficiency (``b0``)."""
    efficiency = fabric.reduction_efficiency
    if efficiency <= 0.0:
        return size / b0
    result: Array = size / (fabric.scale_up.bandwidth_per_gpu_bytes_per_s * efficiency)
    return result


def _in_domain_ring_s(
    protocols: RingProtocols, transfer_s: Array, steps: Array, small_latency_s: Array
) -> Array:
    """Seconds a ring collective inside one domain takes on the fastest of NCCL's ring
    ``protocols`` (:class:`RingProtocols`), ``transfer_s`` its transfers at the ring's full
    bandwidth and ``steps`` its ring steps; LL pays the fabric's small-message latency
    (``small_latency_s``, :func:`_latency`)."""
    best = small_latency_s + transfer_s / protocols.ll_bandwidth_share
    for protocol in protocols.protocols:
        cost = (
            protocol.base_latency_s + steps * protocol.step_latency_s + transfer_s / protocol.bandwidth_share
        )
        best = np.minimum(best, cost)
    return best


def all_reduce_s(
    fabric: Fabric, size_bytes: Array, group_size: Array, stride: Array = 1, flat: Array = False
) -> Array:
    """All-reduce of a ``size_bytes`` buffer per rank over ``group_size`` ranks. Inside a scale-up
    domain whose switches reduce (NVLS) each byte crosses the link once each way, at the share of
    the link such all-reduces are measured at (``reduction_efficiency``: about 275 GB/s on 8 H100,
    not the 360 of 80% of the 450 GB/s link); a ring is taken where it is faster (2 GPUs), as
    NCCL's tuner does. With ring protocols (:class:`RingProtocols`), a group inside one domain
    takes the fastest of the protocols' rings and the in-switch reduction after its own
    latency (``in_switch_latency_s``)."""
    group = np.asarray(group_size, dtype=np.float64)
    size = np.asarray(size_bytes, dtype=np.float64)
    local = local_size(group, stride, fabric.scale_up.domain_size)
    domains, b0, b1, alpha = _levels(fabric, group, local, stride)
    ring = 2.0 * (local - 1.0) / local * size / b0
    nvls = fabric.scale_up.in_network_reduction & (local > 1)
    in_switch = _in_switch_s(fabric, size, b0)
    intra = np.where(nvls, np.minimum(ring, in_switch), ring)
    sharp = fabric.scale_out is not None and fabric.scale_out.in_network_reduction
    passes = 1.0 if sharp else 2.0 * (domains - 1.0) / domains
    inter = np.where(domains > 1.0, passes, 0.0) * size / (_nics(local, flat) * b1)
    steps = 2.0 * (group - 1.0)
    latency = _latency(fabric, steps, group, alpha)
    time = np.maximum(intra, inter) + latency
    protocols = fabric.ring_protocols
    if protocols is not None:
        rings = _in_domain_ring_s(protocols, ring, steps, latency)
        switch = np.where(nvls, protocols.in_switch_latency_s + in_switch, np.inf)
        time = np.where(domains > 1.0, time, np.minimum(rings, switch))
    return np.where(group > 1, time, 0.0)


def all_gather_s(
    fabric: Fabric, size_bytes: Array, group_size: Array, stride: Array = 1, flat: Array = False
) -> Array:
    """All-gather whose *whole output* is ``size_bytes`` (reduce-scatter costs the same); inside
    one domain, with ring protocols, the fastest protocol's ring of ``g - 1`` steps."""
    group = np.asarray(group_size, dtype=np.float64)
    size = np.asarray(size_bytes, dtype=np.float64)
    local = local_size(group, stride, fabric.scale_up.domain_size)
    domains, b0, b1, alpha = _levels(fabric, group, local, stride)
    intra = (local - 1.0) / local * size / b0
    inter = (domains - 1.0) / domains * size / (_nics(local, flat) * b1)
    latency = _latency(fabric, group - 1.0, group, alpha)
    time = np.maximum(intra, inter) + latency
    protocols = fabric.ring_protocols
    if protocols is not None:
        rings = _in_domain_ring_s(protocols, intra, group - 1.0, latency)
        time = np.where(domains > 1.0, time, rings)
    return np.where(group > 1, time, 0.0)


reduce_scatter_s = all_gather_s


def all_to_all_s(
    fabric: Fabric, size_bytes: Array, group_size: Array, stride: Array = 1, remote_scale: Array = 1.0
) -> Array:
    """All-to-all where each rank sends a ``size_bytes`` buffer spread over the group.

    ``remote_scale`` shrinks the cross-domain part when senders deduplicate
    (one copy per destination node, as DeepEP does for group-limited MoE routing).
    """
    group = np.asarray(group_size, dtype=np.float64)
    size = np.asarray(size_bytes, dtype=np.float64)
    local = local_size(group, stride, fabric.scale_up.domain_size)
    _, b0, b1, alpha = _levels(fabric, group, local, stride)
    intra = (local - 1.0) / group * size / b0
    if fabric.scale_up.torus_dimensions:
        port = fabric.scale_up.port_bytes_per_s * fabric.bandwidth_efficiency
        hops = _torus_all_to_all_hops(fabric.scale_up, local, stride)
        intra = np.maximum(intra, local / group * size * hops / port)
    inter = (group - local) / group * size * remote_scale / b1
    steps = 1.0 + np.log2(np.maximum(group, 1.0))
    time = np.maximum(intra, inter) + fabric.base_latency_s + alpha * steps
    return np.where(group > 1, time, 0.0)


def send_recv_link_bytes_per_s(fabric: Fabric, crosses_domains: Array) -> Array:
    """The link bandwidth one GPU sends to another at, one way (bytes/s, before the fabric's
    efficiency): inside a domain its scale-up link (two ports of a torus), across domains its share
    of the scale-out network (the scale-up link where there is none)."""
    up = fabric.scale_up
    out = fabric.scale_out or up
    inside = 2.0 * up.port_bytes_per_s if up.torus_dimensions else up.bandwidth_per_gpu_bytes_per_s
    return np.where(np.asarray(crosses_domains, dtype=bool), out.bandwidth_per_gpu_bytes_per_s, inside)


def send_recv_s(fabric: Fabric, size_bytes: Array, crosses_domains: Array) -> Array:
    """Point-to-point transfer of ``size_bytes`` inside a domain or across domains: the bytes at
    :func:`send_recv_link_bytes_per_s` times the fabric's efficiency, plus the link's latency and the
    fabric's base latency."""
    size = np.asarray(size_bytes, dtype=np.float64)
    crosses = np.asarray(crosses_domains, dtype=bool)
    out = fabric.scale_out or fabric.scale_up
    latency = np.where(crosses, out.latency_s, fabric.scale_up.latency_s) + fabric.base_latency_s
    bandwidth = send_recv_link_bytes_per_s(fabric, crosses) * fabric.bandwidth_efficiency
    return size / bandwidth + latency


def crosses_domains(fabric: Fabric, group_size: Array, stride: Array) -> Array:
    """Whether a group of ``group_size`` ranks ``stride`` apart leaves its scale-up domain."""
    group = np.asarray(group_size, dtype=np.float64)
    local = local_size(group, stride, fabric.scale_up.domain_size)
    return (group / local) > 1.0

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

A group that does not tile its domain (``g x s`` neither divides ``d`` nor, with ``s`` dividing
``d``, is a multiple of it: TP 6 on 8-GPU nodes, GPUs 6-11 on two nodes) has some copies that
straddle a domain boundary. The engines price every copy as the busiest: ``l`` is the thinnest
share any copy has of one domain (2 of GPUs 6-11: :func:`thinnest_share`), the group is costed as
``g / l`` domains of ``l`` members by the formulas above, so its cross-domain part leaves over
the ``l`` NICs of that share at the scale-out link's speed and latency. For GPUs 6-11 that is
``2 x 2/3 x S / (2 B1)``: above a perfect hierarchical split over the two nodes it touches
(``S / (2 B1)``), below one flat ring crossing on two NICs (``2 x 5/6 x S / (2 B1)``).

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

import functools
import math
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


def local_size(group_size: Array, stride: Array, domain_size: int, num_ranks: int | None = None) -> Array:
    """Members per scale-up domain of the busiest group of ``group_size`` ranks ``stride`` apart
    in rank order (ranks fill domains consecutively; ``num_ranks`` in all, ``None``: as many as
    the pattern needs). A group that tiles the domain (``g x s`` divides it, or ``s`` divides it
    and it divides ``g x s``) has the same number in every domain it touches; one that does not
    (TP 6 on 8-GPU nodes) leaves some groups straddling a boundary, and the thinnest share any
    group has of one domain is what its cross-domain traffic leaves through (that share's NICs,
    the all-to-all's busiest sender), so that is the size returned (:func:`thinnest_share`).

    >>> [float(local_size(g, 1, 8, 24)) for g in (4, 6, 8, 12, 16)]
    [4.0, 2.0, 8.0, 4.0, 8.0]
    """
    group = np.asarray(group_size, dtype=np.float64)
    step = np.asarray(stride, dtype=np.float64)
    per_domain = np.maximum(np.floor(domain_size / step), 1.0)
    even = np.where(step >= domain_size, 1.0, np.minimum(group, per_domain))
    if num_ranks is not None and num_ranks <= domain_size:
        return even  # every rank in one domain: nothing straddles
    group, step = np.broadcast_arrays(group, step)
    span = group * step
    whole = (np.mod(domain_size, step) == 0) & (np.mod(span, domain_size) == 0)
    integral = (group == np.round(group)) & (step == np.round(step)) & (step >= 1)
    tiles = (group <= 1) | (step >= domain_size) | (np.mod(domain_size, span) == 0) | whole | ~integral
    if tiles.all():
        return even
    # few distinct shapes straddle: each is worked out once (group below 2^20 ranks)
    keys, inverse = np.unique(group[~tiles] + step[~tiles] * 2.0**20, return_inverse=True)
    shares = [thinnest_share(int(key % 2**20), int(key // 2**20), domain_size, num_ranks) for key in keys]
    thinnest = np.array(even, dtype=np.float64, copy=True)
    thinnest[~tiles] = np.minimum(even[~tiles], np.asarray(shares, dtype=np.float64)[np.ravel(inverse)])
    return thinnest


def tiles_domain(group: int, stride: int, domain_size: int) -> bool:
    """Whether groups of ``group`` ranks ``stride`` apart fill scale-up domains of
    ``domain_size`` alike: a group's span ``g x s`` divides the domain, or the stride divides the
    domain and the domain divides the span (whole domains each), or the stride is a domain or more
    (one rank a domain).

    >>> tiles_domain(4, 1, 8), tiles_domain(6, 1, 8), tiles_domain(16, 1, 8), tiles_domain(2, 8, 8)
    (True, False, True, True)
    """
    span = group * stride
    whole = domain_size % stride == 0 and span % domain_size == 0
    return group <= 1 or stride >= domain_size or domain_size % span == 0 or whole


@functools.lru_cache(maxsize=4096)
def thinnest_share(group: int, stride: int, domain_size: int, num_ranks: int | None = None) -> int:
    """The fewest members any group of ``group`` ranks ``stride`` apart has in one domain it
    touches (``group`` where every group stays inside one). Groups sit at ``o x g x s + r``
    (``r < s``), ranks fill domains of ``d`` consecutively; a group's shares depend on its first
    rank modulo ``d`` only, so the first ranks the ``num_ranks`` reach (all, ``None``) are tried:
    its first domain holds ``ceil((d - b) / s)`` members, its last the rest after the middle ones,
    each middle domain at least ``floor(d / s)`` (exactly ``d / s`` where ``s`` divides ``d``).

    >>> thinnest_share(6, 1, 8, 24), thinnest_share(6, 1, 8, 6), thinnest_share(12, 1, 8)
    (2, 6, 4)
    >>> thinnest_share(4, 3, 8), thinnest_share(64, 8, 72)  # 0 3 6 | 9; ...; 9 per rack, 1 in the last
    (1, 1)
    """
    if tiles_domain(group, stride, domain_size):
        return group if domain_size % (group * stride) == 0 else max(1, min(group, domain_size // stride))
    span = group * stride
    period = domain_size // math.gcd(span, domain_size)
    groups = period if num_ranks is None else min(period, max(1, num_ranks // span))
    first_ranks = _reachable_offsets(np.arange(groups) * span % domain_size, stride, domain_size)
    first = -(-(domain_size - first_ranks) // stride)  # members in the group's first domain
    last_domain = (first_ranks + (group - 1) * stride) // domain_size
    last = group - (-(-(last_domain * domain_size - first_ranks) // stride))
    middle = np.where(last_domain >= 2, max(1, domain_size // stride), group)
    shares = np.where(first >= group, group, np.minimum(np.minimum(first, last), middle))
    return int(shares.min())


def _reachable_offsets(starts: np.ndarray, stride: int, domain_size: int) -> np.ndarray:
    """Positions modulo ``domain_size`` of the groups' first ranks: ``start + r`` for ``r < stride``."""
    cover = np.zeros(domain_size + 1, dtype=np.int64)
    ends = starts + stride
    wraps = ends > domain_size
    np.add.at(cover, starts, 1)
    np.add.at(cover, np.where(wraps, domain_size, ends), -1)
    np.add.at(cover, np.zeros(int(wraps.sum()), dtype=np.int64), 1)
    np.add.at(cover, ends[wraps] - domain_size, -1)
    return np.flatnonzero(np.cumsum(cover)[:domain_size] > 0)


def fabric_ranks(fabric: Fabric) -> int:
    """Ranks a fabric's groups fill: the cluster's GPUs across domains (a multi-node job uses
    its cluster whole), one domain's without a scale-out level."""
    return fabric.scale_out.domain_size if fabric.scale_out is not None else fabric.scale_up.domain_size


def fabric_local_size(fabric: Fabric, group_size: Array, stride: Array = 1) -> Array:
    """:func:`local_size` on ``fabric``'s domains, over the ranks it holds (:func:`fabric_ranks`)."""
    return local_size(group_size, stride, fabric.scale_up.domain_size, fabric_ranks(fabric))


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
    if np.all(group <= 1):  # nobody to reduce with (TP 1 under attention DP): the serving hot path
        return np.zeros(np.broadcast_shapes(group.shape, size.shape, np.shape(stride), np.shape(flat)))
    local = fabric_local_size(fabric, group, stride)
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
    local = fabric_local_size(fabric, group, stride)
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
    local = fabric_local_size(fabric, group, stride)
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


def straddling_groups(group: int, stride: int, domain_size: int, num_ranks: int) -> tuple[int, int]:
    """(groups that straddle a domain boundary, all groups) of ``group`` ranks ``stride`` apart over
    ``num_ranks`` ranks filling domains of ``domain_size`` consecutively.

    >>> straddling_groups(6, 1, 8, 24)  # GPUs 6-11 and 12-17 cross a node boundary
    (2, 4)
    >>> straddling_groups(16, 1, 72, 144)  # only GPUs 64-79 cross from one rack to the next
    (1, 9)
    """
    span = group * stride
    starts = (np.arange(num_ranks // span)[:, None] * span + np.arange(stride)[None, :]).ravel()
    crossing = starts // domain_size != (starts + (group - 1) * stride) // domain_size
    return int(np.count_nonzero(crossing)), int(starts.size)


def straddle_note(
    fabric: Fabric, label: str, group_size: int, stride: int = 1, *, lockstep: bool = True
) -> str:
    """The sentence saying ``label`` groups (``"TP"``) of ``group_size`` ranks ``stride`` apart do
    not tile the scale-up domain, so some cross the scale-out level and all are priced as the one
    that does (:func:`thinnest_share`); empty where they tile it or cannot leave it. ``lockstep``:
    the groups wait for each other (training); else they are independent replicas, those inside a
    domain priced as the straddling ones (an upper bound on their time, said so)."""
    out, domain, ranks = fabric.scale_out, fabric.scale_up.domain_size, fabric_ranks(fabric)
    group, step = int(group_size), int(stride)
    if out is None or ranks <= domain or tiles_domain(group, step, domain):
        return ""
    share = thinnest_share(group, step, domain, ranks)
    if share >= group:
        return ""
    spacing = f" {step} apart" if step > 1 else ""
    crossing, total = straddling_groups(group, step, domain, ranks)
    return (
        f"{label} groups of {group} GPUs{spacing} do not tile the {domain}-GPU scale-up domain: "
        f"{crossing} of {total} straddle a boundary between domains, so their collectives cross "
        f"{out.name}; each group is priced as {group / share:g} domains of {share} GPUs (the thinnest "
        "share a group has of one domain, whose NICs carry its cross-domain traffic)"
        + (
            ": every step waits for them"
            if lockstep
            else ", the ones inside a domain included (independent replicas: an upper bound on their "
            "time); sizes that tile the domain avoid it"
        )
    )


def crosses_domains(fabric: Fabric, group_size: Array, stride: Array) -> Array:
    """Whether a group of ``group_size`` ranks ``stride`` apart leaves its scale-up domain."""
    group = np.asarray(group_size, dtype=np.float64)
    local = fabric_local_size(fabric, group, stride)
    return (group / local) > 1.0

"""Expert placement for expert parallelism: redundant experts over nodes and GPUs.

In expert parallelism the slowest GPU sets the pace of every MoE layer, so hot
experts are *replicated* (a replica takes an equal share of its expert's
tokens) and the replicas are packed onto GPUs so that the busiest GPU carries
as little as possible. :func:`balance_experts` solves the problem DeepSeek's
EPLB solves (same inputs, same ``phy2log`` output) with its own algorithm:

1. **Groups to nodes** (hierarchical policy, when the expert groups of
   group-limited routing divide evenly over the nodes): every balanced way to
   split the groups over the nodes is enumerated when there are few (8 groups
   on 4 nodes: 105 ways), else one is built by largest-first packing and
   improved by swaps. The few splits with the lightest busiest node are all
   carried into the next steps, and each layer keeps the split whose *GPUs*
   end up best balanced, since the lightest node split is not always the one
   that packs best.
2. **Replicas within a node**: each redundant slot goes to the expert whose
   replicas carry the most tokens each (largest remainder by ``load / count``),
   which minimises the largest replica.
3. **Replicas to GPUs**: largest replica first onto the lightest GPU with a
   free slot, then a swap search: while some exchange of two replicas between
   the busiest GPU and another lowers the busiest GPU without making the other
   one busier than it was, do the best such exchange.

Every step runs on all layers (and all candidate node splits) at once as numpy
arrays. The global policy (groups do not divide over the nodes, or no
group-limited routing) is the same with one group and one node.

Loads are token counts per logical expert (any non-negative numbers). A GPU's
load is the sum over the replicas it holds of ``expert load / replicas of the
expert``; ``max over mean`` is the busiest GPU over the average GPU.

>>> placement = balance_experts(load=[[90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86]],
...     num_replicas=16, num_groups=4, num_nodes=2, num_gpus=8)
>>> placement.policy, round(placement.gpu_load_max_over_mean[0], 3)
('hierarchical', 1.169)
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from lightspeed.errors import UserInputError
from lightspeed.records import Record

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

MAX_REPLICAS: Final = 65_536  # physical experts per layer, far above any deployment
MAX_ENUMERATED_SPLITS: Final = 4096  # node splits enumerated exhaustively below this count
NODE_SPLIT_CANDIDATES: Final = 4  # lightest node splits carried into replication and packing
SWAP_GAP: Final = 1e-4  # a row whose busiest bin is this close to its mean is done
SWAP_PARTNER_BINS: Final = 3  # the lightest bins the heaviest one exchanges with
SWAP_ITERATIONS_PER_SLOT: Final = 4  # the swap search stops after this many passes per replica
RELATIVE_TOLERANCE: Final = 1e-12
REFINE_GAP: Final = 1e-3  # rows within this of their mean GPU load are not refined
ALL_MOVES_BELOW: Final = 32
REFINE_ROUNDS: Final = 16  # replica moves tried per row at most


@dataclass(frozen=True)
class ExpertPlacement(Record):
    """Where every replica of every expert lives, and how even the GPUs and nodes are.

    ``phy2log[layer][slot]`` is the logical expert of physical slot ``slot``;
    GPU ``g`` holds slots ``g * slots_per_gpu ... (g + 1) * slots_per_gpu - 1``
    and node ``n`` holds GPUs ``n * gpus_per_node ...``. ``replica_counts``
    gives each logical expert's number of replicas. Loads are in the units of
    the input (tokens). ``gpu_load_max_over_mean`` and
    ``node_load_max_over_mean`` are per layer; ``overall_gpu_load_max_over_mean``
    is the sum over layers of the busiest GPU's load over the sum of the mean
    GPU loads: the slowdown of a pass through all the layers when each layer
    waits for its busiest GPU. ``unbalanced_gpu_load_max_over_mean`` is the
    same per layer for experts placed in order, ``experts / GPUs`` per GPU, no
    replicas (what a framework does without a balancer; ``None`` when the
    GPUs do not divide the experts).
    """

    policy: str
    num_layers: int
    num_logical_experts: int
    num_replicas: int
    num_groups: int
    num_nodes: int
    num_gpus: int
    phy2log: tuple[tuple[int, ...], ...]
    replica_counts: tuple[tuple[int, ...], ...]
    gpu_load: tuple[tuple[float, ...], ...]
    gpu_load_max_over_mean: tuple[float, ...]
    node_load_max_over_mean: tuple[float, ...]
    overall_gpu_load_max_over_mean: float
    unbalanced_gpu_load_max_over_mean: tuple[float, ...] | None

    @property
    def slots_per_gpu(self) -> int:
        """Physical experts each GPU holds."""
        return self.num_replicas // self.num_gpus

    @property
    def num_redundant_experts(self) -> int:
        """Replicas beyond one per logical expert."""
        return self.num_replicas - self.num_logical_experts


def as_load_array(load: npt.ArrayLike, *, what: str = "expert load") -> FloatArray:
    """``load`` as a ``[layers, experts]`` float array of finite non-negative numbers.

    >>> as_load_array([3, 1]).shape
    (1, 2)
    """
    try:
        array = np.array(load, dtype=np.float64)
    except (TypeError, ValueError):
        raise UserInputError(
            f"{what} must be numbers per layer and expert (a list of lists of token counts)"
        ) from None
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 1:
        raise UserInputError(f"{what} must be a [layers, experts] table; got shape {array.shape}")
    if not np.isfinite(array).all():
        raise UserInputError(f"{what} has a NaN or infinite value; give finite token counts")
    if (array < 0).any():
        layer, expert = (int(i) for i in np.argwhere(array < 0)[0])
        raise UserInputError(
            f"{what} of layer {layer}, expert {expert} is negative ({array[layer, expert]:g}); "
            "token counts are >= 0"
        )
    return array


def _check_shape(num_experts: int, num_replicas: int, num_groups: int, num_nodes: int, num_gpus: int) -> None:
    for label, value in (
        ("replicas", num_replicas),
        ("groups", num_groups),
        ("nodes", num_nodes),
        ("GPUs", num_gpus),
    ):
        if value < 1:
            raise UserInputError(f"the number of {label} must be >= 1 (got {value})")
    if num_replicas > MAX_REPLICAS:
        raise UserInputError(f"{num_replicas} replicas is above the {MAX_REPLICAS} this balancer places")
    if num_replicas < num_experts:
        raise UserInputError(
            f"{num_replicas} replicas cannot hold the {num_experts} experts: use at least {num_experts}"
        )
    if num_replicas % num_gpus:
        suggestion = -(-num_replicas // num_gpus) * num_gpus
        raise UserInputError(
            f"{num_replicas} replicas do not split evenly over {num_gpus} GPUs: "
            f"use a multiple of {num_gpus} (e.g. {suggestion})"
        )
    if num_gpus % num_nodes:
        raise UserInputError(f"{num_gpus} GPUs do not split evenly over {num_nodes} nodes")
    if num_experts % num_groups:
        raise UserInputError(f"{num_groups} groups do not divide the {num_experts} experts")


def is_hierarchical(num_groups: int, num_nodes: int) -> bool:
    """Whether groups go to nodes first (they divide evenly over more than one node)."""
    return num_nodes > 1 and num_groups % num_nodes == 0


# --- step 2: replication ---------------------------------------------------------------------


def replicate(weights: FloatArray, num_slots: int, cap: int | None = None) -> IntArray:
    """Replica counts per expert (each >= 1, each row summing to ``num_slots``) that minimise the
    largest ``weight / count``: each extra slot goes to the currently largest replica. With
    ``cap``, no expert gets more than ``cap`` replicas while another is below it.

    >>> replicate(np.array([[9.0, 3.0, 2.0]]), 5).tolist()
    [[3, 1, 1]]
    >>> replicate(np.array([[9.0, 3.0, 2.0]]), 5, cap=2).tolist()
    [[2, 2, 1]]
    """
    rows, num_experts = weights.shape
    counts = np.ones((rows, num_experts), dtype=np.int64)
    index = np.arange(rows)
    for _ in range(num_slots - num_experts):
        shares = weights / counts
        if cap is not None:
            capped = counts >= cap
            shares = np.where(capped & ~capped.all(axis=1, keepdims=True), -np.inf, shares)
        counts[index, np.argmax(shares, axis=1)] += 1
    return counts


def _replica_items(weights: FloatArray, counts: IntArray) -> tuple[IntArray, FloatArray]:
    """(expert of each replica, tokens of each replica), ``[rows, slots]``."""
    rows, num_experts = weights.shape
    experts = np.repeat(np.tile(np.arange(num_experts), rows), counts.ravel()).reshape(rows, -1)
    shares = weights / counts
    return experts, np.take_along_axis(shares, experts, axis=1)


# --- step 3: packing with exactly `per_bin` items per bin --------------------------------------


def pack(sizes: FloatArray, num_bins: int, per_bin: int) -> IntArray:
    """Item indices per bin, ``[rows, bins, per_bin]``: largest item first into the lightest bin
    with room, then :func:`improve_by_swaps`.

    >>> pack(np.array([[5.0, 4.0, 3.0, 3.0]]), 2, 2).tolist()
    [[[0, 3], [1, 2]]]
    """
    rows, num_items = sizes.shape
    assert num_items == num_bins * per_bin
    if per_bin == 1:  # one item per bin: every assignment is the same
        return np.broadcast_to(np.arange(num_items).reshape(1, num_bins, 1), (rows, num_bins, 1)).copy()
    order = np.argsort(-sizes, axis=1, kind="stable")
    slots = np.zeros((rows, num_bins, per_bin), dtype=np.int64)
    loads = np.zeros((rows, num_bins))
    fill = np.zeros((rows, num_bins), dtype=np.int64)
    index = np.arange(rows)
    for position in range(num_items):
        item = order[:, position]
        target = np.argmin(np.where(fill < per_bin, loads, np.inf), axis=1)
        slots[index, target, fill[index, target]] = item
        fill[index, target] += 1
        loads[index, target] += sizes[index, item]
    if per_bin > 1 and num_bins > 1:
        improve_by_swaps(sizes, slots)
    return slots


def improve_by_swaps(sizes: FloatArray, slots: IntArray) -> None:
    """Exchange items between the heaviest bin and a light one while that lowers the heaviest bin
    and leaves the other below where the heaviest was; ``slots`` is changed in place.

    Each pass takes, per row, the exchange with one of the ``SWAP_PARTNER_BINS`` lightest bins
    that brings the pair's larger load lowest. A row stops when no such exchange lowers its
    heaviest bin, or when that bin is within ``SWAP_GAP`` of the mean; the sorted loads fall
    lexicographically at every step, so the search ends.
    """
    rows, num_bins, per_bin = slots.shape
    partners = min(SWAP_PARTNER_BINS, num_bins - 1)
    active = np.arange(rows)
    mean = sizes.sum(axis=1) / num_bins
    for _ in range(SWAP_ITERATIONS_PER_SLOT * num_bins * per_bin):
        current = slots[active]
        item_sizes = np.take_along_axis(sizes[active], current.reshape(active.size, -1), axis=1)
        item_sizes = item_sizes.reshape(active.size, num_bins, per_bin)
        loads = item_sizes.sum(axis=2)
        unsettled = loads.max(axis=1) > mean[active] * (1.0 + SWAP_GAP)
        active, item_sizes, loads = active[unsettled], item_sizes[unsettled], loads[unsettled]
        if active.size == 0:
            return
        count = np.arange(active.size)
        order = np.argsort(loads, axis=1, kind="stable")
        heaviest, light = order[:, -1], order[:, :partners]  # [rows], [rows, partners]
        top = loads[count, heaviest]
        mine = item_sizes[count, heaviest]  # [rows, per_bin]
        theirs = item_sizes[count[:, None], light]  # [rows, partners, per_bin]
        delta = mine[:, :, None, None] - theirs[:, None, :, :]  # [rows, per_bin, partners, per_bin]
        other = np.take_along_axis(loads, light, axis=1)[:, None, :, None] + delta
        value = np.where(delta > 0, np.maximum(other, top[:, None, None, None] - delta), np.inf)
        value = value.reshape(active.size, -1)
        best = np.argmin(value, axis=1)
        gain = value[count, best] < top * (1.0 - RELATIVE_TOLERANCE)
        if not gain.any():
            return
        mine_slot, partner, other_slot = np.unravel_index(best[gain], (per_bin, partners, per_bin))
        rows_gain = active[gain]
        heavy_bin, other_bin = heaviest[gain], light[count[gain], partner]
        first = slots[rows_gain, heavy_bin, mine_slot].copy()
        slots[rows_gain, heavy_bin, mine_slot] = slots[rows_gain, other_bin, other_slot]
        slots[rows_gain, other_bin, other_slot] = first
        active = rows_gain


# --- step 1: groups to nodes --------------------------------------------------------------------


def _num_splits(num_groups: int, num_nodes: int) -> int:
    """Ways to split ``num_groups`` groups into ``num_nodes`` unordered equal blocks."""
    size = num_groups // num_nodes
    blocks = math.prod([math.factorial(size)] * num_nodes)
    return math.factorial(num_groups) // (blocks * math.factorial(num_nodes))


def _splits(items: tuple[int, ...], size: int) -> Iterator[tuple[tuple[int, ...], ...]]:
    """Every split of ``items`` into unordered blocks of ``size`` (the first item anchors a block)."""
    if not items:
        yield ()
        return
    first, rest = items[0], items[1:]
    for others in _combinations(rest, size - 1):
        remaining = tuple(item for item in rest if item not in others)
        for tail in _splits(remaining, size):
            yield ((first, *others), *tail)


def _combinations(items: tuple[int, ...], count: int) -> Iterator[tuple[int, ...]]:
    if count == 0:
        yield ()
        return
    for position in range(len(items) - count + 1):
        for tail in _combinations(items[position + 1 :], count - 1):
            yield (items[position], *tail)


def node_splits(group_weights: FloatArray, num_nodes: int) -> IntArray:
    """Candidate groups-to-nodes splits per layer, ``[layers, candidates, nodes, groups per node]``:
    the lightest-busiest-node splits of all (when few), else one packed and swap-improved split."""
    num_groups = group_weights.shape[1]
    size = num_groups // num_nodes
    if _num_splits(num_groups, num_nodes) > MAX_ENUMERATED_SPLITS:
        return pack(group_weights, num_nodes, size)[:, None]
    every = np.array(list(_splits(tuple(range(num_groups)), size)), dtype=np.int64)  # [splits, nodes, size]
    node_loads = group_weights[:, every].sum(axis=3)  # [layers, splits, nodes]
    busiest = node_loads.max(axis=2)
    keep = min(NODE_SPLIT_CANDIDATES, every.shape[0])
    best = np.argsort(busiest, axis=1, kind="stable")[:, :keep]
    if keep == 1:
        return every[best]
    # the packed split too: it balances the nodes less well than the lightest splits, yet its
    # nodes can hold groups whose replicas pack onto GPUs better
    return np.concatenate([every[best], pack(group_weights, num_nodes, size)[:, None]], axis=1)


# --- step 2 again: replica counts that pack well ---------------------------------------------


@dataclass
class Packing:
    """Rows of replicated experts packed into bins (arrays aligned by row).

    ``counts[row, expert]`` replicas per expert; ``experts[row, replica]`` and
    ``sizes[row, replica]`` say whose each replica is and its tokens;
    ``slots[row, bin, position]`` is the replica in each place.
    """

    counts: IntArray
    experts: IntArray
    sizes: FloatArray
    slots: IntArray

    @classmethod
    def of(cls, weights: FloatArray, counts: IntArray, num_bins: int, per_bin: int) -> Packing:
        """Replicas of ``counts`` packed by :func:`pack`."""
        experts, sizes = _replica_items(weights, counts)
        return cls(counts, experts, sizes, pack(sizes, num_bins, per_bin))

    def bin_loads(self) -> FloatArray:
        """Tokens per bin, ``[rows, bins]``."""
        flat = self.slots.reshape(self.slots.shape[0], -1)
        sizes = np.take_along_axis(self.sizes, flat, axis=1).reshape(self.slots.shape)
        return np.asarray(sizes.sum(axis=2), dtype=np.float64)

    def busiest(self) -> FloatArray:
        """Load of the busiest bin per row."""
        return np.asarray(self.bin_loads().max(axis=1), dtype=np.float64)

    def rows(self, index: IntArray) -> Packing:
        """A copy of some rows."""
        return Packing(self.counts[index], self.experts[index], self.sizes[index], self.slots[index])

    def replace_rows(self, index: IntArray, other: Packing) -> None:
        """Overwrite rows ``index`` with the rows of ``other`` (in order)."""
        self.counts[index] = other.counts
        self.experts[index] = other.experts
        self.sizes[index] = other.sizes
        self.slots[index] = other.slots


def _candidate_moves(weights: FloatArray, packing: Packing) -> IntArray:
    """(donor, receiver) expert pairs per row, ``[rows, moves, 2]``, -1 where not allowed.

    Receivers: the two largest replicas on the busiest bin and the largest one elsewhere.
    Donors (an expert giving up one replica): the two largest on the busiest bin and the two
    that grow least when they lose one. With few experts, every pair.
    """
    counts = packing.counts
    rows, num_experts = weights.shape
    index = np.arange(rows)[:, None]
    heavy_items = packing.slots[np.arange(rows), np.argmax(packing.bin_loads(), axis=1)]
    order = np.argsort(-np.take_along_axis(packing.sizes, heavy_items, axis=1), axis=1, kind="stable")
    heavy_experts = np.take_along_axis(
        np.take_along_axis(packing.experts, heavy_items, axis=1), order, axis=1
    )
    on_heavy = np.zeros(weights.shape, dtype=bool)
    on_heavy[index, heavy_experts] = True
    elsewhere = np.argmax(np.where(on_heavy, -np.inf, weights / counts), axis=1)[:, None]
    receivers = np.concatenate([heavy_experts[:, :2], elsewhere], axis=1)
    grown = np.where(counts >= 2, weights / np.maximum(counts - 1, 1), np.inf)
    donors = np.concatenate([heavy_experts[:, :2], np.argsort(grown, axis=1, kind="stable")[:, :2]], axis=1)
    pairs = np.stack(np.broadcast_arrays(donors[:, :, None], receivers[:, None, :]), axis=-1)
    pairs = pairs.reshape(rows, -1, 2)
    if num_experts * (num_experts - 1) <= ALL_MOVES_BELOW:
        every = np.array([(d, r) for d in range(num_experts) for r in range(num_experts) if d != r])
        pairs = np.broadcast_to(every[None], (rows, *every.shape))
    allowed = (counts[index, pairs[:, :, 0]] >= 2) & (pairs[:, :, 0] != pairs[:, :, 1])
    return np.where(allowed[:, :, None], pairs, -1)


def pack_replicas(weights: FloatArray, num_slots: int, num_bins: int, per_bin: int) -> Packing:
    """Replicate (:func:`replicate`) and :func:`pack` each row.

    Where the fewest-largest replicas give an expert more replicas than there are bins, some bin
    takes two of its pieces (no lighter than one piece of ``num_bins`` replicas would be), so
    those slots may serve other experts better: such rows are also replicated with at most
    ``num_bins`` replicas per expert, and the better packing is kept.
    """
    packing = Packing.of(weights, replicate(weights, num_slots), num_bins, per_bin)
    doubled = np.flatnonzero((packing.counts > num_bins).any(axis=1))
    if doubled.size == 0 or per_bin == 1:
        return packing
    capped = Packing.of(
        weights[doubled], replicate(weights[doubled], num_slots, cap=num_bins), num_bins, per_bin
    )
    better = np.flatnonzero(capped.busiest() < packing.rows(doubled).busiest())
    packing.replace_rows(doubled[better], capped.rows(better))
    return packing


def _trials(weights: FloatArray, counts: IntArray, moves: IntArray, num_bins: int, per_bin: int) -> Packing:
    """Each row's counts with each move applied (a move of -1 leaves them), packed."""
    num_rows, num_moves = moves.shape[:2]
    trial = np.repeat(counts[:, None, :], num_moves, axis=1)
    row, move = np.nonzero(moves[:, :, 0] >= 0)
    trial[row, move, moves[row, move, 0]] -= 1
    trial[row, move, moves[row, move, 1]] += 1
    return Packing.of(
        np.repeat(weights, num_moves, axis=0), trial.reshape(num_rows * num_moves, -1), num_bins, per_bin
    )


def refine_replication(
    weights: FloatArray, packing: Packing, num_bins: int, per_bin: int, rounds: int
) -> Packing:
    """Move replicas between experts while that lowers the busiest bin after packing.

    The fewest largest replicas are not always what packs best: eleven equal replicas on eight
    GPUs put two on three GPUs, where five larger and six smaller ones would pair evenly. Each
    round tries a few single moves per row (:func:`_candidate_moves`), packs each result, and
    keeps the best if it lowers the busiest bin. Rows within ``REFINE_GAP`` of their mean bin
    load are left alone.
    """
    if per_bin == 1 or num_bins == 1 or not (packing.counts > 1).any():
        return packing  # one replica per bin, one bin, or nothing to move
    best = packing.busiest()
    mean = weights.sum(axis=1) / num_bins
    active = np.flatnonzero(best > mean * (1.0 + REFINE_GAP))
    for _ in range(rounds):
        if active.size == 0:
            break
        moves = _candidate_moves(weights[active], packing.rows(active))
        trials = _trials(weights[active], packing.counts[active], moves, num_bins, per_bin)
        value = np.where(moves[:, :, 0] >= 0, trials.busiest().reshape(moves.shape[:2]), np.inf)
        pick = np.argmin(value, axis=1)
        lowest = value[np.arange(active.size), pick]
        gain = lowest < best[active] * (1.0 - RELATIVE_TOLERANCE)
        packing.replace_rows(
            active[gain], trials.rows((np.arange(active.size) * moves.shape[1] + pick)[gain])
        )
        best[active[gain]] = lowest[gain]
        active = active[gain]
        active = active[best[active] > mean[active] * (1.0 + REFINE_GAP)]
    return packing


# --- the whole placement -----------------------------------------------------------------------


def place_experts(
    weights: FloatArray, *, num_replicas: int, num_groups: int, num_nodes: int, num_gpus: int
) -> IntArray:
    """``phy2log`` ``[layers, replicas]`` of the placement (see the module docstring)."""
    layers, num_experts = weights.shape
    _check_shape(num_experts, num_replicas, num_groups, num_nodes, num_gpus)
    if not is_hierarchical(num_groups, num_nodes):
        num_groups = num_nodes = 1
    group_size = num_experts // num_groups
    groups = np.arange(num_experts).reshape(num_groups, group_size)
    splits = node_splits(weights.reshape(layers, num_groups, group_size).sum(axis=2), num_nodes)
    num_candidates = splits.shape[1]
    # logical experts of each (layer, candidate, node): [layers, candidates, nodes, experts per node]
    node_experts = groups[splits].reshape(layers, num_candidates, num_nodes, -1)
    node_weights = np.take_along_axis(weights[:, None, None, :], node_experts, axis=3)
    node_weights = node_weights.reshape(-1, num_experts // num_nodes)
    gpus_per_node, per_gpu = num_gpus // num_nodes, num_replicas // num_gpus
    packing = pack_replicas(node_weights, num_replicas // num_nodes, gpus_per_node, per_gpu)
    busiest = packing.busiest().reshape(layers, num_candidates, num_nodes).max(axis=2)
    choice = np.argmin(busiest, axis=1)  # first (lightest node split) among equal ones
    rows = ((np.arange(layers) * num_candidates + choice)[:, None] * num_nodes + np.arange(num_nodes)).ravel()
    packing = refine_replication(
        node_weights[rows], packing.rows(rows), gpus_per_node, per_gpu, REFINE_ROUNDS
    )
    local = np.take_along_axis(packing.experts, packing.slots.reshape(rows.size, -1), axis=1)
    chosen_experts = node_experts[np.arange(layers), choice]  # [layers, nodes, experts per node]
    phy2log = np.take_along_axis(chosen_experts, local.reshape(layers, num_nodes, -1), axis=2)
    return np.asarray(phy2log.reshape(layers, num_replicas), dtype=np.int64)


def gpu_loads(weights: FloatArray, phy2log: IntArray, num_gpus: int) -> FloatArray:
    """Tokens per GPU ``[layers, gpus]``: each replica takes ``load / replicas`` of its expert."""
    layers, num_experts = weights.shape
    counts = np.zeros((layers, num_experts))
    np.add.at(counts, (np.arange(layers)[:, None], phy2log), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = np.where(counts > 0, weights / counts, 0.0)
    per_replica = np.take_along_axis(shares, phy2log, axis=1)
    return np.asarray(per_replica.reshape(layers, num_gpus, -1).sum(axis=2), dtype=np.float64)


def max_over_mean(loads: FloatArray) -> FloatArray:
    """Busiest over average, per row (1.0 for a row with no load)."""
    mean = loads.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(mean > 0, loads.max(axis=1) / np.where(mean > 0, mean, 1.0), 1.0)


def contiguous_imbalance(weights: FloatArray, num_gpus: int) -> FloatArray | None:
    """Busiest over average GPU per layer with experts in order, ``experts / GPUs`` each, no
    replicas; ``None`` when ``num_gpus`` does not divide the experts."""
    layers, num_experts = weights.shape
    if num_experts % num_gpus:
        return None
    return max_over_mean(weights.reshape(layers, num_gpus, -1).sum(axis=2))


def _placement_record(
    weights: FloatArray, phy2log: IntArray, policy: str, shape: tuple[int, int, int, int]
) -> ExpertPlacement:
    num_replicas, num_groups, num_nodes, num_gpus = shape
    layers, num_experts = weights.shape
    loads = gpu_loads(weights, phy2log, num_gpus)
    node_loads = loads.reshape(layers, num_nodes, -1).sum(axis=2)
    counts = np.zeros((layers, num_experts), dtype=np.int64)
    np.add.at(counts, (np.arange(layers)[:, None], phy2log), 1)
    total_mean = float(loads.mean(axis=1).sum())
    unbalanced = contiguous_imbalance(weights, num_gpus)
    return ExpertPlacement(
        policy=policy,
        num_layers=layers,
        num_logical_experts=num_experts,
        num_replicas=num_replicas,
        num_groups=num_groups,
        num_nodes=num_nodes,
        num_gpus=num_gpus,
        phy2log=tuple(map(tuple, phy2log.tolist())),
        replica_counts=tuple(map(tuple, counts.tolist())),
        gpu_load=tuple(map(tuple, loads.tolist())),
        gpu_load_max_over_mean=tuple(max_over_mean(loads).tolist()),
        node_load_max_over_mean=tuple(max_over_mean(node_loads).tolist()),
        overall_gpu_load_max_over_mean=float(loads.max(axis=1).sum()) / total_mean if total_mean else 1.0,
        unbalanced_gpu_load_max_over_mean=None if unbalanced is None else tuple(unbalanced.tolist()),
    )


def balance_experts(
    *,
    load: npt.ArrayLike | Sequence[Sequence[float]],
    num_replicas: int,
    num_gpus: int,
    num_groups: int = 1,
    num_nodes: int = 1,
) -> ExpertPlacement:
    """Place ``num_replicas`` physical experts on ``num_gpus`` GPUs for each layer of ``load``
    (tokens per logical expert, ``[layers, experts]``).

    With ``num_groups`` expert groups (group-limited routing) dividing evenly over
    ``num_nodes`` nodes, groups go to nodes first and replicas stay on their
    group's node; otherwise placement is global. Raises
    :class:`~lightspeed.errors.UserInputError` on shapes that cannot split evenly.

    >>> placement = balance_experts(load=[[8, 1, 1, 2]], num_replicas=6, num_gpus=2)
    >>> placement.replica_counts, placement.phy2log, placement.gpu_load_max_over_mean
    (((2, 1, 1, 2),), ((0, 1, 3, 0, 2, 3),), (1.0,))
    """
    weights = as_load_array(load)
    phy2log = place_experts(
        weights, num_replicas=num_replicas, num_groups=num_groups, num_nodes=num_nodes, num_gpus=num_gpus
    )
    policy = "hierarchical" if is_hierarchical(num_groups, num_nodes) else "global"
    return _placement_record(weights, phy2log, policy, (num_replicas, num_groups, num_nodes, num_gpus))


__all__ = [
    "ExpertPlacement",
    "as_load_array",
    "balance_experts",
    "contiguous_imbalance",
    "gpu_loads",
    "is_hierarchical",
    "max_over_mean",
    "pack",
    "place_experts",
    "replicate",
]

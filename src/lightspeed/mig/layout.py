"""MIG layouts: which instances fit one GPU together, packing them onto GPUs, and the commands to get there.

A layout is a set of GPU instances, each a profile at a start slot. It is
valid when every start is one the driver lists for the profile
(``nvidia-smi mig -lgipp``), no two instances share a memory slot (an
instance holds ``[start, start + memory slices)``) or a compute slot
(``[start, start + compute slices)``), and no profile exceeds its instance
limit (one ``+me`` instance per GPU). :func:`gpu_layouts` enumerates every
valid layout of a GPU; :func:`min_gpus` packs a demand (instances per
profile) onto the fewest GPUs; :func:`mig_commands` prints, never runs, the
``nvidia-smi mig`` commands that turn the machine's layout into a planned one.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from lightspeed.catalog.mig_profiles import NUM_COMPUTE_SLICES, NUM_MEMORY_SLICES, MigGeometry, MigProfile
from lightspeed.errors import InvalidPlanError, UserInputError
from lightspeed.mig.device import GpuInstance
from lightspeed.records import Record

MAX_GPUS: Final = 64


@dataclass(frozen=True, order=True)
class MigPlacement(Record):
    """One GPU instance: ``profile`` starting at memory slot ``start`` of a GPU."""

    start: int
    profile: str


def _slots(geometry: MigGeometry, placement: MigPlacement) -> tuple[set[int], set[int]]:
    profile = geometry.profile(placement.profile)
    memory = set(range(placement.start, placement.start + profile.num_memory_slices))
    compute = set(range(placement.start, placement.start + profile.num_compute_slices))
    return memory, compute


def check_layout(geometry: MigGeometry, placements: Iterable[MigPlacement]) -> tuple[MigPlacement, ...]:
    """``placements`` sorted, or :class:`InvalidPlanError` saying which instance breaks which rule.

    >>> from lightspeed.catalog.mig_profiles import load_mig_geometries
    >>> h100 = load_mig_geometries()["h100-sxm"]
    >>> check_layout(h100, [MigPlacement(0, "4g.40gb"), MigPlacement(4, "3g.40gb")])[1].profile
    '3g.40gb'
    """
    ordered = tuple(sorted(placements))
    used_memory: set[int] = set()
    used_compute: set[int] = set()
    counts: Counter[str] = Counter()
    for placement in ordered:
        profile = geometry.profile(placement.profile)
        if placement.start not in profile.placements:
            raise InvalidPlanError(
                f"{profile.name} cannot start at slot {placement.start} on {geometry.display_name}; "
                f"it may start at {', '.join(map(str, profile.placements))}"
            )
        memory, compute = _slots(geometry, placement)
        if memory & used_memory or compute & used_compute:
            raise InvalidPlanError(
                f"{profile.name} at slot {placement.start} overlaps another instance "
                f"on {geometry.display_name}"
            )
        counts[profile.name] += 1
        if counts[profile.name] > profile.max_instances:
            raise InvalidPlanError(f"more than {profile.max_instances} {profile.name} instances on one GPU")
        used_memory |= memory
        used_compute |= compute
    if len(used_compute) > NUM_COMPUTE_SLICES or len(used_memory) > NUM_MEMORY_SLICES:
        raise InvalidPlanError(f"layout uses more than the GPU's slices on {geometry.display_name}")
    return ordered


def check_current_layout(geometry: MigGeometry, current: Sequence[GpuInstance]) -> None:
    """Refuse a machine's layout (``nvidia-smi mig -lgi``) no GPU can hold: a profile this GPU
    does not have, a row whose profile ID or size is not the profile's, a start it may not take,
    instances sharing slices, or one instance id twice.

    >>> from lightspeed.catalog import load_mig_geometries
    >>> from lightspeed.mig.device import GpuInstance
    >>> rows = [GpuInstance(0, "4g.40gb", 5, 1, 0, 4), GpuInstance(0, "3g.40gb", 9, 2, 2, 4)]
    >>> check_current_layout(load_mig_geometries()["h100-sxm"], rows)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lightspeed.errors.InvalidPlanError: GPU 0: 3g.40gb cannot start at slot 2 on ...; it may start at 0, 4
    """
    for gpu in sorted({row.gpu for row in current}):
        rows = [row for row in current if row.gpu == gpu]
        ids = [row.instance_id for row in rows]
        if len(set(ids)) != len(ids):
            raise InvalidPlanError(f"GPU {gpu}: instance id {max(ids, key=ids.count)} appears twice")
        try:
            for row in rows:
                _check_row(geometry, row)
            check_layout(geometry, [MigPlacement(row.start, row.profile) for row in rows])
        except UserInputError as error:
            raise InvalidPlanError(f"GPU {gpu}: {error}") from None


def _check_row(geometry: MigGeometry, row: GpuInstance) -> None:
    """A ``-lgi`` row's profile ID and placement size must be those of its profile.

    >>> from lightspeed.catalog import load_mig_geometries
    >>> _check_row(load_mig_geometries()["h100-sxm"], GpuInstance(0, "3g.40gb", 9, 2, 4, 3, line=9))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lightspeed.errors.InvalidPlanError: line 9 (3g.40gb, profile ID 9, at 4:3): ... a placement size of 4 ...
    """
    profile = geometry.profile(row.profile)
    if (row.profile_id, row.size) == (profile.profile_id, profile.num_memory_slices):
        return
    where = f"line {row.line} " if row.line else ""
    raise InvalidPlanError(
        f"{where}({row.profile}, profile ID {row.profile_id}, at {row.start}:{row.size}): {profile.name} has "
        f"profile ID {profile.profile_id} and a placement size of {profile.num_memory_slices} memory "
        "slot(s); the row does not match it"
    )


def gpu_layouts(geometry: MigGeometry) -> tuple[tuple[MigPlacement, ...], ...]:
    """Every valid layout of one GPU (the empty one included), as sorted placements.

    >>> from lightspeed.catalog.mig_profiles import load_mig_geometries
    >>> layouts = gpu_layouts(load_mig_geometries()["h100-sxm"])
    >>> max(len(layout) for layout in layouts)  # seven 1g instances
    7
    """
    return _layouts(geometry.name, geometry.profiles)


@functools.lru_cache(maxsize=16)
def _layouts(name: str, profiles: tuple[MigProfile, ...]) -> tuple[tuple[MigPlacement, ...], ...]:
    geometry = MigGeometry(name, name, (), NUM_COMPUTE_SLICES, NUM_MEMORY_SLICES, profiles, {})
    candidates = sorted(
        MigPlacement(start, profile.name) for profile in geometry.profiles for start in profile.placements
    )
    found: list[tuple[MigPlacement, ...]] = []

    def extend(index: int, chosen: list[MigPlacement]) -> None:
        found.append(tuple(chosen))
        for next_index in range(index, len(candidates)):
            trial = [*chosen, candidates[next_index]]
            try:
                check_layout(geometry, trial)
            except InvalidPlanError:
                continue
            extend(next_index + 1, trial)

    extend(0, [])
    return tuple(found)


def layout_counts(layout: Iterable[MigPlacement]) -> dict[str, int]:
    """Instances per profile of a layout."""
    return dict(Counter(placement.profile for placement in layout))


def _maximal_configurations(geometry: MigGeometry, profiles: tuple[str, ...]) -> list[tuple[int, ...]]:
    """Count vectors (over ``profiles``) of layouts no other layout dominates."""
    allowed = set(profiles)
    vectors = {
        tuple(dict(counts).get(name, 0) for name in profiles)
        for counts in _layouts_by_counts(geometry.name, geometry.profiles)
        if all(name in allowed for name, _ in counts)
    }
    return [
        vector
        for vector in vectors
        if not any(
            other != vector and all(o >= v for o, v in zip(other, vector, strict=True)) for other in vectors
        )
    ]


@functools.lru_cache(maxsize=16)
def _layouts_by_counts(
    name: str, profiles: tuple[MigProfile, ...]
) -> dict[tuple[tuple[str, int], ...], tuple[tuple[MigPlacement, ...], ...]]:
    """Every layout for each count of instances per profile (leftmost slots first), keyed by the
    sorted counts: ``mig plan`` asks for thousands of them, and a scan each time took seconds."""
    index: dict[tuple[tuple[str, int], ...], list[tuple[MigPlacement, ...]]] = {}
    for layout in _layouts(name, profiles):
        index.setdefault(tuple(sorted(layout_counts(layout).items())), []).append(layout)
    return {counts: tuple(layouts) for counts, layouts in index.items()}


def min_gpus(
    geometry: MigGeometry, demand: Mapping[str, int], limit: int = MAX_GPUS
) -> list[tuple[MigPlacement, ...]] | None:
    """Fewest GPUs whose layouts hold ``demand`` instances per profile (one layout per GPU), or ``None``.

    Returns one layout per GPU. ``None`` when more than ``limit`` GPUs would be needed.

    >>> from lightspeed.catalog.mig_profiles import load_mig_geometries
    >>> layouts = min_gpus(load_mig_geometries()["h100-sxm"], {"3g.40gb": 3, "1g.10gb": 2})
    >>> len(layouts)
    2
    """
    profiles = tuple(sorted(name for name, count in demand.items() if count > 0))
    if not profiles:
        return []
    configurations = _maximal_configurations(geometry, profiles)
    need = tuple(demand[name] for name in profiles)

    @functools.cache
    def solve(remaining: tuple[int, ...]) -> tuple[int, tuple[tuple[int, ...], ...]]:
        if not any(remaining):
            return 0, ()
        best: tuple[int, tuple[tuple[int, ...], ...]] = (limit + 1, ())
        for vector in configurations:
            taken = tuple(min(r, v) for r, v in zip(remaining, vector, strict=True))
            if not any(taken):
                continue
            count, rest = solve(tuple(r - t for r, t in zip(remaining, taken, strict=True)))
            if count + 1 < best[0]:
                best = (count + 1, (taken, *rest))
        return best

    count, vectors = solve(need)
    if count > limit:
        return None
    return [_layout_for(geometry, dict(zip(profiles, vector, strict=True))) for vector in vectors]


def _layout_for(
    geometry: MigGeometry, counts: Mapping[str, int], prefer: Iterable[MigPlacement] = ()
) -> tuple[MigPlacement, ...]:
    """A valid layout holding exactly ``counts`` instances: of those, the one that keeps most of the
    instances in ``prefer`` (the GPU's current ones) where they are, else the leftmost.

    >>> from lightspeed.catalog.mig_profiles import load_mig_geometries
    >>> h100 = load_mig_geometries()["h100-sxm"]
    >>> [p.start for p in _layout_for(h100, {"1g.10gb": 1})], [p.start for p in _layout_for(
    ...     h100, {"1g.10gb": 1}, prefer=[MigPlacement(5, "1g.10gb")])]
    ([0], [5])
    """
    wanted = tuple(sorted((name, count) for name, count in counts.items() if count))
    layouts = _layouts_by_counts(geometry.name, geometry.profiles).get(wanted)
    if not layouts:  # pragma: no cover - min_gpus asks only for counts some layout has
        raise InvalidPlanError(f"no layout of {geometry.display_name} holds {dict(wanted)}")
    present = set(prefer)
    return max(layouts, key=lambda layout: len(present.intersection(layout)))  # the first of the best


@dataclass(frozen=True)
class LayoutCheck(Record):
    """How the machine's MIG layout differs from a plan, and the commands that would fix it.

    ``commands`` are printed for the user to run; lightspeed never runs them. ``gpus`` is the
    machine's GPU index that each GPU of the plan goes to (plan GPU ``i`` on GPU ``gpus[i]``).
    """

    matches: bool
    keep: tuple[str, ...]
    destroy: tuple[str, ...]
    create: tuple[str, ...]
    commands: tuple[str, ...]
    gpus: tuple[int, ...] = ()


def mig_commands(
    geometry: MigGeometry, current: Sequence[GpuInstance], planned: Sequence[Sequence[MigPlacement] | None]
) -> LayoutCheck:
    """Compare the current instances with the planned layouts (``None``: a GPU with MIG off).

    The plan's GPU numbering is arbitrary, so each planned GPU goes to the machine's GPU that
    leaves the fewest instances to destroy and create (an exact minimum-cost matching; then the
    fewest MIG mode changes, then the plan's own numbering), and each planned layout takes the
    start slots, among those holding the same instances, that keep most of what that GPU has.
    Instances already at their planned profile and start are kept; the others are destroyed
    (compute instances first, ``-dci`` then ``-dgi``) and the missing ones created with
    ``-cgi <profiles> -C``, largest first, as the guide advises so the driver can still find
    their slots. GPUs the plan does not take are left alone.

    >>> from lightspeed.catalog.mig_profiles import load_mig_geometries
    >>> check = mig_commands(load_mig_geometries()["h100-sxm"], [], [[MigPlacement(0, "7g.80gb")]])
    >>> check.commands[-1]
    'nvidia-smi mig -i 0 -cgi 7g.80gb -C'
    """
    on_gpu = _instances_by_gpu(current)
    gpus = _match_gpus(geometry, on_gpu, planned)
    changes = _Changes()
    for layout, gpu in zip(planned, gpus, strict=True):
        rows = on_gpu.get(gpu, [])
        if layout is None:
            _turn_off(changes, gpu, rows)
        else:
            _repartition(
                changes, geometry, gpu, check_layout(geometry, _replaced(geometry, layout, rows)), rows
            )
    changes.keep += [
        f"GPU {row.gpu}: {row.profile} at slot {row.start} (GPU not in the plan)"
        for row in current
        if row.gpu not in gpus
    ]
    return LayoutCheck(
        matches=not changes.destroy and not changes.create,
        keep=tuple(changes.keep),
        destroy=tuple(changes.destroy),
        create=tuple(changes.create),
        commands=tuple(changes.commands),
        gpus=tuple(gpus),
    )


def _instances_by_gpu(current: Sequence[GpuInstance]) -> dict[int, list[GpuInstance]]:
    rows: dict[int, list[GpuInstance]] = {}
    for row in current:
        rows.setdefault(row.gpu, []).append(row)
    return rows


def _replaced(
    geometry: MigGeometry, layout: Sequence[MigPlacement], rows: Sequence[GpuInstance]
) -> tuple[MigPlacement, ...]:
    """``layout``'s instances at the start slots that keep most of ``rows`` (the GPU's instances)."""
    if not rows:
        return tuple(layout)
    return _layout_for(
        geometry, layout_counts(layout), [MigPlacement(row.start, row.profile) for row in rows]
    )


def _changes_count(
    geometry: MigGeometry, layout: Sequence[MigPlacement] | None, rows: Sequence[GpuInstance]
) -> tuple[int, int]:
    """(instances destroyed + created, MIG mode changes) to turn ``rows`` into ``layout``."""
    if layout is None:
        return len(rows), int(bool(rows))
    placed = set(_replaced(geometry, layout, rows))
    kept = sum(1 for row in rows if MigPlacement(row.start, row.profile) in placed)
    return len(rows) - kept + len(placed) - kept, int(not rows)


def _match_gpus(
    geometry: MigGeometry,
    on_gpu: Mapping[int, Sequence[GpuInstance]],
    planned: Sequence[Sequence[MigPlacement] | None],
) -> list[int]:
    """The machine's GPU for each planned GPU: the assignment with the fewest instance changes,
    then MIG mode changes, then GPUs off the plan's numbering. The machine has at least as many
    GPUs as the plan and as the highest index with instances (:func:`_candidate_gpus`)."""
    gpus = _candidate_gpus(on_gpu, len(planned))
    weight = 2 * (len(planned) + 1)  # one instance change outweighs any number of the lesser changes
    cost = []
    for index, layout in enumerate(planned):
        row = []
        for gpu in gpus:
            changes, toggles = _changes_count(geometry, layout, on_gpu.get(gpu, ()))
            row.append((changes * weight + toggles) * weight + int(gpu != index))
        cost.append(row)
    return [gpus[column] for column in min_cost_assignment(cost)]


def _candidate_gpus(on_gpu: Mapping[int, Sequence[GpuInstance]], num_planned: int) -> list[int]:
    """The GPUs an assignment may pick, in order: the plan's numbering ``0..num_planned-1``, those
    with instances, and the first ``num_planned`` others without instances below the highest index
    with them. GPUs without instances off the plan's numbering cost the same for every planned GPU,
    so no assignment needs more of them than the plan has GPUs: the columns grow with what is on the
    machine, not with its highest GPU index.

    >>> _candidate_gpus({0: [], 9: []}, 2)
    [0, 1, 2, 3, 9]
    """
    chosen = set(range(num_planned)) | set(on_gpu)
    spare = (gpu for gpu in range(num_planned, max(on_gpu, default=-1)) if gpu not in chosen)
    return sorted(chosen | set(itertools.islice(spare, num_planned)))


def min_cost_assignment(cost: Sequence[Sequence[int]]) -> list[int]:
    """The column of each row that minimises the total cost, no column used twice (rows <= columns;
    the Hungarian method with potentials, O(rows^2 x columns)).

    >>> min_cost_assignment([[4, 1, 3], [2, 0, 5]])
    [1, 0]
    """
    num_rows, num_columns = len(cost), len(cost[0]) if cost else 0
    assert num_rows <= num_columns, "more rows than columns"
    row_potential: list[float] = [0.0] * (num_rows + 1)
    column_potential: list[float] = [0.0] * (num_columns + 1)
    owner = [0] * (num_columns + 1)  # 1-based row holding each column; 0: free
    for row in range(1, num_rows + 1):
        owner[0], column = row, 0
        slack = [math.inf] * (num_columns + 1)
        previous = [0] * (num_columns + 1)
        used = [False] * (num_columns + 1)
        while owner[column]:
            used[column] = True
            source, delta, nearest = owner[column], math.inf, 0
            for candidate in range(1, num_columns + 1):
                if used[candidate]:
                    continue
                reduced = (
                    cost[source - 1][candidate - 1] - row_potential[source] - column_potential[candidate]
                )
                if reduced < slack[candidate]:
                    slack[candidate], previous[candidate] = reduced, column
                if slack[candidate] < delta:
                    delta, nearest = slack[candidate], candidate
            for candidate in range(num_columns + 1):
                if used[candidate]:
                    row_potential[owner[candidate]] += delta
                    column_potential[candidate] -= delta
                else:
                    slack[candidate] -= delta
            column = nearest
        while column:
            owner[column] = owner[previous[column]]
            column = previous[column]
    assignment = [0] * num_rows
    for column in range(1, num_columns + 1):
        if owner[column]:
            assignment[owner[column] - 1] = column - 1
    return assignment


@dataclass
class _Changes:
    keep: list[str] = field(default_factory=list)
    destroy: list[str] = field(default_factory=list)
    create: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)

    def remove(self, gpu: int, rows: Sequence[GpuInstance], why: str) -> None:
        self.destroy += [f"GPU {gpu}: {row.profile} at slot {row.start} ({why})" for row in rows]
        for row in rows:  # compute instances first, then their GPU instance
            self.commands.append(f"nvidia-smi mig -i {gpu} -gi {row.instance_id} -dci")
            self.commands.append(f"nvidia-smi mig -i {gpu} -gi {row.instance_id} -dgi")


def _turn_off(changes: _Changes, gpu: int, on_gpu: Sequence[GpuInstance]) -> None:
    """A GPU the plan runs whole: its instances go and MIG mode goes off."""
    if on_gpu:
        changes.remove(gpu, on_gpu, "the plan runs this GPU whole, MIG off")
        changes.commands.append(f"nvidia-smi -i {gpu} -mig 0")


def _repartition(
    changes: _Changes,
    geometry: MigGeometry,
    gpu: int,
    layout: Sequence[MigPlacement],
    on_gpu: Sequence[GpuInstance],
) -> None:
    wanted = {(p.profile, p.start) for p in layout}
    stale = [row for row in on_gpu if (row.profile, row.start) not in wanted]
    present = {(row.profile, row.start) for row in on_gpu} & wanted
    missing = sorted(
        (p for p in layout if (p.profile, p.start) not in present), key=lambda p: _order(geometry, p)
    )
    changes.keep += [
        f"GPU {gpu}: {name} at slot {start}" for name, start in sorted(present, key=lambda k: k[1])
    ]
    changes.remove(gpu, stale, "not in the plan")
    changes.create += [f"GPU {gpu}: {p.profile} at slot {p.start}" for p in sorted(missing)]
    if not on_gpu:
        changes.commands.append(f"nvidia-smi -i {gpu} -mig 1")
    if missing:
        changes.commands.append(f"nvidia-smi mig -i {gpu} -cgi {','.join(p.profile for p in missing)} -C")


def _order(geometry: MigGeometry, placement: MigPlacement) -> tuple[int, int]:
    """Largest instances first, then by start slot."""
    return (-geometry.profile(placement.profile).num_compute_slices, placement.start)

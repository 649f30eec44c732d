"""Named cost workloads, fleet names, and how many GPUs of a system reach a throughput.

``match_training`` searches whole systems (nodes or racks) with the training
engine until the best fitting plan reaches the target tokens/s;
``match_serving`` takes the best deployment of one system under the latency
bounds and adds systems (serving replicas scale out independently). Both
answer from the engine, never from a ratio of peaks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from lightspeed.catalog import Catalog, System
from lightspeed.errors import LightspeedError, UnknownNameError, UserInputError
from lightspeed.limits import MAX_ACCELERATORS
from lightspeed.records import Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.infer.plan import ServingLoad
from lightspeed.sol.infer.search import search_inference
from lightspeed.sol.systems import auto_precision
from lightspeed.sol.train.result import TrainingEstimate
from lightspeed.sol.train.search import search_training
from lightspeed.workload import ModelRegistry

MAX_SEARCH_STEPS: Final = 48
MAX_SCANNED_COUNTS: Final = 256  # counts tried below the first one found to reach a target
MAX_SYSTEMS: Final = 100_000


@dataclass(frozen=True)
class CostWorkload(Record):
    """A named training or serving workload that cost questions run on the engine.

    Training: ``global_batch`` sequences of ``seq_len`` tokens per step.
    Serving: ``input_tokens``/``output_tokens`` per request under ``max_ttft_s``
    and ``max_tpot_s``. ``precision`` ``auto`` picks each GPU's narrowest format.
    """

    name: str
    kind: str
    model: str
    precision: str
    description: str
    global_batch: int = 0
    seq_len: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    max_ttft_s: float | None = None
    max_tpot_s: float | None = None


COST_WORKLOADS: Final[dict[str, CostWorkload]] = {
    workload.name: workload
    for workload in (
        CostWorkload(
            name="llama-3-70b-pretrain",
            kind="train",
            model="llama-3-70b",
            precision="bf16",
            description="Llama-3 70B pre-training, BF16, 1,024 x 4,096-token sequences per step",
            global_batch=1024,
            seq_len=4096,
        ),
        CostWorkload(
            name="llama-3-70b-chat",
            kind="infer",
            model="llama-3-70b",
            precision="fp8",
            description="Llama-3 70B chat serving, FP8, 2,048 in / 512 out, TTFT <= 2 s, TPOT <= 50 ms",
            input_tokens=2048,
            output_tokens=512,
            max_ttft_s=2.0,
            max_tpot_s=0.050,
        ),
        CostWorkload(
            name="llama-3-70b-chat-narrowest",
            kind="infer",
            model="llama-3-70b",
            precision="auto",
            description="the same chat serving in each GPU's narrowest format (Hopper FP8, Blackwell NVFP4)",
            input_tokens=2048,
            output_tokens=512,
            max_ttft_s=2.0,
            max_tpot_s=0.050,
        ),
    )
}
DEFAULT_UPGRADE_WORKLOADS: Final = ("llama-3-70b-pretrain", "llama-3-70b-chat", "llama-3-70b-chat-narrowest")


def cost_workload(name: str) -> CostWorkload:
    """The named workload; an unknown name lists the known ones."""
    if name not in COST_WORKLOADS:
        raise UnknownNameError("cost workload", name, COST_WORKLOADS)
    return COST_WORKLOADS[name]


_FLEET: Final = re.compile(r"(?:(?P<count>\d+)\s*x\s*)?(?P<name>[A-Za-z0-9._-]+)")
# a count that is not a whole number (1.5x, -1x, 1e400x, nanx): read to say what is wrong with it
_ANY_COUNT: Final = re.compile(
    r"(?P<count>[-+]?[\d.,_]*\d[\d.,_]*(?:e[-+]?\d+)?|[-+]?nan|[-+]?inf(?:inity)?)\s*x\s*(?P<name>\S+)", re.I
)


def system_for(catalog: Catalog, name: str) -> System:
    """A catalog system by its name, or the first node system built from accelerator ``name``."""
    if names_system(catalog, name):
        return catalog.system(name)
    try:
        accelerator = catalog.accelerator(name)
    except UnknownNameError:
        raise UnknownNameError(
            "system or accelerator", name, [*catalog.systems, *catalog.accelerators]
        ) from None
    candidates = catalog.systems_built_from(accelerator.name)
    if not candidates:
        raise UserInputError(f"no catalog system is built from {accelerator.name}; name a system instead")
    return candidates[0]


def names_system(catalog: Catalog, name: str) -> bool:
    """Whether ``name`` is a catalog system (or its alias), not an accelerator: ``NxNAME`` then
    counts N systems, as ``cost train --system 8xdgx-h100`` and the catalog's cluster specs do."""
    return name in catalog.systems or any(name in system.aliases for system in catalog.systems.values())


def parse_fleet(
    catalog: Catalog, text: str, *, computed_count_option: str | None = None
) -> tuple[System, int | None]:
    """``NxNAME`` -> (the system, its GPUs): N GPUs of an accelerator name (``100xh100-sxm`` ->
    DGX H100, 100 GPUs), N whole systems of a system name (``100xdgx-h100`` -> 800 GPUs,
    ``2xgb200-nvl72`` -> 144); ``b200`` alone -> (DGX B200, None). The count is a whole number
    from 1 up, at most ``MAX_ACCELERATORS`` GPUs in all.

    ``computed_count_option``: the option ``text`` came from where the command computes how many
    GPUs are needed (``cost upgrade --to``, ``cost fleet --systems``): a count there would be
    dropped, so it is refused.

    >>> from lightspeed.catalog import load_catalog
    >>> system, gpus = parse_fleet(load_catalog(), "100xh100-sxm")
    >>> system.name, gpus
    ('dgx-h100', 100)
    >>> parse_fleet(load_catalog(), "100xdgx-h100")[1]  # 100 systems of 8 GPUs
    800
    """
    system, gpus, _ = _read_fleet(catalog, text, computed_count_option)
    return system, gpus


def fleet_words(catalog: Catalog, text: str) -> str:
    """A counted fleet ``NxNAME`` in words, saying what N counts: ``100 dgx-h100 systems (800
    GPUs)`` or ``100 GPUs of dgx-h100 (h100-sxm)``.

    >>> from lightspeed.catalog import load_catalog
    >>> fleet_words(load_catalog(), "100xdgx-h100"), fleet_words(load_catalog(), "100xh100-sxm")
    ('100 dgx-h100 systems (800 GPUs)', '100 GPUs of dgx-h100 (h100-sxm)')
    """
    system, gpus, in_systems = _read_fleet(catalog, text, None)
    if gpus is None:
        return system.name
    if in_systems:
        systems = gpus // system.num_accelerators
        return f"{systems:,} {system.name} system{'s' * (systems != 1)} ({gpus:,} GPUs)"
    return f"{gpus:,} GPUs of {system.name} ({system.accelerator.name})"


def _read_fleet(catalog: Catalog, text: str, option: str | None) -> tuple[System, int | None, bool]:
    """:func:`parse_fleet`, and whether the count counted systems (a system name) or GPUs."""
    stripped = text.strip()
    match = _FLEET.fullmatch(stripped)
    if match is not None and match["count"] is None and not _known(catalog, match["name"]):
        match = None  # 1.5xh100-sxm reads as one unknown name: read its count instead
    if match is None:
        loose = _ANY_COUNT.fullmatch(stripped)
        if loose is None and _FLEET.fullmatch(stripped):
            system_for(catalog, stripped)  # an unknown name: refused with the closest names
        if loose is None:
            raise UserInputError(
                f"cannot read {text!r}; write <GPUs>x<accelerator> (e.g. 100xh100-sxm) or "
                "<systems>x<system> (e.g. 13xdgx-h100)"
            )
        _refuse_count(stripped, loose["name"], option)
        raise UserInputError(_count_range(catalog, stripped, loose["name"]))
    system = system_for(catalog, match["name"])
    in_systems = names_system(catalog, match["name"])
    if match["count"] is None:
        return system, None, in_systems
    _refuse_count(stripped, match["name"], option)
    count = int(match["count"])
    gpus = count * system.num_accelerators if in_systems else count
    if count < 1 or gpus > MAX_ACCELERATORS:
        raise UserInputError(_count_range(catalog, stripped, match["name"]))
    return system, gpus, in_systems


def _known(catalog: Catalog, name: str) -> bool:
    """Whether ``name`` is a catalog system or accelerator (their aliases too: ``a100``)."""
    if names_system(catalog, name):
        return True
    try:
        catalog.accelerator(name)
    except UnknownNameError:
        return False
    return True


def _refuse_count(text: str, name: str, option: str | None) -> None:
    """A count where the command computes how many GPUs are needed is refused (it would be dropped)."""
    if option is None:
        return
    raise UserInputError(
        f"{option} {text!r}: the command computes how many GPUs do the work, so a count is "
        f"not used; name the accelerator or system alone, e.g. {option} {name}"
    )


def _count_range(catalog: Catalog, text: str, name: str) -> str:
    """The one line for a count that is not a whole number in range, in the unit ``name`` counts."""
    system = system_for(catalog, name)  # an unknown name is the first thing to fix
    if names_system(catalog, name):
        most = MAX_ACCELERATORS // system.num_accelerators
        each = f"{system.num_accelerators} GPU{'s' * (system.num_accelerators != 1)} each"
        unit = f"{system.name} systems from 1 to {most:,} ({each}, at most {MAX_ACCELERATORS:,} GPUs)"
    else:
        unit = f"GPUs from 1 to {MAX_ACCELERATORS:,}"
    return f"the count in {text!r} must be a whole number of {unit}, e.g. 100x{name}"


@dataclass(frozen=True)
class ThroughputPoint(Record):
    """The engine's best plan on ``num_systems`` systems: total and per-GPU tokens/s."""

    system: str
    num_systems: int
    num_gpus: int
    precision: str
    plan: str
    tokens_per_s: float
    tokens_per_s_per_gpu: float


def _precision(workload: CostWorkload, system: System, catalog: Catalog) -> str:
    if workload.precision != "auto":
        return workload.precision
    return auto_precision(catalog.cluster(system.name))


def training_point(
    *,
    catalog: Catalog,
    models: ModelRegistry,
    system: System,
    num_systems: int,
    workload: CostWorkload,
    efficiency: EfficiencyModel | None = None,
) -> ThroughputPoint | None:
    """The best fitting training plan on ``num_systems`` systems, ``None`` if no plan fits."""
    found = _best_training(
        catalog=catalog,
        models=models,
        system=system,
        num_systems=num_systems,
        workload=workload,
        efficiency=efficiency,
    )
    return found[0] if found is not None else None


def _best_training(
    *,
    catalog: Catalog,
    models: ModelRegistry,
    system: System,
    num_systems: int,
    workload: CostWorkload,
    efficiency: EfficiencyModel | None,
) -> tuple[ThroughputPoint, TrainingEstimate] | None:
    """The best fitting plan's point and its estimate (for its peak and FLOP per token)."""
    cluster = catalog.cluster(system.name, num_nodes=num_systems)
    try:
        result = search_training(
            model=models.get(workload.model),
            cluster=cluster,
            global_batch_size=workload.global_batch,
            seq_len=workload.seq_len,
            precision=workload.precision,
            top=1,
            efficiency=efficiency,
            max_tp=system.scale_up_domain_size,
        )
    except LightspeedError:
        return None
    best = result.plans[0]
    if not best.fits:
        return None
    summary = " ".join(
        f"{key}={value}"
        for key, value in best.plan_summary().items()
        if key in ("tp", "pp", "dp", "cp", "ep") and (key == "dp" or value != 1)
    )
    summary += f" mb={best.plan.micro_batch_size} {best.plan.recompute}"
    point = ThroughputPoint(
        system=system.name,
        num_systems=num_systems,
        num_gpus=cluster.num_accelerators,
        precision=workload.precision,
        plan=summary,
        tokens_per_s=best.tokens_per_s,
        tokens_per_s_per_gpu=best.tokens_per_s / cluster.num_accelerators,
    )
    return point, best


def serving_point(
    *,
    catalog: Catalog,
    models: ModelRegistry,
    system: System,
    workload: CostWorkload,
    efficiency: EfficiencyModel | None = None,
) -> ThroughputPoint:
    """The best deployment on one system under the workload's bounds (output tokens/s)."""
    precision = _precision(workload, system, catalog)
    result = search_inference(
        model=models.get(workload.model),
        cluster=catalog.cluster(system.name),
        load=ServingLoad(workload.input_tokens, workload.output_tokens),
        precision=precision,
        max_ttft_s=workload.max_ttft_s,
        max_tpot_s=workload.max_tpot_s,
        efficiency=efficiency,
    )
    best = result.best
    return ThroughputPoint(
        system=system.name,
        num_systems=1,
        num_gpus=result.num_gpus,
        precision=precision,
        plan=f"{best.plan.describe()} batch {best.batch_per_replica:g}",
        tokens_per_s=best.output_tokens_per_s,
        tokens_per_s_per_gpu=best.output_tokens_per_s / result.num_gpus,
    )


@dataclass(frozen=True)
class FleetSearch(Record):
    """What the search for the fewest systems reaching a target found: ``point`` (``None`` where no
    whole number up to ``MAX_SYSTEMS`` reaches it), and the fastest plan it tried (``best``)."""

    system: str
    workload: str
    target_tokens_per_s: float
    point: ThroughputPoint | None
    best: ThroughputPoint | None

    @property
    def refusal(self) -> str:
        """Why no fleet is given (empty where one is)."""
        if self.point is not None:
            return ""
        return too_many_systems(self.system, self.target_tokens_per_s, self.workload, best=self.best)


def smallest_training_fleet(
    *,
    catalog: Catalog,
    models: ModelRegistry,
    system: System,
    workload: CostWorkload,
    target_tokens_per_s: float,
    efficiency: EfficiencyModel | None = None,
) -> ThroughputPoint:
    """The fewest whole systems whose best fitting plan reaches ``target_tokens_per_s``; a target
    no count up to ``MAX_SYSTEMS`` reaches is refused in one line (see :func:`search_training_fleet`)."""
    found = search_training_fleet(
        catalog=catalog,
        models=models,
        system=system,
        workload=workload,
        target_tokens_per_s=target_tokens_per_s,
        efficiency=efficiency,
    )
    if found.point is None:
        raise UserInputError(found.refusal)
    return found.point


def search_training_fleet(
    *,
    catalog: Catalog,
    models: ModelRegistry,
    system: System,
    workload: CostWorkload,
    target_tokens_per_s: float,
    efficiency: EfficiencyModel | None = None,
) -> FleetSearch:
    """The fewest whole systems whose best fitting plan reaches ``target_tokens_per_s``, or
    ``point=None`` where no count up to ``MAX_SYSTEMS`` does.

    Throughput is not monotonic in the system count (batch, layer and head
    divisibility change the best plan: 28 DGX H100 can beat 35), and some
    counts hold no plan at all (above 80 DGX B200, no odd count: the
    1,024-sequence batch and the layers do not divide over its GPUs). So the
    search climbs, never down, by the shortfall; a count with no plan is
    replaced by the first count above it rounded up to a multiple of 2, 4, 8,
    ... (up to the next power of two) that holds one. Once a count reaches the target it tries
    every count below it, fewest first, down to the count the peak allows (no
    plan beats GPUs x dense peak / FLOP per token); at most
    ``MAX_SCANNED_COUNTS`` counts are tried, the ones just below the count found.
    """
    if not math.isfinite(target_tokens_per_s) or target_tokens_per_s <= 0:
        raise UserInputError(f"target {target_tokens_per_s!r} tokens/s: give a positive number")
    search = _FleetSearch(catalog, models, system, workload, efficiency)
    found = _climb(search, target_tokens_per_s)
    if found is not None:
        found = _fewest_below(search, found, target_tokens_per_s)
    return FleetSearch(
        system=system.name,
        workload=workload.name,
        target_tokens_per_s=target_tokens_per_s,
        point=found,
        best=search.best,
    )


def _climb(search: _FleetSearch, target_tokens_per_s: float) -> ThroughputPoint | None:
    """A count that reaches the target, climbing by the shortfall (``None``: none up to the cap)."""
    count = 1
    for _ in range(MAX_SEARCH_STEPS):
        point = search.measure_from(count)
        if point is not None and point.tokens_per_s >= target_tokens_per_s:
            return point
        if point is not None:
            count = max(
                point.num_systems + 1, math.ceil(point.num_systems * target_tokens_per_s / point.tokens_per_s)
            )
        else:  # no count from here to the next power of two holds a plan
            count = 2 * plan_counts(count)[-1]
        if count > MAX_SYSTEMS:
            return None
    return None


def _fewest_below(
    search: _FleetSearch, found: ThroughputPoint, target_tokens_per_s: float
) -> ThroughputPoint:
    lowest = max(1, found.num_systems - MAX_SCANNED_COUNTS, search.fewest_possible(target_tokens_per_s))
    for fewer in range(lowest, found.num_systems):
        point = search.measure(fewer)
        if point is not None and point.tokens_per_s >= target_tokens_per_s:
            return point
    return found


def plan_counts(count: int) -> list[int]:
    """``count`` and the counts above it that hold a plan more often: rounded up to a multiple of
    2, 4, 8, ... up to the next power of two (GPU totals that divide a power-of-two batch).

    >>> plan_counts(117), plan_counts(1), plan_counts(64)
    ([117, 118, 120, 128], [1], [64])
    """
    counts, step = [count], 2
    while counts[-1] & (counts[-1] - 1):  # not yet a power of two
        rounded = -(-count // step) * step
        if rounded != counts[-1]:
            counts.append(rounded)
        step *= 2
    return counts


def too_many_systems(
    system: str, target_tokens_per_s: float, workload: str, *, best: ThroughputPoint | None = None
) -> str:
    """The one-line refusal of a target no fleet of up to ``MAX_SYSTEMS`` systems reaches, with
    the fastest plan the search found (``best``) where it tried any."""
    most = (
        f" (the fastest plan found: {best.tokens_per_s:,.0f} tokens/s on {best.num_systems:,} systems)"
        if best is not None
        else ""
    )
    return (
        f"no whole number of {system} up to {MAX_SYSTEMS:,} reaches "
        f"{target_tokens_per_s:,.0f} tokens/s on {workload}{most}; lower the target or pick another system"
    )


class _FleetSearch:
    """Training points of one system and workload, each count searched once; the fastest found;
    and the bound of the peak: tokens/s <= GPUs x dense peak FLOP/s / model FLOP per token (x MFU
    above 1, which only a calibration above the peak could give)."""

    def __init__(
        self,
        catalog: Catalog,
        models: ModelRegistry,
        system: System,
        workload: CostWorkload,
        efficiency: EfficiencyModel | None,
    ) -> None:
        self.catalog, self.models, self.system = catalog, models, system
        self.workload, self.efficiency = workload, efficiency
        self._points: dict[int, ThroughputPoint | None] = {}
        self._peak_per_gpu = 0.0  # tokens/s one GPU could reach at its dense peak
        self.best: ThroughputPoint | None = None

    def measure(self, count: int) -> ThroughputPoint | None:
        if count not in self._points:
            found = _best_training(
                catalog=self.catalog,
                models=self.models,
                system=self.system,
                num_systems=count,
                workload=self.workload,
                efficiency=self.efficiency,
            )
            self._points[count] = found[0] if found is not None else None
            if found is not None:
                point, estimate = found
                peak = estimate.peak_flop_per_s / estimate.model_flop_per_token * max(1.0, estimate.mfu)
                self._peak_per_gpu = max(self._peak_per_gpu, peak)
                if self.best is None or point.tokens_per_s > self.best.tokens_per_s:
                    self.best = point
        return self._points[count]

    def measure_from(self, count: int) -> ThroughputPoint | None:
        """The point of the first of :func:`plan_counts` (``count`` or a rounder count above it)
        that holds a plan; ``None`` where none does."""
        for candidate in plan_counts(count):
            point = self.measure(candidate)
            if point is not None:
                return point
        return None

    def fewest_possible(self, target_tokens_per_s: float) -> int:
        """Fewer systems than this cannot reach the target even at the peak (1 without a bound)."""
        if self._peak_per_gpu <= 0:
            return 1
        per_system = self._peak_per_gpu * self.system.num_accelerators
        return max(1, math.ceil(target_tokens_per_s / per_system * (1.0 - 1e-9)))


def best_training_rate(
    *,
    catalog: Catalog,
    models: ModelRegistry,
    system: System,
    num_gpus: int,
    workload: CostWorkload,
    efficiency: EfficiencyModel | None = None,
) -> tuple[float, ThroughputPoint]:
    """Training tokens/s of ``num_gpus`` GPUs of ``system``, and the plan that reaches it: the
    fastest plan on any whole number of systems that fits in them (100 H100 hold 12 DGX H100,
    and run the 11-, 12- or fewer-node plan that goes fastest). GPUs no plan uses add nothing,
    so more GPUs never lower the rate; the count of systems is searched on
    :func:`rate_counts` (every count up to ``2 x GRID_COUNTS_PER_OCTAVE``), down to the count
    whose dense peak cannot beat the fastest plan found.

    >>> from lightspeed.catalog import load_catalog
    >>> from lightspeed.workload import load_models
    >>> catalog = load_catalog()
    >>> rate, point = best_training_rate(catalog=catalog, models=load_models(),
    ...     system=catalog.system("dgx-h100"), num_gpus=20, workload=cost_workload("llama-3-70b-pretrain"))
    >>> point.num_gpus <= 20 and rate == point.tokens_per_s
    True
    """
    most = num_gpus // system.num_accelerators
    search = _FleetSearch(catalog, models, system, workload, efficiency)
    best = _fastest_up_to(search, most)
    if best is None:
        whole = f" (training runs on whole systems of {system.num_accelerators} GPUs)" if most < 1 else ""
        raise UserInputError(
            f"{workload.model} does not fit {num_gpus} GPUs of {system.name} for {workload.name}"
            f"{whole}; use more GPUs"
        )
    return best.tokens_per_s, best


GRID_COUNTS_PER_OCTAVE: Final = 32  # system counts tried per doubling above 2 x this many


def rate_counts(most: int) -> Iterator[int]:
    """The system counts :func:`best_training_rate` tries for at most ``most`` systems, largest
    first: every count up to ``2 x GRID_COUNTS_PER_OCTAVE``, above it ``GRID_COUNTS_PER_OCTAVE``
    evenly spaced counts per doubling (multiples of 2 from 64 to 127, of 4 from 128 to 255, ...).
    The counts for ``most`` are those for ``most - 1`` and perhaps ``most``, so the rate never
    falls as systems are added.

    >>> list(rate_counts(5)), list(rate_counts(70))[:4], list(rate_counts(131))[:3]
    ([5, 4, 3, 2, 1], [70, 68, 66, 64], [128, 126, 124])
    """
    count = most
    while count >= 1:
        step = 1 << max(0, count.bit_length() - GRID_COUNTS_PER_OCTAVE.bit_length())
        count -= count % step
        yield count
        count -= 1


def _fastest_up_to(search: _FleetSearch, most: int) -> ThroughputPoint | None:
    """The fastest plan on at most ``most`` systems (of :func:`rate_counts`), ``None`` if none fits."""
    best: ThroughputPoint | None = None
    for count in rate_counts(most):
        if best is not None and count < search.fewest_possible(best.tokens_per_s):
            break  # fewer systems cannot beat it even at the dense peak
        point = search.measure(count)
        if point is not None and (best is None or point.tokens_per_s > best.tokens_per_s):
            best = point
    return best


__all__ = [
    "COST_WORKLOADS",
    "DEFAULT_UPGRADE_WORKLOADS",
    "GRID_COUNTS_PER_OCTAVE",
    "MAX_SYSTEMS",
    "CostWorkload",
    "FleetSearch",
    "ThroughputPoint",
    "best_training_rate",
    "cost_workload",
    "fleet_words",
    "names_system",
    "parse_fleet",
    "plan_counts",
    "rate_counts",
    "search_training_fleet",
    "serving_point",
    "smallest_training_fleet",
    "system_for",
    "too_many_systems",
    "training_point",
]

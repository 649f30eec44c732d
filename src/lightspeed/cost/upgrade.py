"""What an upgrade buys and when it pays back.

``compare_upgrade`` answers the seed's claim 17 ("100 H100 -> ~50 Blackwell for
the same work, 70 kW -> 50 kW, payback in 1-2 years for 24/7 work") workload by
workload: the engine finds how many new GPUs match the old cluster's
throughput, the power records give the draw before and after, and the prices
give two paybacks with the sensitivity of each answer to the inputs that move
it most. How big a fleet a target needs is :mod:`lightspeed.cost.fleet`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from lightspeed.catalog import Catalog, System
from lightspeed.catalog.power import SystemPower, power_of
from lightspeed.cost.energy import (
    NO_PRICES_NOTE,
    WHOLE_SYSTEMS_RULE,
    ClusterPower,
    idle_assumption,
    whole_systems_power,
)
from lightspeed.cost.prices import HOURS_PER_YEAR, JOULES_PER_KWH, Prices, pue_for
from lightspeed.cost.workloads import (
    CostWorkload,
    ThroughputPoint,
    best_training_rate,
    fleet_words,
    parse_fleet,
    serving_point,
    smallest_training_fleet,
)
from lightspeed.errors import UserInputError, first_line
from lightspeed.records import JsonDict, Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.workload import ModelRegistry

SEED_GPU_RATIO: Final = 2.0  # seed claim 17: 100 H100 -> ~50 Blackwell
SEED_RATIO_TOLERANCE: Final = 0.25  # "~50": 40 to 62 GPUs for 100 (ratio 1.6 to 2.5)
# "2x+ per GPU, more with FP8/FP4": a ratio above the band is the claim's "more", not a miss
SEED_LEAST_RATIO: Final = SEED_GPU_RATIO / (1.0 + SEED_RATIO_TOLERANCE)  # 62.5 new GPUs for 100
SEED_ROOM_RATIO: Final = SEED_GPU_RATIO / (1.0 - SEED_RATIO_TOLERANCE)  # under 37.5 for 100
SEED_POWER_W: Final = (70e3, 50e3)
SEED_PAYBACK_YEARS: Final = (1.0, 2.0)
# The claim's GPUs: 100 x 700 W is the H100 SXM, 50 x 1,000 W the B200 (GB200 is the same GPU).
SEED_OLD_ACCELERATORS: Final = ("h100-sxm",)
SEED_NEW_ACCELERATORS: Final = ("b200", "gb200")
TOP_SENSITIVITIES: Final = 3


@dataclass(frozen=True)
class Payback(Record):
    """Years until the new cluster's purchase is repaid (``None``: never, savings <= 0).

    ``vs_renting``: savings = renting the old GPUs in the cloud for the same
    work - the new cluster's electricity and other opex. ``vs_keeping``:
    savings = the old cluster's running costs - the new one's (no resale).
    """

    new_capex_usd: float
    new_opex_per_year_usd: float
    old_rent_per_year_usd: float
    old_opex_per_year_usd: float | None
    vs_renting_years: float | None
    vs_keeping_years: float | None
    inputs: JsonDict


@dataclass(frozen=True)
class Sensitivity(Record):
    """An answer at the low and high value of one input, the others at their base."""

    answer: str
    input: str
    low_input: float
    high_input: float
    low_answer: float | None
    high_answer: float | None
    base_answer: float | None

    @property
    def swing(self) -> float:
        """How far the answer moves between the two ends (infinite when one end never pays back)."""
        if self.low_answer is None or self.high_answer is None:
            return math.inf if self.low_answer != self.high_answer else 0.0
        return abs(self.high_answer - self.low_answer)


@dataclass(frozen=True)
class UpgradeMatch(Record):
    """One workload: how many new GPUs match the old cluster, power before and after, payback.

    ``old``: the fastest plan the old GPUs hold (training: on whole systems, so it may use fewer
    than ``old_gpus``; the others add nothing); ``old_tokens_per_s``: the old cluster's rate;
    ``new_gpu_equivalent``: exact new GPUs doing that work; ``per_gpu_ratio``: the new plan's
    tokens/s per GPU over the old plan's."""

    workload: str
    kind: str
    description: str
    old: ThroughputPoint
    new: ThroughputPoint
    old_tokens_per_s: float
    old_gpus: int
    new_gpus: int
    new_gpu_equivalent: float
    per_gpu_ratio: float
    gpu_ratio: float
    seed_holds: bool
    power_before: ClusterPower
    power_after: ClusterPower
    payback: Payback | None
    sensitivities: tuple[Sensitivity, ...]
    verdict: str


@dataclass(frozen=True)
class LeftOut(Record):
    """A workload the old or the new cluster cannot run (it does not fit, or no fleet reaches the
    old throughput), and why."""

    workload: str
    reason: str


@dataclass(frozen=True)
class Upgrade(Record):
    """Every workload's match, beside the seed's claim where it applies (``seed_claim["applies"]``:
    H100 SXM to a B200-class GPU; elsewhere ``seed_holds`` only tests a ~2x ratio).
    ``assumptions``: the PUE of each side and its source, and the idle hours' draw.
    ``old_fleet``: the old cluster as given, in words (``100 dgx-h100 systems (800 GPUs)``);
    ``left_out``: the workloads that could not run, each with its reason; ``notes``: figures
    not shown and why (no prices)."""

    old_system: str
    old_gpus: int
    new_system: str
    matches: tuple[UpgradeMatch, ...]
    seed_claim: JsonDict
    prices: JsonDict | None
    assumptions: tuple[str, ...] = ()
    old_fleet: str = ""
    left_out: tuple[LeftOut, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Site:
    """The figures one payback is computed from (so that sensitivities can move them)."""

    old_gpus: int
    old_gpu_hour_usd: float
    old_it_w: float
    old_pue: float
    old_capex_usd: float | None
    new_capex_usd: float
    new_it_w: float
    new_pue: float
    electricity_usd_per_kwh: float
    utilisation: float
    other_share: float
    new_systems: int = 1
    new_gpus_per_system: int = 1
    new_gpu_equivalent: float = 1.0  # exact GPUs at the new per-GPU rate that do the old work


def _payback(site: _Site) -> Payback:
    hours = HOURS_PER_YEAR * site.utilisation

    def running(it_w: float, pue: float, capex: float) -> float:
        energy_kwh = it_w * pue * hours * 3600.0 / JOULES_PER_KWH
        return energy_kwh * site.electricity_usd_per_kwh + capex * site.other_share

    new_opex = running(site.new_it_w, site.new_pue, site.new_capex_usd)
    rent = site.old_gpus * site.old_gpu_hour_usd * hours
    old_opex = (
        running(site.old_it_w, site.old_pue, site.old_capex_usd) if site.old_capex_usd is not None else None
    )
    saving_rent = rent - new_opex
    saving_keep = old_opex - new_opex if old_opex is not None else None
    return Payback(
        new_capex_usd=site.new_capex_usd,
        new_opex_per_year_usd=new_opex,
        old_rent_per_year_usd=rent,
        old_opex_per_year_usd=old_opex,
        vs_renting_years=site.new_capex_usd / saving_rent if saving_rent > 0 else None,
        vs_keeping_years=site.new_capex_usd / saving_keep
        if saving_keep is not None and saving_keep > 0
        else None,
        inputs={
            "electricity_usd_per_kwh": site.electricity_usd_per_kwh,
            "old_cloud_usd_per_gpu_hour": site.old_gpu_hour_usd,
            "new_capex_usd": site.new_capex_usd,
            "old_capex_usd": site.old_capex_usd,
            "pue_old": site.old_pue,
            "pue_new": site.new_pue,
            "utilisation": site.utilisation,
            "other_opex_share_per_year": site.other_share,
        },
    )


# (input, the _Site field it moves, low and high factor; PUE moves by an added amount; the new
# GPUs by the engine's throughput per GPU, in whole systems)
_VARIATIONS: Final[tuple[tuple[str, str, float, float], ...]] = (
    ("old cloud price per GPU-hour", "old_gpu_hour_usd", 0.75, 1.25),
    ("new purchase price", "new_capex_usd", 0.75, 1.25),
    ("utilisation", "utilisation", 0.5, 1.0),
    ("electricity price", "electricity_usd_per_kwh", 0.5, 1.5),
    ("new GPUs needed (engine throughput +15%/-15%, whole systems)", "new_systems", 1.15, 0.85),
    ("PUE (-0.2/+0.2, at least 1)", "pue", -0.2, 0.2),
    ("power drawn (share of rated -15%/+15%)", "draw", 0.85, 1.15),
)


def _systems_at(site: _Site, throughput_factor: float) -> int:
    """Whole new systems doing the old work when the engine's throughput per GPU is
    ``throughput_factor`` x its figure: the exact equivalent / the factor, rounded up to whole
    systems (as the match itself is), never fewer than the match for a slower GPU nor more for
    a faster one."""
    exact = site.new_gpu_equivalent / throughput_factor
    systems = max(1, math.ceil(exact / site.new_gpus_per_system - 1e-9))
    if throughput_factor >= 1.0:
        return min(site.new_systems, systems)
    return max(site.new_systems, systems)


def _varied(site: _Site, field: str, factor: float) -> tuple[_Site, float]:
    if field == "new_systems":
        systems = _systems_at(site, factor)
        scale = systems / site.new_systems  # purchase and draw are per whole system
        changed = replace(
            site,
            new_systems=systems,
            new_capex_usd=site.new_capex_usd * scale,
            new_it_w=site.new_it_w * scale,
        )
        return changed, float(systems * site.new_gpus_per_system)
    if field == "pue":
        old_pue, new_pue = max(1.0, site.old_pue + factor), max(1.0, site.new_pue + factor)
        return replace(site, old_pue=old_pue, new_pue=new_pue), new_pue
    if field == "draw":
        return replace(site, old_it_w=site.old_it_w * factor, new_it_w=site.new_it_w * factor), factor
    if field == "utilisation":
        value = min(1.0, site.utilisation * factor)
        return replace(site, utilisation=value), value
    value = getattr(site, field) * factor
    return replace(site, **{field: value}), value


def _sensitivities(site: _Site) -> tuple[Sensitivity, ...]:
    answers: dict[str, Callable[[_Site], float | None]] = {
        "payback vs renting (years)": lambda s: _payback(s).vs_renting_years,
        "facility power after (kW)": lambda s: s.new_it_w * s.new_pue / 1e3,
    }
    found = []
    for answer, compute in answers.items():
        rows = []
        for name, field, low, high in _VARIATIONS:
            low_site, low_value = _varied(site, field, low)
            high_site, high_value = _varied(site, field, high)
            rows.append(
                Sensitivity(
                    answer, name, low_value, high_value, compute(low_site), compute(high_site), compute(site)
                )
            )
        moving = [row for row in rows if row.swing > 0]
        found.extend(sorted(moving, key=lambda row: -row.swing)[:TOP_SENSITIVITIES])
    return tuple(found)


def _site(
    *,
    prices: Prices,
    old: ClusterPower,
    new: ClusterPower,
    old_system: System,
    new_system: System,
    new_gpu_equivalent: float,
) -> _Site:
    old_capex = (
        prices.system_purchase_usd[old_system.name] * old.num_systems
        if old_system.name in prices.system_purchase_usd
        else None
    )
    return _Site(
        old_gpus=old.num_gpus,
        old_gpu_hour_usd=prices.gpu_hour_usd(old_system.accelerator.name),
        old_it_w=old.it_power_w,
        old_pue=old.pue,
        old_capex_usd=old_capex,
        new_capex_usd=prices.purchase_usd(new_system.name) * new.num_systems,
        new_it_w=new.it_power_w,
        new_pue=new.pue,
        electricity_usd_per_kwh=prices.electricity_usd_per_kwh,
        utilisation=prices.utilisation,
        other_share=prices.other_opex_share_per_year,
        new_systems=round(new.num_systems),
        new_gpus_per_system=new_system.num_accelerators,
        new_gpu_equivalent=new_gpu_equivalent,
    )


def seed_claim_applies(old_system: System, new_system: System) -> bool:
    """Whether the seed's claim 17 (100 H100 -> ~50 Blackwell) is about this upgrade: H100 SXM to
    a B200-class GPU.

    >>> from lightspeed.catalog import load_catalog
    >>> catalog = load_catalog()
    >>> seed_claim_applies(catalog.system("dgx-h100"), catalog.system("dgx-b200"))
    True
    >>> seed_claim_applies(catalog.system("dgx-b200"), catalog.system("dgx-h100"))
    False
    """
    return (
        old_system.accelerator.name in SEED_OLD_ACCELERATORS
        and new_system.accelerator.name in SEED_NEW_ACCELERATORS
    )


def _verdict(
    match_ratio: float,
    per_gpu_ratio: float,
    holds: bool,
    applies: bool = True,
    *,
    rounding: tuple[float, int, int] | None = None,
) -> str:
    """The verdict on the seed's ~2x; ``rounding``: (exact new GPUs, new GPUs bought, GPUs per
    system) where whole systems, not the per-GPU speed, take the ratio below the band."""
    if not applies:
        return f"{match_ratio:.2f} old GPUs per new GPU ({per_gpu_ratio:.2f}x per GPU at matched size)"
    if holds and match_ratio < SEED_LEAST_RATIO and rounding is not None:
        exact, bought, per_system = rounding
        return (
            f"the seed's ~2x per GPU holds: {per_gpu_ratio:.2f}x per GPU ({exact:.1f} new GPUs do the "
            f"work); whole systems of {per_system} GPUs round {exact:.1f} up to {bought}, "
            f"{match_ratio:.2f} old GPUs per new GPU bought"
        )
    if not holds:
        return (
            f"the seed's ~2x does not hold: {match_ratio:.2f} old GPUs per new GPU, less than "
            f"{SEED_LEAST_RATIO:.1f} ({per_gpu_ratio:.2f}x per GPU at matched size)"
        )
    if match_ratio > SEED_ROOM_RATIO:
        return (
            f'the seed\'s 2x+ holds with room (its "more with FP8/FP4"): {match_ratio:.2f} old GPUs per '
            f"new GPU, fewer than its ~50 for 100 ({per_gpu_ratio:.2f}x per GPU at matched size)"
        )
    return f"the seed's ~2x holds: {match_ratio:.2f} old GPUs per new GPU ({per_gpu_ratio:.2f}x per GPU)"


def _match_points(
    *,
    catalog: Catalog,
    models: ModelRegistry,
    old_system: System,
    old_gpus: int,
    new_system: System,
    workload: CostWorkload,
    efficiency: EfficiencyModel | None,
) -> tuple[float, ThroughputPoint, ThroughputPoint, int]:
    """Old tokens/s, the old and new points, and the new GPU count that reaches the old rate."""
    if workload.kind == "train":
        old_rate, old_point = best_training_rate(
            catalog=catalog,
            models=models,
            system=old_system,
            num_gpus=old_gpus,
            workload=workload,
            efficiency=efficiency,
        )
        new_point = smallest_training_fleet(
            catalog=catalog,
            models=models,
            system=new_system,
            workload=workload,
            target_tokens_per_s=old_rate,
            efficiency=efficiency,
        )
        return old_rate, old_point, new_point, new_point.num_gpus
    old_point = serving_point(
        catalog=catalog, models=models, system=old_system, workload=workload, efficiency=efficiency
    )
    new_point = serving_point(
        catalog=catalog, models=models, system=new_system, workload=workload, efficiency=efficiency
    )
    old_rate = old_point.tokens_per_s_per_gpu * old_gpus
    systems = math.ceil(old_rate / new_point.tokens_per_s - 1e-9)
    return old_rate, old_point, new_point, systems * new_system.num_accelerators


def match_workload(
    *,
    catalog: Catalog,
    models: ModelRegistry,
    old_system: System,
    old_gpus: int,
    new_system: System,
    workload: CostWorkload,
    power: dict[str, SystemPower],
    prices: Prices | None = None,
    efficiency: EfficiencyModel | None = None,
    pue: float | None = None,
) -> UpgradeMatch:
    """How many GPUs of ``new_system`` do the work of ``old_gpus`` GPUs of ``old_system`` on ``workload``.

    PUE: ``pue``, else the prices' for each system's cooling, else the sourced default."""
    points = _match_points(
        catalog=catalog,
        models=models,
        old_system=old_system,
        old_gpus=old_gpus,
        new_system=new_system,
        workload=workload,
        efficiency=efficiency,
    )
    return _matched(
        points,
        old_system=old_system,
        old_gpus=old_gpus,
        new_system=new_system,
        workload=workload,
        power=power,
        prices=prices,
        pue=pue,
    )


def _matched(
    points: tuple[float, ThroughputPoint, ThroughputPoint, int],
    *,
    old_system: System,
    old_gpus: int,
    new_system: System,
    workload: CostWorkload,
    power: dict[str, SystemPower],
    prices: Prices | None,
    pue: float | None,
) -> UpgradeMatch:
    """The match of :func:`match_workload` from the engine's points: power, payback, verdict."""
    old_rate, old_point, new_point, new_gpus = points
    pue_old = pue_for(power_of(power, old_system.name).cooling, prices=prices, pue=pue)
    pue_new = pue_for(power_of(power, new_system.name).cooling, prices=prices, pue=pue)
    before = whole_systems_power(power, old_system, old_gpus, workload.kind, pue_old)
    after = whole_systems_power(power, new_system, new_gpus, workload.kind, pue_new)
    equivalent = old_rate / new_point.tokens_per_s_per_gpu
    ratio = old_gpus / new_gpus
    # per GPU of the plans that run: old GPUs no plan uses (100 H100 run a 96-GPU plan) are not
    # counted against the old GPU (serving: the old rate is its per-GPU rate x the old GPUs, so
    # this is old GPUs / exact new GPUs)
    per_gpu = new_point.tokens_per_s_per_gpu / old_point.tokens_per_s_per_gpu
    # "2x+ per GPU": at least the band's low end per GPU, at the exact count; whole systems only
    # round it down (a 72-GPU rack is the smallest purchase: 42 exact GPUs are bought as 72)
    holds = per_gpu >= SEED_LEAST_RATIO
    payback = sensitivities = None
    if prices is not None:
        site = _site(
            prices=prices,
            old=before,
            new=after,
            old_system=old_system,
            new_system=new_system,
            new_gpu_equivalent=equivalent,
        )
        payback, sensitivities = _payback(site), _sensitivities(site)
    return UpgradeMatch(
        workload=workload.name,
        kind=workload.kind,
        description=workload.description,
        old=old_point,
        new=new_point,
        old_tokens_per_s=old_rate,
        old_gpus=old_gpus,
        new_gpus=new_gpus,
        new_gpu_equivalent=equivalent,
        per_gpu_ratio=per_gpu,
        gpu_ratio=ratio,
        seed_holds=holds,
        power_before=before,
        power_after=after,
        payback=payback,
        sensitivities=sensitivities or (),
        verdict=_verdict(
            ratio,
            per_gpu,
            holds,
            seed_claim_applies(old_system, new_system),
            rounding=(equivalent, new_gpus, new_system.num_accelerators),
        ),
    )


def whole_systems_assumption(power: ClusterPower) -> str:
    """The ``assumed:`` line of GPUs counted in whole systems (``100 H100 are 13 whole dgx-h100``).

    >>> from lightspeed.catalog.power import load_power
    >>> from lightspeed.cost.energy import cluster_power
    >>> draw = cluster_power(power=load_power()["dgx-h100"], gpus_per_system=8, num_gpus=100, num_systems=13)
    >>> whole_systems_assumption(draw)[:58]
    '100 GPUs are 13 whole dgx-h100 (104 GPUs held): power and '
    """
    return (
        f"{power.num_gpus:,} GPUs are {power.num_systems:,g} whole {power.system} "
        f"({power.num_held_gpus:,g} GPUs held): {WHOLE_SYSTEMS_RULE}"
    )


def pue_assumptions(powers: Sequence[ClusterPower]) -> tuple[str, ...]:
    """One ``PUE x (systems): source`` line per distinct PUE and source among ``powers``.

    >>> from lightspeed.catalog.power import load_power
    >>> from lightspeed.cost.energy import cluster_power
    >>> draws = [cluster_power(power=load_power()[name], gpus_per_system=8, num_gpus=8, pue=1.2)
    ...     for name in ("dgx-h100", "dgx-b200")]
    >>> pue_assumptions(draws)
    ('PUE 1.2 (dgx-h100, dgx-b200): --pue',)
    """
    systems: dict[tuple[float, str], list[str]] = {}
    for power in powers:
        names = systems.setdefault((power.pue, power.pue_source), [])
        if power.system not in names:
            names.append(power.system)
    return tuple(f"PUE {pue:g} ({', '.join(names)}): {source}" for (pue, source), names in systems.items())


def compare_upgrade(
    *,
    catalog: Catalog,
    models: ModelRegistry,
    old_system: System,
    old_gpus: int,
    new_system: System,
    workloads: Sequence[CostWorkload],
    power: dict[str, SystemPower],
    prices: Prices | None = None,
    efficiency: EfficiencyModel | None = None,
    pue: float | None = None,
    old_fleet: str | None = None,
) -> Upgrade:
    """:func:`match_workload` for each workload, beside the seed's claim 17.

    A workload the old GPUs cannot run (the model does not fit them) or no new fleet reaches is
    left out, with the reason (``left_out``), and the others are still matched; only when none
    runs is the comparison refused, in one line. ``old_fleet``: the old cluster as written
    (``100xdgx-h100``, the ``old_system`` and ``old_gpus`` it names), so that the output says
    whether its count was of systems or GPUs.

    >>> from lightspeed.catalog import load_catalog
    >>> from lightspeed.catalog.power import load_power
    >>> from lightspeed.cost.workloads import cost_workload
    >>> from lightspeed.workload import load_models
    >>> catalog = load_catalog()
    >>> upgrade = compare_upgrade(catalog=catalog, models=load_models(),
    ...     old_system=catalog.system("dgx-h100"), old_gpus=100, new_system=catalog.system("dgx-b200"),
    ...     workloads=[cost_workload("llama-3-70b-chat")], power=load_power())
    >>> upgrade.matches[0].new_gpus < 100
    True
    """
    if not workloads:
        raise UserInputError("name at least one workload (see 'lightspeed cost upgrade --help')")
    if old_gpus < 1:
        raise UserInputError(f"{old_gpus} old GPUs: give at least 1")
    old_words = _old_fleet_words(catalog, old_fleet, old_system, old_gpus)
    matches, left_out = [], []
    for workload in workloads:
        try:
            points = _match_points(
                catalog=catalog,
                models=models,
                old_system=old_system,
                old_gpus=old_gpus,
                new_system=new_system,
                workload=workload,
                efficiency=efficiency,
            )
        except UserInputError as error:  # does not fit the old GPUs, or no new fleet reaches them
            left_out.append(LeftOut(workload=workload.name, reason=first_line(error)))
            continue
        matches.append(
            _matched(
                points,
                old_system=old_system,
                old_gpus=old_gpus,
                new_system=new_system,
                workload=workload,
                power=power,
                prices=prices,
                pue=pue,
            )
        )
    if not matches:
        raise UserInputError(left_out[0].reason)
    pue_lines = pue_assumptions((matches[0].power_before, matches[0].power_after))
    held = [whole_systems_assumption(matches[0].power_before)]
    if matches[0].power_before.num_held_gpus == old_gpus:
        held = []  # the old GPUs fill whole systems
    return Upgrade(
        old_system=old_system.name,
        old_gpus=old_gpus,
        new_system=new_system.name,
        matches=tuple(matches),
        seed_claim={
            "old_gpus": 100,
            "new_gpus": 50,
            "power_before_w": SEED_POWER_W[0],
            "power_after_w": SEED_POWER_W[1],
            "payback_years": list(SEED_PAYBACK_YEARS),
            "source": "SEED.md claim 17 (GPU TDP only: 100 x 700 W, 50 x 1,000 W)",
            "applies": seed_claim_applies(old_system, new_system),
        },
        prices=prices.to_dict() if prices is not None else None,
        assumptions=(*held, *pue_lines, *idle_assumption(prices)),
        old_fleet=old_words,
        left_out=tuple(left_out),
        notes=_upgrade_notes(prices, left_out),
    )


def _old_fleet_words(catalog: Catalog, text: str | None, system: System, gpus: int) -> str:
    """The old cluster in words: as written in ``text`` (which must name ``gpus`` GPUs of
    ``system``), else ``100 GPUs of dgx-h100 (h100-sxm)``."""
    if text is None:
        return f"{gpus:,} GPUs of {system.name} ({system.accelerator.name})"
    if parse_fleet(catalog, text) != (system, gpus):
        raise UserInputError(
            f"old_fleet {text!r} is not {gpus:,} GPUs of {system.name}; pass the text they came from"
        )
    return fleet_words(catalog, text)


def _upgrade_notes(prices: Prices | None, left_out: Sequence[LeftOut]) -> tuple[str, ...]:
    """The ``note:`` lines: the payback columns without prices, and each workload left out."""
    shown = [NO_PRICES_NOTE.format(figures="payback and its sensitivity")] if prices is None else []
    shown.extend(
        f"{item.workload} left out: {item.reason} (the others are compared; --workload picks which)"
        for item in left_out
    )
    return tuple(shown)


__all__ = [
    "SEED_GPU_RATIO",
    "LeftOut",
    "Payback",
    "Sensitivity",
    "Upgrade",
    "UpgradeMatch",
    "compare_upgrade",
    "match_workload",
    "pue_assumptions",
    "seed_claim_applies",
    "whole_systems_assumption",
]

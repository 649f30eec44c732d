"""System power and cooling: what a node or rack draws, how its heat leaves, how many fit a rack.

One ``kind = "system-power"`` TOML file per catalog system in
``catalog/data/power/``, with a source for every figure:

* ``[node]``: the system's rated maximum (``max_kw``), or ``[[node.parts]]``
  whose sum is that maximum (a GB200 NVL72 rack: 18 compute trays + switches
  and cooling);
* ``[draw]``: the share of that maximum drawn under training and inference
  (measured on an H100 node; assumed for the others, which each file says);
* ``[rack]``: systems per rack and the share of heat carried by liquid.

Accelerator TDPs stay in the accelerator records (``Accelerator.tdp_w``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from lightspeed.datafile import Fields, Source, expand_paths, load_toml, parse_sources
from lightspeed.errors import DataFileError, UnknownNameError
from lightspeed.paths import package_data
from lightspeed.records import Record

POWER_KIND: Final = "system-power"
COOLING_KINDS: Final = ("air", "liquid")


@dataclass(frozen=True)
class PowerPart(Record):
    """``count`` parts drawing ``power_each_w`` each at full load."""

    name: str
    count: int
    power_each_w: float
    source: str

    @property
    def power_w(self) -> float:
        """All ``count`` parts together, in W."""
        return self.count * self.power_each_w


@dataclass(frozen=True)
class SystemPower(Record):
    """Power and cooling of one catalog system (a node, or a rack for rack-scale systems).

    ``max_power_w`` is the rated maximum of one system, the sum of ``parts``
    when they are given. ``training_draw_share`` and ``inference_draw_share``
    are the fractions of it drawn while working; ``liquid_heat_share`` the
    fraction of heat removed by liquid (the rest goes to air).
    """

    system: str
    cooling: str
    max_power_w: float
    parts: tuple[PowerPart, ...]
    training_draw_share: float
    inference_draw_share: float
    systems_per_rack: int
    liquid_heat_share: float
    note: str
    sources: dict[str, Source]
    path: str

    def draw_share(self, workload: str) -> float:
        """The share of ``max_power_w`` drawn under ``workload`` (``train`` or ``infer``)."""
        return self.training_draw_share if workload == "train" else self.inference_draw_share


def _share(fields: Fields, key: str) -> float:
    value = fields.number(key, positive=False)
    if not 0.0 <= value <= 1.0:
        raise DataFileError(
            fields.path, "a share must lie in [0, 1]", field=key, value=value, fix="write a fraction"
        )
    return value


def _parts(node: Fields, sources: dict[str, Source]) -> tuple[PowerPart, ...]:
    return tuple(
        PowerPart(
            name=part.string("name"),
            count=part.integer("count", minimum=1),
            power_each_w=part.quantity("each", "watts"),
            source=part.check_source("source", sources),
        )
        for part in node.array_of_tables("parts")
    )


def parse_power(path: Path, data: dict[str, Any] | None = None) -> SystemPower:
    """One ``system-power`` file as a :class:`SystemPower` (errors name the file and field);
    ``data``: its table when already read."""
    fields = Fields(str(path), load_toml(path) if data is None else data)
    if fields.string("kind") != POWER_KIND:
        raise DataFileError(path, "not a system-power file", field="kind", fix=f'write kind = "{POWER_KIND}"')
    sources = parse_sources(fields)
    cooling = fields.string("cooling")
    if cooling not in COOLING_KINDS:
        raise DataFileError(path, "unknown cooling", field="cooling", value=cooling, fix="use air or liquid")
    node, draw, rack = (fields.table(key) for key in ("node", "draw", "rack"))
    assert node is not None
    assert draw is not None
    assert rack is not None
    node.check_source("source", sources)
    parts = _parts(node, sources)
    maximum = sum(part.power_w for part in parts) if parts else node.quantity("max", "watts")
    if maximum > 2e6:
        raise DataFileError(path, "above 2 MW for one system", field="node", value=maximum, fix="check units")
    draw.check_source("source", sources)
    rack.check_source("source", sources)
    return SystemPower(
        system=fields.string("system"),
        cooling=cooling,
        max_power_w=maximum,
        parts=parts,
        training_draw_share=_share(draw, "training_share"),
        inference_draw_share=_share(draw, "inference_share"),
        systems_per_rack=rack.integer("nodes_per_rack", minimum=1),
        liquid_heat_share=_share(rack, "liquid_heat_share"),
        note=fields.string("note", ""),
        sources=sources,
        path=str(path),
    )


def builtin_power_files() -> list[Path]:
    """The ``system-power`` files shipped in ``catalog/data/power`` (sorted)."""
    folder = package_data("catalog", "data", "power")
    return sorted(folder.glob("*.toml"))


def user_power_records(extra_paths: Iterable[Path]) -> list[SystemPower]:
    """The ``system-power`` records among ``extra_paths`` (what ``--catalog`` and
    ``LIGHTSPEED_CATALOG`` name: files, or folders read recursively); other kinds are skipped,
    and each file is read once."""
    tables = ((path, load_toml(path)) for path in expand_paths(extra_paths))
    return [parse_power(path, data) for path, data in tables if data.get("kind") == POWER_KIND]


def load_power(extra_paths: Iterable[Path] = ()) -> dict[str, SystemPower]:
    """System power records by system name; ``system-power`` files among ``extra_paths``
    (:func:`user_power_records`) add records or replace shipped ones.

    >>> rack = load_power()["gb200-nvl72"]
    >>> rack.max_power_w / 1e3, rack.liquid_heat_share  # kW: 18 trays x 6 kW + 20 kW
    (128.0, 0.85)
    """
    shipped = [parse_power(path) for path in builtin_power_files()]
    return {record.system: record for record in [*shipped, *user_power_records(extra_paths)]}


def power_of(records: dict[str, SystemPower], system: str) -> SystemPower:
    """The power record of ``system``; an unknown one lists those the catalog has."""
    record = records.get(system)
    if record is None:
        hint = f'add a kind = "{POWER_KIND}" file for it with --catalog (docs/cost.md)'
        raise UnknownNameError("system with power data", system, records, hint=hint)
    return record


__all__ = [
    "COOLING_KINDS",
    "PowerPart",
    "SystemPower",
    "builtin_power_files",
    "load_power",
    "parse_power",
    "power_of",
    "user_power_records",
]

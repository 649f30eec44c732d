"""The catalog: every known record, looked up by exact name or alias."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from lightspeed.catalog.loader import (
    builtin_files,
    expand_paths,
    normalize_name,
    parse_accelerator,
    parse_cpu,
    parse_link,
    parse_system,
    read_raw,
)
from lightspeed.catalog.records import Accelerator, Cluster, Cpu, Link, LinkAttachment, System
from lightspeed.errors import DataFileError, InvalidPlanError, UnknownNameError

T = TypeVar("T", Accelerator, Cpu, Link, System)


@dataclass(frozen=True)
class Catalog:
    """All hardware records. Look names up with :meth:`accelerator`, :meth:`system` ...

    >>> catalog = load_catalog()
    >>> catalog.accelerator("h100-sxm").dense_flop_per_s("bf16") / 1e12
    989.5
    """

    accelerators: Mapping[str, Accelerator]
    cpus: Mapping[str, Cpu]
    links: Mapping[str, Link]
    systems: Mapping[str, System]

    def accelerator(self, name: str) -> Accelerator:
        """The accelerator called ``name`` (exact name or alias)."""
        return _lookup(self.accelerators, name, "device")

    def cpu(self, name: str) -> Cpu:
        """The CPU called ``name``."""
        return _lookup(self.cpus, name, "cpu")

    def link(self, name: str) -> Link:
        """The link called ``name``."""
        return _lookup(self.links, name, "link")

    def system(self, name: str) -> System:
        """The node or rack called ``name``."""
        return _lookup(self.systems, name, "system")

    def any_record(self, name: str) -> Accelerator | Cpu | Link | System:
        """A record of any kind (accelerators first, then systems, links, CPUs)."""
        found: Accelerator | Cpu | Link | System | None = (
            _find(self.accelerators, name)
            or _find(self.systems, name)
            or _find(self.links, name)
            or _find(self.cpus, name)
        )
        if found is not None:
            return found
        every = [*_names(self.accelerators), *_names(self.systems), *_names(self.links), *_names(self.cpus)]
        raise UnknownNameError("hardware name", name, every, hint="see 'lightspeed hw list'")

    def cluster(
        self,
        system: str,
        *,
        num_nodes: int | None = None,
        num_accelerators: int | None = None,
        fabric: str | None = None,
        nics_per_accelerator: float | None = None,
    ) -> Cluster:
        """``num_nodes`` (or enough nodes for ``num_accelerators``) of ``system``.

        ``fabric`` names the scale-out link (default: the system's own NICs);
        ``nics_per_accelerator`` overrides how many such NICs each accelerator has.
        """
        record = self.system(system)
        nodes = _num_nodes(record, num_nodes, num_accelerators)
        attachment = record.scale_out
        if fabric is not None or nics_per_accelerator is not None:
            link = self.link(fabric) if fabric is not None else _require_scale_out(record).link
            if nics_per_accelerator is None:
                count = attachment.num_links if attachment is not None else record.num_accelerators
            else:
                count = round(nics_per_accelerator * record.num_accelerators)
                if count < 1:
                    raise InvalidPlanError("nics per accelerator must give at least one NIC per node")
            attachment = LinkAttachment(link=link, num_links=count, source=link.source)
        return Cluster(system=record, num_nodes=nodes, fabric=attachment)


def _require_scale_out(system: System) -> LinkAttachment:
    if system.scale_out is None:
        raise InvalidPlanError(f"{system.name} has no scale-out fabric; name one with fabric=")
    return system.scale_out


def _num_nodes(system: System, num_nodes: int | None, num_accelerators: int | None) -> int:
    if num_nodes is not None and num_accelerators is not None:
        if num_nodes * system.num_accelerators != num_accelerators:
            raise InvalidPlanError(
                f"{num_nodes} nodes of {system.name} hold {num_nodes * system.num_accelerators} "
                f"accelerators, not {num_accelerators}"
            )
        return num_nodes
    if num_accelerators is not None:
        nodes, remainder = divmod(num_accelerators, system.num_accelerators)
        if remainder or nodes < 1:
            # A partial node is still a valid single-node cluster (e.g. 1 GPU of an HGX board).
            if num_accelerators < system.num_accelerators:
                return 1
            raise InvalidPlanError(
                f"{num_accelerators} accelerators is not a whole number of {system.name} nodes "
                f"({system.num_accelerators} each); "
                f"use a multiple such as {max(1, nodes) * system.num_accelerators}"
            )
        return nodes
    return num_nodes if num_nodes is not None else 1


def _names(table: Mapping[str, T]) -> list[str]:
    return list(table)


def _find(table: Mapping[str, T], name: str) -> T | None:
    key = normalize_name(name)
    if key in table:
        return table[key]
    for record in table.values():
        if key in record.aliases:
            return record
    return None


def _lookup(table: Mapping[str, T], name: str, kind: str) -> T:
    found = _find(table, name)
    if found is None:
        known = [*table, *(alias for record in table.values() for alias in record.aliases)]
        raise UnknownNameError(kind, name, known, hint="see 'lightspeed hw list'")
    return found


def load_catalog(extra_paths: Iterable[Path] = ()) -> Catalog:
    """Load the shipped catalog plus user files (which add or replace records by name)."""
    files = [*builtin_files(), *expand_paths(extra_paths)]
    raw = read_raw(files)
    links = {name: parse_link(raw.paths[("link", name)], data) for name, data in raw.tables["link"].items()}
    cpus = {name: parse_cpu(raw.paths[("cpu", name)], data) for name, data in raw.tables["cpu"].items()}
    accelerators = {
        name: parse_accelerator(raw.paths[("accelerator", name)], data, links)
        for name, data in raw.tables["accelerator"].items()
    }
    systems = {
        name: parse_system(raw.paths[("system", name)], data, accelerators, cpus, links)
        for name, data in raw.tables["system"].items()
    }
    catalog = Catalog(accelerators=accelerators, cpus=cpus, links=links, systems=systems)
    _check_unique_aliases(catalog)
    return catalog


def _check_unique_aliases(catalog: Catalog) -> None:
    for table in (catalog.accelerators, catalog.cpus, catalog.links, catalog.systems):
        owner: dict[str, str] = {}
        for record in table.values():
            for alias in (record.name, *record.aliases):
                previous = owner.setdefault(alias, record.name)
                if previous != record.name:
                    raise DataFileError(
                        record.path,
                        f"alias {alias!r} is already used by {previous}",
                        field="aliases",
                        value=alias,
                        fix="remove the alias from one of the two records",
                    )

"""Build typed catalog records from TOML data files.

Each file holds one record: ``schema_version``, ``kind`` (``accelerator``,
``cpu``, ``link``, ``system``), ``name``, ``aliases`` and tables whose keys
carry their unit. User files add records or replace built-in ones with the
same ``name``; ``extends = "h100-sxm"`` starts from another record and
overrides only the keys given (tables merge key by key).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final

from lightspeed.catalog.records import (
    Accelerator,
    ComputeFigure,
    Conflict,
    Cpu,
    Link,
    LinkAttachment,
    PrintedTotal,
    Source,
    System,
)
from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import DataFileError

SCHEMA_VERSION: Final = 1
KINDS: Final = ("link", "cpu", "accelerator", "system")
INTEGER_PRECISIONS: Final = frozenset({"int8", "int4"})


@dataclass
class RawRecords:
    """Parsed but unresolved TOML tables, by kind then name, with their paths."""

    tables: dict[str, dict[str, dict[str, Any]]] = field(default_factory=lambda: {kind: {} for kind in KINDS})
    paths: dict[tuple[str, str], str] = field(default_factory=dict)

    def add(self, path: Path, data: dict[str, Any]) -> None:
        """Add one file's table, applying ``extends`` against what is already known."""
        fields = Fields(str(path), data)
        version = fields.integer("schema_version", minimum=1)
        if version != SCHEMA_VERSION:
            raise DataFileError(
                path,
                f"unsupported schema_version {version}",
                field="schema_version",
                fix=f"write schema_version = {SCHEMA_VERSION}",
            )
        kind = fields.string("kind")
        if kind not in KINDS:
            raise DataFileError(
                path, "unknown kind", field="kind", value=kind, fix=f"use one of {', '.join(KINDS)}"
            )
        name = normalize_name(fields.string("name"))
        base_name = data.get("extends")
        if base_name is not None:
            data = self._extend(path, kind, str(base_name), data)
            if normalize_name(str(base_name)) != name and "aliases" not in fields.data:
                data["aliases"] = []  # aliases name the base record, not the copy
        self.tables[kind][name] = data
        self.paths[(kind, name)] = str(path)

    def _extend(self, path: Path, kind: str, base_name: str, data: dict[str, Any]) -> dict[str, Any]:
        base = self.tables[kind].get(normalize_name(base_name))
        if base is None:
            raise DataFileError(
                path,
                f"extends an unknown {kind}",
                field="extends",
                value=base_name,
                fix=f"name a {kind} from 'lightspeed hw list' or load its file first",
            )
        return _deep_merge(base, data)


def _deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    merged.pop("extends", None)
    return merged


def normalize_name(name: str) -> str:
    """Canonical lookup form: lower case, spaces and underscores as hyphens."""
    return "-".join(name.strip().lower().replace("_", " ").split())


def builtin_files() -> list[Path]:
    """Every TOML file shipped in ``lightspeed/catalog/data`` (sorted, links first)."""
    root = resources.files("lightspeed.catalog") / "data"
    files: list[Path] = []
    for kind_dir in ("links", "cpus", "accelerators", "systems"):
        folder = Path(str(root / kind_dir))
        if folder.is_dir():
            files.extend(sorted(folder.glob("*.toml")))
    return files


def expand_paths(paths: Iterable[Path]) -> list[Path]:
    """Files named directly plus every ``*.toml`` below named folders."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(path.rglob("*.toml")))
        elif path.is_file():
            files.append(path)
        else:
            raise DataFileError(path, "no such file or folder", fix="check the --catalog path")
    return files


def read_raw(files: Iterable[Path], kinds: Iterable[str] = KINDS) -> RawRecords:
    """Parse files into :class:`RawRecords`, skipping records of other kinds."""
    raw = RawRecords()
    wanted = set(kinds)
    for path in files:
        data = load_toml(path)
        if data.get("kind") in wanted or data.get("kind") not in {*KINDS, "model"}:
            raw.add(path, data)
    return raw


def parse_sources(fields: Fields) -> dict[str, Source]:
    """The ``[sources.<key>]`` tables of a record."""
    sources = {
        key: Source(
            key=key, title=table.string("title"), url=table.string("url", ""), note=table.string("note", "")
        )
        for key, table in fields.tables("sources").items()
    }
    if not sources:
        raise DataFileError(
            fields.path,
            "record has no sources",
            field="sources",
            fix='add [sources.<key>] with title = "..." and url = "..."',
        )
    return sources


def parse_link(path: str, data: Mapping[str, Any]) -> Link:
    """A link record (NVLink port, PCIe x16, InfiniBand port, ...)."""
    fields = Fields(path, data)
    sources = parse_sources(fields)
    bandwidth = fields.table("bandwidth")
    latency = fields.table("latency")
    assert bandwidth is not None
    assert latency is not None
    return Link(
        name=normalize_name(fields.string("name")),
        display_name=fields.string("display_name", fields.string("name")),
        aliases=_aliases(fields),
        family=fields.string("family"),
        per_direction_bytes_per_s=bandwidth.quantity("per_direction", "bytes_per_s"),
        bidirectional_bytes_per_s=bandwidth.quantity("bidirectional", "bytes_per_s"),
        latency_s=latency.quantity("typical", "seconds"),
        source=bandwidth.check_source("source", sources),
        sources=sources,
        note=fields.string("note", ""),
        path=path,
    )


def _aliases(fields: Fields) -> tuple[str, ...]:
    return tuple(normalize_name(alias) for alias in fields.strings("aliases"))


def parse_compute(fields: Fields, sources: Mapping[str, Source]) -> dict[str, ComputeFigure]:
    """``[compute.<precision>]`` rows: printed value, sparsity flag, dense value, source."""
    rows: dict[str, ComputeFigure] = {}
    for precision, row in fields.tables("compute").items():
        printed = row.quantity("printed", "per_s")
        sparse = row.boolean("printed_with_sparsity")
        dense = row.optional_quantity("dense", "per_s")
        if dense is None:
            if sparse:
                raise DataFileError(
                    fields.path,
                    "a sparse printed figure needs its dense value",
                    field=f"compute.{precision}",
                    fix="add dense_<unit> (half the printed value unless the vendor prints otherwise)",
                )
            dense = printed
        rows[precision] = ComputeFigure(
            precision=precision,
            printed_per_s=printed,
            printed_with_sparsity=sparse,
            dense_per_s=dense,
            unit="OP/s" if precision in INTEGER_PRECISIONS else "FLOP/s",
            source=row.check_source("source", sources),
            note=row.string("note", ""),
        )
    return rows


def parse_attachment(
    fields: Fields | None,
    links: Mapping[str, Link],
    sources: Mapping[str, Source],
    count_key: str = "num_links",
) -> LinkAttachment | None:
    """A ``link = "<name>"`` plus a link count, resolved against known links."""
    if fields is None:
        return None
    link_name = normalize_name(fields.string("link"))
    link = links.get(link_name)
    if link is None:
        raise DataFileError(
            fields.path,
            "unknown link",
            field=f"{fields.prefix}link",
            value=link_name,
            fix=f"use one of: {', '.join(sorted(links))}",
        )
    source = fields.check_source("source", sources) if fields.has("source") else link.source
    return LinkAttachment(link=link, num_links=fields.integer(count_key, minimum=1), source=source)


def parse_conflicts(fields: Fields) -> tuple[Conflict, ...]:
    """``[[conflicts]]`` entries: a field two documents disagree on, and the choice made."""
    return tuple(
        Conflict(
            field=entry.string("field"),
            values=entry.strings("values"),
            chosen=entry.string("chosen"),
            sources=entry.strings("sources"),
            note=entry.string("note", ""),
        )
        for entry in fields.array_of_tables("conflicts")
    )


def parse_accelerator(path: str, data: Mapping[str, Any], links: Mapping[str, Link]) -> Accelerator:
    """An accelerator record."""
    fields = Fields(path, data)
    sources = parse_sources(fields)
    memory = fields.table("memory")
    power = fields.table("power")
    assert memory is not None
    assert power is not None
    chip = fields.table("chip", required=False)
    clock = chip.optional_quantity("boost_clock", "hertz") if chip else None
    return Accelerator(
        name=normalize_name(fields.string("name")),
        display_name=fields.string("display_name", fields.string("name")),
        aliases=_aliases(fields),
        vendor=fields.string("vendor"),
        architecture=fields.string("architecture"),
        form_factor=fields.string("form_factor"),
        family=fields.string("family"),
        compute=parse_compute(fields, sources),
        memory_type=memory.string("type"),
        memory_nominal_bytes=memory.quantity("nominal", "bytes"),
        memory_usable_bytes=memory.quantity("usable", "bytes"),
        memory_bandwidth_bytes_per_s=memory.quantity("bandwidth", "bytes_per_s"),
        memory_source=memory.check_source("source", sources),
        l2_cache_bytes=chip.optional_quantity("l2_cache", "bytes") if chip else None,
        num_compute_units=chip.optional_integer("num_compute_units") if chip else None,
        boost_clock_hz=clock,
        tdp_w=power.quantity("tdp", "watts"),
        tdp_min_w=power.optional_quantity("tdp_min", "watts"),
        power_source=power.check_source("source", sources),
        scale_up=parse_attachment(fields.table("scale_up", required=False), links, sources),
        host_link=parse_attachment(fields.table("host_link", required=False), links, sources),
        sources=sources,
        conflicts=parse_conflicts(fields),
        note=fields.string("note", ""),
        path=path,
    )


def parse_cpu(path: str, data: Mapping[str, Any]) -> Cpu:
    """A CPU record."""
    fields = Fields(path, data)
    sources = parse_sources(fields)
    chip = fields.table("chip")
    memory = fields.table("memory")
    assert chip is not None
    assert memory is not None
    compute = fields.table("compute", required=False)
    power = fields.table("power", required=False)
    return Cpu(
        name=normalize_name(fields.string("name")),
        display_name=fields.string("display_name", fields.string("name")),
        aliases=_aliases(fields),
        vendor=fields.string("vendor"),
        microarchitecture=chip.string("microarchitecture"),
        num_cores=chip.integer("num_cores", minimum=1),
        clock_hz=chip.quantity("clock", "hertz"),
        fp64_flop_per_s=compute.optional_quantity("fp64", "per_s") if compute else None,
        fp32_flop_per_s=compute.optional_quantity("fp32", "per_s") if compute else None,
        memory_type=memory.string("type"),
        memory_capacity_bytes=memory.optional_quantity("capacity", "bytes"),
        memory_bandwidth_bytes_per_s=memory.optional_quantity("bandwidth", "bytes_per_s"),
        tdp_w=power.optional_quantity("tdp", "watts") if power else None,
        source=chip.check_source("source", sources),
        sources=sources,
        note=fields.string("note", ""),
        path=path,
    )


def parse_system(
    path: str,
    data: Mapping[str, Any],
    accelerators: Mapping[str, Accelerator],
    cpus: Mapping[str, Cpu],
    links: Mapping[str, Link],
) -> System:
    """A node or rack record, resolved against accelerators, CPUs and links."""
    fields = Fields(path, data)
    sources = parse_sources(fields)
    accelerator = _resolve(fields, "accelerator", accelerators)
    cpu_name = fields.data.get("cpu")
    cpu = _resolve(fields, "cpu", cpus) if cpu_name else None
    scale_up = fields.table("scale_up")
    power = fields.table("power", required=False)
    assert scale_up is not None
    return System(
        name=normalize_name(fields.string("name")),
        display_name=fields.string("display_name", fields.string("name")),
        aliases=_aliases(fields),
        system_type=fields.string("system_type"),
        accelerator=accelerator,
        num_accelerators=fields.integer("num_accelerators", minimum=1),
        cpu=cpu,
        num_cpus=fields.integer("num_cpus", 0),
        scale_up_domain_size=scale_up.integer("domain_size", minimum=1),
        in_network_reduction=scale_up.boolean("in_network_reduction", False),
        scale_out=parse_attachment(
            fields.table("scale_out", required=False), links, sources, "nics_per_node"
        ),
        power_max_w=power.optional_quantity("max", "watts") if power else None,
        power_min_w=power.optional_quantity("min", "watts") if power else None,
        printed_totals=_printed_totals(fields, sources),
        source=fields.check_source("source", sources),
        sources=sources,
        note=fields.string("note", ""),
        path=path,
    )


def _resolve(fields: Fields, key: str, known: Mapping[str, Any]) -> Any:
    name = normalize_name(fields.string(key))
    if name not in known:
        raise DataFileError(
            fields.path,
            f"unknown {key}",
            field=key,
            value=name,
            fix=f"use one of: {', '.join(sorted(known))}",
        )
    return known[name]


def _printed_totals(fields: Fields, sources: Mapping[str, Source]) -> tuple[PrintedTotal, ...]:
    return tuple(
        PrintedTotal(
            key=entry.string("key"),
            value=entry.number("value"),
            unit=entry.string("unit"),
            source=entry.check_source("source", sources),
            note=entry.string("note", ""),
        )
        for entry in fields.array_of_tables("printed_totals")
    )

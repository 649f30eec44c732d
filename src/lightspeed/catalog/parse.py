"""Build typed catalog records from TOML data files.

Each file holds one record: ``schema_version``, ``kind`` (``accelerator``,
``cpu``, ``link``, ``system``), ``name``, ``aliases`` and tables whose keys
carry their unit. User files add records or replace built-in ones with the
same ``name``; ``extends = "h100-sxm"`` starts from another record and
overrides only the keys given (tables merge key by key).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

from lightspeed.catalog.keys import check_record
from lightspeed.catalog.records import (
    COMPUTE_ROWS,
    SCALE_OUT_LINK_FAMILIES,
    Accelerator,
    ComputeFigure,
    Conflict,
    Cpu,
    Link,
    LinkAttachment,
    PrintedTotal,
    System,
)
from lightspeed.catalog.totals import TOTAL_KEYS, total_dimension
from lightspeed.datafile import (
    UNIT_SUFFIXES,
    Fields,
    Source,
    load_toml,
    merge_tables,
    normalize_name,
    parse_sources,
)
from lightspeed.errors import DataFileError
from lightspeed.limits import MAX_BYTES, MAX_BYTES_PER_S
from lightspeed.paths import package_data

SCHEMA_VERSION: Final = 1
KINDS: Final = ("link", "cpu", "accelerator", "system", "cluster")
INTEGER_PRECISIONS: Final = frozenset({"int8", "int4"})
OTHER_KINDS: Final = frozenset({"model", "mig", "system-power"})
# One device's peak: 50x the highest any vendor prints (GB300 FP4 with sparsity, 20 PFLOP/s per GPU).
MAX_DEVICE_OP_PER_S: Final = 1e18
# What one device (a GPU, a CPU socket, a link port) can hold or move, far above any built; a figure
# above is a unit slip (bandwidth_tb_per_s = 3350 for 3,350 GB/s is 3.35 PB/s)
DEVICE_CEILINGS: Final[dict[str, tuple[float, str, str]]] = {
    "bytes_per_s": (MAX_BYTES_PER_S, "B/s", "1 PB/s (HBM3e moves 8 TB/s per GPU)"),
    "per_s": (MAX_DEVICE_OP_PER_S, "FLOP/s", "1 EFLOP/s (GB300's sparse FP4 is 20 PFLOP/s)"),
    "bytes": (MAX_BYTES, "B", "1 PiB"),
}
# 2:4 structured sparsity doubles the dense rate; vendors' rounding prints the L40S at 733 | 362.05
MAX_SPARSE_TO_DENSE: Final = 2.05
Named = TypeVar(
    "Named", Accelerator, Cpu, Link, System
)  # read by other loaders from the same --catalog paths


LOG = logging.getLogger(__name__)


def _is_shipped(path: Path) -> bool:
    """Whether ``path`` is one of lightspeed's own data files (not a user's override)."""
    return path.resolve().is_relative_to(package_data("catalog", "data").resolve())


@dataclass
class RawRecords:
    """Parsed TOML tables with ``extends`` applied, by kind then name, with their paths."""

    tables: dict[str, dict[str, dict[str, Any]]] = field(default_factory=lambda: {kind: {} for kind in KINDS})
    paths: dict[tuple[str, str], str] = field(default_factory=dict)

    def add(self, path: Path, data: dict[str, Any]) -> bool:
        """Add one file's record; ``False`` (nothing added) when it extends a record not yet known."""
        fields = Fields(str(path), data)
        kind = _check_header(fields)
        name = normalize_name(fields.string("name"))
        if not name:
            raise DataFileError(path, "empty name", field="name", fix='name the record, e.g. name = "my-gpu"')
        base_name = data.get("extends")
        if base_name is not None:
            base = self.tables[kind].get(normalize_name(str(base_name)))
            if base is None:
                return False
            data = _deep_merge(base, data)
            if normalize_name(str(base_name)) != name:
                if "aliases" not in fields.data:
                    data["aliases"] = []  # aliases name the base record, not the copy
                if "display_name" not in fields.data:
                    data["display_name"] = fields.string("name")
        check_record(Fields(str(path), data), kind)
        replaced = self.paths.get((kind, name))
        if replaced is not None:
            LOG.info("catalog: %s replaces %s %r of %s", path, kind, name, replaced)
        elif not _is_shipped(path):
            LOG.info("catalog: %s adds %s %r", path, kind, name)
        self.tables[kind][name] = data
        self.paths[(kind, name)] = str(path)
        return True


def _check_header(fields: Fields) -> str:
    fields.schema_version({SCHEMA_VERSION})
    return fields.choice("kind", KINDS, "kind")


def _deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` over ``base`` (usable_gib overrides usable_gb: the base's other units go)."""
    merged = merge_tables(base, override, quantity=quantity_base)
    merged.pop("extends", None)
    return merged


_SUFFIXES: Final = sorted(
    {suffix for table in UNIT_SUFFIXES.values() for suffix in table}, key=len, reverse=True
)


def quantity_base(key: str) -> str | None:
    """``'usable'`` for ``'usable_gib'``; ``None`` when ``key`` carries no unit suffix."""
    for suffix in _SUFFIXES:
        if key.endswith(f"_{suffix}") and len(key) > len(suffix) + 1:
            return key[: -len(suffix) - 1]
    return None


def builtin_files() -> list[Path]:
    """Every TOML file shipped in ``lightspeed/catalog/data`` (sorted, links first)."""
    root = package_data("catalog", "data")
    files: list[Path] = []
    for kind_dir in ("links", "cpus", "accelerators", "systems"):
        folder = Path(str(root / kind_dir))
        if folder.is_dir():
            files.extend(sorted(folder.glob("*.toml")))
    return files


def read_raw(files: Iterable[Path], kinds: Iterable[str] = KINDS) -> RawRecords:
    """Parse files into :class:`RawRecords`, skipping records of other kinds.

    A record that ``extends`` one defined in a later file waits until that
    file is read; a base that never appears is an error naming the file.
    """
    raw = RawRecords()
    wanted = set(kinds)
    pending: list[tuple[Path, dict[str, Any]]] = []
    for path in files:
        data = load_toml(path, what="catalog TOML file")
        kind = data.get("kind")
        if (kind in wanted or kind not in {*KINDS, *OTHER_KINDS}) and not raw.add(path, data):
            pending.append((path, data))
    while pending:
        waiting = [(path, data) for path, data in pending if not raw.add(path, data)]
        if len(waiting) == len(pending):
            _raise_cycle(waiting)
            path, data = waiting[0]
            kind = str(data.get("kind"))
            raise DataFileError(
                path,
                f"extends an unknown {kind}",
                field="extends",
                value=data.get("extends"),
                fix=f"name {'an' if kind[0] in 'aeiou' else 'a'} {kind} from 'lightspeed hw list' "
                "or pass its file with --catalog",
            )
        pending = waiting
    return raw


def _raise_cycle(waiting: list[tuple[Path, dict[str, Any]]]) -> None:
    """Raise when the records still waiting extend each other in a loop (``a -> b -> a``)."""
    base_of = {
        normalize_name(str(data.get("name", ""))): (path, normalize_name(str(data.get("extends", ""))))
        for path, data in waiting
    }
    for start in base_of:
        chain = [start]
        while (step := base_of.get(chain[-1])) is not None:
            if step[1] in chain:
                loop = [*chain[chain.index(step[1]) :], step[1]]
                raise DataFileError(
                    base_of[start][0],
                    f"extends cycle: {' -> '.join(loop)}",
                    field="extends",
                    fix="make one of these records stand alone (drop its extends)",
                )
            chain.append(step[1])


def parse_link(path: str, data: Mapping[str, Any]) -> Link:
    """A link record (NVLink port, PCIe x16, InfiniBand port, ...)."""
    fields = Fields(path, data)
    sources = parse_sources(fields)
    bandwidth = _required_table(fields, "bandwidth")
    latency = _required_table(fields, "latency")
    per_direction = bandwidth.quantity("per_direction", "bytes_per_s")
    bidirectional = bandwidth.quantity("bidirectional", "bytes_per_s")
    record = normalize_name(fields.string("name"))
    for base in ("per_direction", "bidirectional"):
        check_ceiling(bandwidth, base, "bytes_per_s", record)
    if bidirectional < per_direction:
        raise DataFileError(
            path,
            "bidirectional bandwidth is below the per-direction bandwidth",
            field="bandwidth",
            value=[per_direction, bidirectional],
            fix="bidirectional is the two-way total, usually 2 x per_direction",
        )
    return Link(
        name=normalize_name(fields.string("name")),
        display_name=fields.string("display_name", fields.string("name")),
        aliases=_aliases(fields),
        family=fields.string("family"),
        per_direction_bytes_per_s=per_direction,
        bidirectional_bytes_per_s=bidirectional,
        latency_s=latency.quantity("typical", "seconds"),
        source=bandwidth.check_source("source", sources),
        sources=sources,
        note=fields.string("note", ""),
        path=path,
        latency_source=latency.check_source("source", sources),
    )


def _required_table(fields: Fields, key: str) -> Fields:
    table = fields.table(key)
    assert table is not None  # required tables raise DataFileError when absent
    return table


def _aliases(fields: Fields) -> tuple[str, ...]:
    """The record's aliases, normalized, each once, without its own name (``NVIDIA A10`` and
    ``nvidia-a10`` are one alias)."""
    name = normalize_name(fields.string("name"))
    aliases = (normalize_name(alias) for alias in fields.strings("aliases"))
    return tuple(dict.fromkeys(alias for alias in aliases if alias != name))


def parse_compute(fields: Fields, sources: Mapping[str, Source]) -> dict[str, ComputeFigure]:
    """``[compute.<precision>]`` rows: printed value, sparsity flag, dense value, source."""
    rows: dict[str, ComputeFigure] = {}
    record = normalize_name(fields.string("name"))
    for precision, row in fields.tables("compute").items():
        if precision not in COMPUTE_ROWS:
            raise DataFileError(
                fields.path,
                "unknown compute row",
                field=f"compute.{precision}",
                fix=f"use one of: {', '.join(COMPUTE_ROWS)}",
            )
        printed = row.quantity("printed", "per_s")
        sparse = row.boolean("printed_with_sparsity")
        check_ceiling(row, "printed", "per_s", record)
        rows[precision] = ComputeFigure(
            precision=precision,
            printed_per_s=printed,
            printed_with_sparsity=sparse,
            dense_per_s=_dense_value(row, printed, sparse, record),
            unit="OP/s" if precision in INTEGER_PRECISIONS else "FLOP/s",
            source=row.check_source("source", sources),
            note=row.string("note", ""),
        )
    return rows


def _dense_value(row: Fields, printed: float, sparse: bool, record: str) -> float:
    """The dense figure of one compute row; checks it against the printed one."""
    dense = row.optional_quantity("dense", "per_s")
    where = row.prefix.rstrip(".")
    if dense is None:
        if sparse:
            raise DataFileError(
                row.path,
                "a sparse printed figure needs its dense value",
                field=where,
                fix="add dense_<unit> (half the printed value unless the vendor prints otherwise)",
            )
        return printed
    if not sparse and dense != printed:
        raise DataFileError(
            row.path,
            "a figure printed dense is its own dense value",
            field=where,
            value=dense,
            fix="remove dense_<unit>, or set printed_with_sparsity = true if the vendor printed it sparse",
        )
    if dense > printed:
        raise DataFileError(
            row.path,
            "dense value above the printed sparse value",
            field=where,
            value=dense,
            fix="the dense figure is at most the sparse one (half of it for 2:4 sparsity)",
        )
    if sparse and printed > MAX_SPARSE_TO_DENSE * dense:
        raise DataFileError(
            row.path,
            f"record {record!r}: the printed sparse figure is {printed / dense:.3g}x the dense one",
            field=where,
            fix="2:4 structured sparsity doubles the dense rate: sparse/dense is 2 (up to 2.05 with "
            "the vendor's rounding; below 2 where the vendor prints it so); check both figures and units",
        )
    return dense


def check_ceiling(table: Fields | None, base: str, dimension: str, record: str) -> None:
    """Refuse a ``base_<unit>`` figure of one device above :data:`DEVICE_CEILINGS` (a unit slip),
    naming the record, the key as written and the plausible range."""
    value = table.optional_quantity(base, dimension) if table is not None else None
    ceiling, unit, words = DEVICE_CEILINGS[dimension]
    if table is None or value is None or value <= ceiling:
        return
    key = next(f"{base}_{suffix}" for suffix in UNIT_SUFFIXES[dimension] if f"{base}_{suffix}" in table.data)
    raise DataFileError(
        table.path,
        f"record {record!r}: {value:.3g} {unit} is more than one device can reach",
        field=f"{table.prefix}{key}",
        value=table.data[key],
        fix=f"the plausible range is above 0 up to {words}; check the number against its unit suffix",
    )


def parse_attachment(
    fields: Fields | None,
    links: Mapping[str, Link],
    sources: Mapping[str, Source],
    count_key: str = "num_links",
) -> LinkAttachment | None:
    """A ``link = "<name>"`` plus a link count, resolved against known links."""
    if fields is None:
        return None
    link = find_link(fields, links)
    source = fields.check_source("source", sources) if fields.has("source") else link.source
    return LinkAttachment(link=link, num_links=fields.integer(count_key, minimum=1), source=source)


def find_record(known: Mapping[str, Named], name: str) -> Named | None:
    """The record whose name or alias is ``name`` (normalized), else ``None``."""
    key = normalize_name(name)
    if key in known:
        return known[key]
    return next((record for record in known.values() if key in record.aliases), None)


def find_link(fields: Fields, links: Mapping[str, Link]) -> Link:
    """The link named by the ``link`` key of ``fields`` (exact name or alias)."""
    link: Link = _resolve(fields, "link", links)
    return link


def parse_conflicts(fields: Fields, sources: Mapping[str, Source]) -> tuple[Conflict, ...]:
    """``[[conflicts]]`` entries: a field two documents disagree on, and the choice made."""
    conflicts = []
    for entry in fields.array_of_tables("conflicts"):
        values = entry.strings("values")
        chosen = entry.string("chosen")
        if chosen not in values:
            raise DataFileError(
                fields.path,
                "the chosen value is not one of the conflicting values",
                field=f"{entry.prefix}chosen",
                value=chosen,
                fix=f"use one of: {', '.join(values)}",
            )
        cited = entry.strings("sources")
        for key in cited:
            if key not in sources:
                raise DataFileError(
                    fields.path,
                    "source not declared",
                    field=f"{entry.prefix}sources",
                    value=key,
                    fix=f"add [sources.{key}] with title and url",
                )
        conflicts.append(
            Conflict(
                field=entry.string("field"),
                values=values,
                chosen=chosen,
                sources=cited,
                note=entry.string("note", ""),
            )
        )
    return tuple(conflicts)


def parse_accelerator(path: str, data: Mapping[str, Any], links: Mapping[str, Link]) -> Accelerator:
    """An accelerator record."""
    fields = Fields(path, data)
    sources = parse_sources(fields)
    _check_has_compute(fields)
    memory = _required_table(fields, "memory")
    power = fields.table("power", required=False)
    chip = fields.table("chip", required=False)
    chip_source = chip.check_source("source", sources) if chip is not None else ""
    nominal = memory.quantity("nominal", "bytes")
    usable = memory.optional_quantity("usable", "bytes")
    device_memory = fields.table("device_memory", required=False)
    reported = device_memory.optional_quantity("reported", "bytes") if device_memory is not None else None
    reported_source = device_memory.check_source("source", sources) if device_memory is not None else ""
    record = normalize_name(fields.string("name"))
    for table, base, dimension in (
        (memory, "bandwidth", "bytes_per_s"),
        (memory, "nominal", "bytes"),
        (memory, "usable", "bytes"),
        (device_memory, "reported", "bytes"),
    ):
        check_ceiling(table, base, dimension, record)
    _check_memory(path, nominal, usable, reported)
    if power is not None:
        _check_power_range(power)
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
        memory_nominal_bytes=nominal,
        memory_usable_bytes=nominal if usable is None else usable,
        memory_bandwidth_bytes_per_s=memory.quantity("bandwidth", "bytes_per_s"),
        memory_source=memory.check_source("source", sources),
        l2_cache_bytes=chip.optional_quantity("l2_cache", "bytes") if chip else None,
        num_compute_units=chip.optional_integer("num_compute_units") if chip else None,
        boost_clock_hz=chip.optional_quantity("boost_clock", "hertz") if chip else None,
        tdp_w=power.optional_quantity("tdp", "watts") if power else None,
        tdp_min_w=power.optional_quantity("tdp_min", "watts") if power else None,
        power_limit_w=power.optional_quantity("limit", "watts") if power else None,
        tdp_includes_cpu=power.boolean("includes_cpu", False) if power else False,
        memory_reported_bytes=reported,
        memory_reported_source=reported_source,
        power_source=power.check_source("source", sources) if power else "",
        scale_up=parse_attachment(fields.table("scale_up", required=False), links, sources),
        host_link=parse_attachment(fields.table("host_link", required=False), links, sources),
        sources=sources,
        conflicts=parse_conflicts(fields, sources),
        note=fields.string("note", ""),
        path=path,
        num_logical_devices=chip.integer("num_logical_devices", 1, minimum=1) if chip else 1,
        chip_source=chip_source,
    )


def _check_has_compute(fields: Fields) -> None:
    """An accelerator needs at least one compute row: every SOL divides by one."""
    if not fields.tables("compute"):
        raise DataFileError(
            fields.path,
            f"record {normalize_name(fields.string('name'))!r} has no compute figure",
            field="compute",
            fix=f"add at least one [compute.<row>] table (a row of {', '.join(COMPUTE_ROWS)}) with "
            "printed_<unit>, printed_with_sparsity and source",
        )


def _check_memory(path: str, nominal: float, usable: float | None, reported: float | None) -> None:
    """Usable and driver-reported memory are parts of the nominal capacity, never more than it."""
    for key, value, what in (
        ("memory.usable", usable, "the listed usable memory"),
        ("device_memory.reported", reported, "the driver-reported memory"),
    ):
        if value is not None and value > nominal * (1.0 + 1e-12):
            raise DataFileError(
                path,
                f"{what} ({value / 2**30:,.2f} GiB) is above the nominal capacity "
                f"({nominal / 2**30:,.2f} GiB)",
                field=key,
                fix="nominal is what the stacks hold: write it in the vendor's binary meaning "
                "(nominal_gib: HBM/GDDR 'GB' are GiB) and check both figures",
            )


def _check_power_range(power: Fields) -> None:
    """``tdp_min`` is the bottom of the TDP range and ``limit`` a configured cap: neither above ``tdp``."""
    tdp = power.optional_quantity("tdp", "watts")
    tdp_min = power.optional_quantity("tdp_min", "watts")
    limit = power.optional_quantity("limit", "watts")
    if tdp is not None and tdp_min is not None and tdp_min > tdp:
        raise DataFileError(
            power.path,
            f"tdp_min ({tdp_min:,.0f} W) is above tdp ({tdp:,.0f} W)",
            field=f"{power.prefix}tdp_min",
            fix="tdp is the top of the range and tdp_min its bottom: swap them",
        )
    if tdp is not None and limit is not None and limit > tdp:
        raise DataFileError(
            power.path,
            f"the power limit ({limit:,.0f} W) is above tdp ({tdp:,.0f} W)",
            field=f"{power.prefix}limit",
            fix="limit is a configured cap at or below the TDP (nvidia-smi -pl): lower it, or raise tdp "
            "if the part's own TDP is higher",
        )


def _check_system_power(power: Fields) -> None:
    """A system's ``min`` power (the bottom of a printed range) is not above its ``max``."""
    most = power.optional_quantity("max", "watts")
    least = power.optional_quantity("min", "watts")
    if most is not None and least is not None and least > most:
        raise DataFileError(
            power.path,
            f"the minimum system power ({least / 1e3:,.3g} kW) is above the maximum ({most / 1e3:,.3g} kW)",
            field=f"{power.prefix}min",
            fix="max is the top of the printed range and min its bottom: swap them",
        )


def parse_cpu(path: str, data: Mapping[str, Any]) -> Cpu:
    """A CPU record (one socket)."""
    fields = Fields(path, data)
    sources = parse_sources(fields)
    chip = _required_table(fields, "chip")
    memory = _required_table(fields, "memory")
    compute = fields.table("compute", required=False)
    power = fields.table("power", required=False)
    memory.check_source("source", sources)
    record = normalize_name(fields.string("name"))
    check_ceiling(memory, "bandwidth", "bytes_per_s", record)
    check_ceiling(memory, "capacity", "bytes", record)
    for base in ("fp64", "fp32"):
        check_ceiling(compute, base, "per_s", record)
    for table in (compute, power):
        if table is not None:
            table.check_source("source", sources)
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
        max_clock_hz=chip.optional_quantity("max_clock", "hertz"),
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
    accelerator: Accelerator = _resolve(fields, "accelerator", accelerators)
    cpu: Cpu | None = _resolve(fields, "cpu", cpus) if fields.has("cpu") else None
    scale_up = _required_table(fields, "scale_up")
    power = fields.table("power", required=False)
    if power is not None:
        _check_system_power(power)
    num_accelerators = fields.integer("num_accelerators", minimum=1)
    _check_domain_size(scale_up, num_accelerators)
    scale_out = parse_attachment(fields.table("scale_out", required=False), links, sources, "nics_per_node")
    if scale_out is not None and not scale_out.link.is_scale_out:
        raise DataFileError(
            path,
            f"{scale_out.link.name} (link family {scale_out.link.family}) joins accelerators inside a "
            "node, not nodes",
            field="scale_out.link",
            value=scale_out.link.name,
            fix=f"name a NIC link (family {', '.join(SCALE_OUT_LINK_FAMILIES)}), e.g. ib-ndr",
        )
    return System(
        name=normalize_name(fields.string("name")),
        display_name=fields.string("display_name", fields.string("name")),
        aliases=_aliases(fields),
        system_type=fields.string("system_type"),
        accelerator=accelerator,
        num_accelerators=num_accelerators,
        cpu=cpu,
        num_cpus=_num_cpus(fields, cpu),
        scale_up_domain_size=scale_up.integer("domain_size", minimum=1),
        in_network_reduction=scale_up.boolean("in_network_reduction", False),
        scale_out=scale_out,
        power_max_w=power.optional_quantity("max", "watts") if power else None,
        power_min_w=power.optional_quantity("min", "watts") if power else None,
        printed_totals=_printed_totals(fields, sources, accelerator),
        source=fields.check_source("source", sources),
        sources=sources,
        note=fields.string("note", ""),
        path=path,
        power_source=power.check_source("source", sources) if power else "",
        conflicts=parse_conflicts(fields, sources),
        cloud_provider=fields.string("cloud_provider", ""),
        **_node(fields, sources),
        **_torus(scale_up),
    )


def _num_cpus(fields: Fields, cpu: Cpu | None) -> int:
    """How many host CPUs: required (at least 1) when ``cpu`` names one, else 0 by default."""
    if cpu is None:
        return fields.integer("num_cpus", 0)
    if not fields.has("num_cpus"):
        raise DataFileError(
            fields.path,
            "num_cpus is required when cpu is given",
            field="num_cpus",
            fix=f"write num_cpus = <sockets per system> (2 in an HGX node) beside cpu = {cpu.name!r}, "
            "or drop cpu",
        )
    return fields.integer("num_cpus", minimum=1)


def _check_domain_size(scale_up: Fields, num_accelerators: int) -> None:
    """A scale-up domain lies inside one system record: at most its accelerators, and a divisor of
    them (a larger fabric is one rack or pod record; the network between records is scale-out)."""
    size = scale_up.integer("domain_size", minimum=1)
    if size <= num_accelerators and num_accelerators % size == 0:
        return
    problem = "is larger than" if size > num_accelerators else "does not divide"
    raise DataFileError(
        scale_up.path,
        f"the scale-up domain ({size} accelerators) {problem} the system's {num_accelerators} accelerators",
        field=f"{scale_up.prefix}domain_size",
        value=size,
        fix=f"domain_size counts the accelerators one NVLink/xGMI/ICI fabric joins inside this record: "
        f"{num_accelerators} or a divisor of it; a fabric spanning several nodes is one "
        'system_type = "rack" record holding all its accelerators (gb200-nvl72: 72 and 72)',
    )


def _node(fields: Fields, sources: Mapping[str, Source]) -> dict[str, Any]:
    """A rack's ``[node]`` table: the accelerators of one node inside it (a compute tray), which a
    per-node figure divides by; none for a record that is itself one node."""
    node = fields.table("node", required=False)
    if node is None:
        return {}
    count = node.integer("accelerators", minimum=1)
    if count > fields.integer("num_accelerators", minimum=1) or fields.integer("num_accelerators") % count:
        raise DataFileError(
            fields.path,
            "a node's accelerators must divide the system's",
            field="node.accelerators",
            value=count,
            fix="write how many accelerators one node (a compute tray, a server) of the rack holds",
        )
    return {"accelerators_per_node": count, "node_source": node.check_source("source", sources)}


def _torus(scale_up: Fields) -> dict[str, Any]:
    """The torus fields of a ``[scale_up]`` table with ``topology = "torus"`` (none for a switch)."""
    topology = scale_up.string("topology", "switch")
    if topology not in ("switch", "torus"):
        raise DataFileError(
            scale_up.path,
            "unknown topology",
            field=f"{scale_up.prefix}topology",
            value=topology,
            fix='write topology = "switch" (the default) or "torus"',
        )
    if topology == "switch":
        return {}
    value = scale_up.data.get("torus_dimensions")
    if not isinstance(value, list) or not value or not all(isinstance(x, int) and x >= 1 for x in value):
        raise DataFileError(
            scale_up.path,
            "a torus needs its shape",
            field=f"{scale_up.prefix}torus_dimensions",
            value=value,
            fix="write torus_dimensions = [16, 16] (one whole number per axis)",
        )
    size = scale_up.integer("domain_size", minimum=1)
    if math.prod(value) != size:
        raise DataFileError(
            scale_up.path,
            f"torus_dimensions {value} hold {math.prod(value)} chips, not domain_size {size}",
            field=f"{scale_up.prefix}torus_dimensions",
            fix="make the product of the axes equal domain_size",
        )
    return {
        "torus_dimensions": tuple(sorted(value)),
        "torus_wraparound_unit": scale_up.integer("wraparound_unit", 0),
        "torus_wraparound_whole_slice": scale_up.boolean("wraparound_whole_slice", False),
    }


def _resolve(fields: Fields, key: str, known: Mapping[str, Named]) -> Named:
    name = fields.string(key)
    found = find_record(known, name)
    if found is None:
        raise DataFileError(
            fields.path,
            f"unknown {key}",
            field=f"{fields.prefix}{key}",
            value=normalize_name(name),
            fix=f"use one of: {', '.join(sorted(known))}",
        )
    return found


def _printed_totals(
    fields: Fields, sources: Mapping[str, Source], accelerator: Accelerator
) -> tuple[PrintedTotal, ...]:
    totals = []
    for entry in fields.array_of_tables("printed_totals"):
        key = entry.string("key")
        dimension = total_dimension(key)
        precision = key.rpartition("_")[0]
        unknown_row = dimension == "per_s" and precision not in accelerator.compute
        if dimension is None or key == "power" or unknown_row:
            rows = ", ".join(f"{row}_dense, {row}_sparse" for row in accelerator.compute)
            others = ", ".join(name for name in TOTAL_KEYS if name != "power")
            raise DataFileError(
                fields.path,
                "unknown printed total",
                field=f"{entry.prefix}key",
                value=key,
                fix=f"use one of: {rows}, {others} (system power goes in [power])",
            )
        totals.append(
            PrintedTotal(
                key=key,
                value=entry.quantity("value", dimension),
                unit=TOTAL_KEYS[key][1] if key in TOTAL_KEYS else _compute_unit(precision),
                source=entry.check_source("source", sources),
                note=entry.string("note", ""),
            )
        )
    return tuple(totals)


def _compute_unit(precision: str) -> str:
    return "OP/s" if precision in INTEGER_PRECISIONS else "FLOP/s"

"""Side-by-side comparisons, listings and descriptions of catalog records (what ``hw`` shows).

A comparison aligns the figures of several records of one kind row by row.
Each row keeps what was printed (``values``), whether it was printed with 2:4
sparsity (``sparse``) and the dense figure (``dense_values``); ``ratios`` and
``deltas`` compare dense figures with the first record's, so a sparse
datasheet number never inflates a ratio.

>>> from lightspeed.catalog import load_catalog
>>> comparison = compare_hardware(catalog=load_catalog(), names=["h100-pcie", "h800-pcie"])
>>> comparison.row("fp64").ratios[1] < 0.04
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from lightspeed.catalog.clusters import looks_like_file, looks_like_spec
from lightspeed.catalog.microarch import CpuPeak, cpu_peak, load_microarchitectures
from lightspeed.catalog.records import COMPUTE_ROWS, Accelerator, Cluster, Cpu, Link, LinkAttachment, System
from lightspeed.catalog.registry import Catalog
from lightspeed.catalog.torus import slice_name
from lightspeed.catalog.totals import SystemTotals, derive_totals
from lightspeed.datafile import normalize_name
from lightspeed.errors import UnknownNameError, UserInputError
from lightspeed.records import Record
from lightspeed.units import format_si

KINDS: Final = ("accelerator", "link", "cpu", "system")
HardwareRecord = Accelerator | Link | Cpu | System

_ROW_LABELS: Final = {
    "fp64": "FP64",
    "fp64_tensor": "FP64 tensor",
    "fp32": "FP32",
    "tf32": "TF32 tensor",
    "bf16": "BF16 tensor",
    "fp16": "FP16 tensor",
    "fp8": "FP8 tensor",
    "fp6": "FP6 tensor",
    "fp4": "FP4 tensor",
    "int8": "INT8 tensor",
    "int4": "INT4 tensor",
}


@dataclass(frozen=True)
class Fact:
    """One figure of one record: printed value, dense value, sparsity flag (internal)."""

    field: str
    label: str
    unit: str
    printed: float | None
    dense: float | None = None
    sparse: bool | None = None
    # memory sized in powers of two (HBM/GDDR stacks, what drivers report): shown in GiB, bytes exact
    binary_units: bool = False

    @property
    def dense_value(self) -> float | None:
        """The dense figure (the printed one where the vendor printed it dense)."""
        return self.dense if self.dense is not None else self.printed


@dataclass(frozen=True)
class ComparisonRow(Record):
    """One figure across the compared records; ratios and deltas are dense vs the first record."""

    field: str
    label: str
    unit: str
    values: tuple[float | None, ...]
    dense_values: tuple[float | None, ...]
    sparse: tuple[bool | None, ...]
    ratios: tuple[float | None, ...]
    deltas: tuple[float | None, ...]
    differs: bool
    binary_units: bool = False


@dataclass(frozen=True)
class Comparison(Record):
    """Records of one kind side by side (the ``hw compare --json`` contract)."""

    kind: str
    devices: tuple[str, ...]
    display_names: tuple[str, ...]
    labels: Mapping[str, tuple[str, ...]]
    rows: tuple[ComparisonRow, ...]

    def row(self, field: str) -> ComparisonRow:
        """The row for ``field`` (``bf16``, ``memory_bandwidth``, ``scale_up_bidirectional`` ...)."""
        for row in self.rows:
            if row.field == field:
                return row
        raise UserInputError(f"no row {field!r}; rows: {', '.join(row.field for row in self.rows)}")


@dataclass(frozen=True)
class CatalogEntry(Record):
    """One line of ``hw list``: a record's kind, names and headline figures (base SI)."""

    kind: str
    name: str
    display_name: str
    aliases: tuple[str, ...]
    figures: Mapping[str, float | None]
    path: str


@dataclass(frozen=True)
class Description(Record):
    """What ``hw show`` prints: the record, plus derived totals (systems) or peak (CPUs)."""

    kind: str
    name: str
    record: HardwareRecord | Cluster
    totals: SystemTotals | None = None
    cpu_peak: CpuPeak | None = None


def kind_of(record: HardwareRecord | Cluster) -> str:
    """``'accelerator'``, ``'link'``, ``'cpu'``, ``'system'`` or ``'cluster'``."""
    kinds: dict[type, str] = {Accelerator: "accelerator", Link: "link", Cpu: "cpu", System: "system"}
    return kinds.get(type(record), "cluster")


def _attachment_facts(prefix: str, label: str, attachment: LinkAttachment | None) -> list[Fact]:
    links = attachment.num_links if attachment else None
    return [
        Fact(f"{prefix}_links", f"{label} links", "links", links),
        Fact(
            f"{prefix}_per_direction",
            f"{label} per direction",
            "B/s",
            attachment.per_direction_bytes_per_s if attachment else None,
        ),
        Fact(
            f"{prefix}_bidirectional",
            f"{label} bidirectional",
            "B/s",
            attachment.bidirectional_bytes_per_s if attachment else None,
        ),
    ]


def accelerator_facts(accelerator: Accelerator) -> list[Fact]:
    """Every comparable figure of an accelerator, in display order."""
    facts = [
        Fact(
            "memory_capacity",
            "memory (nominal)",
            "B",
            accelerator.memory_nominal_bytes,
            binary_units=True,
        ),
        Fact("memory_usable", "memory (usable, as listed)", "B", accelerator.memory_usable_bytes),
        Fact(
            "memory_reported",
            "memory (driver-reported)",
            "B",
            accelerator.memory_reported_bytes,
            binary_units=True,
        ),
        Fact("memory_bandwidth", "memory bandwidth", "B/s", accelerator.memory_bandwidth_bytes_per_s),
    ]
    for precision in COMPUTE_ROWS:
        figure = accelerator.compute.get(precision)
        unit = "OP/s" if precision.startswith("int") else "FLOP/s"
        if figure is None:
            facts.append(Fact(precision, _ROW_LABELS[precision], unit, None))
        else:
            facts.append(
                Fact(
                    precision,
                    _ROW_LABELS[precision],
                    figure.unit,
                    figure.printed_per_s,
                    figure.dense_per_s,
                    figure.printed_with_sparsity,
                )
            )
    facts += _attachment_facts("scale_up", "scale-up", accelerator.scale_up)
    facts += _attachment_facts("host_link", "host link", accelerator.host_link)[1:]
    facts += [
        Fact("tdp", "TDP (max)", "W", accelerator.tdp_w),
        Fact("tdp_min", "TDP (min of range)", "W", accelerator.tdp_min_w),
        Fact("power_limit", "power limit (configured cap)", "W", accelerator.power_limit_w),
        Fact("l2_cache", "L2 cache", "B", accelerator.l2_cache_bytes),
        Fact("compute_units", "SMs / CUs", "units", accelerator.num_compute_units),
        Fact("boost_clock", "boost clock", "Hz", accelerator.boost_clock_hz),
    ]
    return facts


def link_facts(link: Link) -> list[Fact]:
    """Bandwidth per direction and bidirectional, and latency, of one link."""
    return [
        Fact("per_direction", "per direction", "B/s", link.per_direction_bytes_per_s),
        Fact("bidirectional", "bidirectional", "B/s", link.bidirectional_bytes_per_s),
        Fact("latency", "small-message latency", "s", link.latency_s),
    ]


def cpu_record_peak(cpu: Cpu, num_sockets: int = 1) -> CpuPeak | None:
    """Peak of a catalog CPU from its microarchitecture table entry at its base clock."""
    table = load_microarchitectures()
    arch = table.get(cpu.microarchitecture)
    if arch is None:
        return None
    boost = f"; boost up to {cpu.max_clock_hz / 1e9:.3g} GHz" if cpu.max_clock_hz else ""
    return cpu_peak(
        microarchitecture=arch,
        flags=None,
        num_sockets=num_sockets,
        num_cores_per_socket=cpu.num_cores,
        clock_hz=cpu.clock_hz,
        clock_note=f"base clock of {cpu.display_name}{boost}",
    )


def cpu_facts(cpu: Cpu) -> list[Fact]:
    """Cores, clocks, printed and derived peaks, memory and power of one CPU (one socket)."""
    peak = cpu_record_peak(cpu)
    return [
        Fact("cores", "cores", "cores", cpu.num_cores),
        Fact("clock", "base clock", "Hz", cpu.clock_hz),
        Fact("max_clock", "max boost clock", "Hz", cpu.max_clock_hz),
        Fact("fp64_printed", "FP64 (printed)", "FLOP/s", cpu.fp64_flop_per_s),
        Fact("fp64_peak", "FP64 (derived at base clock)", "FLOP/s", peak.fp64_flop_per_s if peak else None),
        Fact("fp32_peak", "FP32 (derived at base clock)", "FLOP/s", peak.fp32_flop_per_s if peak else None),
        Fact("memory_capacity", "memory capacity", "B", cpu.memory_capacity_bytes),
        Fact("memory_bandwidth", "memory bandwidth", "B/s", cpu.memory_bandwidth_bytes_per_s),
        Fact("tdp", "TDP", "W", cpu.tdp_w),
    ]


def system_facts(system: System) -> list[Fact]:
    """Counts plus every derived total of a system (what the parts add up to)."""
    facts = [
        Fact("num_accelerators", "accelerators", "devices", system.num_accelerators),
        Fact("scale_up_domain_size", "scale-up domain", "devices", system.scale_up_domain_size),
    ]
    facts += [
        Fact(row.key, row.label, row.unit, row.derived, binary_units=row.binary_units)
        for row in derive_totals(system=system).rows
    ]
    return facts


# system totals a cluster replaces with its own fabric's figures
_NODE_ONLY_TOTALS: Final = ("scale_out_per_direction",)


def cluster_facts(cluster: Cluster) -> list[Fact]:
    """Nodes and accelerators, every total of one node times the nodes, and the scale-out fabric
    (per accelerator and over all nodes) of a cluster."""
    nodes = cluster.num_nodes
    facts = [
        Fact("num_nodes", "nodes", "nodes", nodes),
        Fact("num_accelerators", "accelerators", "devices", cluster.num_accelerators),
        Fact("scale_up_domain_size", "scale-up domain", "devices", cluster.system.scale_up_domain_size),
    ]
    facts += [
        Fact(
            row.key,
            row.label,
            row.unit,
            None if row.derived is None else nodes * row.derived,
            binary_units=row.binary_units,
        )
        for row in derive_totals(system=cluster.system).rows
        if row.key not in _NODE_ONLY_TOTALS
    ]
    fabric = cluster.fabric
    facts += [
        Fact(
            "scale_out_per_accelerator",
            "scale-out per accelerator, per direction",
            "B/s",
            cluster.scale_out_per_accelerator_bytes_per_s() if fabric is not None else None,
        ),
        Fact(
            "scale_out_per_direction",
            "scale-out NICs of all nodes, per direction",
            "B/s",
            nodes * fabric.per_direction_bytes_per_s if fabric is not None else None,
        ),
    ]
    return facts


def _facts(record: HardwareRecord | Cluster) -> list[Fact]:
    if isinstance(record, Cluster):
        return cluster_facts(record)
    if isinstance(record, Accelerator):
        return accelerator_facts(record)
    if isinstance(record, Link):
        return link_facts(record)
    if isinstance(record, Cpu):
        return cpu_facts(record)
    return system_facts(record)


def _labels(records: Sequence[HardwareRecord | Cluster]) -> dict[str, tuple[str, ...]]:
    labels: dict[str, tuple[str, ...]] = {"display_name": tuple(_display_name(record) for record in records)}
    clusters = [record for record in records if isinstance(record, Cluster)]
    if clusters and len(clusters) == len(records):
        labels["system"] = tuple(cluster.system.name for cluster in clusters)
        labels["scale_out_link"] = tuple(c.fabric.link.name if c.fabric else "" for c in clusters)
    if all(isinstance(record, Accelerator) for record in records):
        accelerators = [record for record in records if isinstance(record, Accelerator)]
        for key in ("vendor", "architecture", "form_factor", "family", "memory_type"):
            labels[key] = tuple(str(getattr(record, key)) for record in accelerators)
        labels["scale_up_link"] = tuple(a.scale_up.link.name if a.scale_up else "" for a in accelerators)
        labels["host_link"] = tuple(a.host_link.link.name if a.host_link else "" for a in accelerators)
    return labels


def compare_records(
    records: Sequence[HardwareRecord | Cluster], names: Sequence[str] | None = None
) -> Comparison:
    """Records of one kind side by side; ratios and deltas are dense figures vs the first record.
    ``names`` are the column names (default: each record's name; a cluster's spec)."""
    if len(records) < 2:
        raise UserInputError("compare needs at least two records")
    kinds = {kind_of(record) for record in records}
    if len(kinds) > 1:
        raise UserInputError(
            f"cannot compare records of different kinds ({', '.join(sorted(kinds))}); "
            "compare accelerators with accelerators, systems with systems, ..."
        )
    columns = [{fact.field: fact for fact in _facts(record)} for record in records]
    order = list(dict.fromkeys(field for column in columns for field in column))
    rows = tuple(_row([column.get(field) for column in columns]) for field in order)
    return Comparison(
        kind=kinds.pop(),
        devices=tuple(names) if names is not None else tuple(_column_name(record) for record in records),
        display_names=tuple(_display_name(record) for record in records),
        labels=_labels(records),
        rows=tuple(row for row in rows if any(value is not None for value in row.values)),
    )


def _column_name(record: HardwareRecord | Cluster) -> str:
    return record.spec if isinstance(record, Cluster) else record.name


def _display_name(record: HardwareRecord | Cluster) -> str:
    return record.name if isinstance(record, Cluster) else record.display_name


def _row(facts: Sequence[Fact | None]) -> ComparisonRow:
    template = next(fact for fact in facts if fact is not None)
    dense = tuple(fact.dense_value if fact else None for fact in facts)
    base = dense[0]
    ratios = tuple(value / base if value is not None and base else None for value in dense)
    deltas = tuple(value - base if value is not None and base is not None else None for value in dense)
    known = [value for value in dense if value is not None]
    differs = base is not None and any(abs(value - base) > 1e-9 * max(abs(base), 1.0) for value in known)
    return ComparisonRow(
        field=template.field,
        label=template.label,
        unit=template.unit,
        values=tuple(fact.printed if fact else None for fact in facts),
        dense_values=dense,
        sparse=tuple(fact.sparse if fact else None for fact in facts),
        ratios=ratios,
        deltas=deltas,
        differs=differs,
        binary_units=template.binary_units,
    )


def lookup(catalog: Catalog, name: str, kind: str | None = None) -> HardwareRecord:
    """A record by name or alias, of ``kind`` if given, else of any kind."""
    finders: dict[str, Callable[[str], HardwareRecord]] = {
        "accelerator": catalog.accelerator,
        "link": catalog.link,
        "cpu": catalog.cpu,
        "system": catalog.system,
    }
    if kind is None:
        return catalog.any_record(name)
    return finders[kind](name)


def compare_hardware(*, catalog: Catalog, names: Sequence[str]) -> Comparison:
    """Compare the records named ``names``: all of one kind (the first name's), or clusters (a
    cluster spec such as ``2xdgx-h100``, a TPU slice, a cluster file: whatever ``hw show`` takes),
    with a system name among them taken as one node of it. A name given twice, or two names of one
    record, is refused, as is a name of another kind, saying which kinds they are."""
    if len(names) < 2:
        raise UserInputError("hw compare needs at least two names, e.g. hw compare h100-pcie h800-pcie")
    first = _record_or_cluster(catalog, names[0])
    kind = kind_of(first)
    records = [first, *(_same_kind(catalog, name, kind) for name in names[1:])]
    kinds = [kind_of(record) for record in records]
    if "cluster" in kinds and set(kinds) <= {"cluster", "system"}:
        records = [
            record if isinstance(record, Cluster) else catalog.resolve_cluster(name)
            for name, record in zip(names, records, strict=True)
        ]
    _refuse_other_kinds(names, records)
    _refuse_repeats(names, records)
    return compare_records(
        records, names=[_compare_name(name, record) for name, record in zip(names, records, strict=True)]
    )


def _record_or_cluster(catalog: Catalog, name: str) -> HardwareRecord | Cluster:
    """A record of any kind by name, or a cluster (spec, TPU slice, cluster file, a cluster a
    ``--catalog`` file defines): what ``hw show`` reads."""
    try:
        return catalog.any_record(name)
    except UnknownNameError:
        known_cluster = normalize_name(name) in catalog.clusters or slice_name(name) is not None
        if not (looks_like_file(name) or looks_like_spec(name) or known_cluster):
            raise
        return catalog.resolve_cluster(name)


def _same_kind(catalog: Catalog, name: str, kind: str) -> HardwareRecord | Cluster:
    """``name`` as a record of ``kind`` where it is one, else as whatever it names."""
    if kind not in KINDS:
        return _record_or_cluster(catalog, name)
    try:
        return lookup(catalog, name, kind)
    except UnknownNameError as unknown:
        try:
            return _record_or_cluster(catalog, name)
        except UnknownNameError:
            raise unknown from None  # its closest names are of the kind asked for


_ARTICLES: Final = {"accelerator": "an accelerator", "system": "a system", "link": "a link", "cpu": "a CPU"}
_EXAMPLES: Final = {
    "accelerator": "hw compare h100-sxm h200-sxm",
    "system": "hw compare dgx-h100 dgx-b200",
    "link": "hw compare nvlink-4 nvlink-5",
    "cpu": "hw compare xeon-platinum-8480c epyc-9654",
    "cluster": "hw compare 2xdgx-h100 9xdgx-h100@ib-ndr",
}


def _refuse_other_kinds(names: Sequence[str], records: Sequence[HardwareRecord | Cluster]) -> None:
    kinds = [kind_of(record) for record in records]
    other = next((index for index, kind in enumerate(kinds) if kind != kinds[0]), None)
    if other is None:
        return
    first, second = kinds[0], kinds[other]
    raise UserInputError(
        f"hw compare takes names of one kind: {names[0]!r} is {_ARTICLES.get(first, 'a ' + first)} and "
        f"{names[other]!r} {_ARTICLES.get(second, 'a ' + second)}; compare {first}s with {first}s "
        f"({_EXAMPLES[first]}) or {second}s with {second}s ({_EXAMPLES[second]})"
        + _accelerator_hint(names, kinds)
    )


def _accelerator_hint(names: Sequence[str], kinds: Sequence[str]) -> str:
    """Where an accelerator meets a system or cluster: how to see the system's accelerator."""
    if "accelerator" not in kinds:
        return ""
    machine = next(
        (name for name, kind in zip(names, kinds, strict=True) if kind in ("system", "cluster")), None
    )
    return f"; 'hw show {machine}' names its accelerator" if machine is not None else ""


def _identity(record: HardwareRecord | Cluster) -> str:
    return f"{record.spec} {record.name}" if isinstance(record, Cluster) else record.name


def _refuse_repeats(names: Sequence[str], records: Sequence[HardwareRecord | Cluster]) -> None:
    identities = [_identity(record) for record in records]
    for index, identity in enumerate(identities):
        if identity not in identities[:index]:
            continue
        earlier, name = names[identities.index(identity)], names[index]
        same = (
            f"{name!r} is given twice"
            if earlier.strip() == name.strip()
            else f"{earlier!r} and {name!r} name the same {kind_of(records[index])} "
            f"({_column_name(records[index])})"
        )
        raise UserInputError(f"hw compare: {same}; name each record once")


def _compare_name(name: str, record: HardwareRecord | Cluster) -> str:
    """A column's name: the record's own name, or for a cluster the name as typed."""
    return name.strip() if isinstance(record, Cluster) else record.name


def describe(*, catalog: Catalog, name: str) -> Description:
    """A record (or a cluster spec such as ``9xdgx-h100@ib-ndr``, a TPU slice such as ``v5e-8``)
    with its derived figures."""
    record = _record_or_cluster(catalog, name)
    kind = kind_of(record)
    totals = _with_power_range(derive_totals(system=record), record) if isinstance(record, System) else None
    peak = cpu_record_peak(record) if isinstance(record, Cpu) else None
    return Description(kind=kind, name=record.name, record=record, totals=totals, cpu_peak=peak)


def power_range_note(system: System) -> str:
    """The note saying that a system's printed power is a range (``min_kw`` and ``max_kw`` in its
    file), of which the totals' printed figure is the top; empty where it is one figure.

    >>> from lightspeed.catalog import load_catalog
    >>> power_range_note(load_catalog().system("gb200-nvl72"))[:53]
    'printed power is a range, 120-132 kW (seed-rack-power'
    """
    if system.power_min_w is None or system.power_max_w is None:
        return ""
    low, high = format_si(system.power_min_w, "W"), format_si(system.power_max_w, "W")
    low_number, _, low_unit = low.partition(" ")
    span = f"{low_number}-{high}" if high.endswith(f" {low_unit}") else f"{low} to {high}"
    return f"printed power is a range, {span} ({system.power_source}): the printed column shows its top"


def _with_power_range(totals: SystemTotals, system: System) -> SystemTotals:
    """``totals`` whose power row also notes the printed range (GB200 NVL72: 120-132 kW)."""
    note = power_range_note(system)
    if not note:
        return totals
    rows = tuple(
        replace(row, note=f"{note}; {row.note}" if row.note else note) if row.key == "power" else row
        for row in totals.rows
    )
    return replace(totals, rows=rows)


def _headline(record: HardwareRecord) -> dict[str, float | None]:
    if isinstance(record, Accelerator):
        return {
            **_half_precision(record, 1),
            "memory_bytes": record.memory_usable_bytes,
            "memory_bandwidth_bytes_per_s": record.memory_bandwidth_bytes_per_s,
            "scale_up_per_direction_bytes_per_s": (
                record.scale_up.per_direction_bytes_per_s if record.scale_up else None
            ),
        }
    if isinstance(record, Link):
        return {
            "per_direction_bytes_per_s": record.per_direction_bytes_per_s,
            "bidirectional_bytes_per_s": record.bidirectional_bytes_per_s,
            "latency_s": record.latency_s,
        }
    if isinstance(record, Cpu):
        return {
            "num_cores": float(record.num_cores),
            "clock_hz": record.clock_hz,
            "memory_bandwidth_bytes_per_s": record.memory_bandwidth_bytes_per_s,
        }
    return {
        "num_accelerators": float(record.num_accelerators),
        **_half_precision(record.accelerator, record.num_accelerators),
        "memory_bytes": record.num_accelerators * record.accelerator.memory_usable_bytes,
    }


def _half_precision(accelerator: Accelerator, count: int) -> dict[str, float | None]:
    """Dense BF16 and FP16 peaks of ``count`` accelerators, each ``None`` where the part has no such
    row (V100 has FP16 tensor cores and no BF16: its BF16 is ``None``, never its FP16 figure)."""
    rows = {precision: accelerator.compute.get(precision) for precision in ("bf16", "fp16")}
    return {
        f"{precision}_dense_flop_per_s": count * figure.dense_per_s if figure else None
        for precision, figure in rows.items()
    }


def list_entries(*, catalog: Catalog, kind: str | None = None) -> tuple[CatalogEntry, ...]:
    """Every record (or every record of ``kind``) with headline figures, sorted by kind then name."""
    if kind is not None and kind not in KINDS:
        raise UserInputError(f"unknown kind {kind!r}; use one of: {', '.join(KINDS)}")
    tables: dict[str, Mapping[str, HardwareRecord]] = {
        "accelerator": catalog.accelerators,
        "link": catalog.links,
        "cpu": catalog.cpus,
        "system": catalog.systems,
    }
    return tuple(
        CatalogEntry(
            kind=name_of_kind,
            name=record.name,
            display_name=record.display_name,
            aliases=record.aliases,
            figures=_headline(record),
            path=record.path,
        )
        for name_of_kind in KINDS
        if kind in (None, name_of_kind)
        for record in sorted(tables[name_of_kind].values(), key=lambda item: item.name)
    )

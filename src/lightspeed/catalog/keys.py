"""Which keys each table of a catalog data file may hold (a typo check).

A misspelt key (``bandwith_tb_per_s``) would otherwise read as a missing
figure or, worse, be ignored. Each table lists its plain keys and its
quantity keys; a quantity key takes any unit suffix of its dimension
(``nominal_gb``, ``nominal_gib`` ...), see :data:`lightspeed.datafile.UNIT_SUFFIXES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from lightspeed.datafile import UNIT_SUFFIXES, Fields
from lightspeed.errors import DataFileError

COMMON_TOP: Final = (
    *("schema_version", "kind", "name", "display_name", "aliases", "note", "extends", "sources"),
)
SOURCE_KEYS: Final = ("title", "url", "note")
FIGURE: Final = ("source", "note")

# table -> (plain keys, {quantity base: dimension})
Schema = tuple[tuple[str, ...], Mapping[str, str]]

ACCELERATOR: Final[dict[str, Schema]] = {
    "": (
        (
            *COMMON_TOP,
            *("vendor", "architecture", "form_factor", "family", "compute", "memory", "chip"),
            *("power", "scale_up", "host_link", "conflicts", "device_memory"),
        ),
        {},
    ),
    "compute.*": (("printed_with_sparsity", *FIGURE), {"printed": "per_s", "dense": "per_s"}),
    "memory": (("type", *FIGURE), {"nominal": "bytes", "usable": "bytes", "bandwidth": "bytes_per_s"}),
    "chip": (
        ("num_compute_units", "num_logical_devices", *FIGURE),
        {"l2_cache": "bytes", "boost_clock": "hertz"},
    ),
    "device_memory": (FIGURE, {"reported": "bytes"}),
    "power": (("includes_cpu", *FIGURE), {"tdp": "watts", "tdp_min": "watts", "limit": "watts"}),
    "scale_up": (("link", "num_links", *FIGURE), {}),
    "host_link": (("link", "num_links", *FIGURE), {}),
}
LINK: Final[dict[str, Schema]] = {
    "": ((*COMMON_TOP, "family", "bandwidth", "latency"), {}),
    "bandwidth": (FIGURE, {"per_direction": "bytes_per_s", "bidirectional": "bytes_per_s"}),
    "latency": (FIGURE, {"typical": "seconds"}),
}
CPU: Final[dict[str, Schema]] = {
    "": ((*COMMON_TOP, "vendor", "chip", "memory", "compute", "power", "conflicts"), {}),
    "chip": (("microarchitecture", "num_cores", *FIGURE), {"clock": "hertz", "max_clock": "hertz"}),
    "memory": (("type", *FIGURE), {"capacity": "bytes", "bandwidth": "bytes_per_s"}),
    "compute": (FIGURE, {"fp64": "per_s", "fp32": "per_s"}),
    "power": (FIGURE, {"tdp": "watts"}),
}
SYSTEM: Final[dict[str, Schema]] = {
    "": (
        (
            *COMMON_TOP,
            *("system_type", "accelerator", "num_accelerators", "cpu", "num_cpus", "source"),
            *("scale_up", "scale_out", "power", "printed_totals", "conflicts", "cloud_provider", "node"),
        ),
        {},
    ),
    "node": (("accelerators", *FIGURE), {}),
    "scale_up": (
        (
            *("domain_size", "in_network_reduction", "topology", "torus_dimensions"),
            *("wraparound_unit", "wraparound_whole_slice", *FIGURE),
        ),
        {},
    ),
    "scale_out": (("link", "nics_per_node", *FIGURE), {}),
    "power": (FIGURE, {"max": "watts", "min": "watts"}),
}
CLUSTER: Final[dict[str, Schema]] = {
    "": (
        (
            *("schema_version", "kind", "name", "display_name", "note"),
            *("system", "num_nodes", "num_accelerators", "scale_out"),
        ),
        {},
    ),
    "scale_out": (("link", "nics_per_accelerator", "nics_per_node", "note"), {}),
}
SCHEMAS: Final[dict[str, dict[str, Schema]]] = {
    "accelerator": ACCELERATOR,
    "link": LINK,
    "cpu": CPU,
    "system": SYSTEM,
    "cluster": CLUSTER,
}
TABLE_ARRAYS: Final[dict[str, Schema]] = {
    "conflicts": (("field", "values", "chosen", "sources", "note"), {}),
    "printed_totals": (("key", "source", "note"), {"value": ""}),  # value_<unit of the key's dimension>
}


def allowed_keys(schema: Schema) -> set[str]:
    """Plain keys plus ``<base>_<suffix>`` for every unit suffix of each quantity's dimension."""
    plain, quantities = schema
    allowed = set(plain)
    for base, dimension in quantities.items():
        dimensions = [dimension] if dimension else list(UNIT_SUFFIXES)
        allowed.update(f"{base}_{suffix}" for name in dimensions for suffix in UNIT_SUFFIXES[name])
    return allowed


def check_table(fields: Fields, schema: Schema) -> None:
    """Raise :class:`DataFileError` naming the first key ``schema`` does not allow."""
    unknown = fields.unknown_keys(allowed_keys(schema))
    if not unknown:
        return
    plain, quantities = schema
    listing = [*plain, *(f"{base}_<unit>" for base in quantities)]
    raise DataFileError(
        fields.path,
        "unknown key",
        field=f"{fields.prefix}{unknown[0]}",
        fix=f"check the spelling; allowed here: {', '.join(listing)}",
    )


def check_record(fields: Fields, kind: str) -> None:
    """Check every table of one record of ``kind`` against its schema."""
    for table, schema in SCHEMAS[kind].items():
        if table == "":
            check_table(fields, schema)
        elif table.endswith(".*"):
            for row in fields.tables(table.removesuffix(".*")).values():
                check_table(row, schema)
        else:
            inner = fields.table(table, required=False)
            if inner is not None:
                check_table(inner, schema)
    for source in fields.tables("sources").values():
        check_table(source, (SOURCE_KEYS, {}))
    for array, schema in TABLE_ARRAYS.items():
        if array in SCHEMAS[kind][""][0]:
            for entry in fields.array_of_tables(array):
                check_table(entry, schema)

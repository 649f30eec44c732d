"""MIG profiles: how one NVIDIA GPU splits into isolated instances, and a slice as an accelerator.

A MIG-capable GPU has 7 compute slices (groups of SMs) and 8 memory slices
(each an eighth of the memory, its bandwidth and the L2 cache). A profile
such as ``3g.40gb`` takes 3 compute slices and 4 memory slices; it may start
only at the memory slots the driver lists (``nvidia-smi mig -lgipp``), and it
occupies ``num_memory_slices`` slots from there. Profiles are data files in
``catalog/data/mig`` (``kind = "mig"``), one per GPU memory size, with a
source for every figure.

A slice is an accelerator of its own: its compute is the GPU's peak scaled by
its share of SMs (SM count over the GPU's SMs where the count is recorded, else
compute slices over 7), its bandwidth and L2 are its share of memory slices
over 8, and it has no NVLink: MIG instances do not talk to peers over NVLink,
so a slice serves a model alone. Its memory is in the units the engines size a
whole GPU in (what the driver reports): the profile's memory as ``nvidia-smi``
reports it where the data file records it, else its share of memory slices of
the whole GPU's :attr:`~lightspeed.catalog.records.Accelerator.memory_device_bytes`.
Slices are named ``<accelerator>/<profile>``, e.g. ``h100-sxm/3g.40gb``.

MIG-capable GPUs whose geometry no NVIDIA table gives are listed, with the
reason, in ``kind = "mig-not-sourced"`` files of the same folder, so that asking
for their profiles says so rather than offering another GPU's.

>>> from lightspeed.catalog import load_catalog
>>> part = load_catalog().accelerator("h100-sxm/3g.40gb")
>>> round(part.memory_bandwidth_bytes_per_s / 1e12, 4), part.num_compute_units, part.scale_up
(1.675, 60, None)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from lightspeed.catalog.keys import check_table
from lightspeed.catalog.records import Accelerator, System
from lightspeed.datafile import Fields, Source, expand_paths, load_toml, normalize_name, parse_sources
from lightspeed.errors import DataFileError, UnknownNameError, UserInputError
from lightspeed.paths import package_data
from lightspeed.records import Record

NUM_COMPUTE_SLICES: Final = 7
NUM_MEMORY_SLICES: Final = 8
SLICE_SEPARATOR: Final = "/"

_TOP_KEYS: Final = (
    *("schema_version", "kind", "name", "display_name", "note", "sources", "accelerators"),
    *("num_compute_slices", "num_memory_slices", "profiles"),
)
_PROFILE_KEYS: Final = (
    *("name", "profile_id", "num_compute_slices", "num_memory_slices", "max_instances", "placements"),
    *("num_decoders", "num_jpeg_decoders", "num_optical_flow_accelerators", "num_copy_engines"),
    *("num_sms", "sms_source", "memory_source", "source", "placement_source", "note"),
)


@dataclass(frozen=True)
class MigProfile(Record):
    """One GPU instance profile (``nvidia-smi mig -lgip`` row) and where it may be placed.

    ``placements`` are the memory slots (0-7) an instance may start at; it
    then occupies ``num_memory_slices`` slots and the compute slices
    ``[start, start + num_compute_slices)``. Media units and copy engines are
    ``None`` where the data file does not record them. ``memory_bytes`` is
    what ``nvidia-smi`` reports for the profile (``None`` if not recorded).
    """

    name: str
    profile_id: int
    num_compute_slices: int
    num_memory_slices: int
    max_instances: int
    placements: tuple[int, ...]
    num_sms: int | None
    memory_bytes: float | None
    num_copy_engines: int | None
    num_decoders: int | None
    num_jpeg_decoders: int | None
    num_optical_flow_accelerators: int | None
    source: str
    placement_source: str
    sms_source: str = ""
    note: str = ""

    @property
    def media_extensions(self) -> bool:
        """Whether this is a ``+me`` profile (the one instance that holds the media engines)."""
        return self.name.endswith("+me")


@dataclass(frozen=True)
class MigGeometry(Record):
    """The MIG profiles of one GPU memory size, for the accelerators listed."""

    name: str
    display_name: str
    accelerators: tuple[str, ...]
    num_compute_slices: int
    num_memory_slices: int
    profiles: tuple[MigProfile, ...]
    sources: Mapping[str, Source]
    note: str = ""
    path: str = ""

    def profile(self, name: str) -> MigProfile:
        """The profile called ``name`` (``3g.40gb``; a leading ``MIG`` is ignored)."""
        wanted = name.strip().lower().removeprefix("mig").strip()
        for profile in self.profiles:
            if profile.name == wanted:
                return profile
        gpu = self.accelerators[0] if self.accelerators else self.name
        raise UnknownNameError(
            "MIG profile",
            name,
            [p.name for p in self.profiles],
            hint=f"the {self.display_name}; see 'lightspeed mig profiles --gpu {gpu}'",
        )


def builtin_mig_files() -> list[Path]:
    """The MIG profile files shipped in ``lightspeed/catalog/data/mig``."""
    folder = package_data("catalog", "data", "mig")
    return sorted(folder.glob("*.toml")) if folder.is_dir() else []


def _slot_list(fields: Fields, key: str) -> tuple[int, ...]:
    value = fields.data.get(key)
    if not isinstance(value, list) or not value or not all(type(item) is int for item in value):
        raise DataFileError(
            fields.path,
            "expected a list of start slots",
            field=f"{fields.prefix}{key}",
            fix=f"write {key} = [0, 4]",
        )
    return tuple(value)


def _check_profile(fields: Fields, profile: MigProfile) -> None:
    """Slice counts in range; placements inside the 7 compute and 8 memory slots."""
    if not (
        1 <= profile.num_compute_slices <= NUM_COMPUTE_SLICES
        and 1 <= profile.num_memory_slices <= NUM_MEMORY_SLICES
    ):
        raise DataFileError(
            fields.path,
            "compute slices must be 1-7 and memory slices 1-8",
            field=f"{fields.prefix}name",
            fix="copy the fractions of the guide's profile table",
        )
    for start in profile.placements:
        if (
            start < 0
            or start + profile.num_memory_slices > NUM_MEMORY_SLICES
            or (start + profile.num_compute_slices > NUM_COMPUTE_SLICES)
        ):
            raise DataFileError(
                fields.path,
                f"placement at slot {start} runs past the {NUM_COMPUTE_SLICES} compute or "
                f"{NUM_MEMORY_SLICES} memory slots",
                field=f"{fields.prefix}placements",
                value=start,
                fix="use the start slots nvidia-smi mig -lgipp prints",
            )


def _parse_profile(fields: Fields, sources: Mapping[str, Source]) -> MigProfile:
    check_table(fields, (_PROFILE_KEYS, {"memory": "bytes"}))
    profile = MigProfile(
        name=fields.string("name").strip().lower(),
        profile_id=fields.integer("profile_id"),
        num_compute_slices=fields.integer("num_compute_slices", minimum=1),
        num_memory_slices=fields.integer("num_memory_slices", minimum=1),
        max_instances=fields.integer("max_instances", minimum=1),
        placements=_slot_list(fields, "placements"),
        num_sms=fields.optional_integer("num_sms"),
        memory_bytes=fields.optional_quantity("memory", "bytes"),
        num_copy_engines=fields.optional_integer("num_copy_engines"),
        num_decoders=fields.optional_integer("num_decoders"),
        num_jpeg_decoders=fields.optional_integer("num_jpeg_decoders"),
        num_optical_flow_accelerators=fields.optional_integer("num_optical_flow_accelerators"),
        source=fields.check_source("source", sources),
        placement_source=fields.check_source("placement_source", sources),
        sms_source=fields.check_source("sms_source", sources) if fields.has("num_sms") else "",
        note=fields.string("note", ""),
    )
    if fields.has("memory_gib") or fields.has("memory_gb"):
        fields.check_source("memory_source", sources)
    _check_profile(fields, profile)
    return profile


def parse_mig_geometry(path: str, data: Mapping[str, Any]) -> MigGeometry:
    """One ``kind = "mig"`` record: the GPUs it applies to and their profiles."""
    fields = Fields(path, data)
    check_table(fields, (_TOP_KEYS, {}))
    fields.schema_version({1})
    sources = parse_sources(fields)
    entries = fields.array_of_tables("profiles")
    if not entries:
        raise DataFileError(path, "no profiles", field="profiles", fix="add [[profiles]] tables")
    profiles = tuple(_parse_profile(entry, sources) for entry in entries)
    names = [profile.name for profile in profiles]
    if len(set(names)) != len(names):
        raise DataFileError(path, "a profile name appears twice", field="profiles", value=names)
    return MigGeometry(
        name=normalize_name(fields.string("name")),
        display_name=fields.string("display_name", fields.string("name")),
        accelerators=tuple(normalize_name(name) for name in fields.strings("accelerators")),
        num_compute_slices=fields.integer("num_compute_slices", NUM_COMPUTE_SLICES, minimum=1),
        num_memory_slices=fields.integer("num_memory_slices", NUM_MEMORY_SLICES, minimum=1),
        profiles=profiles,
        sources=sources,
        note=fields.string("note", ""),
        path=path,
    )


def load_mig_geometries(extra_paths: Iterable[Path] = ()) -> dict[str, MigGeometry]:
    """MIG profiles by accelerator name: the shipped files, then ``kind = "mig"`` records of user files.

    >>> load_mig_geometries()["h100-sxm"].profile("1g.10gb").num_sms
    16
    """
    if not list(extra_paths):
        return dict(_builtin_geometries())
    return _geometries([*builtin_mig_files(), *expand_paths(extra_paths)])


@functools.lru_cache(maxsize=1)
def _builtin_geometries() -> dict[str, MigGeometry]:
    return _geometries(builtin_mig_files())


def _geometries(files: Iterable[Path]) -> dict[str, MigGeometry]:
    by_accelerator: dict[str, MigGeometry] = {}
    for path in files:
        data = load_toml(path)
        if data.get("kind") != "mig":
            continue
        geometry = parse_mig_geometry(str(path), data)
        for name in geometry.accelerators:
            by_accelerator[name] = geometry
    return by_accelerator


@functools.lru_cache(maxsize=1)
def not_sourced_mig_gpus() -> dict[str, str]:
    """MIG-capable GPUs whose geometry is not recorded, each with the reason (``kind = "mig-not-sourced"``).

    >>> "no GB200 table" in not_sourced_mig_gpus()["gb200"]
    True
    """
    reasons: dict[str, str] = {}
    for path in builtin_mig_files():
        data = load_toml(path)
        if data.get("kind") != "mig-not-sourced":
            continue
        fields = Fields(str(path), data)
        check_table(fields, (("schema_version", "kind", "sources", "gpus"), {}))
        fields.schema_version({1})
        sources = parse_sources(fields)
        for entry in fields.array_of_tables("gpus"):
            check_table(entry, (("name", "reason", "source"), {}))
            entry.check_source("source", sources)
            reasons[normalize_name(entry.string("name"))] = entry.string("reason")
    return reasons


def mig_geometry(
    accelerator: Accelerator, geometries: Mapping[str, MigGeometry] | None = None
) -> MigGeometry:
    """The MIG profiles of ``accelerator``; an error saying it has none in the catalog, and why.

    >>> from lightspeed.catalog import load_catalog
    >>> mig_geometry(load_catalog().accelerator("gb200"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: the MIG geometry of gb200 is not in the catalog (not sourced: ...
    """
    known = _builtin_geometries() if geometries is None else geometries
    found = known.get(accelerator.name)
    if found is not None:
        return found
    recorded = f"MIG profiles are recorded for {', '.join(sorted(known))}"
    fix = 'add its profiles from NVIDIA\'s table in a kind = "mig" file passed with --catalog (docs/mig.md)'
    reason = not_sourced_mig_gpus().get(accelerator.name)
    if reason is not None:
        raise UserInputError(
            f"the MIG geometry of {accelerator.name} is not in the catalog (not sourced: {reason}); "
            f"{recorded}; {fix}"
        )
    raise UserInputError(
        f"{accelerator.name} has no MIG geometry in the catalog (not a MIG-capable GPU whose profiles are "
        f"recorded); {recorded}; {fix}"
    )


def split_slice_name(name: str) -> tuple[str, str] | None:
    """``('h100-sxm', '3g.40gb')`` for ``'h100-sxm/3g.40gb'``; ``None`` for a name without a slice."""
    if SLICE_SEPARATOR not in name:
        return None
    parent, _, profile = name.rpartition(SLICE_SEPARATOR)
    return parent.strip(), profile.strip()


def compute_fraction(accelerator: Accelerator, profile: MigProfile) -> float:
    """Share of the GPU's SMs a slice holds: SM count over SMs where known, else compute slices / 7.

    >>> from lightspeed.catalog import load_catalog
    >>> h100 = load_catalog().accelerator("h100-sxm")
    >>> round(compute_fraction(h100, mig_geometry(h100).profile("1g.10gb")), 4)  # 16 of 132 SMs
    0.1212
    """
    if profile.num_sms is not None and accelerator.num_compute_units:
        return min(profile.num_sms / accelerator.num_compute_units, 1.0)
    return profile.num_compute_slices / NUM_COMPUTE_SLICES


def slice_accelerator(accelerator: Accelerator, profile: MigProfile) -> Accelerator:
    """``accelerator`` cut down to one MIG instance of ``profile`` (see the module docstring)."""
    compute_share = compute_fraction(accelerator, profile)
    memory_share = profile.num_memory_slices / NUM_MEMORY_SLICES
    device_bytes = profile.memory_bytes or accelerator.memory_device_bytes * memory_share
    compute = {
        row: replace(
            figure,
            printed_per_s=figure.printed_per_s * compute_share,
            dense_per_s=figure.dense_per_s * compute_share,
            note=f"{compute_share:.4f} of {accelerator.name}'s SMs",
        )
        for row, figure in accelerator.compute.items()
    }
    return replace(
        accelerator,
        name=f"{accelerator.name}{SLICE_SEPARATOR}{profile.name}",
        display_name=f"{accelerator.display_name} MIG {profile.name}",
        aliases=(),
        compute=compute,
        memory_nominal_bytes=accelerator.memory_nominal_bytes * memory_share,
        memory_usable_bytes=accelerator.memory_usable_bytes * memory_share,
        # what the engines size it by, in the units of the whole GPU (module docstring)
        memory_reported_bytes=device_bytes,
        memory_bandwidth_bytes_per_s=accelerator.memory_bandwidth_bytes_per_s * memory_share,
        l2_cache_bytes=None
        if accelerator.l2_cache_bytes is None
        else accelerator.l2_cache_bytes * memory_share,
        num_compute_units=profile.num_sms,
        tdp_w=None,
        tdp_min_w=None,
        scale_up=None,
        conflicts=(),
        note=f"MIG {profile.name}: {profile.num_compute_slices}/7 compute and "
        f"{profile.num_memory_slices}/8 memory slices of {accelerator.name}; no NVLink",
    )


def resolve_slice(name: str, lookup: Callable[[str], Accelerator]) -> Accelerator:
    """The accelerator of ``'<accelerator>/<profile>'``; ``lookup`` finds the parent by name."""
    parts = split_slice_name(name)
    assert parts is not None
    parent = lookup(parts[0])
    return slice_accelerator(parent, mig_geometry(parent).profile(parts[1]))


def single_gpu_system(accelerator: Accelerator) -> System:
    """A one-GPU "system" around ``accelerator`` (a whole GPU or a MIG slice): no peers, no NICs.

    >>> from lightspeed.catalog import load_catalog
    >>> single_gpu_system(load_catalog().accelerator("h100-sxm/1g.10gb")).num_accelerators
    1
    """
    return cards_system(
        accelerator,
        1,
        name=accelerator.name,
        display_name=accelerator.display_name,
        system_type="single-gpu",
        note="one GPU on its own",
    )


def cards_system(
    accelerator: Accelerator, num_cards: int, *, name: str, display_name: str, system_type: str, note: str
) -> System:
    """A "system" of ``num_cards`` copies of ``accelerator`` that no catalog record describes: one
    scale-up domain over the accelerator's own ``scale_up`` link, no CPUs, no NICs, no power figures."""
    return System(
        name=name,
        display_name=display_name,
        aliases=(),
        system_type=system_type,
        accelerator=accelerator,
        num_accelerators=num_cards,
        cpu=None,
        num_cpus=0,
        scale_up_domain_size=num_cards,
        in_network_reduction=False,
        scale_out=None,
        power_max_w=None,
        power_min_w=None,
        printed_totals=(),
        source=accelerator.memory_source,
        sources=accelerator.sources,
        note=note,
        path=accelerator.path,
    )

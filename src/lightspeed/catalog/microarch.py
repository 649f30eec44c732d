"""CPU microarchitectures and the theoretical peak FLOP/s of a CPU.

``peak = sockets x cores per socket x frequency x FMA units x lanes x 2``.
CPU flags (``avx2``, ``avx512f``, ``sve2``) say which vector instructions
exist, not how many FMA units a core has nor how wide they really are (Zen 4
runs 512-bit FMAs on 256-bit pipes), so both come from a per-microarchitecture
table in ``catalog/data/cpu-microarchitectures.toml``. Every result lists the
assumptions it rests on.

>>> table = load_microarchitectures()
>>> peak = cpu_peak(
...     microarchitecture=table["sapphire-rapids"], flags=None, num_sockets=2,
...     num_cores_per_socket=56, clock_hz=2.0e9, clock_note="base clock")
>>> round(peak.fp64_flop_per_s / 1e12, 2)  # 2 x 56 x 2 GHz x 2 FMA x 8 lanes x 2
7.17
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Final, TypeVar

from lightspeed.datafile import Fields, Source, load_toml, parse_sources
from lightspeed.errors import DataFileError
from lightspeed.paths import package_data
from lightspeed.records import Record
from lightspeed.units import format_flop_per_s

MEMORY_BUS_BYTES: Final = 8.0  # one DDR channel moves 64 bits per transfer
TABLE_KIND: Final = "cpu-microarchitectures"


@dataclass(frozen=True)
class VectorIsa(Record):
    """One vector instruction set of a core: width and how many FMAs it retires per cycle."""

    name: str
    flags: tuple[str, ...]
    vector_bits: int
    fma_units: int
    note: str = ""


@dataclass(frozen=True)
class Bf16Path(Record):
    """A BF16 matrix or dot-product path (AMX, AVX512_BF16) and its FLOP per cycle per core."""

    name: str
    flags: tuple[str, ...]
    flop_per_cycle_per_core: float
    note: str = ""


@dataclass(frozen=True)
class Microarchitecture(Record):
    """A CPU core design plus the memory system of its server platform (where one applies)."""

    name: str
    display_name: str
    vendor: str
    cpu_family: int | None
    models: tuple[int, ...]
    implementer: int | None
    parts: tuple[int, ...]
    isas: tuple[VectorIsa, ...]
    bf16_paths: tuple[Bf16Path, ...]
    source: Source
    memory_type: str = ""
    memory_channels: int | None = None
    memory_transfers_per_s: float | None = None
    memory_source: Source | None = None
    memory_note: str = ""
    avx512_clock_note: str = ""

    @property
    def memory_bandwidth_bytes_per_s(self) -> float | None:
        """Per-socket DRAM bandwidth: channels x transfers/s x 8 bytes (``None`` if unknown)."""
        if self.memory_channels is None or self.memory_transfers_per_s is None:
            return None
        return self.memory_channels * self.memory_transfers_per_s * MEMORY_BUS_BYTES


@dataclass(frozen=True)
class CpuPeak(Record):
    """Theoretical peak of a CPU with the formula and every assumption it rests on."""

    fp64_flop_per_s: float
    fp32_flop_per_s: float
    bf16_flop_per_s: float | None
    isa: str
    vector_bits: int
    fma_units: int
    bf16_path: str | None
    num_sockets: int
    num_cores_per_socket: int
    clock_hz: float
    formula: str
    assumptions: tuple[str, ...]

    def formulas(self) -> dict[str, str]:
        """How each precision's peak is derived: FP32 is :attr:`formula`; FP64 has half its lanes;
        BF16 runs on its matrix or dot-product path at that path's FLOP per cycle per core.

        >>> spr = cpu_peak(microarchitecture=load_microarchitectures()["sapphire-rapids"], flags=None,
        ...                num_sockets=1, num_cores_per_socket=1, clock_hz=2.6e9, clock_note="doctest")
        >>> spr.formulas()["bf16"]
        'BF16 via amx-bf16: 1 socket(s) x 1 cores x 2.6 GHz x 1,024 FLOP/cycle/core = 2.662 TFLOP/s BF16'
        """
        cores = self.num_sockets * self.num_cores_per_socket
        ghz = self.clock_hz / 1e9
        basis = f"{self.num_sockets} socket(s) x {self.num_cores_per_socket} cores x {ghz:.3g} GHz"
        formulas = {
            "fp32": self.formula,
            "fp64": (
                f"{basis} x {self.fma_units} FMA unit(s) x {self.vector_bits // 64} FP64 lanes ({self.isa}) "
                f"x 2 = {format_flop_per_s(self.fp64_flop_per_s)} FP64"
            ),
        }
        if self.bf16_flop_per_s is not None:
            per_cycle = self.bf16_flop_per_s / (cores * self.clock_hz)
            formulas["bf16"] = (
                f"BF16 via {self.bf16_path}: {basis} x {per_cycle:,.0f} FLOP/cycle/core = "
                f"{format_flop_per_s(self.bf16_flop_per_s)} BF16"
            )
        return formulas


_Path = TypeVar("_Path", VectorIsa, Bf16Path)


def _data_file() -> Path:
    return package_data("catalog", "data", "cpu-microarchitectures.toml")


@cache
def load_microarchitectures(path: Path | None = None) -> Mapping[str, Microarchitecture]:
    """Every microarchitecture of the shipped table (or of ``path``), by name."""
    file = path or _data_file()
    fields = Fields(str(file), load_toml(file))
    if fields.string("kind") != TABLE_KIND:
        raise DataFileError(
            file, "not a microarchitecture table", field="kind", fix=f'write kind = "{TABLE_KIND}"'
        )
    sources = parse_sources(fields)
    return {name: _parse(name, table, sources) for name, table in fields.tables("microarchitecture").items()}


def _source(fields: Fields, key: str, sources: Mapping[str, Source]) -> Source:
    return sources[fields.check_source(key, sources)]


def _parse(name: str, fields: Fields, sources: Mapping[str, Source]) -> Microarchitecture:
    rate_key = "memory_transfer_rate_mt_per_s"
    rate = fields.number(rate_key) * 1e6 if fields.has(rate_key) else None
    return Microarchitecture(
        name=name,
        display_name=fields.string("display_name"),
        vendor=fields.string("vendor"),
        cpu_family=fields.optional_integer("cpu_family"),
        models=_integers(fields, "models"),
        implementer=fields.optional_integer("implementer"),
        parts=_integers(fields, "parts"),
        isas=tuple(
            VectorIsa(
                name=entry.string("name"),
                flags=entry.strings("flags"),
                vector_bits=entry.integer("vector_bits", minimum=64),
                fma_units=entry.integer("fma_units", minimum=1),
                note=entry.string("note", ""),
            )
            for entry in fields.array_of_tables("isa")
        ),
        bf16_paths=tuple(
            Bf16Path(
                name=entry.string("name"),
                flags=entry.strings("flags"),
                flop_per_cycle_per_core=entry.number("flop_per_cycle_per_core"),
                note=entry.string("note", ""),
            )
            for entry in fields.array_of_tables("bf16")
        ),
        source=_source(fields, "source", sources),
        memory_type=fields.string("memory_type", ""),
        memory_channels=fields.optional_integer("memory_channels"),
        memory_transfers_per_s=rate,
        memory_source=_source(fields, "memory_source", sources) if fields.has("memory_source") else None,
        memory_note=fields.string("memory_note", ""),
        avx512_clock_note=fields.string("avx512_clock_note", ""),
    )


def _integers(fields: Fields, key: str) -> tuple[int, ...]:
    values = fields.data.get(key, [])
    if not isinstance(values, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in values
    ):
        raise DataFileError(fields.path, "expected a list of whole numbers", field=f"{fields.prefix}{key}")
    return tuple(values)


def match_microarchitecture(
    table: Mapping[str, Microarchitecture],
    *,
    vendor: str,
    cpu_family: int | None = None,
    model: int | None = None,
    implementer: int | None = None,
    part: int | None = None,
) -> Microarchitecture | None:
    """The entry for an x86 (vendor, family, model) or Arm (implementer, part) id; ``None`` if unknown."""
    for entry in table.values():
        if entry.implementer is not None:
            if implementer == entry.implementer and part in entry.parts:
                return entry
        elif vendor == entry.vendor and cpu_family == entry.cpu_family and model in entry.models:
            return entry
    return None


def cpu_peak(
    *,
    microarchitecture: Microarchitecture,
    flags: Iterable[str] | None,
    num_sockets: int,
    num_cores_per_socket: int,
    clock_hz: float,
    clock_note: str,
) -> CpuPeak | None:
    """Peak FP64/FP32 (and BF16 where the ISA has a BF16 path) FLOP/s of a CPU.

    ``flags`` are the CPU's flags (``None``: assume the widest ISA of the
    table, as for a catalog CPU known only by name). ``clock_note`` says which
    frequency ``clock_hz`` is. Returns ``None`` when no ISA of the table is
    supported by ``flags``.
    """
    available = None if flags is None else frozenset(flags)
    isa = _first_supported(microarchitecture.isas, available)
    if isa is None:
        return None
    bf16 = _first_supported(microarchitecture.bf16_paths, available)
    cores = num_sockets * num_cores_per_socket
    per_cycle_fp64 = isa.fma_units * (isa.vector_bits / 64) * 2
    fp64 = cores * clock_hz * per_cycle_fp64
    assumptions = _assumptions(
        microarchitecture, isa=isa, bf16=bf16, flags=available, clock_hz=clock_hz, clock_note=clock_note
    )
    formula = (
        f"{num_sockets} socket(s) x {num_cores_per_socket} cores x {clock_hz / 1e9:.3g} GHz x "
        f"{isa.fma_units} FMA unit(s) x {isa.vector_bits // 32} FP32 lanes ({isa.name}) x 2 = "
        f"{format_flop_per_s(2 * fp64)} FP32"
    )
    return CpuPeak(
        fp64_flop_per_s=fp64,
        fp32_flop_per_s=2 * fp64,
        bf16_flop_per_s=cores * clock_hz * bf16.flop_per_cycle_per_core if bf16 else None,
        isa=isa.name,
        vector_bits=isa.vector_bits,
        fma_units=isa.fma_units,
        bf16_path=bf16.name if bf16 else None,
        num_sockets=num_sockets,
        num_cores_per_socket=num_cores_per_socket,
        clock_hz=clock_hz,
        formula=formula,
        assumptions=assumptions,
    )


def _first_supported(options: Iterable[_Path], flags: frozenset[str] | None) -> _Path | None:
    for option in options:
        if flags is None or all(flag in flags for flag in option.flags):
            return option
    return None


def _assumptions(
    microarchitecture: Microarchitecture,
    *,
    isa: VectorIsa,
    bf16: Bf16Path | None,
    flags: frozenset[str] | None,
    clock_hz: float,
    clock_note: str,
) -> tuple[str, ...]:
    notes = [
        f"microarchitecture {microarchitecture.display_name}: {isa.fma_units} FMA unit(s) of "
        f"{isa.vector_bits} bits per core for {isa.name} (from the table, not from the CPU flags)",
        f"frequency {clock_hz / 1e9:.3g} GHz: {clock_note}",
    ]
    if flags is None:
        notes.append(f"CPU flags unknown: assumed the widest ISA in the table ({isa.name})")
    if isa.note:
        notes.append(isa.note)
    if isa.name.startswith("avx512") and microarchitecture.avx512_clock_note:
        notes.append(microarchitecture.avx512_clock_note)
    if bf16 is None:
        notes.append(_no_bf16_note(microarchitecture))
    elif bf16.note:
        notes.append(f"BF16 via {bf16.name}: {bf16.note}")
    return tuple(notes)


def _no_bf16_note(microarchitecture: Microarchitecture) -> str:
    """Why there is no BF16 peak: the table lists no BF16 rate, or the CPU's flags lack every listed path.

    The absence of a rate in the table says nothing about the ISA (Neoverse V1 and V2 have BFMMLA)."""
    if not microarchitecture.bf16_paths:
        return f"the table has no BF16 rate for {microarchitecture.display_name}: no BF16 peak"
    paths = ", ".join(path.name for path in microarchitecture.bf16_paths)
    return f"the CPU flags show none of the table's BF16 paths ({paths}): no BF16 peak"

"""Hardware names the way sources write them, matched to one catalog record or to none.

Records are found by exact name or alias first (:func:`~lightspeed.catalog.parse.find_record`).
Failing that, :func:`find_by_text` compares the name with every record's spellings once both
are reduced (:func:`reduce_hardware_name`):

* vendor and product-line words in front go (``NVIDIA``, ``AMD Instinct``, ``Intel``,
  ``Habana``, ``Google Cloud``), and a count in front (``8x H100``);
* memory types (``HBM3``, ``HBM3e``, ``GDDR6``), ``Grace Hopper``, ``Superchip`` and
  ``Generation`` go anywhere;
* a memory size (``80GB``, ``141GB``, ``96G``) goes too, but must be the record's: its
  nominal or usable memory in GB or GiB (within 3%), a size one of its spellings names
  (``b200-180gb``), or for a system the same per GPU or in total. So ``A100 40GB PCIe``
  is the 40 GB card and ``H100 96GB`` no catalog record (it is a variant, which the
  validate reader builds from the text). A size written with ``G`` alone (``A100-40G``,
  ``H100 80G``) must be a size the vendor prints (a spelling's, the nominal memory in the
  vendor's binary GB or the usable memory in GB, within 3%): ``H100 SXM 100G`` is no 96 GB
  part (96 GiB is 103 GB, but no vendor prints 100), and a network's ``100G`` no GPU's memory.

A name that, without vendor words, count and memory type, is a record's name or alias
(``NVIDIA H200 141GB`` -> ``h200-141gb``) is that record. Otherwise the reduced name must
belong to exactly one record: a bare one (no size) that is a record's name or alias is that
record (``GH200 Grace Hopper`` -> ``gh200``); with a size, every record spelled so or so plus
a form factor whose memory fits is a candidate (``H100 80GB`` is the SXM and the PCIe card:
no match), and two candidates are no match.

The hardware twin of :mod:`lightspeed.workload.names` (the same reduction for model names).

>>> from lightspeed.catalog import load_catalog
>>> find_by_text(load_catalog().accelerators, "NVIDIA H100 SXM5 80GB HBM3").name
'h100-sxm'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from lightspeed.catalog.parse import Named, find_record
from lightspeed.catalog.records import Accelerator, System
from lightspeed.datafile import normalize_name
from lightspeed.errors import UnknownNameError, closest_once

LEADING_WORDS: Final = frozenset({"nvidia", "amd", "instinct", "intel", "habana", "google", "cloud"})
DROPPED_WORDS: Final = frozenset(
    {"hbm", "hbm2", "hbm2e", "hbm3", "hbm3e", "gddr6", "gddr6x", "superchip", "generation"}
)
_COUNT: Final = re.compile(r"\d+x")
_MEMORY: Final = re.compile(r"(\d+(?:\.\d+)?)g(b)?")
MEMORY_TOLERANCE: Final = 0.03


@dataclass(frozen=True)
class ReducedHardwareName:
    """A hardware name without vendor words, count, memory type and memory size (``base``),
    the memory sizes in GB it stated (``memory_gb``), the name with its sizes (``written``) and
    those of the sizes written with ``G`` alone (``printed_gb``: they must be a size the vendor
    prints, :func:`_printed_sizes`)."""

    base: str
    memory_gb: tuple[float, ...]
    written: str
    printed_gb: tuple[float, ...] = ()


@lru_cache(maxsize=4096)
def reduce_hardware_name(name: str) -> ReducedHardwareName:
    """``name`` reduced for comparison (see the module docs).

    >>> reduce_hardware_name("8x H100-SXM-80GB")
    ReducedHardwareName(base='h100-sxm', memory_gb=(80.0,), written='h100-sxm-80gb', printed_gb=())
    >>> reduce_hardware_name("GH200 Grace Hopper Superchip").base
    'gh200'
    >>> reduce_hardware_name("A100-40G").printed_gb  # written with G alone: a printed size
    (40.0,)
    """
    text = normalize_name(name).replace("grace-hopper-", "").replace("-grace-hopper", "")
    tokens = [token for token in text.split("-") if token] or [text]
    while len(tokens) > 1 and (tokens[0] in LEADING_WORDS or _COUNT.fullmatch(tokens[0])):
        tokens.pop(0)
    if _MEMORY.fullmatch(tokens[0]):  # "80GB DGX H100" is a size then a name, not a name
        return ReducedHardwareName(base="-".join(tokens), memory_gb=(), written="-".join(tokens))
    sizes = [match for token in tokens if (match := _MEMORY.fullmatch(token))]
    memory = tuple(float(match.group(1)) for match in sizes)
    printed = tuple(float(match.group(1)) for match in sizes if not match.group(2))  # ``40G``, no ``B``
    written = [token for token in tokens if token not in DROPPED_WORDS] or tokens
    kept = [token for token in written if not _MEMORY.fullmatch(token)] or written
    return ReducedHardwareName(
        base="-".join(kept), memory_gb=memory, written="-".join(written), printed_gb=printed
    )


def _spelled_sizes(record: Named) -> set[float]:
    """Memory sizes in GB one of ``record``'s spellings writes (``b200-180gb``)."""
    return {
        size
        for spelling in (record.name, *record.aliases)
        for size in reduce_hardware_name(spelling).memory_gb
    }


def _with_system_totals(record: Named, per_device: set[float]) -> set[float]:
    """``per_device`` sizes, and for a system the same times its accelerators."""
    if isinstance(record, System):
        return per_device | {size * record.num_accelerators for size in per_device}
    return per_device


def _memory_sizes(record: Named) -> set[float]:
    """Memory sizes in GB a text may state for ``record``."""
    accelerator = record.accelerator if isinstance(record, System) else record
    if not isinstance(accelerator, Accelerator):
        return _spelled_sizes(record)
    per_device = {
        amount / unit
        for amount in (accelerator.memory_nominal_bytes, accelerator.memory_usable_bytes)
        for unit in (1e9, 2**30)
    }
    return _spelled_sizes(record) | _with_system_totals(record, per_device)


def _printed_sizes(record: Named) -> set[float]:
    """Memory sizes in GB a vendor prints for ``record``, which a size written with ``G`` alone must
    be: a spelling's, the nominal memory in the binary GB HBM vendors print (80 for an H100's 80
    GiB) and the usable memory in GB (180 for a B200)."""
    accelerator = record.accelerator if isinstance(record, System) else record
    if not isinstance(accelerator, Accelerator):
        return _spelled_sizes(record)
    per_device = {accelerator.memory_nominal_bytes / 2**30, accelerator.memory_usable_bytes / 1e9}
    return _spelled_sizes(record) | _with_system_totals(record, per_device)


def _near(stated: float, sizes: set[float]) -> bool:
    return any(abs(stated - size) <= MEMORY_TOLERANCE * size for size in sizes)


def _holds_memory(record: Named, reduced: ReducedHardwareName) -> bool:
    sizes = _memory_sizes(record)
    printed = _printed_sizes(record) if reduced.printed_gb else set()
    return all(
        _near(stated, printed if stated in reduced.printed_gb else sizes) for stated in reduced.memory_gb
    )


def _spelled(record: Named, base: str, *, form_factors: bool = False) -> bool:
    """Whether one of ``record``'s spellings reduces to ``base`` (or, with ``form_factors``, to
    ``base`` and a form factor: ``h100-pcie`` for ``h100``)."""
    for spelling in (record.name, *record.aliases):
        reduced = reduce_hardware_name(spelling).base
        if reduced == base or (form_factors and reduced.startswith(f"{base}-")):
            return True
    return False


def matching_records(known: Mapping[str, Named], name: str) -> list[Named]:
    """Every record ``name`` may mean, sorted by name: the record it names exactly (also without
    vendor words, count and memory type), else every record spelled the same once reduced whose
    memory the name's size fits (with a size, form factors count: ``H100 80GB`` is SXM or PCIe),
    a bare reduced name that is one record's name or alias naming that record."""
    reduced = reduce_hardware_name(name)
    exact = find_record(known, name) or find_record(known, reduced.written)
    if exact is not None:
        return [exact]
    direct = find_record(known, reduced.base)
    if direct is not None and not reduced.memory_gb:
        return [direct]
    found: dict[str, Named] = {}
    for record in known.values():
        if _spelled(record, reduced.base, form_factors=bool(reduced.memory_gb)) and _holds_memory(
            record, reduced
        ):
            found[record.name] = record
    return [found[key] for key in sorted(found)]


def memory_mismatches(known: Mapping[str, Named], name: str) -> list[Named]:
    """Records ``name`` would mean but for the memory size it states (``H100 96GB``)."""
    reduced = reduce_hardware_name(name)
    if not reduced.memory_gb:
        return []
    near: list[Named] = []
    for record in known.values():
        if _spelled(record, reduced.base) and not _holds_memory(record, reduced):
            near.append(record)
    return near


def closest_records(known: Mapping[str, Named], name: str, every: list[str]) -> list[str]:
    """The names of ``every`` closest to ``name``, best first, each record once: by the best
    ranked of its name and aliases (``2xdgx-h10`` suggests ``dgx-h100``, not again ``dgxh100``:
    :func:`~lightspeed.errors.closest_once`); every canonical name when none is close (a name not
    of ``known`` stands for itself).

    >>> from lightspeed.catalog import load_catalog
    >>> links = load_catalog().links
    >>> every = [*links, *(alias for link in links.values() for alias in link.aliases)]
    >>> closest_records(links, "ib-nrd", every)[:2]
    ['ib-ndr', 'ib-xdr']
    """
    canonical = dict(_spellings(known))
    owners = {spelling: canonical.get(spelling.lower(), spelling) for spelling in every}
    return closest_once(name, owners) or list(dict.fromkeys(owners.values()))


def _spellings(known: Mapping[str, Named]) -> list[tuple[str, str]]:
    """(name or alias in lower case, canonical name) of every record of ``known``."""
    return [pair for record in known.values() for pair in _record_spellings(record)]


def _record_spellings(record: Named) -> list[tuple[str, str]]:
    return [(spelling.lower(), record.name) for spelling in (record.name, *record.aliases)]


def unknown_name_error(
    known: Mapping[str, Named], name: str, kind: str, every: list[str]
) -> UnknownNameError:
    """The error for a ``name`` no record of ``known`` is: the records it may mean when it is
    ambiguous, the record whose memory differs when only the size is wrong, else the closest of
    ``every`` (the names and aliases to suggest), each record once (:func:`closest_records`)."""
    every = closest_records(known, name, every)
    candidates = [record.name for record in matching_records(known, name)]
    if len(candidates) > 1:
        hint = f"it may mean any of {', '.join(candidates)}; name one"
        return UnknownNameError(kind, name, candidates, hint=hint)
    near = memory_mismatches(known, name)
    if near:
        verb = "has" if len(near) == 1 else "have"
        hint = (
            f"{', '.join(record.name for record in near)} {verb} other memory; for a variant with this "
            "memory write a --catalog file (docs/catalog.md, 'Adding or overriding records')"
        )
        return UnknownNameError(kind, name, every, hint=hint)
    return UnknownNameError(kind, name, every, hint="see 'lightspeed hw list'")


def find_by_text(known: Mapping[str, Named], name: str) -> Named | None:
    """The one record ``name`` means, else ``None`` (none, or more than one)."""
    found = matching_records(known, name)
    return found[0] if len(found) == 1 else None


__all__ = [
    "ReducedHardwareName",
    "closest_records",
    "find_by_text",
    "matching_records",
    "memory_mismatches",
    "reduce_hardware_name",
    "unknown_name_error",
]

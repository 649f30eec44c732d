"""The hardware a published row names, read the way sources write it.

``DGX B200 (8x B200 NVLink5)``, ``H100 SXM 96GB HBM2e @500W (Meta Grand
Teton, ...)``, ``DGX GB200 (GB200 NVL72 rack; NVLink domain 72)``, ``H200
141GB``: the rules, the same for every row (``docs/sol.md``):

* words end at spaces, punctuation and underscores (MLPerf's system ids, ``8xMI325X_2xEPYC_9575F``);
* the first run of words, scanning left to right and longest first, that is a
  catalog *system* name or alias (``DGX B200``, ``DGX GB200``, ``GB200
  NVL72``) gives the system; else the first that is an *accelerator* name,
  alias or a dash-prefix of one (``A100-SXM4-80GB``, ``H100 SXM``) gives the
  accelerator, in its default system (the 8-GPU node, else the rack);
* a memory size in GB that is neither the part's nominal nor its listed size
  (``64GB`` on an 80 GB A100), nor one the catalog's own names for the part write
  (``GH200 480GB``, an alias: the superchip's memory with Grace's), and a power figure below
  the part's own limit (its TDP, or the cap a record runs at: Grand Teton's H100 at 500 W)
  make a variant (:func:`lightspeed.catalog.variants.derive_variant`);
* the scale-out fabric from the words the text uses: an InfiniBand generation (``NDR``, ``HDR``,
  ``IB 50GB/s``), or a speed in Gb/s next to a network's name (``RoCE 100G``, ``100G Ethernet``,
  ``100 Gbps RoCE``, ``InfiniBand 200Gb/s``, ``1x 100GbE per node``) is the catalog link of that
  family and speed (``ethernet-100g``; a speed no catalog link has is refused, naming those that
  exist), with the NICs the text counts (``1x ... per node``, ``4*100Gb``: a whole number from 1 to
  64 a node, else refused naming it: ``0x``, ``-8x``, ``1.5x``); an EFA speed with
  no count is the instance's total, as AWS quotes it (``p4d EFA 400 Gb/s`` is p4d's own 4 x 100,
  ``EFA 400 Gbps`` on another node one 400 Gb/s NIC, not 8); ``RoCE`` alone is 400
  Gb/s; else the system's own NICs. A speed next to a network's name is never a memory size
  (``100G Ethernet`` is no 100 GB part), and the assumptions say which fabric a row that names
  one ran over;
* a job on part of a rack-scale system spreads over the fewest racks
  (:func:`lightspeed.catalog.clusters.spread_over_domains`);
* a row with no GPUs cell counts what the hardware cell writes before a part: ``4x H100`` and
  ``8×H100`` are 4 and 8 GPUs, ``2x DGX H100`` two systems of 8; or after it (``TPU v5e x8``,
  ``TPU v6e (Trillium) 256 chips``; after a system it counts systems, ``DGX H100 x 4`` and ``A3
  Mega (8x H100) x 2``); a Google slice name counts its chips (``v5p-128`` is 64: v4 and v5p
  slices count TensorCores, two per chip); nodes counted beside a node's GPUs multiply them
  (``8x H100, 4 nodes`` is 32), and nodes of a part alone are its usual node's (``H100 SXM, 4
  nodes``: 4 DGX H100 of 8, said as assumed) (:func:`row_gpus`); beside a GPUs cell, a count of
  nodes or systems outside parentheses (``8 nodes of 8x H100``, ``DGX H100 x 4``, ``2x DGX
  H100``) that makes other GPUs refuses the row naming both cells;
* nodes times GPUs (``2 nodes of 4x H100``) is the cluster's shape: two nodes of four GPUs each,
  their traffic between the nodes, not one node of eight;
* a TPU names its pod, and the row's chips are a slice of it
  (:func:`lightspeed.catalog.torus.torus_slice`); PCIe cards no catalog system is built from run
  in servers of up to eight, joined by assumed NICs beyond that (:mod:`lightspeed.catalog.cards`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from lightspeed.catalog import Accelerator, Catalog, Cluster, Link, System, single_gpu_system
from lightspeed.catalog.cards import (
    NVLINK_BRIDGE_SIZES,
    PCIE_SERVER_NIC_LINK,
    assumed_nics,
    has_assumed_nics,
    is_pcie_card,
    pcie_server,
    pcie_servers,
)
from lightspeed.catalog.clusters import build_cluster, spread_over_domains, takes_part_of_domain
from lightspeed.catalog.torus import describe_torus, slice_name
from lightspeed.catalog.variants import derive_variant, system_with
from lightspeed.errors import LightspeedError, closest_names
from lightspeed.limits import MAX_BYTES_PER_S, MAX_NICS_PER_NODE
from lightspeed.records import Record
from lightspeed.sol.validation.published import PublishedRow, size_cell
from lightspeed.sol.validation.readings import RowError

FABRIC_KEYWORDS: Final = (
    ("xdr", "ib-xdr"),
    ("ndr", "ib-ndr"),
    ("hdr", "ib-hdr"),
    ("roce 800", "ethernet-800g"),
    ("roce", "ethernet-400g"),
    ("ib 50gb/s", "ib-ndr"),
    ("ib 25gb/s", "ib-hdr"),
)
# A network's name, as cells write it, and the catalog link family it is (``RoCE`` is RDMA over
# Ethernet); the link of a family a speed picks is preferably the generic one (``ethernet-100g``,
# not a vendor's NIC of the same speed)
NETWORK_FAMILIES: Final = (
    (re.compile(r"^(?:roce(?:v2)?|ethernet|eth)$", re.IGNORECASE), "ethernet"),
    (re.compile(r"^(?:infiniband|ib)$", re.IGNORECASE), "infiniband"),
    (re.compile(r"^efa$", re.IGNORECASE), "efa"),
)
_GENERIC_LINK_PREFIX: Final = {"ethernet": "ethernet-", "infiniband": "ib-", "efa": "efa-"}
# A link's speed, with the NICs it counts (``1x 100GbE``, ``4*100Gb``, ``8x400 Gbit/s``, ``8x50
# GB/s``): a bit rate (``Gb``, ``Gbps``, ``Gb/s``), a byte rate (``GB/s``: 8 bits a byte) or ``G``
# alone, each a speed only next to a network's name (``100G Ethernet``, ``RoCE 100G``, ``IB 50GB/s``;
# not ``NVSwitch 600GB/s``); ``GbE`` names Ethernet itself
# (a count as written, with its sign or fraction, ``-8x``, ``1.5x``: :func:`_nic_count` refuses them)
_NIC_COUNT: Final = r"(?P<count>(?<![\w.-])-\d+(?:\.\d+)?|(?<![\w.])\d+(?:\.\d+)?)"
# (a Tb/s speed may have a fraction: AWS quotes p5.48xlarge's EFA per instance as ``3.2 Tbps``; a
# Tb/s figure beside another network, ``3.2Tbps RoCE``, is a node's total over ports the text does
# not count, read as the network's name alone)
_LINK_SPEED: Final = re.compile(
    rf"(?<![\w.])(?:{_NIC_COUNT}\s*[x×*]\s*)?(?P<number>\d+\.\d+(?=\s*T)|\d+)\s*"
    r"(?P<unit>[Gg][Bb][Ee]|Gb/s|Gbit/s|[Gg]bps|Gb|GB/s|G|Tb/s|Tbit/s|[Tt]bps|Tb)(?![\w/])"
)
# Gb/s in one of the unit (a byte is 8 bits, a Tb/s 1,000 Gb/s); 1 for the rest
_TERA_UNITS: Final = frozenset({"Tb/s", "Tbit/s", "Tbps", "tbps", "Tb"})
_GBIT_PER_UNIT: Final = {"GB/s": 8, **dict.fromkeys(_TERA_UNITS, 1000)}
# the word before a speed, across punctuation for a bit rate (``InfiniBand: 200Gb/s``), across spaces
# only for ``G`` alone or a byte rate (``H100 80G, RoCE 400G``: the 80G is the part's); the word after
# it across spaces only (``NVSwitch 600GB/s, EFA 400 Gb/s``: the 600 GB/s is NVLink's)
_WORD_BEFORE: Final = {
    True: re.compile(r"([A-Za-z0-9]+)[\s,;:(]*$"),
    False: re.compile(r"([A-Za-z0-9]+)\s*$"),
}
_WORD_AFTER: Final = re.compile(r"^\s*([A-Za-z0-9]+)")
# a NIC count written before the network's name (``8x EFA 400 Gb/s``, ``4 x InfiniBand 200Gb/s``)
_COUNT_BEFORE_NAME: Final = re.compile(rf"{_NIC_COUNT}\s*[x×*]\s*$")
_PER_NODE_AFTER: Final = re.compile(r"^[\s\w-]{0,24}?\bper\s+(?P<what>node|server|host|gpu)\b", re.IGNORECASE)
# Words end at spaces, punctuation and underscores: MLPerf's system ids glue their parts with
# ``_`` (``8xMI325X_2xEPYC_9575F``, ``GH200-GraceHopper-Superchip_GH200-144GB_aarch64x1_TRT``).
_WORD_SPLIT: Final = re.compile(r"[\s,;()_]+")
# (a number glued to a word is a name's, not a size: ``NVL72 GB200`` holds no 72 GB)
_MEMORY: Final = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)\s*GB(?!/s|\s*/\s*s)")
_NAMED_MEMORY: Final = re.compile(r"(\d+(?:\.\d+)?)\s*GB\b", re.IGNORECASE)
_POWER: Final = re.compile(r"(\d{3,4})\s*W\b")
# the longest name a cell may write for one part: `8x NVIDIA RTX PRO 6000 Blackwell Server Edition`
# is seven words, and only the whole of it tells the Server Edition from the Workstation Edition
# (the longest span at each start is tried first)
MAX_SPAN_WORDS: Final = 8
# ``4x H100``, ``8×H100``, ``2 x DGX H100``: a count written before the part it counts
_COUNT_BEFORE_PART: Final = re.compile(r"(?<![\w.])(\d+)\s*[x×]\s*(?=[a-z])", re.IGNORECASE)
# ``TPU v5e x8``, ``v6e x 256``, ``256 chips``: a count written after the part
_COUNT_AFTER_PART: Final = re.compile(
    r"(?<=[\w)])\s+[x×]\s*(\d+)(?![\w.])|(?<![\w.])(\d+)\s*(?:chips|gpus|accelerators|cards)\b"
    # MLPerf's system names: the count glued after the memory size (``H200-SXM-141GBx8_TRT``)
    r"|(?<=gb)[x×](\d+)(?![\d.])",
    re.IGNORECASE,
)


class HardwareTextError(LightspeedError):
    """The hardware cell names nothing in the catalog."""


def _spans(text: str) -> list[str]:
    """Runs of up to :data:`MAX_SPAN_WORDS` words, left to right, longest first at each start
    (a count glued to a part, ``8xH100`` or ``8×H100``, is set apart from it)."""
    words = [word for word in _WORD_SPLIT.split(_COUNT_BEFORE_PART.sub(r"\1x ", text)) if word]
    spans = []
    for start in range(len(words)):
        for count in range(min(MAX_SPAN_WORDS, len(words) - start), 0, -1):
            spans.append(" ".join(words[start : start + count]))
    return spans


def _prefixes(candidate: str) -> list[str]:
    parts = candidate.split("-")
    return ["-".join(parts[:count]) for count in range(len(parts), 0, -1)]


def _find_system(catalog: Catalog, span: str) -> System | None:
    return catalog.find_system(span)


def _find_accelerator(catalog: Catalog, span: str) -> Accelerator | None:
    """The accelerator a span names, its plural too (``H100s``, ``MI300Xs``)."""
    for name in _prefixes(span):
        found = catalog.find_device(name)
        if found is None and _PLURAL.search(name):
            found = catalog.find_device(name[:-1])
        if found is not None and "/" not in name:
            return found
    return None


# A part written in the plural: a digit or capital before the ``s`` (``H100s``, ``MI300Xs``,
# ``B200s``), so words that end in ``s`` are not cut.
_PLURAL: Final = re.compile(r"[0-9A-Z]s$")


def default_system(catalog: Catalog, accelerator: Accelerator) -> System:
    """The catalog's 8-GPU (or rack) system built around ``accelerator``; for a card no catalog
    system is built from (L4, L40S, A10G, H100 PCIe ...), the card on its own (one GPU)."""
    candidates = catalog.systems_built_from(accelerator.name)
    return candidates[0] if candidates else single_gpu_system(accelerator)


def _system_named(catalog: Catalog, name: str, num_gpus: int) -> System:
    """A catalog system by name, or a card no system is built from: on its own (one GPU), or
    PCIe servers of up to eight (:func:`lightspeed.catalog.cards.pcie_servers`, one of them)."""
    if name in catalog.systems:
        return catalog.system(name)
    accelerator = catalog.accelerator(name)
    if num_gpus == 1:
        return single_gpu_system(accelerator)
    bridged = accelerator.scale_up is not None and num_gpus in NVLINK_BRIDGE_SIZES
    if not is_pcie_card(accelerator) or (accelerator.host_link is None and not bridged):
        raise HardwareTextError(
            f"no system in the catalog is built from {accelerator.name}, so {num_gpus} of them have no "
            "interconnect to model; add a system with --catalog (a system TOML naming its links)"
        )
    return pcie_servers(accelerator, num_gpus, catalog.link(PCIE_SERVER_NIC_LINK))[0]


def named_system(catalog: Catalog, text: str) -> tuple[System, str]:
    """(system, the words that named it) of a hardware cell (see the module docs)."""
    spans = _spans(text)
    for span in spans:
        system = _find_system(catalog, span)
        if system is not None and system.system_type != "single-gpu":
            return system, span
    for span in spans:
        accelerator = _find_accelerator(catalog, span)
        if accelerator is not None:
            return default_system(catalog, accelerator), span
    raise HardwareTextError(
        f"hardware {text!r} names no accelerator in the catalog{_closest_parts(catalog, text)} (see "
        "'lightspeed hw list')"
    )


def _closest_parts(catalog: Catalog, text: str) -> str:
    """``; closest: h100-sxm, ...``: the catalog's accelerators and systems nearest a hardware cell
    that names none (as an unknown name in a structured row is answered), ``''`` where none is near."""
    wanted = "-".join(text.split("(", 1)[0].split())
    closest = closest_names(wanted, [*catalog.accelerators, *catalog.systems]) if wanted else []
    return f"; closest: {', '.join(closest)}" if closest else ""


@dataclass(frozen=True)
class HardwareSpec(Record):
    """The hardware of a published run in catalog terms: a system, the variant its accelerator
    ran as (another memory size, a power cap), the scale-out fabric (``None``: the system's), the
    part in it where the text names another of the system's generation (``None``: the system's
    own), the NICs per node or per GPU the text counts (``None``: the system's, or one per GPU for
    another link) and the words that named the network (``None``: none)."""

    system: str
    memory_gib: float | None = None
    power_limit_w: float | None = None
    fabric: str | None = None
    accelerator: str | None = None
    nics_per_node: int | None = None
    nics_per_gpu: int | None = None
    # the GPUs each node holds where the cell writes nodes times GPUs (``2 nodes of 4x H100``: 4),
    # fewer than the system's (``None``: the system's own)
    gpus_per_node: int | None = None
    # how the cell wrote it, not the hardware: two specs of the same hardware are equal, and a
    # structured row (which names its link) has none
    network_text: str | None = field(default=None, compare=False)


def _variant_figures(accelerator: Accelerator, text: str) -> tuple[float | None, float | None]:
    """(memory in GB, power cap in W) the text gives where they are not the part's own."""
    memory = None
    for match in _MEMORY.finditer(text):
        value = float(match.group(1))
        if not _own_memory(accelerator, value):
            memory = value
            break
    # a cap below the part's own limit (its TDP, or the limit a record such as Grand Teton's
    # 500 W H100 already runs at) makes a variant; the part's own figure repeated does not
    own_limit_w = accelerator.power_limit_w or accelerator.tdp_w
    power = None
    for match in _POWER.finditer(text):
        watts = float(match.group(1))
        if own_limit_w is not None and watts < own_limit_w:
            power = watts
            break
    return memory, power


def _own_memory(accelerator: Accelerator, size: float) -> bool:
    """Whether ``size`` (GB or GiB as written) is the part's own memory: its nominal or usable
    size in either unit, or a size the catalog's own names for it write (``NVIDIA GH200 480GB``,
    the superchip's memory with Grace's), within 3%."""
    listed = {round(accelerator.memory_nominal_bytes / 1e9), round(accelerator.memory_usable_bytes / 1e9)}
    listed |= {
        round(accelerator.memory_nominal_bytes / 2**30),
        round(accelerator.memory_usable_bytes / 2**30),
    }
    for name in (accelerator.display_name, *accelerator.aliases):
        listed |= {round(float(named)) for named in _NAMED_MEMORY.findall(name)}
    return any(abs(size - listed_size) <= 0.03 * max(listed_size, 1) for listed_size in listed)


def _variant(
    accelerator: Accelerator, memory_gib: float | None, power_limit_w: float | None
) -> tuple[Accelerator, list[str]]:
    if memory_gib is None and power_limit_w is None:
        return accelerator, []
    variant = derive_variant(accelerator, memory_gib=memory_gib, power_limit_w=power_limit_w)
    note = f"variant {variant.name}: {variant.display_name}"
    if power_limit_w is not None:
        note += f" (compute clock x{variant.clock_fraction:.3f} under the cap)"
    return variant, [note]


def variant_of(accelerator: Accelerator, text: str) -> tuple[Accelerator, list[str]]:
    """The accelerator as the text describes it: another memory size or a power cap make a variant."""
    return _variant(accelerator, *_variant_figures(accelerator, text))


def _keyword_fabric(catalog: Catalog, text: str) -> str | None:
    lowered = text.lower()
    fabric = next((link for keyword, link in FABRIC_KEYWORDS if keyword in lowered), None)
    return fabric if fabric is not None and fabric in catalog.links else None


@dataclass(frozen=True)
class _StatedLink:
    """A link speed a cell states beside a network's name: its family, Gb/s, the NICs it counts and
    whether per node or per GPU, and the words."""

    family: str
    gbit_per_s: int
    count: str | None  # as written (:func:`_nic_count` reads it)
    per: str
    words: str


def _network_family(word: str) -> str | None:
    return next((family for pattern, family in NETWORK_FAMILIES if pattern.match(word)), None)


def _stated_links(text: str) -> list[_StatedLink]:
    """Every link speed ``text`` states next to a network's name (:data:`_LINK_SPEED`)."""
    found = []
    for match in _LINK_SPEED.finditer(text):
        bit_rate = match["unit"] not in ("G", "GB/s")
        before = _WORD_BEFORE[bit_rate].search(text[: match.start()])
        after = _WORD_AFTER.search(text[match.end() :])
        family_before = _network_family(before.group(1)) if before else None
        family_after = _network_family(after.group(1)) if after else None
        family = "ethernet" if match["unit"].lower() == "gbe" else family_before or family_after
        if family is None or (family != "efa" and match["unit"] in _TERA_UNITS):
            continue
        start = before.start() if before and family_before else match.start()
        end = match.end() + (after.end() if after and family_after else 0)
        per = _PER_NODE_AFTER.match(text[match.end() :])
        count = match["count"]
        counted_name = _COUNT_BEFORE_NAME.search(text[:start]) if family_before else None
        if count is None and counted_name:  # ``8x EFA 400 Gb/s``: the count before the name
            count, start = counted_name["count"], counted_name.start()
        found.append(
            _StatedLink(
                family=family,
                gbit_per_s=_speed_gbit_per_s(match, text),
                count=count,
                per=("gpu" if per["what"].lower() == "gpu" else "node") if per else "",
                words=text[start:end].strip(" ,;:()"),
            )
        )
    return found


# No link is faster than 1 PB/s (limits.MAX_BYTES_PER_S), 8,000,000 Gb/s
_MAX_LINK_GBIT_PER_S: Final = round(MAX_BYTES_PER_S * 8 / 1e9)


def _speed_gbit_per_s(match: re.Match[str], text: str) -> int:
    """The Gb/s a :data:`_LINK_SPEED` match states; refused above any link's (its digits are
    counted before they are read: Python reads no integer of over 4,300 digits)."""
    number = match["number"]
    gbit_per_s = float(number) * _GBIT_PER_UNIT.get(match["unit"], 1) if len(number) <= 9 else None
    if gbit_per_s is None or gbit_per_s > _MAX_LINK_GBIT_PER_S:
        raise HardwareTextError(
            f"hardware {_shown(text)!r} states a network speed of {_shown(number)} {match['unit']}, above "
            f"any link's ({_MAX_LINK_GBIT_PER_S:,} Gb/s, 1 PB/s); write the speed its NICs run at"
        )
    return round(gbit_per_s)


def _shown(written: str) -> str:
    """``written`` cut to 40 characters for a message (a cell may be thousands long)."""
    return written if len(written) <= 40 else f"{written[:37]}..."


def _link_of(catalog: Catalog, stated: _StatedLink, text: str) -> str:
    """The catalog link of ``stated``'s family and speed; refused where none has that speed."""
    same_family = sorted(
        (link for link in catalog.links.values() if link.family == stated.family),
        key=lambda link: (not link.name.startswith(_GENERIC_LINK_PREFIX[stated.family]), link.name),
    )
    for link in same_family:
        if round(_gbit_per_s(link)) == stated.gbit_per_s:
            return link.name
    speeds = ", ".join(
        f"{link.name} ({_gbit_per_s(link):g} Gb/s)" for link in sorted(same_family, key=_gbit_per_s)
    )
    raise HardwareTextError(
        f"hardware {text!r} states a {stated.gbit_per_s} Gb/s {stated.family} network ('{stated.words}'), "
        f"and no catalog link has that speed (the {stated.family} links: {speeds}); write the speed "
        "the nodes' NICs run at, or add the link with --catalog (docs/catalog.md)"
    )


def _gbit_per_s(link: Link) -> float:
    """A port's speed each way in Gb/s, as NICs are sold."""
    return link.per_direction_bytes_per_s * 8 / 1e9


@dataclass(frozen=True)
class _Network:
    """The network a cell states, in :class:`HardwareSpec`'s fields."""

    fabric: str | None = None
    nics_per_node: int | None = None
    nics_per_gpu: int | None = None
    text: str = ""


# A network named in a cell, with or without a speed (for the assumptions' line on the fabric)
_NAMED_NETWORK: Final = re.compile(r"\b(?:roce(?:v2)?|ethernet|infiniband|ib|efa|[nhxe]dr)\b", re.IGNORECASE)


def _network(catalog: Catalog, text: str, system: System) -> _Network:
    """The network a cell states: a speed beside a network's name (:func:`_stated_links`), else a
    keyword (:data:`FABRIC_KEYWORDS`), else the network's name alone (no fabric: the system's own
    NICs, said in the notes); an empty one where the cell names none."""
    stated = _stated_links(text)
    if stated:
        first = stated[0]
        count = _nic_count(system, first, text)
        if first.family == "efa" and count is None and not first.per:
            return _efa_instance_total(catalog, system, first, text)
        fabric = _link_of(catalog, first, text)
        if first.per == "gpu":
            return _Network(fabric, nics_per_gpu=count or 1, text=first.words)
        per_node = count or 1 if count is not None or first.per == "node" else None
        return _Network(fabric, nics_per_node=per_node, text=first.words)
    named = _NAMED_NETWORK.search(text)
    return _Network(_keyword_fabric(catalog, text), text=named.group(0) if named else "")


# why a NIC count is bounded (limits.MAX_NICS_PER_NODE)
_NICS_BOUND: Final = f"at most {MAX_NICS_PER_NODE} a node; nodes have 1 to 32 today, p5.48xlarge 32"


def _nic_count(system: System, stated: _StatedLink, text: str) -> int | None:
    """The NICs ``stated`` counts (``None``: no count written); refused unless a whole number from
    1 to :func:`_most_nics` (``0x``, ``-8x``, ``1.5x`` and a count past any node are no NICs)."""
    if stated.count is None:
        return None
    most = _most_nics(system, stated.per)
    if stated.count.isdigit() and len(stated.count) <= len(str(most)) and 1 <= int(stated.count) <= most:
        return int(stated.count)
    per = " per GPU" if stated.per == "gpu" else ""
    raise HardwareTextError(
        f"hardware {_shown(text)!r} counts {_shown(stated.count)} NICs{per} ('{_shown(stated.words)}'): "
        f"write a whole number from 1 to {most:,}{per} ({_NICS_BOUND}), or leave the count out"
    )


def _most_nics(system: System, per: str) -> int:
    """The most NICs a count may state: :data:`MAX_NICS_PER_NODE` for each node the system's record
    holds (a rack's are its compute trays, GB200 NVL72's 18; a pod's record counts none: one per
    chip), per GPU that over a node's GPUs."""
    gpus_per_node = node_gpus(system) or 1
    if per == "gpu":
        return max(1, MAX_NICS_PER_NODE // gpus_per_node)
    return MAX_NICS_PER_NODE * max(1, system.num_accelerators // gpus_per_node)


def _efa_instance_total(catalog: Catalog, system: System, stated: _StatedLink, text: str) -> _Network:
    """An EFA speed written with no NIC count: AWS quotes EFA per instance (p4d.24xlarge 400 Gbps
    on 4 cards of 100, p5.48xlarge 3,200 on 32 of 100), so it is the node's total. The system's
    own EFA NICs where their total (or one of them) is that speed; else the total on NICs of the
    fastest catalog EFA link whose speed divides it."""
    own = system.scale_out
    if own is not None and own.link.family == "efa":
        each_gbit_per_s = round(_gbit_per_s(own.link))
        if stated.gbit_per_s in (each_gbit_per_s, each_gbit_per_s * own.num_links):
            return _Network(own.link.name, text=stated.words)
    for link in sorted(
        (link for link in catalog.links.values() if link.family == "efa"), key=_gbit_per_s, reverse=True
    ):
        each_gbit_per_s = round(_gbit_per_s(link))
        if each_gbit_per_s and stated.gbit_per_s % each_gbit_per_s == 0:
            nics, most = stated.gbit_per_s // each_gbit_per_s, _most_nics(system, "node")
            if nics > most:
                raise HardwareTextError(
                    f"hardware {_shown(text)!r} states {stated.gbit_per_s:,} Gb/s of EFA per instance "
                    f"('{stated.words}'): {nics:,} NICs of {each_gbit_per_s} Gb/s, more than {most:,} "
                    f"({_NICS_BOUND}); write the instance's total or its NICs (e.g. '32x EFA 100 Gb/s')"
                )
            return _Network(link.name, nics_per_node=nics, text=stated.words)
    return _Network(_link_of(catalog, stated, text), nics_per_node=1, text=stated.words)


def _without_own_count(system: System, network: _Network) -> _Network:
    """``network`` without a NIC count that is the system's own (``NDR IB 400Gb/s per GPU`` on a
    DGX H100 is its eight NDR ports): the system's NICs, named again, are the same hardware."""
    own = system.scale_out
    if own is None or network.fabric != own.link.name:
        return network
    per_gpu = network.nics_per_gpu * system.num_accelerators if network.nics_per_gpu else None
    if (network.nics_per_node or per_gpu) != own.num_links:
        return network
    return _Network(network.fabric, text=network.text)


def read_hardware(catalog: Catalog, text: str) -> tuple[HardwareSpec, str]:
    """(hardware, the words that named its system) of a hardware cell (see the module docs)."""
    system, span = named_system(catalog, text)
    memory, power = _variant_figures(system.accelerator, text)
    network = _without_own_count(system, _network(catalog, text, system))
    part = _named_part(catalog, system, text, memory) if memory is not None else None
    if part is not None:  # ``H100 80GB HBM3 700W (Meta Grand Teton)``: that part in that server
        memory, power = _variant_figures(part, text)
    return HardwareSpec(
        system.name,
        memory,
        power,
        network.fabric,
        part.name if part is not None else None,
        nics_per_node=network.nics_per_node,
        nics_per_gpu=network.nics_per_gpu,
        gpus_per_node=_node_shape(catalog, system, text),
        network_text=network.text or None,
    ), span


def _node_shape(catalog: Catalog, system: System, text: str) -> int | None:
    """The GPUs per node a cell writes as nodes times GPUs (:func:`_nodes_times_gpus`: ``2 nodes of
    4x H100`` is 4) or as GPUs before their part with the nodes after (``4x H100, 2 nodes``: 4 a
    node, :func:`_times_nodes_after`) where a node of ``system`` holds more (the job used part of
    each); ``None`` otherwise (the system's own nodes)."""
    if system.system_type != "node":
        return None
    product = _nodes_times_gpus(text)
    per_node = product[1] if product is not None else _gpus_before_nodes(catalog, text)
    if per_node is None:
        return None
    return per_node if 1 <= per_node < system.num_accelerators else None


def _gpus_before_nodes(catalog: Catalog, text: str) -> int | None:
    """The GPUs a cell counts before its part when it counts more than one node after them
    (``4x H100, 2 nodes``: 4); ``None`` where the count is of systems or no nodes follow."""
    match = _COUNT_BEFORE_PART.search(text)
    if match is None:
        return None
    nodes = _NODES_COUNTED.search(text, match.end())
    if nodes is None or int(nodes.group(1).replace(",", "")) < 2:
        return None
    _, _, counts_systems = _count_before_part(catalog, text, match)
    return None if counts_systems else int(match.group(1))


def _named_part(catalog: Catalog, system: System, text: str, memory_gb: float) -> Accelerator | None:
    """A part the text names beside a system, of the system's architecture, whose own memory is the
    size the text gives (Meta's Grand Teton holds H100 SXM 96GB HBM2e at 500 W, but the Llama 3
    paper's runs are 'H100 80GB HBM3 700W' in it: the 80 GB part, not a 96 GB one cut to 80)."""
    for span in _spans(text):
        part = _find_accelerator(catalog, span)
        if part is None or part.name == system.accelerator.name:
            continue
        if part.architecture == system.accelerator.architecture and _own_memory(part, memory_gb):
            return part
    return None


def cluster_of(catalog: Catalog, hardware: HardwareSpec, num_gpus: int) -> tuple[Cluster, list[str]]:
    """The cluster of ``num_gpus`` GPUs of ``hardware`` (a job on part of a rack-scale system
    spreads over the fewest racks), and notes on how it was built."""
    system = _system_named(catalog, hardware.system, num_gpus)
    part = (
        catalog.accelerator(hardware.accelerator) if hardware.accelerator is not None else system.accelerator
    )
    accelerator, notes = _variant(part, hardware.memory_gib, hardware.power_limit_w)
    if hardware.accelerator is not None:
        notes = [f"{part.name} in {system.name} (the part the cell names)", *notes]
    system = system_with(system, accelerator)
    link = catalog.link(hardware.fabric) if hardware.fabric is not None else None
    shape = hardware.gpus_per_node
    if shape is not None and num_gpus % shape == 0 and shape < system.num_accelerators:
        # the cell's own nodes (``2 nodes of 4x H100``): that many GPUs used in each
        system, nodes = spread_over_domains(system, shape)[0], num_gpus // shape
        notes.append(f"{nodes} nodes of {_gpus(shape)}, as the hardware cell writes them")
    elif takes_part_of_domain(system) or (
        num_gpus > system.num_accelerators and num_gpus % system.num_accelerators
    ):
        system, nodes = spread_over_domains(system, num_gpus)
    else:
        nodes = max(1, -(-num_gpus // system.num_accelerators))
    cluster = build_cluster(
        system,
        num_nodes=nodes,
        link=link,
        nics_per_accelerator=hardware.nics_per_gpu,
        nics_per_node=hardware.nics_per_node,
    )
    each = (
        f" ({_gpus(system.num_accelerators)} used in each)"
        if system.num_accelerators * nodes == num_gpus
        else ""
    )
    head = f"{nodes} x {system.name}{each}" + (f" over {hardware.fabric}" if hardware.fabric else "")
    if hardware.network_text:
        notes.append(_network_note(cluster, hardware))
    if system.torus_dimensions:
        notes.append(f"a slice of {system.name}: {describe_torus(system)}")
    own = system.scale_out
    if (
        has_assumed_nics(system)
        and own is not None
        and nodes > 1
        and (link is None or link.name == own.link.name)
    ):
        notes.append(assumed_nics(system))
    return cluster, [head, *notes]


def _network_note(cluster: Cluster, hardware: HardwareSpec) -> str:
    """Which fabric a row that names a network ran over: the NICs per node and their link, or the
    system's own where the cell names a network but no speed."""
    fabric = cluster.fabric
    used = (
        f"{fabric.num_links} x {fabric.link.name} per node, {_gbit_per_s(fabric.link):g} Gb/s each"
        if fabric is not None
        else "no NICs"
    )
    if cluster.num_nodes == 1:
        used += "; one node, so no traffic crosses it"
    if hardware.fabric is None:
        return (
            f"network '{hardware.network_text}' names no speed: the system's own NICs, {used}; write the "
            "speed beside it (e.g. 'RoCE 400G') to model that network"
        )
    return f"network '{hardware.network_text}': {used}"


def node_gpus(system: System) -> int | None:
    """The GPUs of one node of ``system``, which a per-node figure divides by: an HGX/DGX node's
    (the job's GPUs where it uses part of one), a rack's node where its record counts one (a GB200
    NVL72's compute tray of 4 GPUs, ``[node]`` in the catalog), ``None`` for a rack or a pod whose
    record counts none, never the job's GPUs in the rack."""
    if system.accelerators_per_node:
        return system.accelerators_per_node
    return None if system.system_type in _NODELESS_SYSTEMS else system.num_accelerators


# system types whose catalog record is no node: a rack-scale NVLink domain, a TPU pod
_NODELESS_SYSTEMS: Final = frozenset({"rack", "pod"})


def _gpus(count: int) -> str:
    return f"{count} GPU" if count == 1 else f"{count} GPUs"


# Nodes times GPUs per node, in a GPUs cell or a hardware cell: ``1024 nodes x 8``, ``2 nodes (8
# GPUs each)``, ``128 hosts, 8 GPUs``, ``2 nodes of 8 H100``, ``64x8``, ``2 x 8 H100``, a
# rack-scale system's compute trays (``12 trays x 4 GPUs``, ``12 compute trays (4 GPUs each)``)
# (a count glued to a part, ``8xH100``, is not a product, nor a TPU topology, ``tpu7x-4x8x8``).
# A number followed by a link speed's or a memory size's unit is neither (``4 nodes, 400G IB``,
# ``2 nodes (200Gb/s IB)``, ``4 nodes, 80GB``): no node's GPU count.
_NOT_A_SPEED_OR_SIZE: Final = r"(?!\s*(?-i:[GTM](?:bit|bps|bE|b|B|iB)?)(?:/s)?(?![A-Za-z]))"
_NODES_TIMES_GPUS: Final = re.compile(
    r"(?<![\w.])(\d[\d,]*)\s*(?:(?:nodes?|hosts?|servers?|systems?|(?:compute\s+)?trays?)\s*(?:[x×*(,]|of|with)"
    rf"|[x×*])\s*(\d+)(?![\d.]){_NOT_A_SPEED_OR_SIZE}(?!\s*[x×]\s*\d)",
    re.IGNORECASE,
)


# No server holds more GPUs than a DGX-2's 16 (a rack's 72 are counted as the rack's): a number in
# a node count's parenthesis above it is the whole job's (``64 nodes (512 GPUs)``)
MAX_GPUS_PER_NODE: Final = 16


def _nodes_times_gpus(text: str) -> tuple[int, int, str] | None:
    """(nodes, GPUs per node, the words) a cell writes as a product (:data:`_NODES_TIMES_GPUS`);
    ``None`` where a parenthesis after the nodes holds the job's GPUs instead (``64 nodes (512
    GPUs)``: more than :data:`MAX_GPUS_PER_NODE`)."""
    product = _NODES_TIMES_GPUS.search(text)
    if product is None:
        return None
    per_node = int(product.group(2))
    if "(" in product.group(0) and per_node > MAX_GPUS_PER_NODE:
        return None
    return int(product.group(1).replace(",", "")), per_node, product.group(0).strip()


def gpu_count(text: str) -> tuple[int | None, str]:
    """(GPUs, note) a GPUs cell writes: a count (``8,192``; ``16K`` is 16,384, as ML papers
    count clusters) or nodes times GPUs per node (``1024 nodes x 8`` is 8,192, said in the note).

    >>> gpu_count("1024 nodes x 8"), gpu_count("16K H100s"), gpu_count("n/r"), gpu_count("single GPU")
    ((8192, "GPUs: '1024 nodes x 8' read as 1024 x 8"), (16384, ''), (None, ''), (1, ''))
    """
    product = _nodes_times_gpus(text)
    if product is not None:
        nodes, per_node, _ = product
        return nodes * per_node, f"GPUs: '{text.strip()}' read as {nodes} x {per_node}"
    if _ONE_GPU.fullmatch(text.strip()):
        return 1, ""
    part = _PART_IN_COUNT.search(text)
    if part is not None:
        return _count_beside_part(text, part)
    return size_cell(text), ""


# A part's name in a GPUs cell (``H100``, ``MI300X``, ``B200``, ``GB200``, ``RTX 4090``, ``Radeon
# RX 7900 XTX``): its digits are the part's, never a count (``H100 x 8`` is 8 GPUs, not 100).
_PART_IN_COUNT: Final = re.compile(
    r"\b(?:rtx|gtx|quadro|tesla|radeon|instinct|arc)(?:\s+[a-z]+)*\s+\d+\w*"
    r"|\b[a-z]+\d+[a-z]*(?!\d)",
    re.IGNORECASE,
)


def _count_beside_part(text: str, part: re.Match[str]) -> tuple[int | None, str]:
    """(GPUs, note) of a GPUs cell that names a part: the count written after it (``H100 x 8``,
    ``MI300X x8``, ``B200x8``, ``A100 80GB x 4``) or before it (``8x MI300X``, ``16K H100s``);
    ``None`` where no count stands beside the part (the hardware cell is read for one)."""
    after = re.fullmatch(r"(?:\s*\d+\s*[gt]i?b)?\s*[x×*]\s*(\d[\d,]*)\s*", text[part.end() :], re.IGNORECASE)
    if after is not None:
        count = int(after.group(1).replace(",", ""))
        return count, f"GPUs: '{text.strip()}' read as {count} x {part.group(0)}"
    head = re.sub(r"[\s(]*(?:[x×*]\s*)?$", "", text[: part.start()])
    return (size_cell(head) if head.strip() else None), ""


# One GPU in words: ``single GPU``, ``one GPU``, ``a single H100`` (a part's name has a digit; not
# ``one node``).
_ONE_GPU: Final = re.compile(
    r"(?:a\s+)?(?:single|one)(?:\s+(?:gpu|accelerator|device|card|[a-z]*\d[\w-]*)(?:\s+gpu)?)?", re.IGNORECASE
)


# A GPUs cell that counts nodes: ``4 DGX A100 nodes``, ``64 x DGX A100``, ``64 nodes``, ``1 DGX
# A100 (8 GPUs)``, ``64 nodes (512 GPUs)``
_NODE_WORDS: Final = re.compile(r"\b(?:nodes?|servers?|hosts?|systems?)\b|\b[dh]gx\b", re.IGNORECASE)
# the GPUs such a cell names outright (not ``8 GPUs each``)
_GPUS_NAMED: Final = re.compile(
    r"(?<![\w.])(\d[\d,]*)\s*(?:gpus|accelerators|devices|chips)\b(?!\s*(?:each|per|/))", re.IGNORECASE
)


def _gpus_of_nodes(catalog: Catalog, row: PublishedRow) -> tuple[int, str] | None:
    """(GPUs, note) of a GPUs cell that counts nodes (:data:`_NODE_WORDS`) with no product of nodes
    and GPUs in it: the GPUs it names outright, else its count times the GPUs of the system it names,
    or of the hardware cell's (a node system: ``64 nodes`` of DGX A100 is 512); ``None`` otherwise."""
    text = row.text("GPUs")
    head = text.split("(", 1)[0]  # the count's own words, not a note's (``8 (source: '1 node')``)
    if not _NODE_WORDS.search(head) or _nodes_times_gpus(text) is not None:
        return None
    named = _GPUS_NAMED.search(text)
    if named is not None:
        return int(named.group(1).replace(",", "")), f"GPUs: '{text}' names {named.group(1)} GPUs"
    count = re.match(r"\s*(\d[\d,]*)(?![\d.]|e[+-]?\d)", text)
    if count is None:
        raise RowError(
            f"GPUs '{text}' counts nodes but not in a whole number: write the count of nodes or GPUs"
        )
    nodes = int(count.group(1).replace(",", ""))
    rest = head[count.end() :]
    systems = [found for span in _spans(rest) if (found := _find_system(catalog, span)) is not None]
    system = systems[0] if systems else named_system(catalog, row.text("hardware"))[0]
    if system.system_type != "node":
        return None
    per_node = system.num_accelerators
    return nodes * per_node, f"GPUs: '{text}' read as {nodes} x {per_node} ({system.name})"


def row_gpus(catalog: Catalog, row: PublishedRow) -> tuple[int, str]:
    """(GPUs, note) of a row: its GPUs cell (:func:`gpu_count`; nodes counted in it times a node's
    GPUs, :func:`_gpus_of_nodes`), else the count its hardware cell writes before a part, times the
    part's GPUs when the part is a system (``2x DGX H100`` is 16)."""
    counted = _gpus_of_nodes(catalog, row)
    if counted is not None:
        return counted
    cell, note = gpu_count(row.text("GPUs"))
    if cell:
        _check_hardware_count(catalog, row, cell)
        return cell, note
    return _hardware_cell_gpus(catalog, row.text("hardware"))


def _check_hardware_count(catalog: Catalog, row: PublishedRow, gpus: int) -> None:
    """Refuse a row whose hardware cell, outside its parentheses, counts other GPUs than its GPUs
    cell (``64`` beside ``32x H100 SXM``; ``8`` beside ``8 nodes of 8x H100``, ``4 systems x 8
    H100``, ``DGX H100 x 4`` or ``2x DGX H100``): which one ran is a guess. A bare count of GPUs
    of up to :data:`MAX_GPUS_PER_NODE` (``8x H100`` beside 64, ``1 of 8x B200``) describes a node."""
    text = row.text("hardware")
    head = _outside_brackets(text)
    counted = _gpus_counted_before_part(catalog, text)
    if counted is not None and counted != gpus and counted > MAX_GPUS_PER_NODE:
        raise RowError(
            f"GPUs '{row.text('GPUs')}' is {gpus:,} GPUs but hardware {text!r} counts {counted:,}: make "
            "them agree (a count in the hardware cell is the job's GPUs, or one node's of up to "
            f"{MAX_GPUS_PER_NODE})"
        )
    for total, written in _nodes_counted(catalog, head):
        if total != gpus:
            raise RowError(
                f"GPUs '{row.text('GPUs')}' is {_gpus(gpus)} but hardware {_shown(text)!r} counts "
                f"{total:,} ({written}): make them agree, or leave one of the two cells without a count"
            )


def _outside_brackets(text: str) -> str:
    """``text`` without what its parentheses and brackets hold (``A3 Mega (8x H100) x 2``:
    ``A3 Mega x 2``): a note on the cluster, not the job's count."""
    previous = None
    while previous != text:
        previous, text = text, re.sub(r"\([^()]*\)|\[[^\[\]]*\]", " ", text)
    return re.split(r"[(\[]", text, maxsplit=1)[0]


def _nodes_counted(catalog: Catalog, head: str) -> list[tuple[int, str]]:
    """(GPUs, how) of each count of nodes or systems ``head`` writes: nodes times GPUs (``8 nodes
    of 8x H100``), systems counted after their name (``DGX H100 x 4``) or before it (``2x DGX
    H100``)."""
    counts = []
    product = _nodes_times_gpus(head)
    if product is not None:
        nodes, per_node, written = product
        counts.append((nodes * per_node, f"'{written}' is {nodes} x {per_node}"))
    after = _systems_counted_after(catalog, head)
    if after is not None:
        counts.append((after[0], after[1].removeprefix("GPUs from the hardware cell: ")))
    before = _COUNT_BEFORE_PART.search(head)
    if before is not None and product is None:
        try:
            total, note, counts_systems = _count_before_part(catalog, head, before)
        except HardwareTextError:
            return counts
        if counts_systems:
            counts.append((total, note.removeprefix("GPUs from the hardware cell: ")))
    return counts


def _gpus_counted_before_part(catalog: Catalog, text: str) -> int | None:
    """The count a hardware cell writes right before a GPU's name, outside any parenthesis or
    bracket (``32x H100 SXM``: 32); ``None`` for a count of systems (``2x DGX H100``), of slices
    (``32x v5e-256``) or none."""
    head = re.split(r"[(\[]", text, maxsplit=1)[0]
    match = _COUNT_BEFORE_PART.search(head)
    if match is None:
        return None
    words = [word for word in _WORD_SPLIT.split(head[match.end() :]) if word]
    if not words or slice_name(words[0]) is not None or _find_accelerator(catalog, words[0]) is None:
        return None
    return None if _find_system(catalog, " ".join(words[:2])) is not None else int(match.group(1))


def _hardware_cell_gpus(catalog: Catalog, text: str) -> tuple[int, str]:
    """(GPUs, note) a hardware cell counts (:func:`row_gpus`, with no GPUs cell)."""
    product = _nodes_times_gpus(text)
    if product is not None:
        nodes, per_node, written = product
        named_system(catalog, text)  # the cell must name a part
        return nodes * per_node, f"GPUs from the hardware cell: '{written}' is {nodes} x {per_node}"
    systems = _systems_counted_after(catalog, text)
    if systems is not None:
        return systems
    match = _COUNT_BEFORE_PART.search(text)
    if match is None:
        return _count_after_part(catalog, text)
    gpus, note, counts_systems = _count_before_part(catalog, text, match)
    return (gpus, note) if counts_systems else _times_nodes_after(catalog, text, match, gpus, note)


# ``4 nodes``, ``2 hosts``, ``16 instances``: the nodes a hardware cell counts beside its part
_NODES_COUNTED: Final = re.compile(
    r"(?<![\w.])(\d[\d,]*)\s*(?:nodes?|hosts?|servers?|instances?)\b", re.IGNORECASE
)
# ``DGX H100 x 4``, ``A3 Mega (8x H100) x 2``: a count after a name or its parenthesis
_COUNT_AFTER_NAME: Final = re.compile(r"(?<=[\w)])\s+[x×]\s*(\d+)(?![\w.])", re.IGNORECASE)
# the systems a count after their name counts (a pod's slices are counted by their chips)
_COUNTED_SYSTEM_TYPES: Final = frozenset({"node", "rack"})


def _systems_counted_after(catalog: Catalog, text: str) -> tuple[int, str] | None:
    """(GPUs, note) of a count after a system of several GPUs, which counts systems as a count
    before it does (``DGX H100 x 4`` and ``p5.48xlarge x 4`` are 32 GPUs, ``A3 Mega (8x H100) x 2``
    16); ``None`` where no such count follows a system's name."""
    match = _COUNT_AFTER_NAME.search(text)
    if match is None:
        return None
    head = re.sub(r"\([^()]*\)", " ", text[: match.start()])
    if _COUNT_BEFORE_PART.search(head) or not head.strip():
        return None
    try:
        system, span = named_system(catalog, head)
    except HardwareTextError:
        return None
    if not _names_whole_system(catalog, system, span) or system.system_type not in _COUNTED_SYSTEM_TYPES:
        return None
    count = int(match.group(1))
    if count < 1:
        raise RowError(f"hardware {text!r} counts {count} systems; give at least one")
    gpus = count * system.num_accelerators
    return (
        gpus,
        f"GPUs from the hardware cell: '{span} x {count}' is {count} x {_gpus(system.num_accelerators)}",
    )


def _times_nodes_after(
    catalog: Catalog, text: str, match: re.Match[str], gpus: int, note: str
) -> tuple[int, str]:
    """(GPUs, note) of a count before a GPU that one node holds (at most its system's node),
    times the nodes the cell counts after it: ``8x H100, 4 nodes`` and ``8x H100 per node, 4 nodes``
    are 32 GPUs; ``32x H100 (4 nodes)`` stays the job's 32."""
    nodes = _NODES_COUNTED.search(text, match.end())
    if nodes is None:
        return gpus, note
    system, _ = named_system(catalog, text[match.end() :])
    per_node = node_gpus(system) if system.system_type == "node" else MAX_GPUS_PER_NODE
    num_nodes = int(nodes.group(1).replace(",", ""))
    if num_nodes < 1:
        raise RowError(f"hardware {text!r} counts {num_nodes} nodes; give at least one")
    if gpus > (per_node or MAX_GPUS_PER_NODE) or num_nodes == 1:
        return gpus, note
    return num_nodes * gpus, f"{note} per node, on '{nodes.group(0)}': {num_nodes} x {gpus}"


def _count_before_part(catalog: Catalog, text: str, match: re.Match[str]) -> tuple[int, str, bool]:
    """(GPUs, note, whether it counts systems) of the count a hardware cell writes before its part
    (``8x H100``: 8 GPUs, ``2x DGX H100``: two systems of 8)."""
    count = int(match.group(1))
    if count < 1:
        raise RowError(f"hardware {text!r} counts {count} parts; give at least one")
    rest = text[match.end() :]
    system, span = named_system(catalog, rest)
    # the part the count stands before decides what it counts: '8x A100 (DGX A100)' is 8 GPUs, and
    # so is '48x GB200 (NVL72)': a parenthesis after the part says where they sit
    words = [word for word in _WORD_SPLIT.split(rest.split("(", 1)[0]) if word]
    counts_gpus = (
        bool(words)
        and _find_accelerator(catalog, words[0]) is not None
        and _find_system(catalog, " ".join(words[:2])) is None
    )
    whole = not counts_gpus and _names_whole_system(catalog, system, span)
    gpus = count * system.num_accelerators if whole else count
    what = f"{count} x {_gpus(system.num_accelerators)}" if whole else _gpus(count)
    return gpus, f"GPUs from the hardware cell: '{match.group(0)}{span}' is {what}", whole


def _names_whole_system(catalog: Catalog, system: System, span: str) -> bool:
    """Whether the words ``span`` name a system of several GPUs (``DGX H100``, ``p5.48xlarge``),
    so that a count before them counts systems, not GPUs."""
    return _find_system(catalog, span) is not None and system.system_type != "single-gpu"


def _count_after_part(catalog: Catalog, text: str) -> tuple[int, str]:
    """(GPUs, note) from a Google slice name (``v5p-128``) or a count after the part (``x8``,
    ``256 chips``) in a hardware cell."""
    for span in _spans(text):
        found = slice_name(span) if len(span) < 40 else None
        if found is not None:
            return found[1], f"GPUs from the hardware cell: slice '{span}' is {found[1]} chips"
    match = _COUNT_AFTER_PART.search(text)
    if match is None:
        return _count_next_to_part(catalog, text)
    count = int(match.group(1) or match.group(2) or match.group(3))
    if count < 1:
        raise RowError(f"hardware {text!r} counts {count} parts; give at least one")
    named_system(catalog, text)  # the cell must name a part
    return count, f"GPUs from the hardware cell: '{match.group(0).strip()}' is {_gpus(count)}"


def _count_next_to_part(catalog: Catalog, text: str) -> tuple[int, str]:
    """(GPUs, note) from a count written right before the part with no ``x`` (``1024 H100s``,
    ``16 H100 GPUs (2 nodes)``, ``a single H100``); else the cell gives no count."""
    system, span = named_system(catalog, text)
    before = text[: text.find(span)] if span in text else ""
    if re.search(r"\b(?:a\s+)?(?:single|one)\s*$", before, re.IGNORECASE):
        # 'one H100' is a GPU, 'a single DGX H100' the system's GPUs
        gpus = system.num_accelerators if _names_whole_system(catalog, system, span) else 1
        return gpus, f"GPUs from the hardware cell: '{before.strip()} {span}' is {_gpus(gpus)}"
    count = re.search(r"(?<![\w.])(\d[\d,]*)\s*$", before)
    if count is None:
        return _nodes_of_usual_size(system, text)
    gpus = int(count.group(1).replace(",", ""))
    if gpus < 1:
        raise RowError(f"hardware {text!r} counts {gpus} parts; give at least one")
    return gpus, f"GPUs from the hardware cell: '{count.group(1)} {span}' is {_gpus(gpus)}"


def _nodes_of_usual_size(system: System, text: str) -> tuple[int, str]:
    """(GPUs, note) of a cell that counts nodes of a part but not their GPUs (``H100 SXM, 4
    nodes``): that many of the part's usual node (a DGX H100's 8), the assumption said in the note;
    refused where the part has no usual node of several GPUs, or no nodes are counted."""
    nodes = _NODES_COUNTED.search(text)
    per_node = node_gpus(system) if system.system_type != "single-gpu" else None
    if nodes is None:
        raise RowError(
            "GPUs is not reported: fill the GPUs column, or write the count in the hardware cell "
            "(e.g. '8x H100')"
        )
    if per_node is None:
        raise RowError(
            f"hardware {_shown(text)!r} counts '{nodes.group(0)}' but not the GPUs in each, and "
            f"{system.name} has no usual node: fill the GPUs column, or write the GPUs per node (e.g. '8x "
            f"{system.accelerator.name}, {nodes.group(0)}')"
        )
    num_nodes = int(nodes.group(1).replace(",", ""))
    if num_nodes < 1:
        raise RowError(f"hardware {text!r} counts {num_nodes} nodes; give at least one")
    return num_nodes * per_node, (
        f"GPUs from the hardware cell: '{nodes.group(0)}' is {num_nodes} x {per_node} (assumed: "
        f"{system.name}'s {per_node} GPUs a node, the part's usual node; write the GPUs per node to say "
        "otherwise)"
    )


# words that make a system named without a count many of them, or a slice of one: ``DGX H100
# cluster``, ``SuperPOD``, ``nodes``, ``racks``
_MANY_SYSTEMS: Final = re.compile(
    r"\b(?:clusters?|superpods?|pods?|nodes|hosts|racks|fleet|scalable units?)\b", re.IGNORECASE
)


def one_named_system(catalog: Catalog, row: PublishedRow) -> tuple[int, str] | None:
    """(GPUs, note) of a row whose hardware cell names a server of several GPUs and counts nothing
    (``DGX B200``, ``p5.48xlarge``): one such server. ``None`` where the cell starts with a GPU
    (``H100 (DGX H100)`` says where the GPUs sit, not how many), speaks of clusters, nodes or
    racks, or names a rack or pod (``GB200 NVL72``: runs use part of one, and a figure per GPU
    does not say which part). Callers ask this last, after every count the row writes."""
    text = row.text("hardware")
    head = text.split("(", 1)[0]
    if _MANY_SYSTEMS.search(text) or not head.strip():
        return None
    try:
        system, span = named_system(catalog, head)
    except HardwareTextError:
        return None
    if not _names_whole_system(catalog, system, span) or system.system_type != "node":
        return None
    gpus = system.num_accelerators
    return gpus, f"GPUs from the hardware cell: '{span}' with no count is one system, {_gpus(gpus)}"


def resolve_row_cluster(catalog: Catalog, row: PublishedRow, num_gpus: int) -> tuple[Cluster, list[str]]:
    """The cluster of ``num_gpus`` GPUs a row's hardware cell describes, and how it was read."""
    text = row.text("hardware")
    hardware, span = read_hardware(catalog, text)
    cluster, notes = cluster_of(catalog, hardware, num_gpus)
    return cluster, [f"hardware '{text}' -> '{span}': {notes[0]}", *notes[1:]]


__all__ = [
    "FABRIC_KEYWORDS",
    "HardwareSpec",
    "HardwareTextError",
    "cluster_of",
    "default_system",
    "named_system",
    "one_named_system",
    "pcie_server",
    "read_hardware",
    "resolve_row_cluster",
    "row_gpus",
    "variant_of",
]

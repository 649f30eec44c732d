"""PCIe cards no catalog system is built from (L4, L40S, A10G, H100 NVL ...): one server, or several.

Up to :data:`MAX_PCIE_SERVER_CARDS` cards share one server and reach each other
over their host link (PCIe), or over their NVLink bridge when the card has one
and at most :data:`MAX_NVLINK_BRIDGE_CARDS` are used. More cards are spread
evenly over the fewest servers that hold them, joined by the NICs an ordinary
PCIe GPU server ships with: NVIDIA's Enterprise Reference Architecture builds
PCIe servers as "2-8-5" (two CPUs, eight GPUs, five network adapters), and
lightspeed *assumes* four of the five carry GPU traffic at 400 Gb/s, one per two
GPUs (:data:`PCIE_SERVER_NICS_PER_GPU` of :data:`PCIE_SERVER_NIC_LINK`), the
fifth the north-south network. A user names another fabric with a cluster spec
(``2x<card server>@ib-ndr:1nic``) or a cluster file.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from lightspeed.catalog.mig_profiles import cards_system
from lightspeed.catalog.records import Accelerator, Link, LinkAttachment, System
from lightspeed.errors import InvalidPlanError

MAX_PCIE_SERVER_CARDS: Final = 8  # a PCIe server holds at most eight double-width cards
MAX_NVLINK_BRIDGE_CARDS: Final = 4  # NVLink bridges join two or four H100/H200 NVL cards
NVLINK_BRIDGE_SIZES: Final = (2, 4)
PCIE_SERVER_NIC_LINK: Final = "ethernet-400g"
PCIE_SERVER_NICS_PER_GPU: Final = 0.5
PCIE_SERVER_NIC_SOURCE: Final = (
    "NVIDIA AI Enterprise Reference Architecture, compute node hardware: PCIe Optimized 2-8-5 "
    "(2 CPU sockets, 8 GPUs, 5 network adapters), "
    "https://docs.nvidia.com/ai-enterprise/reference-architecture/latest/compute-node-hardware.html"
)


def is_pcie_card(accelerator: Accelerator) -> bool:
    """Whether ``accelerator`` is a PCIe card (its form factor says so): only those are put in
    :func:`pcie_server` servers; an OAM or SXM part without a catalog system is refused."""
    return accelerator.form_factor.lower().startswith("pcie")


def pcie_server(accelerator: Accelerator, num_cards: int) -> System:
    """``num_cards`` PCIe cards in one server: they reach each other over their host link
    (PCIe, the record's ``host_link``), or over their NVLink bridge when the card has one and two
    or four are used (H100/H200 NVL bridges join two or four cards: :data:`NVLINK_BRIDGE_SIZES`);
    no scale-out fabric.

    >>> from lightspeed.catalog import load_catalog
    >>> server = pcie_server(load_catalog().accelerator("l40s"), 4)
    >>> server.name, server.scale_up.link.name
    ('4xl40s', 'pcie-4-x16')
    """
    if not 1 <= num_cards <= MAX_PCIE_SERVER_CARDS:
        raise InvalidPlanError(f"a PCIe server holds 1 to {MAX_PCIE_SERVER_CARDS} cards, not {num_cards}")
    if not is_pcie_card(accelerator):
        raise InvalidPlanError(
            f"no system in the catalog is built from {accelerator.name} ({accelerator.form_factor}), so "
            f"{num_cards} of them have no interconnect to model; add a system with --catalog "
            "(a system TOML naming its links)"
        )
    bridged = accelerator.scale_up is not None and num_cards in NVLINK_BRIDGE_SIZES
    if accelerator.host_link is None and not bridged:
        raise InvalidPlanError(
            f"{accelerator.name} records no host link (PCIe), so {num_cards} of them have no "
            "interconnect to model; add a system with --catalog (a system TOML naming its links)"
        )
    card = accelerator if bridged else replace(accelerator, scale_up=accelerator.host_link)
    way = "NVLink bridge" if bridged else "PCIe"
    return cards_system(
        card,
        num_cards,
        name=f"{num_cards}x{accelerator.name}",
        display_name=f"{num_cards} x {accelerator.display_name} ({way} between cards)",
        system_type="node",
        note=f"{num_cards} cards in one server over {way} (no catalog system is built from "
        f"{accelerator.name})",
    )


def pcie_servers(accelerator: Accelerator, num_cards: int, nic: Link) -> tuple[System, int]:
    """(one server, number of servers) for ``num_cards`` cards: one server up to eight, else the
    cards spread evenly over the fewest servers that hold them, each with the assumed NICs
    (``nic`` links, :data:`PCIE_SERVER_NICS_PER_GPU` per card, at least one per server).

    >>> from lightspeed.catalog import load_catalog
    >>> catalog = load_catalog()
    >>> server, count = pcie_servers(catalog.accelerator("l40s"), 16, catalog.link("ethernet-400g"))
    >>> server.num_accelerators, count, server.scale_out.num_links
    (8, 2, 4)
    """
    if num_cards <= MAX_PCIE_SERVER_CARDS:
        return pcie_server(accelerator, num_cards), 1
    servers = -(-num_cards // MAX_PCIE_SERVER_CARDS)
    while num_cards % servers:
        servers += 1
    per_server = num_cards // servers
    server = pcie_server(accelerator, per_server)
    nics = max(1, round(per_server * PCIE_SERVER_NICS_PER_GPU))
    return (
        replace(
            server,
            scale_out=LinkAttachment(link=nic, num_links=nics, source=PCIE_SERVER_NIC_SOURCE),
            note=f"{server.note}; servers joined by {nics} x {nic.name} each "
            f"(assumed: {PCIE_SERVER_NIC_SOURCE.split(',')[0]}, 2-8-5 servers)",
        ),
        servers,
    )


def has_assumed_nics(system: System) -> bool:
    """Whether ``system`` is a :func:`pcie_servers` server whose NICs lightspeed assumed."""
    return system.scale_out is not None and system.scale_out.source == PCIE_SERVER_NIC_SOURCE


def assumed_nics(server: System) -> str:
    """The sentence a plan on :func:`pcie_servers` servers states as an assumption."""
    attachment = server.scale_out
    if attachment is None:
        return f"{server.name}: one server, no network between servers"
    return (
        f"assumed: {server.num_accelerators}-card {server.accelerator.name} servers joined by "
        f"{attachment.num_links} x {attachment.link.name} each ({PCIE_SERVER_NICS_PER_GPU:g} per card, as "
        "NVIDIA's 2-8-5 PCIe reference server); name another fabric with a cluster file"
    )


__all__ = [
    "MAX_NVLINK_BRIDGE_CARDS",
    "MAX_PCIE_SERVER_CARDS",
    "NVLINK_BRIDGE_SIZES",
    "PCIE_SERVER_NICS_PER_GPU",
    "PCIE_SERVER_NIC_LINK",
    "assumed_nics",
    "has_assumed_nics",
    "is_pcie_card",
    "pcie_server",
    "pcie_servers",
]

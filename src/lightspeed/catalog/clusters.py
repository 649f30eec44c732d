"""Clusters: N nodes of a system over a scale-out fabric, from a spec string or a file.

Spec strings (spaces allowed, case-insensitive)::

    [<nodes> x] <system> [@ <link>] [: <k> nic]

``9xdgx-h100`` is nine DGX H100 nodes over their own NICs (8 x 400G
ConnectX-7); ``9xdgx-h100@ib-ndr:1nic`` names the fabric and one NIC per
accelerator; ``2xgb200-nvl72@ib-xdr:0.5nic`` one 800G port per two GPUs.
``<k>`` is NICs per accelerator and must give a whole number per node, no more than
:data:`~lightspeed.limits.MAX_NICS_PER_NODE` a node and no more bandwidth per accelerator than
its host link carries (``_check_nic_count``; a cluster file's counts alike). The
link must be a NIC (a link of a family in
:data:`~lightspeed.catalog.records.SCALE_OUT_LINK_FAMILIES`: InfiniBand,
Ethernet, EFA): NVLink, PCIe, xGMI and TPU ICI join accelerators inside a
node, never nodes. ``<system>`` may be part of one rack (``64xgb200-nvl72``),
a TPU slice by Google's name (``v5e-2x4``, ``v5p-128``) or ``<n>x<PCIe card>``
(``8xl40s``: a server of eight cards), which is how :attr:`Cluster.spec`
writes such clusters back.

Cluster files hold one ``kind = "cluster"`` record::

    schema_version = 1
    kind = "cluster"
    name = "lab-h100"
    system = "dgx-h100"
    num_nodes = 9                 # or num_accelerators = 72
    [scale_out]                   # optional: defaults to the system's NICs
    link = "ib-ndr"
    nics_per_accelerator = 1      # or nics_per_node = 8
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from lightspeed.catalog.records import SCALE_OUT_LINK_FAMILIES, Cluster, Link, LinkAttachment, System
from lightspeed.catalog.torus import torus_slice
from lightspeed.datafile import Fields
from lightspeed.errors import DataFileError, InvalidPlanError, UserInputError
from lightspeed.limits import MAX_NICS_PER_NODE
from lightspeed.units import format_bytes_per_s

SPEC_SYNTAX: Final = "[<nodes>x]<system>[@<link>][:<nics per accelerator>nic], e.g. 9xdgx-h100@ib-ndr:1nic"

_SPEC: Final = re.compile(
    r"^(?:(?P<nodes>\d+)[x×*])?(?P<system>[^@:]+)(?:@(?P<fabric>[^:]+))?(?::(?P<nics>\d*\.?\d+)nics?)?$"
)


# Systems a job may take part of (a rack-scale NVLink domain, a TPU pod): it runs on
# as many accelerators of each as it needs (spread_over_domains).
DOMAIN_SYSTEM_TYPES: Final = ("rack", "pod")

# The most accelerators one cluster may hold (the CLI's --gpus bound is the same: docs/limits.md).
MAX_CLUSTER_ACCELERATORS: Final = 10_000_000


def _check_cluster_size(num_accelerators: int, system: System, *, nodes: int | None = None) -> None:
    """Refuse more accelerators than lightspeed models (before any search over their splits)."""
    if num_accelerators <= MAX_CLUSTER_ACCELERATORS:
        return
    counted = f"{nodes:,} x {system.name} = " if nodes is not None else f"{system.name}: "
    raise InvalidPlanError(
        f"{counted}{num_accelerators:,} accelerators, above the {MAX_CLUSTER_ACCELERATORS:,} lightspeed "
        "models (50x the largest cluster built); use fewer " + ("nodes" if nodes is not None else "GPUs")
    )


def build_cluster(
    system: System,
    *,
    num_nodes: int,
    link: Link | None = None,
    nics_per_accelerator: float | None = None,
    nics_per_node: int | None = None,
    label: str = "",
    path: str = "",
) -> Cluster:
    """``num_nodes`` of ``system``; ``link`` and a NIC count replace the system's own NICs.

    Without ``link`` the system's scale-out link is kept; without a NIC count
    the system's NICs per node are kept (or one per accelerator for a new link).
    """
    if num_nodes < 1:
        raise InvalidPlanError(f"a cluster needs at least one node, not {num_nodes}")
    if link is not None and not link.is_scale_out:
        _refuse_scale_out_link(link, system, path)
    _check_cluster_size(num_nodes * system.num_accelerators, system, nodes=num_nodes)
    attachment = system.scale_out
    if link is None and nics_per_accelerator is None and nics_per_node is None:
        if attachment is None and num_nodes > 1:
            raise InvalidPlanError(
                f"{num_nodes} nodes of {system.name} need a scale-out fabric and {system.name} records no "
                f"NICs of its own; name one with @<link>, e.g. {num_nodes}x{system.name}@ethernet-400g:1nic"
            )
        return Cluster(system=system, num_nodes=num_nodes, fabric=attachment, label=label, path=path)
    if link is None:
        if attachment is None:
            raise InvalidPlanError(
                f"{system.name} has no scale-out NICs of its own; name a link with @<link>"
            )
        link = attachment.link
    count = _nics_per_node(system, attachment, link, nics_per_accelerator, nics_per_node, path=path)
    fabric = LinkAttachment(link=link, num_links=count, source=link.source)
    if attachment is not None and (attachment.link.name, attachment.num_links) == (link.name, count):
        fabric = attachment  # the system's own NICs, named again: the same cluster as without
    return Cluster(system=system, num_nodes=num_nodes, fabric=fabric, label=label, path=path)


def _refuse_scale_out_link(link: Link, system: System, path: str) -> None:
    """A link that joins accelerators inside a node (NVLink, PCIe, xGMI, ICI) named as the network
    between nodes: one line naming the NIC families and an example."""
    message = (
        f"{link.name} (link family {link.family}) joins accelerators inside a node, rack or pod, not "
        f"nodes; the network between nodes must be a NIC link (family "
        f"{', '.join(SCALE_OUT_LINK_FAMILIES)}), e.g. 2x{system.name}@ib-ndr:1nic"
    )
    if path:
        raise DataFileError(
            path, message, field="scale_out.link", value=link.name, fix="name a NIC link, e.g. ib-ndr"
        )
    raise UserInputError(message)


def _nics_per_node(
    system: System,
    attachment: LinkAttachment | None,
    link: Link,
    nics_per_accelerator: float | None,
    nics_per_node: int | None,
    *,
    path: str,
) -> int:
    if nics_per_node is not None:
        if nics_per_node < 1:
            raise InvalidPlanError(f"nics per node must be at least 1, not {nics_per_node}")
        _check_nic_count(system, link, nics_per_node, path)
        return nics_per_node
    if nics_per_accelerator is None:
        same_link = attachment is not None and attachment.link.name == link.name
        count = attachment.num_links if same_link and attachment is not None else system.num_accelerators
        _check_nic_count(system, link, count, path)
        return count
    per_node = nics_per_accelerator * system.num_accelerators
    _check_nic_count(system, link, per_node, path)  # first: a count past any node may be inf
    if round(per_node) < 1 or abs(per_node - round(per_node)) > 1e-9:
        raise InvalidPlanError(
            f"{nics_per_accelerator:g} NICs per accelerator x {system.num_accelerators} accelerators of "
            f"{system.name} is {per_node:g} NICs per node; use a value giving a whole number of at least 1"
        )
    return round(per_node)


# why a NIC count is bounded (the same bound as hardware text: sol/validation/hardware_text.py)
_NICS_BOUND: Final = f"at most {MAX_NICS_PER_NODE} a node (nodes have 1 to 32 today, p5.48xlarge 32)"


def _check_nic_count(system: System, link: Link, count: float, path: str) -> None:
    """Refuse ``count`` NICs of ``link`` in each ``system`` where no node holds them: more than
    :data:`~lightspeed.limits.MAX_NICS_PER_NODE` in each of its nodes, or more scale-out bandwidth
    per accelerator than its host link carries (a NIC's traffic to a GPU crosses the GPU's PCIe
    link: one 400G NIC, 50 GB/s each way, fills most of an H100's PCIe Gen5 x16, 63 GB/s)."""
    cap = MAX_NICS_PER_NODE * _nodes_in(system)
    limit = _scale_out_limit(system)
    fit = cap
    if limit is not None:
        accelerators_bytes_per_s = limit[0] * (1 + 1e-9) * system.num_accelerators
        fit = min(cap, math.floor(accelerators_bytes_per_s / link.per_direction_bytes_per_s))
    if count <= fit:
        return
    shown = f"{count:,.0f}" if float(count).is_integer() else f"{count:g}"
    nics = f"{shown} x {link.name} NICs per {system.name}"
    if count > cap or limit is None:
        problem = f"{nics} are more than any node holds: {_NICS_BOUND}"
    else:
        per_accelerator_bytes_per_s = count * link.per_direction_bytes_per_s / system.num_accelerators
        problem = (
            f"{nics} give each accelerator {format_bytes_per_s(per_accelerator_bytes_per_s)} per "
            f"direction, more than {limit[1]}"
        )
    _refuse_nics(system, problem, fit, path=path, count=count)


def _nodes_in(system: System) -> int:
    """The nodes one ``system`` record holds: a rack's compute trays where its record counts them
    (GB200 NVL72: 18 of 4 GPUs), one per chip for a pod or rack that counts none, else one."""
    if system.accelerators_per_node:
        return max(1, system.num_accelerators // system.accelerators_per_node)
    return system.num_accelerators if system.system_type in DOMAIN_SYSTEM_TYPES else 1


def _scale_out_limit(system: System) -> tuple[float, str] | None:
    """(the most scale-out bandwidth per accelerator, per direction; what sets it): the host link
    that NIC traffic crosses, or the system's own NICs where faster (Gaudi's sit on the chip, not
    behind its PCIe); ``None`` where the catalog records no host link."""
    host = system.accelerator.host_link
    if host is None:
        return None
    own = system.scale_out
    own_bytes_per_s = own.per_direction_bytes_per_s / system.num_accelerators if own is not None else 0.0
    if own is not None and own_bytes_per_s > host.per_direction_bytes_per_s:
        return own_bytes_per_s, (
            f"{system.name}'s own NICs give ({own.num_links} x {own.link.name}, "
            f"{format_bytes_per_s(own_bytes_per_s)} per accelerator per direction)"
        )
    return host.per_direction_bytes_per_s, (
        f"the host link their traffic crosses carries ({system.accelerator.name}: {host.num_links} x "
        f"{host.link.name}, {format_bytes_per_s(host.per_direction_bytes_per_s)} per direction)"
    )


def _refuse_nics(system: System, problem: str, most: int, *, path: str, count: float) -> None:
    """One line naming the problem and the most NICs that fit, as the spec or the file writes them."""
    if most < 1:
        fix = "name a slower link"
    elif path:
        fix = f"write nics_per_node = {most:,} or fewer"
    else:
        fix = f"name at most {most:,} NICs per {system.name}, e.g. :{most / system.num_accelerators:.12g}nic"
    if path:
        value = round(count) if float(count).is_integer() else count
        raise DataFileError(path, problem, field="scale_out", value=value, fix=fix)
    raise InvalidPlanError(f"{problem}; {fix}")


def parse_spec(
    text: str,
    *,
    system_lookup: Callable[[str], System],
    link_lookup: Callable[[str], Link],
) -> Cluster:
    """Read a cluster spec string (see the module docstring) into a :class:`Cluster`."""
    compact = "".join(text.split()).lower()
    match = _SPEC.fullmatch(compact)
    if match is None:
        raise UserInputError(f"cannot read cluster spec {text!r}; write {SPEC_SYNTAX}")
    nodes = int(match["nodes"]) if match["nodes"] else 1
    system = system_lookup(match["system"])
    link = link_lookup(match["fabric"]) if match["fabric"] else None
    nics = float(match["nics"]) if match["nics"] else None
    return build_cluster(system, num_nodes=nodes, link=link, nics_per_accelerator=nics)


def parse_cluster_file(
    path: str,
    data: Mapping[str, Any],
    *,
    system_lookup: Callable[[str], System],
    link_lookup: Callable[[str], Link],
) -> Cluster:
    """A ``kind = "cluster"`` record (see the module docstring)."""
    fields = Fields(path, data)
    system = system_lookup(fields.string("system"))
    num_nodes = _file_num_nodes(fields, system)
    scale_out = fields.table("scale_out", required=False)
    link = None
    nics_per_accelerator = None
    nics_per_node = None
    if scale_out is not None:
        link = link_lookup(scale_out.string("link")) if scale_out.has("link") else None
        if scale_out.has("nics_per_accelerator"):
            nics_per_accelerator = scale_out.number("nics_per_accelerator")
        if scale_out.has("nics_per_node"):
            nics_per_node = scale_out.integer("nics_per_node", minimum=1)
    return build_cluster(
        system,
        num_nodes=num_nodes,
        link=link,
        nics_per_accelerator=nics_per_accelerator,
        nics_per_node=nics_per_node,
        label=fields.string("name"),
        path=path,
    )


def _file_num_nodes(fields: Fields, system: System) -> int:
    if fields.has("num_nodes") == fields.has("num_accelerators"):
        raise DataFileError(
            fields.path,
            "a cluster needs exactly one of num_nodes and num_accelerators",
            field="num_nodes",
            fix="write num_nodes = <whole number> or num_accelerators = <whole number>",
        )
    if fields.has("num_nodes"):
        return fields.integer("num_nodes", minimum=1)
    num_accelerators = fields.integer("num_accelerators", minimum=1)
    return nodes_for(system, num_accelerators)


def takes_part_of_domain(system: System) -> bool:
    """Whether a job may use part of one ``system`` (a rack-scale domain or a TPU pod).

    >>> from lightspeed.catalog import load_catalog
    >>> catalog = load_catalog()
    >>> takes_part_of_domain(catalog.system("tpu-v5e-pod")), takes_part_of_domain(catalog.system("dgx-h100"))
    (True, False)
    """
    return system.system_type in DOMAIN_SYSTEM_TYPES


def spread_over_domains(
    system: System, num_accelerators: int, shape: tuple[int, ...] | None = None
) -> tuple[System, int]:
    """(the system as each domain is used, number of domains) for a job of
    ``num_accelerators`` on a rack-scale system whose size it does not fill.

    Real jobs use part of each NVLink domain (a 128-GPU job on GB200 NVL72 runs
    64 GPUs in each of two racks): the GPUs are spread evenly over the fewest
    domains that hold them, so each domain carries ``num_accelerators / domains``
    of them, with its NICs. A count that no number of domains splits evenly takes
    the fewest domains that do (73 GPUs: 73 domains of one). On a TPU pod the
    chips used form a slice of the torus (:func:`lightspeed.catalog.torus.torus_slice`; ``shape``
    where a Google topology name gave one).

    >>> from lightspeed.catalog import load_catalog
    >>> used, domains = spread_over_domains(load_catalog().system("gb200-nvl72"), 128)
    >>> used.num_accelerators, used.scale_up_domain_size, domains
    (64, 64, 2)
    """
    _check_cluster_size(num_accelerators, system)
    size = system.num_accelerators
    if num_accelerators % size == 0:
        return system, num_accelerators // size
    domains = max(1, math.ceil(num_accelerators / size))
    while num_accelerators % domains:
        domains += 1
    per_domain = num_accelerators // domains
    scale_out = system.scale_out
    if scale_out is not None:
        links = max(1, round(scale_out.num_links * per_domain / size))
        scale_out = replace(scale_out, num_links=links)
    used = replace(
        system,
        num_accelerators=per_domain,
        scale_up_domain_size=min(system.scale_up_domain_size, per_domain),
        scale_out=scale_out,
        display_name=f"{system.display_name}, {per_domain} of its {size} {_unit(system)} used",
        spec_name=f"{per_domain}x{system.name}",
    )
    return torus_slice(used, per_domain, shape), domains


def _unit(system: System) -> str:
    return "chips" if system.torus_dimensions else "GPUs"


def nodes_for(system: System, num_accelerators: int) -> int:
    """Fewest whole nodes of ``system`` that hold ``num_accelerators`` (at least 1).

    >>> from lightspeed.catalog import load_catalog
    >>> nodes_for(load_catalog().system("dgx-h100"), 100)
    13
    """
    if num_accelerators < 1:
        raise InvalidPlanError(f"the number of accelerators must be at least 1, not {num_accelerators}")
    return max(1, -(-num_accelerators // system.num_accelerators))  # integer ceiling: exact for any size


def looks_like_spec(text: str) -> bool:
    """Whether ``text`` has the marks of a cluster spec (a node count, ``@`` or ``:``).

    >>> looks_like_spec("9xdgx-h100"), looks_like_spec("h100-sxm")
    (True, False)
    """
    compact = "".join(text.split())
    return "@" in compact or ":" in compact or re.match(r"^\d+[x×*]", compact.lower()) is not None


def looks_like_file(text: str | Path) -> bool:
    """Whether ``text`` names a cluster file rather than a name or spec."""
    if isinstance(text, Path):
        return True
    # os.path.isfile says False where Path.is_file raises (a name too long for the file system)
    return text.strip().lower().endswith(".toml") or os.path.isfile(text)

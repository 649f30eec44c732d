"""The catalog: every known record, looked up by exact name or alias.

The hardware twin of :mod:`lightspeed.workload.registry` (the same lookup for models).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final, TypeVar

from lightspeed.catalog.cards import (
    PCIE_SERVER_NIC_LINK,
    assumed_nics,
    has_assumed_nics,
    is_pcie_card,
    pcie_server,
    pcie_servers,
)
from lightspeed.catalog.clusters import (
    build_cluster,
    looks_like_file,
    nodes_for,
    parse_cluster_file,
    parse_spec,
    spread_over_domains,
    takes_part_of_domain,
)
from lightspeed.catalog.keys import check_record
from lightspeed.catalog.mig_profiles import resolve_slice, single_gpu_system, split_slice_name
from lightspeed.catalog.names import find_by_text, matching_records, memory_mismatches, unknown_name_error
from lightspeed.catalog.parse import (
    builtin_files,
    parse_accelerator,
    parse_cpu,
    parse_link,
    parse_system,
    read_raw,
)
from lightspeed.catalog.parsed_cache import cached
from lightspeed.catalog.records import Accelerator, Cluster, Cpu, Link, System
from lightspeed.catalog.torus import describe_torus, slice_name, slice_topology
from lightspeed.datafile import Fields, expand_paths, load_toml, normalize_name
from lightspeed.errors import DataFileError, InvalidPlanError, UnknownNameError
from lightspeed.limits import MAX_ACCELERATORS, check_kind, check_whole

T = TypeVar("T", Accelerator, Cpu, Link, System)
# ``<count>x<name>`` in a cluster spec's system slot: part of a rack, or a server of PCIe cards
_PART: Final = re.compile(r"(?P<count>\d+)[x×*](?P<name>.+)")
logger = logging.getLogger(__name__)


def described(cluster: Cluster) -> Cluster:
    """``cluster`` named with what a reader cannot see in its parts: the torus shape of a TPU slice,
    the NICs assumed between PCIe servers (a cluster file's own name is kept)."""
    if cluster.label:
        return cluster
    system = cluster.system
    if system.torus_dimensions:
        return replace(cluster, label=f"{cluster.name}, slice {describe_torus(system)}")
    if has_assumed_nics(system) and cluster.num_nodes > 1 and system.scale_out is not None:
        nics = f"{system.scale_out.num_links} x {system.scale_out.link.name} per server"
        return replace(cluster, label=f"{cluster.name} (assumed NICs: {nics}, NVIDIA 2-8-5 PCIe reference)")
    return cluster


@dataclass(frozen=True)
class Catalog:
    """All hardware records. Look names up with :meth:`accelerator`, :meth:`system` ...

    >>> catalog = load_catalog()
    >>> catalog.accelerator("h100-sxm").dense_flop_per_s("bf16") / 1e12
    989.5
    """

    accelerators: Mapping[str, Accelerator]
    cpus: Mapping[str, Cpu]
    links: Mapping[str, Link]
    systems: Mapping[str, System]
    clusters: Mapping[str, Cluster] = field(default_factory=dict)

    def accelerator(self, name: str) -> Accelerator:
        """The accelerator called ``name`` (exact name or alias), or a MIG slice ``h100-sxm/3g.40gb``."""
        if split_slice_name(name) is not None:
            return resolve_slice(name, self.accelerator)
        return _lookup(self.accelerators, name, "device")

    def cpu(self, name: str) -> Cpu:
        """The CPU called ``name``."""
        return _lookup(self.cpus, name, "cpu")

    def link(self, name: str) -> Link:
        """The link called ``name``."""
        return _lookup(self.links, name, "link")

    def system(self, name: str) -> System:
        """The node or rack called ``name``; an accelerator's name is refused naming the systems
        built from it (``h100-sxm``: ``dgx-h100`` ...)."""
        if _find(self.systems, name) is None and (accelerator := _find(self.accelerators, name)) is not None:
            raise self._not_a_system(accelerator, None)
        return _lookup(self.systems, name, "system")

    def _not_a_system(self, accelerator: Accelerator, count: int | None) -> UnknownNameError:
        """The error for accelerator ``accelerator`` named where a system belongs, ``count`` of them
        where a spec counted them (``16xh100-sxm``): the spelling that names them instead."""
        built = self.systems_built_from(accelerator.name)
        if count is not None and built:
            fix = _whole_systems(built[0], count)
        elif count is not None and is_pcie_card(accelerator):
            fix = f"for {count} of them write {self._pcie_cluster(accelerator, count).spec}"
        else:
            fix = _systems_listed(accelerator, built)
        others = [system.name for system in built[1:]]
        also = f"; other systems built from it: {', '.join(others)}" if count is not None and others else ""
        error = UnknownNameError("system", accelerator.name, [system.name for system in built])
        error.args = (f"{accelerator.name} is an accelerator, not a system: {fix}{also}",)
        return error

    def find_system(self, name: str) -> System | None:
        """The node or rack called ``name`` (name or alias), or ``None``: a probe that costs no
        list of close names (:meth:`system` builds one for its error)."""
        return _find(self.systems, name)

    def systems_built_from(self, accelerator_name: str) -> list[System]:
        """The systems built around accelerator ``accelerator_name``, the one a bare GPU name
        stands for first: the vendor's own 8-GPU node (DGX/HGX, an MI300X platform) before
        racks and other sizes, and a cloud instance type (``p5.48xlarge``) only after them.

        >>> [system.name for system in load_catalog().systems_built_from("h100-sxm")][:2]
        ['dgx-h100', 'a3-highgpu-8g']
        """
        return sorted(
            (system for system in self.systems.values() if system.accelerator.name == accelerator_name),
            key=lambda system: (
                bool(system.cloud_provider),
                system.system_type != "node",
                system.num_accelerators != 8,
                system.name,
            ),
        )

    def find_device(self, reported_name: str) -> Accelerator | None:
        """The accelerator a device reports itself as, or ``None`` if no record has that name.

        ``reported_name`` is what PyTorch, nvidia-smi, rocm-smi, JAX or an MLPerf
        system description prints ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB",
        "AMD Instinct MI300X", "TPU v5 lite"). Matching is exact on the
        normalized name (case, spaces and underscores ignored) against record
        names and aliases: no fuzzy guessing, so an unknown name gives ``None``.

        >>> load_catalog().find_device("NVIDIA H100 80GB HBM3").name
        'h100-sxm'
        """
        return _find(self.accelerators, reported_name)

    def find_cpu(self, reported_name: str) -> Cpu | None:
        """The CPU named ``reported_name`` (as /proc/cpuinfo or MLPerf print it), else ``None``.

        >>> load_catalog().find_cpu("Intel(R) Xeon(R) Platinum 8480C").name
        'xeon-platinum-8480c'
        """
        return _find(self.cpus, reported_name)

    def any_record(self, name: str) -> Accelerator | Cpu | Link | System:
        """A record of any kind (accelerators first, MIG slices too, then systems, links, CPUs)."""
        check_kind("a hardware name", name, str, "such as 'h100-sxm'; see 'lightspeed hw list'", what="text")
        if split_slice_name(name) is not None:
            return self.accelerator(name)
        found: Accelerator | Cpu | Link | System | None = (
            _find(self.accelerators, name)
            or _find(self.systems, name)
            or _find(self.links, name)
            or _find(self.cpus, name)
        )
        if found is not None:
            return found
        every = [*_names(self.accelerators), *_names(self.systems), *_names(self.links), *_names(self.cpus)]
        # "unknown hardware name 'h10'", but "the hardware name is empty" (not "... name name ...")
        kind = "hardware name" if name.strip() else "hardware"
        raise unknown_name_error(self.accelerators, name, kind, every)

    def cluster(
        self,
        system: str,
        *,
        num_nodes: int | None = None,
        num_accelerators: int | None = None,
        fabric: str | None = None,
        nics_per_accelerator: float | None = None,
    ) -> Cluster:
        """``num_nodes`` (or enough nodes for ``num_accelerators``) of ``system``.

        ``fabric`` names the scale-out link (default: the system's own NICs);
        ``nics_per_accelerator`` sets how many such NICs each accelerator has.
        """
        record = self.system(system)
        if num_accelerators is not None and num_nodes is None and takes_part_of_domain(record):
            record, nodes = spread_over_domains(record, num_accelerators)
        else:
            nodes = _num_nodes(record, num_nodes, num_accelerators)
        link = self.link(fabric) if fabric is not None else None
        return build_cluster(record, num_nodes=nodes, link=link, nics_per_accelerator=nics_per_accelerator)

    def parse_cluster(self, text: str) -> Cluster:
        """A cluster from a spec string such as ``9xdgx-h100@ib-ndr:1nic``.

        Syntax: ``[<nodes>x]<system>[@<link>][:<nics per accelerator>nic]``
        (see :mod:`lightspeed.catalog.clusters`). A count of an accelerator (``16xh100-sxm``) is
        refused with the spec that holds that many (``2xdgx-h100``).

        >>> load_catalog().parse_cluster("9xdgx-h100@ib-ndr:1nic").num_accelerators
        72
        """
        self._refuse_counted_accelerator(text)
        return parse_spec(text, system_lookup=self.spec_system, link_lookup=self.link)

    def _refuse_counted_accelerator(self, text: str) -> None:
        """Refuse a spec whose nodes count an accelerator (``3xl40s``, ``73xgb200@ib-ndr``)."""
        head = re.split(r"[@:]", "".join(text.split()).lower(), maxsplit=1)[0]
        part = _PART.fullmatch(head)
        counted = part is not None and 1 <= int(part["count"]) <= MAX_ACCELERATORS
        if part is None or not counted or _find(self.systems, part["name"]) is not None:
            return
        accelerator = _find(self.accelerators, part["name"])
        if accelerator is not None:
            raise self._not_a_system(accelerator, int(part["count"]))

    def spec_system(self, name: str) -> System:
        """The system a cluster spec names: a system, or what :attr:`Cluster.spec` writes for part of
        one: a TPU slice by Google's name (``v5e-2x4``, ``v5p-128``), ``<n>x<rack>`` (``64xgb200-nvl72``:
        64 GPUs of one rack), ``<n>x<PCIe card>`` (``8xl40s``: a server of eight cards).

        >>> catalog = load_catalog()
        >>> [catalog.spec_system(name).num_accelerators for name in ("v5e-2x4", "64xgb200-nvl72", "8xl40s")]
        [8, 64, 8]
        """
        if (system := _find(self.systems, name)) is not None:
            return system
        if (tpu_slice := slice_name(name)) is not None:
            return self._one_domain(name, self.system(tpu_slice[0]), tpu_slice[1], slice_topology(name))
        part = _PART.fullmatch("".join(name.split()).lower())
        if part is not None:
            count, whole = int(part["count"]), part["name"]
            if (system := _find(self.systems, whole)) is not None and takes_part_of_domain(system):
                return self._one_domain(name, system, count, None)
            if (system is None) and (accelerator := _find(self.accelerators, whole)) is not None:
                if not is_pcie_card(accelerator):
                    raise self._not_a_system(accelerator, count)
                return pcie_server(accelerator, count)
        return self.system(name)

    def _one_domain(self, name: str, system: System, count: int, shape: tuple[int, ...] | None) -> System:
        """``count`` accelerators of one rack or pod ``system`` (a spec's system: one node of it)."""
        used, domains = spread_over_domains(system, count, shape)
        if domains != 1 or count > system.num_accelerators:
            raise InvalidPlanError(
                f"{name.strip()} is {count} accelerators, more than one {system.name} holds "
                f"({system.num_accelerators}); a spec counts whole ones: "
                f"{nodes_for(system, count)}x{system.name}"
            )
        return used

    def load_cluster_file(self, path: Path) -> Cluster:
        """A cluster from a ``kind = "cluster"`` TOML file."""
        data = load_toml(path, what="cluster file (TOML)")
        fields = Fields(str(path), data)
        kind = fields.string("kind")
        if kind != "cluster":
            raise DataFileError(
                path,
                f"expected a cluster file, found kind = {kind!r}",
                field="kind",
                fix='pass records of other kinds with --catalog; a cluster file has kind = "cluster"',
            )
        check_record(fields, "cluster")
        return parse_cluster_file(str(path), data, system_lookup=self.system, link_lookup=self.link)

    def resolve_cluster(self, text_or_path: str | Path, num_accelerators: int | None = None) -> Cluster:
        """A cluster from what a user passes as ``--system``: a name, a spec string or a file.

        In order: a path to a cluster TOML file; a cluster defined in a
        ``--catalog`` file; a system name (``num_accelerators`` then picks
        enough nodes, else one node; a rack system spreads them evenly over the
        fewest racks, see :func:`~lightspeed.catalog.clusters.spread_over_domains`);
        one GPU or MIG slice (``h100-sxm/3g.40gb``);
        a spec string (:meth:`parse_cluster`).
        ``num_accelerators`` above what the cluster holds is an error.

        >>> load_catalog().resolve_cluster("dgx-h100", num_accelerators=100).num_nodes
        13
        """
        check_kind(
            "a cluster",
            text_or_path,
            (str, Path),
            "a spec such as 9xdgx-h100@ib-ndr, or a cluster file's path",
            what="a system name",
        )
        if num_accelerators is not None:  # the bound of --gpus (docs/limits.md)
            num_accelerators = check_whole(
                "num_gpus", num_accelerators, maximum=MAX_ACCELERATORS, error=InvalidPlanError
            )
        text = str(text_or_path)
        if looks_like_file(text_or_path):
            cluster = self.load_cluster_file(Path(text_or_path))
        elif (named := _find_cluster(self.clusters, text)) is not None:
            cluster = named
        elif (system := _find(self.systems, text)) is not None:
            if num_accelerators is not None and takes_part_of_domain(system):
                system, nodes = spread_over_domains(system, num_accelerators)
            else:
                nodes = nodes_for(system, num_accelerators) if num_accelerators is not None else 1
            cluster = build_cluster(system, num_nodes=nodes)
        elif (tpu_slice := slice_name(text)) is not None:
            cluster = self._slice_cluster(text, *tpu_slice, num_accelerators)
        elif split_slice_name(text) or _find(self.accelerators, text):
            cluster = self.accelerator_cluster(text, num_accelerators or 1)
        elif len(matching_records(self.accelerators, text)) > 1 or memory_mismatches(self.accelerators, text):
            # several parts, or a part with another memory size (``H100 SXM 64GB``): say which
            raise unknown_name_error(self.accelerators, text, "device", _names(self.accelerators))
        else:
            cluster = self.parse_cluster(text)
        cluster = described(cluster)
        if num_accelerators is not None and num_accelerators > cluster.num_accelerators:
            if cluster.system.system_type == "single-gpu":
                raise InvalidPlanError(
                    f"{cluster.name} is one GPU; for {num_accelerators} GPUs name a system (e.g. dgx-h100)"
                )
            raise InvalidPlanError(
                f"{num_accelerators} accelerators do not fit {cluster.name} "
                f"({cluster.num_accelerators} accelerators); use more nodes, e.g. "
                f"{nodes_for(cluster.system, num_accelerators)}x{cluster.system.name}"
            )
        return cluster

    def accelerator_cluster(self, name: str, num_accelerators: int) -> Cluster:
        """``num_accelerators`` of the accelerator ``name`` where no system is named.

        One is the device on its own (a MIG slice too); more take part of the rack or TPU pod
        built from it (:func:`~lightspeed.catalog.clusters.spread_over_domains`), else, for a
        PCIe card no catalog system is built from, servers of up to eight cards with the NICs
        :mod:`lightspeed.catalog.cards` assumes. A part that only comes in catalog nodes
        (``h100-sxm``) is refused, naming the node.

        >>> load_catalog().accelerator_cluster("l40s", 16).spec
        '2x8xl40s@ethernet-400g:0.5nic'
        """
        accelerator = self.accelerator(name)
        if num_accelerators == 1 or split_slice_name(name):
            return build_cluster(single_gpu_system(accelerator), num_nodes=1)
        built = sorted(
            self.systems_built_from(accelerator.name), key=lambda system: not takes_part_of_domain(system)
        )
        if built and takes_part_of_domain(built[0]):
            system, nodes = spread_over_domains(built[0], num_accelerators)
            return build_cluster(system, num_nodes=nodes)
        if built:
            raise InvalidPlanError(
                f"{accelerator.name} is one GPU; for {num_accelerators} GPUs name a system "
                f"(e.g. {built[0].name})"
            )
        return self._pcie_cluster(accelerator, num_accelerators, log=True)

    def _pcie_cluster(self, accelerator: Accelerator, num_cards: int, *, log: bool = False) -> Cluster:
        """``num_cards`` PCIe cards in servers of up to eight, joined by the NICs assumed for them."""
        server, servers = pcie_servers(accelerator, num_cards, self.link(PCIE_SERVER_NIC_LINK))
        if log and servers > 1:
            logger.info("%s", assumed_nics(server))
        return build_cluster(server, num_nodes=servers)

    def _slice_cluster(
        self, text: str, system_name: str, chips: int, num_accelerators: int | None
    ) -> Cluster:
        """A Google slice name (``v5p-128``: 64 chips of the v5p pod), checked against ``--gpus``."""
        if num_accelerators is not None and num_accelerators != chips:
            raise InvalidPlanError(
                f"{text.strip()} is {chips} chips, not the {num_accelerators} asked for; give one of the two "
                f"(or name the pod, {system_name}, with the chip count)"
            )
        system, nodes = spread_over_domains(self.system(system_name), chips, slice_topology(text))
        return build_cluster(system, num_nodes=nodes)


def _systems_listed(accelerator: Accelerator, built: list[System]) -> str:
    """Name the systems built from ``accelerator`` (with their sizes), or say how to add one."""
    if built:
        listed = ", ".join(f"{system.name} ({system.num_accelerators})" for system in built)
        return f"name a system built from it: {listed}"
    if is_pcie_card(accelerator):
        return (
            f"no catalog system is built from it; name it as the device ({accelerator.name} with --gpus), "
            f"a server of its cards in a cluster spec (1x8x{accelerator.name}), "
            "or add a system with --catalog"
        )
    return "no catalog system is built from it; add one with --catalog (a system TOML naming its links)"


def _whole_systems(system: System, count: int) -> str:
    """The spec that holds ``count`` accelerators of ``system``: part of one rack or pod
    (``1x64xgb200-nvl72``), else the fewest whole systems (``2xdgx-h100``)."""
    size = system.num_accelerators
    if takes_part_of_domain(system) and count < size:
        return f"for {count} of them write 1x{count}x{system.name} ({count} of one {system.name}'s {size})"
    nodes = nodes_for(system, count)
    held = "" if nodes * size == count else f" = {nodes * size}, the fewest whole ones that hold {count}"
    return f"for {count} of them write {nodes}x{system.name} ({nodes} x {size} accelerators{held})"


def _num_nodes(system: System, num_nodes: int | None, num_accelerators: int | None) -> int:
    if num_nodes is not None and num_accelerators is not None:
        if num_nodes * system.num_accelerators < num_accelerators:
            raise InvalidPlanError(
                f"{num_nodes} nodes of {system.name} hold {num_nodes * system.num_accelerators} "
                f"accelerators, fewer than {num_accelerators}"
            )
        return num_nodes
    if num_accelerators is not None:
        return nodes_for(system, num_accelerators)
    return num_nodes if num_nodes is not None else 1


def _find_cluster(clusters: Mapping[str, Cluster], name: str) -> Cluster | None:
    return clusters.get(normalize_name(name))


def _names(table: Mapping[str, T]) -> list[str]:
    return list(table)


_find = find_by_text


def _lookup(table: Mapping[str, T], name: str, kind: str) -> T:
    found = _find(table, name)
    if found is None:
        known = [*table, *(alias for record in table.values() for alias in record.aliases)]
        raise unknown_name_error(table, name, kind, known)
    return found


def load_catalog(extra_paths: Iterable[Path] = ()) -> Catalog:
    """Load the shipped catalog plus user files (which add or replace records by name).

    ``extra_paths`` are TOML files or folders (what ``--catalog`` and
    ``LIGHTSPEED_CATALOG`` name); records of other kinds (models) are skipped.
    """
    files = [*builtin_files(), *expand_paths(extra_paths)]
    return cached(files, Catalog, lambda: _parse_catalog(files))


def _parse_catalog(files: list[Path]) -> Catalog:
    """The catalog the TOML ``files`` hold (every record checked, aliases unique)."""
    raw = read_raw(files)
    links = {name: parse_link(raw.paths[("link", name)], data) for name, data in raw.tables["link"].items()}
    cpus = {name: parse_cpu(raw.paths[("cpu", name)], data) for name, data in raw.tables["cpu"].items()}
    accelerators = {
        name: parse_accelerator(raw.paths[("accelerator", name)], data, links)
        for name, data in raw.tables["accelerator"].items()
    }
    systems = {
        name: parse_system(raw.paths[("system", name)], data, accelerators, cpus, links)
        for name, data in raw.tables["system"].items()
    }
    catalog = Catalog(accelerators=accelerators, cpus=cpus, links=links, systems=systems)
    _check_unique_aliases(catalog)
    clusters = {
        name: parse_cluster_file(
            raw.paths[("cluster", name)], data, system_lookup=catalog.system, link_lookup=catalog.link
        )
        for name, data in raw.tables["cluster"].items()
    }
    return replace(catalog, clusters=clusters)


def _check_unique_aliases(catalog: Catalog) -> None:
    """Every name and alias names one record across all kinds, so lookups are never ambiguous."""
    owner: dict[str, tuple[str, str, str]] = {}
    tables: dict[str, Mapping[str, Accelerator | Cpu | Link | System]] = {
        "accelerator": catalog.accelerators,
        "cpu": catalog.cpus,
        "link": catalog.links,
        "system": catalog.systems,
    }
    for kind, table in tables.items():
        for record in table.values():
            for alias in dict.fromkeys((record.name, *record.aliases)):
                previous = owner.setdefault(alias, (kind, record.name, record.path))
                if previous[:2] != (kind, record.name):
                    raise DataFileError(
                        record.path,
                        f"alias {alias!r} is already used by {previous[1]} ({previous[2]})",
                        field="aliases",
                        value=alias,
                        fix="remove the alias from one of the two records",
                    )

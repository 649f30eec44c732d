"""Cluster spec strings, cluster files and resolve_cluster (what --system accepts)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.catalog import Catalog
from lightspeed.errors import DataFileError, InvalidPlanError, UnknownNameError, UserInputError

WriteToml = Callable[[str, str], Path]


@pytest.mark.parametrize(
    ("spec", "nodes", "system", "fabric"),
    [
        ("9xdgx-h100", 9, "dgx-h100", ("ib-ndr", 8)),  # the system's own 8 x 400G NICs
        ("9xdgx-h100@ib-ndr:1nic", 9, "dgx-h100", ("ib-ndr", 8)),
        ("9 x DGX-H100 @ NDR : 1 nic", 9, "dgx-h100", ("ib-ndr", 8)),  # spaces, case, aliases
        ("2xdgx-h100@ib-xdr:0.5nic", 2, "dgx-h100", ("ib-xdr", 4)),
        ("4xdgx-b200@ethernet-400g", 4, "dgx-b200", ("ethernet-400g", 8)),  # new link: one NIC per GPU
        ("dgx-h100:0.25nic", 1, "dgx-h100", ("ib-ndr", 2)),  # keep the link, change the count
        ("gb200-nvl72", 1, "gb200-nvl72", ("ib-ndr", 72)),
        ("8*h100x8@roce-800g:0.5nics", 8, "dgx-h100", ("ethernet-800g", 4)),
        ("3xmi300x-platform@ethernet-400g:1nic", 3, "mi300x-platform", ("ethernet-400g", 8)),
    ],
)
def test_parse_cluster(catalog: Catalog, spec: str, nodes: int, system: str, fabric: tuple[str, int]) -> None:
    link, nics_per_node = fabric
    cluster = catalog.parse_cluster(spec)
    assert cluster.num_nodes == nodes
    assert cluster.system.name == system
    assert cluster.fabric is not None
    assert cluster.fabric.link.name == link
    assert cluster.fabric.num_links == nics_per_node
    assert cluster.num_accelerators == nodes * cluster.system.num_accelerators


def test_cluster_bandwidth_per_accelerator(catalog: Catalog) -> None:
    cluster = catalog.parse_cluster("9xdgx-h100@ib-ndr:1nic")
    # One 400 Gb/s NIC per GPU: 50 GB/s per direction per GPU.
    assert cluster.scale_out_per_accelerator_bytes_per_s() == 50e9
    assert cluster.nics_per_accelerator == 1.0
    assert cluster.name == "9 x dgx-h100 over ib-ndr"


@pytest.mark.parametrize(
    ("spec", "error", "expected"),
    [
        ("9xdgx-h1000", UnknownNameError, "dgx-h100"),
        ("9xdgx-h100@ib-ndrr", UnknownNameError, "ib-ndr"),
        ("9xdgx-h100@ib-ndr:0.3nic", InvalidPlanError, "whole number"),
        ("9xdgx-h100@ib-ndr:1gpu", UserInputError, "[<nodes>x]<system>"),
        ("0xdgx-h100", InvalidPlanError, "at least one node"),
        ("2xgh200-nvl32", InvalidPlanError, "@<link>"),  # no NICs of its own, no link named
        ("@ib-ndr", UserInputError, "cannot read cluster spec"),
    ],
)
def test_bad_specs_say_what_is_wrong(
    catalog: Catalog, spec: str, error: type[Exception], expected: str
) -> None:
    with pytest.raises(error) as info:
        catalog.parse_cluster(spec)
    assert expected in str(info.value)


def test_a_system_without_nics_keeps_no_fabric(catalog: Catalog) -> None:
    # GH200 NVL32 records no scale-out NICs (the MI300X platform now does: AMD's 8 x 400G RoCE)
    cluster = catalog.parse_cluster("2xgh200-nvl32@ib-ndr:1nic")
    assert cluster.fabric is not None
    assert cluster.fabric.num_links == 32
    single = catalog.resolve_cluster("gh200-nvl32")
    assert single.fabric is None
    assert single.scale_out_per_accelerator_bytes_per_s() == 0.0


def test_resolve_system_name_picks_enough_nodes(catalog: Catalog) -> None:
    assert catalog.resolve_cluster("dgx-h100").num_nodes == 1
    assert catalog.resolve_cluster("dgx-h100", num_accelerators=64).num_nodes == 8
    assert catalog.resolve_cluster("h100x8", num_accelerators=100).num_nodes == 13  # ceil(100 / 8)
    assert catalog.resolve_cluster("dgx-h100", num_accelerators=1).num_nodes == 1
    assert catalog.resolve_cluster("gb200-nvl72", num_accelerators=144).num_nodes == 2


def test_resolve_spec_too_small_is_an_error(catalog: Catalog) -> None:
    assert catalog.resolve_cluster("9xdgx-h100", num_accelerators=72).num_accelerators == 72
    with pytest.raises(InvalidPlanError) as info:
        catalog.resolve_cluster("9xdgx-h100", num_accelerators=80)
    assert "10xdgx-h100" in str(info.value)


def test_resolve_cluster_file(catalog: Catalog, write_toml: WriteToml) -> None:
    path = write_toml(
        "cluster.toml",
        """
        schema_version = 1
        kind = "cluster"
        name = "lab"
        system = "dgx-b200"
        num_nodes = 4
        [scale_out]
        link = "ib-xdr"
        nics_per_accelerator = 0.5
        """,
    )
    for text in (path, str(path)):
        cluster = catalog.resolve_cluster(text)
        assert cluster.name == "lab"
        assert cluster.num_accelerators == 32
        assert cluster.fabric is not None
        assert cluster.fabric.num_links == 4
        assert cluster.path == str(path)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('system = "dgx-b200"\nnum_nodes = 2\nnum_accelerators = 16\n', "exactly one of"),
        ('system = "dgx-b200"\nnum_node = 2\n', "num_node"),
        ('system = "dgx-b2000"\nnum_nodes = 2\n', "dgx-b200"),
    ],
)
def test_bad_cluster_files(catalog: Catalog, write_toml: WriteToml, body: str, expected: str) -> None:
    path = write_toml("cluster.toml", f'schema_version = 1\nkind = "cluster"\nname = "lab"\n{body}')
    with pytest.raises((DataFileError, UnknownNameError)) as info:
        catalog.resolve_cluster(path)
    assert expected in str(info.value)


def test_a_system_file_is_not_a_cluster_file(catalog: Catalog, write_toml: WriteToml) -> None:
    path = write_toml("system.toml", 'schema_version = 1\nkind = "system"\nname = "x"\n')
    with pytest.raises(DataFileError) as info:
        catalog.resolve_cluster(path)
    assert "expected a cluster file" in str(info.value)
    assert "--catalog" in str(info.value)


def test_missing_cluster_file(catalog: Catalog, tmp_path: Path) -> None:
    with pytest.raises(DataFileError) as info:
        catalog.resolve_cluster(str(tmp_path / "nope.toml"))
    assert "nope.toml" in str(info.value)


def test_catalog_cluster_keeps_its_public_signature(catalog: Catalog) -> None:
    cluster = catalog.cluster("dgx-h100", num_accelerators=64, fabric="ib-xdr", nics_per_accelerator=0.5)
    assert cluster.num_nodes == 8
    assert cluster.fabric is not None
    assert cluster.fabric.link.name == "ib-xdr"
    assert cluster.fabric.num_links == 4
    with pytest.raises(InvalidPlanError):
        catalog.cluster("dgx-h100", num_nodes=2, num_accelerators=64)


SYSTEMS_WITH_NICS = ["dgx-h100", "dgx-b200", "gb200-nvl72", "gb300-nvl72", "dgx-a100", "hgx-h800"]
LINKS = ["ib-hdr", "ib-ndr", "ib-xdr", "ethernet-400g", "ethernet-800g"]


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.integers(min_value=1, max_value=4096),
    system=st.sampled_from(SYSTEMS_WITH_NICS),
    link=st.sampled_from(LINKS),
    nics=st.sampled_from([0.125, 0.25, 0.5, 1.0, 2.0]),
)
def test_spec_round_trips(catalog: Catalog, nodes: int, system: str, link: str, nics: float) -> None:
    spec = f"{nodes}x{system}@{link}:{nics:g}nic"
    try:
        cluster = catalog.parse_cluster(spec)
    except InvalidPlanError as refused:
        reason = str(refused)
    else:
        reason = ""
    if reason:
        per_node = catalog.system(system).num_accelerators * nics
        # a part of a NIC, or more bandwidth than the accelerator's host link carries
        assert per_node < 1 or per_node != int(per_node) or "host link" in reason
        return
    again = catalog.parse_cluster(cluster.spec)
    assert again == cluster
    assert again.num_accelerators == nodes * cluster.system.num_accelerators


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=40))
def test_arbitrary_text_fails_cleanly(catalog: Catalog, text: str) -> None:
    with contextlib.suppress(UserInputError):
        catalog.parse_cluster(text)


def test_a_cluster_spec_past_ten_million_gpus_is_refused() -> None:
    # used to print "99999999999999999999 x dgx-h100 = 799999999999999999992 x h100-sxm"
    from lightspeed.catalog import load_catalog
    from lightspeed.errors import InvalidPlanError

    with pytest.raises(InvalidPlanError, match="above the 10,000,000"):
        load_catalog().resolve_cluster("99999999999999999999xdgx-h100")


def test_a_spec_longer_than_a_file_name_is_not_a_file() -> None:
    # a path component over NAME_MAX (255 bytes) made is_file() raise ENAMETOOLONG: a traceback
    from lightspeed.catalog.clusters import looks_like_file

    assert looks_like_file("9xdgx-h100@" + "a" * 300) is False

"""User files add and override records; malformed files fail naming file, field, value and fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lightspeed.catalog import load_catalog
from lightspeed.catalog.parse import quantity_base
from lightspeed.errors import DataFileError

WriteToml = Callable[[str, str], Path]

ACCELERATOR = """
schema_version = 1
kind = "accelerator"
name = "lab-gpu"
aliases = ["lab"]
vendor = "Lab"
architecture = "Test"
form_factor = "card"
family = "nvidia-hopper"

[sources.sheet]
title = "lab datasheet"
url = "https://example.org/sheet"

[compute.bf16]
printed_tflop_per_s = 200.0
printed_with_sparsity = true
dense_tflop_per_s = 100.0
source = "sheet"

[memory]
type = "HBM3"
nominal_gb = 64.0
bandwidth_tb_per_s = 2.0
source = "sheet"

[scale_up]
link = "nvlink-4"
num_links = 4
source = "sheet"
"""


def test_user_file_adds_a_record(write_toml: WriteToml) -> None:
    catalog = load_catalog([write_toml("lab.toml", ACCELERATOR)])
    lab = catalog.accelerator("lab")
    assert lab.dense_flop_per_s("bf16") == 100e12
    assert lab.memory_usable_bytes == 64e9  # usable defaults to nominal
    assert lab.scale_up is not None
    assert lab.scale_up.bidirectional_bytes_per_s == 4 * 50e9
    assert lab.tdp_w is None


def test_user_folder_is_read_recursively(write_toml: WriteToml, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    write_toml("sub/lab.toml", ACCELERATOR)
    assert load_catalog([tmp_path]).accelerator("lab-gpu").name == "lab-gpu"


def test_extends_overrides_only_given_keys(write_toml: WriteToml) -> None:
    path = write_toml(
        "h100-capped.toml",
        """
        schema_version = 1
        kind = "accelerator"
        name = "h100-capped"
        extends = "h100-sxm"
        [power]
        tdp_w = 500.0
        [memory]
        usable_gib = 74.5
        """,
    )
    catalog = load_catalog([path])
    capped = catalog.accelerator("h100-capped")
    assert capped.tdp_w == 500.0
    assert capped.memory_usable_bytes == 74.5 * 2**30  # the GiB key replaced the base's GB key
    assert capped.memory_nominal_bytes == 80 * 2**30  # HBM3 stacks: 5 x 16 GiB
    assert capped.dense_flop_per_s("bf16") == 989.5e12
    assert capped.aliases == ()  # aliases name the base, not the copy
    assert capped.display_name == "h100-capped"
    assert catalog.accelerator("h100").name == "h100-sxm"


def test_override_replaces_a_builtin_record_by_name(write_toml: WriteToml) -> None:
    path = write_toml(
        "h100.toml",
        """
        schema_version = 1
        kind = "accelerator"
        name = "h100-sxm"
        extends = "h100-sxm"
        [memory]
        bandwidth_tb_per_s = 3.0
        """,
    )
    catalog = load_catalog([path])
    assert catalog.accelerator("h100").memory_bandwidth_bytes_per_s == 3.0e12
    assert catalog.system("dgx-h100").accelerator.memory_bandwidth_bytes_per_s == 3.0e12


def test_extends_a_record_defined_in_a_later_file(write_toml: WriteToml) -> None:
    child = write_toml(
        "a-child.toml",
        'schema_version = 1\nkind = "accelerator"\nname = "lab-child"\nextends = "lab-gpu"\n',
    )
    parent = write_toml("z-parent.toml", ACCELERATOR)
    catalog = load_catalog([child, parent])
    assert catalog.accelerator("lab-child").dense_flop_per_s("bf16") == 100e12


def test_user_cluster_file_in_the_catalog_is_named(write_toml: WriteToml) -> None:
    path = write_toml(
        "lab-cluster.toml",
        """
        schema_version = 1
        kind = "cluster"
        name = "lab-h100"
        system = "dgx-h100"
        num_accelerators = 20
        [scale_out]
        link = "ib-xdr"
        nics_per_node = 4
        """,
    )
    catalog = load_catalog([path])
    cluster = catalog.resolve_cluster("lab-h100")
    assert (cluster.num_nodes, cluster.num_accelerators) == (3, 24)
    assert cluster.fabric is not None
    assert (cluster.fabric.link.name, cluster.fabric.num_links) == ("ib-xdr", 4)


def test_model_records_in_the_same_folder_are_skipped(write_toml: WriteToml) -> None:
    path = write_toml("model.toml", 'schema_version = 1\nkind = "model"\nname = "tiny"\n')
    assert "tiny" not in load_catalog([path]).accelerators


def _error(paths: list[Path]) -> str:
    with pytest.raises(DataFileError) as info:
        load_catalog(paths)
    message = str(info.value)
    assert "\n" not in message
    return message


BAD_CASES = {
    "malformed": ("schema_version = 1\nkind = [\n", ["bad.toml", "invalid TOML", "line"]),
    "missing source": (
        ACCELERATOR.replace('source = "sheet"\n\n[memory]', "\n[memory]"),
        ["bad.toml", "compute.bf16.source", "missing field"],
    ),
    "undeclared source": (
        ACCELERATOR.replace('source = "sheet"\n\n[scale_up]', 'source = "blog"\n\n[scale_up]'),
        ["bad.toml", "memory.source", "'blog'", "[sources.blog]"],
    ),
    "sparse without dense": (
        ACCELERATOR.replace("dense_tflop_per_s = 100.0\n", ""),
        ["bad.toml", "compute.bf16", "needs its dense value", "dense_<unit>"],
    ),
    "dense above printed": (
        ACCELERATOR.replace("dense_tflop_per_s = 100.0", "dense_tflop_per_s = 300.0"),
        ["bad.toml", "compute.bf16", "above the printed"],
    ),
    "unknown link": (
        ACCELERATOR.replace('link = "nvlink-4"', 'link = "nvlink-9"'),
        ["bad.toml", "scale_up.link", "'nvlink-9'", "nvlink-4"],
    ),
    "typo in a key": (
        ACCELERATOR.replace("bandwidth_tb_per_s", "bandwith_tb_per_s"),
        ["bad.toml", "memory.bandwith_tb_per_s", "unknown key", "bandwidth_<unit>"],
    ),
    "two units for one figure": (
        ACCELERATOR.replace("nominal_gb = 64.0", "nominal_gb = 64.0\nnominal_gib = 60.0"),
        ["bad.toml", "memory.nominal", "two units"],
    ),
    "no sources": (
        ACCELERATOR.replace(
            '[sources.sheet]\ntitle = "lab datasheet"\nurl = "https://example.org/sheet"\n', ""
        ),
        ["bad.toml", "record has no sources", "[sources.<key>]"],
    ),
    "unknown compute row": (
        ACCELERATOR.replace("[compute.bf16]", "[compute.bfl6]"),
        ["bad.toml", "compute.bfl6", "unknown compute row", "bf16"],
    ),
    "unknown kind": (
        ACCELERATOR.replace('kind = "accelerator"', 'kind = "gpu"'),
        ["bad.toml", "kind", "'gpu'"],
    ),
    "schema version": (
        ACCELERATOR.replace("schema_version = 1", "schema_version = 7"),
        ["bad.toml", "schema_version", "schema_version = 1"],
    ),
    "extends unknown": (
        'schema_version = 1\nkind = "accelerator"\nname = "x"\nextends = "h1000"\n',
        ["bad.toml", "extends", "'h1000'", "hw list"],
    ),
    "alias collision": (
        ACCELERATOR.replace('aliases = ["lab"]', 'aliases = ["h100"]'),
        ["bad.toml", "aliases", "'h100'", "already used by h100-sxm"],
    ),
    "conflict choice": (
        ACCELERATOR
        + '\n[[conflicts]]\nfield = "memory"\nvalues = ["1", "2"]\nchosen = "3"\nsources = ["sheet"]\n',
        ["bad.toml", "conflicts[0].chosen", "'3'"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_file_names_file_field_and_fix(write_toml: WriteToml, case: str) -> None:
    text, expected = BAD_CASES[case]
    message = _error([write_toml("bad.toml", text)])
    for part in expected:
        assert part in message, (case, message)


def test_unknown_printed_total_lists_the_allowed_keys(write_toml: WriteToml) -> None:
    path = write_toml(
        "bad.toml",
        """
        schema_version = 1
        kind = "system"
        name = "lab-node"
        system_type = "node"
        accelerator = "h100-sxm"
        num_accelerators = 8
        source = "sheet"
        [sources.sheet]
        title = "lab"
        [scale_up]
        domain_size = 8
        [[printed_totals]]
        key = "fp3_sparse"
        value_pflop_per_s = 1.0
        source = "sheet"
        """,
    )
    message = _error([path])
    assert "printed_totals[0].key" in message
    assert "'fp3_sparse'" in message
    assert "fp8_sparse" in message


def test_system_with_unknown_accelerator(write_toml: WriteToml) -> None:
    path = write_toml(
        "bad.toml",
        """
        schema_version = 1
        kind = "system"
        name = "lab-node"
        system_type = "node"
        accelerator = "h1000"
        num_accelerators = 8
        source = "sheet"
        [sources.sheet]
        title = "lab"
        [scale_up]
        domain_size = 8
        """,
    )
    message = _error([path])
    assert "field 'accelerator'" in message
    assert "'h1000'" in message


def test_missing_catalog_path(tmp_path: Path) -> None:
    message = _error([tmp_path / "nope.toml"])
    assert "nope.toml" in message
    assert "--catalog" in message


@pytest.mark.parametrize(
    ("key", "base"),
    [
        ("usable_gib", "usable"),
        ("bandwidth_tb_per_s", "bandwidth"),
        ("typical_us", "typical"),
        ("printed_with_sparsity", None),
        ("num_links", None),
    ],
)
def test_quantity_base(key: str, base: str | None) -> None:
    assert quantity_base(key) == base


def test_alias_collision_across_kinds(write_toml: WriteToml) -> None:
    path = write_toml(
        "bad.toml",
        """
        schema_version = 1
        kind = "link"
        name = "lab-link"
        aliases = ["h100"]
        family = "lab"
        [sources.sheet]
        title = "lab"
        [bandwidth]
        per_direction_gb_per_s = 10.0
        bidirectional_gb_per_s = 20.0
        source = "sheet"
        [latency]
        typical_us = 1.0
        source = "sheet"
        """,
    )
    message = _error([path])
    assert "'h100'" in message
    assert "h100-sxm" in message


def test_an_extends_cycle_is_named_as_a_cycle(write_toml: WriteToml) -> None:
    # used to say "extends an unknown accelerator ... pass its file with --catalog" though both were passed
    first = write_toml(
        "a.toml", 'schema_version = 1\nkind = "accelerator"\nname = "cyc-a"\nextends = "cyc-b"\n'
    )
    second = write_toml(
        "b.toml", 'schema_version = 1\nkind = "accelerator"\nname = "cyc-b"\nextends = "cyc-a"\n'
    )
    with pytest.raises(DataFileError, match=r"extends cycle: cyc-a -> cyc-b -> cyc-a"):
        load_catalog([first, second])


def test_an_empty_name_is_refused(write_toml: WriteToml) -> None:
    path = write_toml(
        "empty.toml", 'schema_version = 1\nkind = "accelerator"\nname = " "\nextends = "h100-sxm"\n'
    )
    with pytest.raises(DataFileError, match=r"empty.toml: empty name; field 'name'"):
        load_catalog([path])
